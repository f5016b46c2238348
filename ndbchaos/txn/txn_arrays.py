"""A list-append history's transactions as arrays (``TxnArrays``, what ``scan`` reads), and the
sequence of ``Txn`` objects over them that builds each one only when it is asked for
(``LazyTxns``): the checks read the arrays, and an explanation builds the few transactions it
names."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .history import Txn


def ranges(starts: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """The indices start, start + 1, ..., start + len - 1 of each (start, len), one after another."""
    lens = np.asarray(lens, dtype=np.int64)
    total = int(lens.sum())
    if not total:
        return np.zeros(0, dtype=np.int64)
    out = np.ones(total, dtype=np.int64)
    nz = np.flatnonzero(lens)
    at = np.cumsum(lens[nz]) - lens[nz]
    s = np.asarray(starts, dtype=np.int64)[nz]
    out[at[0]] = s[0]
    out[at[1:]] = s[1:] - (s[:-1] + lens[nz][:-1] - 1)
    return np.cumsum(out)


def unique_ints(a: np.ndarray) -> np.ndarray:
    """``np.unique(a)`` of an integer array (its distinct values, ascending), without what
    np.unique brings in: numpy.ma, imported on its first call (6 ms of a check's start)."""
    a = np.sort(a)
    if len(a) < 2:
        return a
    keep = np.empty(len(a), dtype=bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


@dataclass
class TxnArrays:
    """Per transaction (in completion order, as ``TxnHistory.txns``): type, index, process, inv,
    cmp, start, end, and how many micro-ops (``mlen``); per micro-op, in order: an append or a
    read (``app``), its key, an append's value (``val``), a read's length (``rlen``; -1 for a read
    of unknown value); the read elements one read after another (``elems``)."""

    type: np.ndarray
    index: np.ndarray
    process: np.ndarray
    inv: np.ndarray
    cmp: np.ndarray
    start: np.ndarray
    end: np.ndarray
    mlen: np.ndarray
    app: np.ndarray
    key: np.ndarray
    val: np.ndarray
    rlen: np.ndarray
    elems: np.ndarray

    def __post_init__(self):
        self.moff = np.zeros(len(self.mlen) + 1, dtype=np.int64)
        np.cumsum(self.mlen, out=self.moff[1:])
        r = np.maximum(self.rlen, 0)
        self.roff = np.zeros(len(r) + 1, dtype=np.int64)
        np.cumsum(r, out=self.roff[1:])

    def __len__(self) -> int:
        return len(self.type)

    def txn(self, i: int) -> Txn:
        return self.txns([i])[0]

    def txns(self, ids) -> list[Txn]:
        """The transactions of these places, built together (one gather per field)."""
        ids = np.asarray(ids, dtype=np.int64)
        mo = ranges(self.moff[ids], self.mlen[ids])
        rlen = self.rlen[mo]
        els = self.elems[ranges(self.roff[mo], np.maximum(rlen, 0))].tolist()
        mops = []
        e = 0
        for app, k, v, n in zip(self.app[mo].tolist(), self.key[mo].tolist(), self.val[mo].tolist(), rlen.tolist()):
            if app:
                mops.append(("append", k, v))
            elif n < 0:
                mops.append(("r", k, None))
            else:
                mops.append(("r", k, tuple(els[e:e + n])))
                e += n
        out = []
        m = 0
        for i, ln, index, proc, typ, inv, cmp_, start, end in zip(
                ids.tolist(), self.mlen[ids].tolist(), self.index[ids].tolist(), self.process[ids].tolist(),
                self.type[ids].tolist(), self.inv[ids].tolist(), self.cmp[ids].tolist(), self.start[ids].tolist(),
                self.end[ids].tolist()):
            out.append(Txn(i, index, proc, typ, mops[m:m + ln], inv, cmp_, start, end))
            m += ln
        return out

    def read_value(self, mop: int):
        """A read micro-op's value: a tuple, or None."""
        n = int(self.rlen[mop])
        r = int(self.roff[mop])
        return None if n < 0 else tuple(self.elems[r:r + n].tolist())


class LazyTxns(Sequence):
    """``TxnHistory.txns`` over ``TxnArrays``: each ``Txn`` built the first time it is asked for."""

    def __init__(self, arrays: TxnArrays):
        self.arrays = arrays
        self._built: dict[int, Txn] = {}
        self._all: list[Txn] | None = None

    def __len__(self) -> int:
        return len(self.arrays)

    def __getitem__(self, i):
        if self._all is not None:
            return self._all[i]
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        t = self._built.get(i)
        if t is None:
            t = self._built[i] = self.arrays.txn(i)
        return t

    def __iter__(self):
        if self._all is None:
            built = self.arrays.txns(np.arange(len(self)))
            self._all = [self._built.get(i) or t for i, t in enumerate(built)]
        return iter(self._all)

    def take(self, ids: list[int]) -> list[Txn]:
        """``[self[i] for i in ids]``, those not built yet built together."""
        if self._all is None:
            todo = [i for i in dict.fromkeys(ids) if i not in self._built]
            if todo:
                self._built.update(zip(todo, self.arrays.txns(todo)))
        return [self[i] for i in ids]

    def column(self, name: str) -> np.ndarray:
        if name == "id":  # (a transaction's id is its place)
            return np.arange(len(self), dtype=np.int64)
        return getattr(self.arrays, name)


def column(txns, name: str, dtype=np.int64) -> np.ndarray:
    """One field of every transaction as an array: from the arrays when there are some."""
    if isinstance(txns, LazyTxns):
        return txns.column(name).astype(dtype, copy=False)
    return np.fromiter((getattr(t, name) for t in txns), dtype=dtype, count=len(txns))


__all__ = ["LazyTxns", "TxnArrays", "column", "ranges"]
