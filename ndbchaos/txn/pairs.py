"""Pairs (key, element) of a list-append history coded as one int64 each, and their lookups:
the key's offset in the keys' range times the values' span, plus the element's offset (0 stands
for the empty list, before any element). Codes are looked up in tables indexed by code while
their space is small, else sorted and binary-searched (``list_append_fast``)."""

from __future__ import annotations

import numpy as np


def ints(xs: list) -> np.ndarray | None:
    """xs as int64, or None when any is not an int (bool included) or does not fit."""
    if xs and set(map(type, xs)) != {int}:
        return None
    try:
        return np.fromiter(xs, dtype=np.int64, count=len(xs))
    except OverflowError:
        return None


class Coder:
    """(key, element) pairs as one int64 each; element None (``init``) for the empty list."""

    def __init__(self, keys: np.ndarray, values: np.ndarray):
        self.kmin = int(keys.min()) if len(keys) else 0
        kspan = (int(keys.max()) if len(keys) else 0) - self.kmin + 1
        self.vmin = int(values.min()) if len(values) else 0
        self.vspan = (int(values.max()) if len(values) else 0) - self.vmin + 2  # + the empty list
        self.space = kspan * self.vspan
        self.fits = self.space < 1 << 62 and self.vmin > -(1 << 63)  # (vmin - 1 codes the empty list)

    def code(self, k: np.ndarray, v: np.ndarray | None) -> np.ndarray:
        base = (k - self.kmin) * self.vspan
        return base if v is None else base + (v - (self.vmin - 1))

    def value(self, c: np.ndarray) -> np.ndarray:
        return c % self.vspan + (self.vmin - 1)

    def one(self, k, v) -> np.ndarray | None:
        """The code of one pair (v None: the empty list) as an array of one, or None for a pair
        outside the coded ranges (which no micro-op of the history holds)."""
        if type(k) is not int or not 0 <= k - self.kmin < self.space // self.vspan:
            return None
        if v is not None and (type(v) is not int or not 0 < v - (self.vmin - 1) < self.vspan):
            return None
        return self.code(np.array([k], dtype=np.int64), None if v is None else np.array([v], dtype=np.int64))


class _Sorted:
    """Codes (int64) found by binary search: the row each came from, the rows of each."""

    def __init__(self, codes: np.ndarray):
        self.order = np.argsort(codes, kind="stable")
        self.codes = codes[self.order]

    def repeated(self) -> bool:
        return bool(len(self.codes) > 1 and (self.codes[1:] == self.codes[:-1]).any())

    def find(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row of the first equal value, found) for each of c."""
        if not len(self.codes):
            return np.zeros(len(c), dtype=np.int64), np.zeros(len(c), dtype=bool)
        i = np.searchsorted(self.codes, c)
        i[i == len(self.codes)] = 0
        return self.order[i], self.codes[i] == c

    def ranges(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Where the rows of each of c lie in ``order``."""
        return np.searchsorted(self.codes, c, side="left"), np.searchsorted(self.codes, c, side="right")


class _Table:
    """The same as ``_Sorted`` for codes in a small space: tables indexed by code."""

    def __init__(self, codes: np.ndarray, space: int):
        self.count = np.bincount(codes, minlength=space)
        self.row = np.full(space, -1, dtype=np.int32 if len(codes) < 1 << 31 else np.int64)
        self.row[codes] = np.arange(len(codes), dtype=self.row.dtype)
        self._codes, self._order, self._start = codes, None, None

    def repeated(self) -> bool:
        return bool((self.count > 1).any())

    def find(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        row = self.row[c]
        hit = row >= 0
        return np.where(hit, row, 0).astype(np.int64), hit

    @property
    def order(self) -> np.ndarray:
        if self._order is None:
            self._order = np.argsort(self._codes, kind="stable")
        return self._order

    def ranges(self, c: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self._start is None:
            self._start = np.cumsum(self.count) - self.count
        lo = self._start[c]
        return lo, lo + self.count[c]


#: codes go in tables (``_Table``: 12 bytes per code of the space) while their space is at most
#: this many per micro-op, plus a constant; beyond, they are sorted and searched (``_Sorted``)
TABLE_PER_MOP = 2
TABLE_MIN = 1 << 20


def lookups(coder: Coder, n_mops: int):
    """How codes of this coder are looked up: in tables, or sorted and searched."""
    if coder.space <= TABLE_PER_MOP * n_mops + TABLE_MIN:
        return lambda codes: _Table(codes, coder.space)
    return _Sorted
