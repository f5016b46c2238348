"""``History``: all operations of a run (the merge of its recorders) in completion order, with
its header; writing and reading the interchange format (JSON Lines, optionally gzip)."""

from __future__ import annotations

import gzip
import io
import json
import struct
from array import array
from typing import Any, Iterable, Iterator

from .columns import Columns, _Ints
from .jsonl import VALUE_VALIDATORS, _Lines, _num, _parse_op
from .model import FORMAT_VERSION, NO_INT, ErrorInfo, HistoryFormatError, Op


class History:
    """All operations of a run, ordered by end time, with a header."""

    def __init__(self, workload: str, params: dict | None = None, cols: Columns | None = None):
        self.workload = workload
        self.params = dict(params or {})
        self.cols = cols if cols is not None else Columns()
        self._order: array | None = None
        #: the rest of a scenario's run record (engine, topology, expectation, fault windows,
        #: phases, marks, status samples, engine events, check options), or None for a bare
        #: history; saved in the header's "run" field (docs/history-format.md)
        self.run: dict | None = None

    # -- building -------------------------------------------------------------------------
    @classmethod
    def merge(cls, workload: str, params: dict, parts: Iterable[Columns]) -> "History":
        out = Columns()
        for p in parts:
            p.flush()
            fmap = [out.f_code(n) for n in p.f_names]
            nmap = [out.node_code(n) for n in p.node_names]
            base = len(out)
            out.process.extend(p.process)
            out.f.extend(p.f if fmap == list(range(len(fmap))) else array("B", map(fmap.__getitem__, p.f)))
            out.type.extend(p.type)
            out.start.extend(p.start)
            out.end.extend(p.end)
            if nmap == list(range(len(nmap))):
                out.node.extend(p.node)
            else:
                nm = nmap + [-1]  # index -1 -> -1
                out.node.extend(array("h", map(nm.__getitem__, p.node)))
            out.ival.extend(p.ival)
            out.errno.extend(p.errno)
            out.ecode.extend(p.ecode)
            out.ecls.extend(p.ecls)
            for k, v in p.objs.items():
                out.objs[base + k] = v
            for k, v in p.msgs.items():
                out.msgs[base + k] = v
        return cls(workload, params, out)

    def add(self, process: int, f: str, value: Any, type_: str, start: float, end: float,
            node: str | None = None, error: ErrorInfo | None = None) -> None:
        self.cols.append(process, f, value, type_, start, end, node, error)
        self._order = None

    # -- reading --------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.cols)

    def order(self) -> array:
        """Row indices sorted by (end, start), ties in insertion order."""
        self.cols.flush()
        if self._order is None or len(self._order) != len(self.cols):
            c = self.cols
            n = len(c)
            if n > 2048:
                import numpy as np
                end = np.frombuffer(c.end, dtype=np.float64) if n else np.empty(0)
                start = np.frombuffer(c.start, dtype=np.float64) if n else np.empty(0)
                idx = np.lexsort((start, end))  # stable: ties keep insertion order
                del end, start  # release the buffer views so the arrays can grow again
                self._order = array("l", idx.astype(np.int64).tobytes()) if array("l").itemsize == 8 \
                    else array("l", idx.tolist())
            else:
                self._order = array("l", sorted(range(n), key=lambda i: (c.end[i], c.start[i])))
        return self._order

    def __iter__(self) -> Iterator[Op]:
        op = self.cols.op
        for k, i in enumerate(self.order()):
            yield op(i, k)

    def header(self) -> dict:
        head = {"history": FORMAT_VERSION, "workload": self.workload, "params": self.params}
        if self.run is not None:
            head["run"] = self.run
        return head

    # -- interchange format ---------------------------------------------------------------
    def write_jsonl(self, path, compresslevel: int = 6) -> None:
        """Write the history; gzip when the path ends with ``.gz``."""
        path = str(path)
        if path.endswith(".gz"):
            with gzip.open(path, "wt", encoding="utf-8", compresslevel=compresslevel) as fh:
                self.dump(fh)
        else:
            with open(path, "w", encoding="utf-8") as fh:
                self.dump(fh)

    def dump(self, fh: io.TextIOBase) -> None:
        enc = json.JSONEncoder(separators=(",", ":")).encode
        fh.write(enc(self.header()) + "\n")
        c = self.cols
        c.flush()
        fjs = [enc(n) for n in c.f_names]
        njs = [enc(n) for n in c.node_names] + ["null"]  # node -1 -> null
        tjs = ['"ok"', '"fail"', '"info"']
        process, f, type_, start, end, node, ival = c.process, c.f, c.type, c.start, c.end, c.node, c.ival
        errno, objs, msgs = c.errno, c.objs, c.msgs
        out = []
        for i in self.order():
            v = ival[i]
            if v != NO_INT:
                vs = str(v)
            else:
                o = objs.get(i)
                vs = enc(o.tolist() if type(o) is _Ints else o)
            if errno[i] == 0 and i not in msgs:
                es = "null"
            else:
                es = enc(c.error(i).to_json())
            out.append(f'{{"process":{process[i]},"f":{fjs[f[i]]},"value":{vs},"type":{tjs[type_[i]]},'
                       f'"start":{_num(start[i])},"end":{_num(end[i])},"node":{njs[node[i]]},"error":{es}}}\n')
            if len(out) >= 4096:
                fh.write("".join(out))
                out.clear()
        fh.write("".join(out))

    @classmethod
    def read_jsonl(cls, path) -> "History":
        """Read a history file, plain or gzip (detected by its magic bytes, not its name)."""
        path = str(path)
        try:
            raw = open(path, "rb")
        except OSError as e:
            raise HistoryFormatError(f"{path}: cannot open: {e.strerror or e}") from None
        with raw:
            magic = raw.read(2)
            raw.seek(0)
            if magic == b"\x1f\x8b":
                with gzip.GzipFile(fileobj=raw, mode="rb") as fh:
                    return cls.load(fh, path)
            return cls.load(raw, path)

    @classmethod
    def load(cls, fh, name: str = "<history>") -> "History":
        """Read the interchange format from an open file (text or binary lines)."""
        lines = _Lines(fh, name)
        first = lines.next()
        if first is None or not first.strip():
            raise HistoryFormatError(f"{name}:1: empty file, expected a header line")
        try:
            head = json.loads(lines.text(first, 1))
        except ValueError as e:
            raise HistoryFormatError(f"{name}:1: header is not JSON: {e}") from None
        if not isinstance(head, dict) or "history" not in head or not isinstance(head.get("workload"), str):
            raise HistoryFormatError(
                f'{name}:1: header must be {{"history": 1, "workload": "<name>", "params": {{...}}}}')
        if head["history"] != FORMAT_VERSION or isinstance(head["history"], bool):
            raise HistoryFormatError(f"{name}:1: unsupported history format version {head['history']!r} "
                                     f"(this reader knows {FORMAT_VERSION})")
        params = head.get("params")
        if params is None:
            params = {}
        if not isinstance(params, dict):
            raise HistoryFormatError(f"{name}:1: header params must be an object")
        h = cls(head["workload"], params)
        run = head.get("run")
        if run is not None and not isinstance(run, dict):
            raise HistoryFormatError(f"{name}:1: header run must be an object")
        h.run = run
        check_value = VALUE_VALIDATORS.get(head["workload"])
        add = h.cols.append
        while True:
            batch, first_lineno = lines.batch(4096)
            if not batch:
                break
            parsed = None
            try:  # one json.loads per batch: "[" + lines + "]"
                if type(batch[0]) is bytes:
                    parsed = json.loads(b"[" + b",".join(batch) + b"]")
                else:
                    parsed = json.loads("[" + ",".join(batch) + "]")
                if len(parsed) != len(batch):
                    parsed = None
            except ValueError:
                parsed = None
            linenos = None
            if parsed is None:  # find the bad line (or skip blank lines) one by one
                parsed, linenos = [], []
                for k, line in enumerate(batch):
                    text = lines.text(line, first_lineno + k)
                    if not text.strip():
                        continue
                    try:
                        parsed.append(json.loads(text))
                    except ValueError as e:
                        raise HistoryFormatError(f"{name}:{first_lineno + k}: not JSON: {e}") from None
                    linenos.append(first_lineno + k)
            flat: list = []
            try:
                for k, d in enumerate(parsed):
                    row = _parse_op(d)
                    if check_value is not None:
                        check_value(row[1], row[3], row[2])
                    flat += row
                h.cols.extend_flat(flat)
            except (KeyError, TypeError, ValueError, OverflowError, struct.error) as e:
                err = e
                if len(flat) == 8 * len(parsed):  # every op parsed: a storage limit was hit
                    k = 0
                    try:
                        for k in range(len(parsed)):
                            add(*flat[8 * k: 8 * k + 8])
                    except (KeyError, TypeError, ValueError, OverflowError) as e2:
                        err = e2
                lineno = linenos[k] if linenos is not None else first_lineno + k
                what = f"missing field {err}" if isinstance(err, KeyError) else str(err)
                raise HistoryFormatError(f"{name}:{lineno}: bad operation: {what}") from None
        return h
