"""``Recorder``: the per-thread recorder of a client's operations (the hot path)."""

from __future__ import annotations

import pickle
import struct
from typing import Any, Iterable

from .columns import Columns
from .model import _FLUSH_FLAT, ErrorInfo, Op


class Recorder(Columns):
    """Per-thread recorder (not thread safe: one per client thread). ``record`` is the hot path.

    Recorded ops are buffered and folded into the columns every 1024 ops; ``len``, ``value``,
    ``error``, ``op``, ``to_bytes`` and ``History.merge`` flush first. Call ``flush()`` before
    reading the column arrays directly. A malformed op (an unknown type, a process that is not an
    int) is therefore reported when its batch is folded, by the ``record`` or ``flush`` call
    that folds it; the ops of that batch before it are kept, the ones after it dropped.
    """

    __slots__ = ("_buf",)

    def __init__(self, f_names: Iterable[str] = (), node_names: Iterable[str] = ()):
        super().__init__(f_names, node_names)
        self._buf: list = []

    def record(self, process: int, f: str, value: Any, type_: str, start: float, end: float,
               node: str | None, error: ErrorInfo | None) -> None:
        buf = self._buf
        buf += (process, f, value, type_, start, end, node, error)
        if len(buf) >= _FLUSH_FLAT:
            self.flush()

    def flush(self) -> None:
        buf = self._buf
        if buf:
            self._buf = []
            try:
                self.extend_flat(buf)
            except (KeyError, TypeError, ValueError, OverflowError, AttributeError, struct.error):
                # A bad op in the batch: fold one by one so the error is raised for that op.
                for k in range(0, len(buf), 8):
                    Columns.append(self, *buf[k:k + 8])

    def append(self, *args) -> None:  # keep insertion order with buffered ops
        self.flush()
        Columns.append(self, *args)

    def __len__(self) -> int:
        return len(self.start) + len(self._buf) // 8

    def value(self, i: int) -> Any:
        self.flush()
        return Columns.value(self, i)

    def raw_value(self, i: int) -> Any:
        self.flush()
        return Columns.raw_value(self, i)

    def error(self, i: int) -> ErrorInfo | None:
        self.flush()
        return Columns.error(self, i)

    def op(self, i: int, index: int | None = None) -> Op:
        self.flush()
        return Columns.op(self, i, index)

    def to_bytes(self) -> bytes:
        self.flush()
        state = {k: getattr(self, k) for k in Columns._STATE}
        return pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)

    @classmethod
    def from_bytes(cls, data: bytes) -> "Recorder":
        state = pickle.loads(data)
        r = cls(state.pop("f_names"), state.pop("node_names"))
        for k, v in state.items():
            setattr(r, k, v)
        return r
