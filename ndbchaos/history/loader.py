"""A chunk of JSON Lines into a history's columns (``ChunkLoader``): the lines in the shape
``History.dump`` writes decoded column by column (``scan.template``), the others one by one with
orjson (a long id list by ``idlists``, packed, past ``SPILL_INTS`` ids kept in a temporary file);
a chunk with anything wrong in it goes whole to the line-by-line reader
(``interchange._load_lines``), which names the line."""

from __future__ import annotations

import os

import numpy as np

from .columns import Columns, _Ints, _IntsRef, _OpenFile
from .idlists import int_list, long_op
from .jsonl import PAD, _big_float, _parse_op, nesting_line, too_deep
from .model import NO_INT
from .scan import LONG_LINE, _Chunk, _loads, template

#: a long id list (more ids than this) goes to a temporary file (``_IntsRef``), as the columnar
#: reader leaves such lists in its file: a 20M-op history's reads are not held in memory
SPILL_INTS = 1 << 16
_COLUMNS = (("process", np.int32), ("f", np.uint8), ("type", np.uint8), ("start", np.float64),
            ("end", np.float64), ("node", np.int16), ("ival", np.int64), ("errno", np.int32),
            ("ecode", np.int32), ("ecls", np.uint8))


class Fallback(Exception):
    """The chunk is not for the fast path: read it line by line (which names a bad line)."""


class ChunkLoader:
    """Appends chunks of op lines to ``cols``: template lines column by column, the others one
    by one with orjson; ``fallback(buf, first_lineno)`` (the line-by-line reader) takes a chunk
    whenever anything in it is not plainly valid, before anything of it is appended."""

    def __init__(self, cols, check_value, fallback, name: str):
        self.cols = cols
        self.check_value = check_value
        self.fallback = fallback
        self.name = name
        self._spill = None  # the temporary file of long id lists (columns._OpenFile)
        self._spill_at = 0
        self._checked: set = set()  # (f code, type, value is null) already validated
        self._seen: dict = {}  # error texts decoded (template)

    def feed(self, buf, first_lineno: int) -> int:
        """Append the op lines of buf[PAD:] (whole lines, first_lineno the first's number; a
        bytes-like object, valid during the call); the number of lines."""
        before = len(self.cols)
        try:
            n = self._fast(buf)
            if n is not None:
                return n
        except Fallback:
            pass
        except Exception:  # a case the fast path did not foresee: the line-by-line reader decides
            if len(self.cols) != before:  # (never: the chunk is appended last, in one go)
                raise
        return self.fallback(bytes(buf[PAD:]), first_lineno)

    # -- the fast path ---------------------------------------------------------------------------
    def _fast(self, buf) -> int | None:
        if type(buf) is not memoryview and len(buf) - PAD > LONG_LINE and buf.find(b"\n", PAD) == len(buf) - 1:
            end = len(buf) - 1  # one long line (a read)
            if buf[end - 1] == 13:
                end -= 1
            self._others(buf, np.array([PAD]), np.array([end]), None, None)
            return 1
        ch = _Chunk(buf)
        a = ch.a
        sep = np.flatnonzero((a == 10) | (a == 44))  # newlines and commas, in one pass
        isnl = a[sep] == 10
        at = np.flatnonzero(isnl)  # the newlines' places in sep
        nl = sep[at]
        n = len(nl)
        starts = np.empty(n, dtype=np.int64)
        starts[0] = PAD
        starts[1:] = nl[:-1] + 1
        ends = nl.copy()
        cr = (a[nl - 1] == 13) & (ends > starts)
        if cr.any():
            ends[cr] -= 1
        first = np.empty(n, dtype=np.int64)  # each line's first comma (or its newline) in sep
        first[0] = 0
        first[1:] = at[:-1] + 1
        res = template(ch, starts, ends, self._seen, sep, first)
        if res is None:
            return None
        mask, fields = res
        self._resolve(fields)
        self._check_template(fields)
        if mask.all():
            self._append(n, fields, np.arange(n), None, None)
        else:
            self._others(buf, starts, ends, mask, fields)
        return n

    def _others(self, buf: bytes, starts, ends, mask, fields) -> None:
        """Append the lines [starts, ends) of buf: those not in mask one by one (into columns of
        their own), merged in line order with the template lines' fields."""
        cols = self.cols
        if mask is None:
            mask = np.zeros(len(starts), dtype=bool)
        tmp = Columns(cols.f_names, cols.node_names)
        rows = []  # line index of each of tmp's rows
        for k in np.flatnonzero(~mask).tolist():
            op = self._op(buf, int(starts[k]), int(ends[k]))
            if op is not None:
                tmp.append(*op)
                rows.append(k)
        kept = mask.copy()
        kept[rows] = True
        pos = np.cumsum(kept) - 1  # row of each kept line
        self._append(int(np.count_nonzero(kept)), fields, pos[mask], tmp, pos[rows])

    def _resolve(self, fields) -> None:
        """The template fields' f and node names as the columns' codes (registering new ones)."""
        cols = self.cols
        f, node = fields["f"], fields["node"]
        try:
            fmap = [cols.f_code(x) if x is not None and (f == k).any() else 0
                    for k, x in enumerate(fields["f_names"])]
            nmap = [cols.node_code(x) if x is not None and (node == k).any() else -1
                    for k, x in enumerate(fields["node_names"])]
        except ValueError:  # too many names: read line by line, which names the line
            raise Fallback from None
        fields["f"] = np.array(fmap or [0], dtype=np.uint8)[f]
        fields["node"] = np.array(nmap + [-1], dtype=np.int16)[node]

    def _check_template(self, fields) -> None:
        """Value shapes of the template lines: their values are ints or null, so the workload's
        validator sees one line per (f, type, null or not)."""
        check = self.check_value
        if check is None or not len(fields["f"]):
            return
        null = fields["ival"] == NO_INT
        key = fields["f"].astype(np.int64) * 8 + fields["type"] * 2 + null
        names = self.cols.f_names
        types = ("ok", "fail", "info")
        for k in np.flatnonzero(np.bincount(key)).tolist():
            if k in self._checked:
                continue
            i = int(np.argmax(key == k))
            v = None if null[i] else int(fields["ival"][i])
            try:
                check(names[k // 8], types[(k // 2) % 4], v)
            except (TypeError, ValueError):
                raise Fallback from None
            self._checked.add(k)

    def _op(self, buf, start: int, end: int):
        """append()'s arguments for the line buf[start:end], not a template line; None for a
        blank line."""
        try:
            if type(buf) is memoryview:  # the source's buffer: this line, to keep
                buf, start, end = bytes(buf[start:end]), 0, end - start
            if end - start > LONG_LINE:
                got = long_op(buf, start, end)
                if got is not None:
                    d, lo, hi = got
                    op = _parse_op(d)
                    return op[:2] + (self._ids(buf, lo, hi, op),) + op[3:]
            line = buf if start == 0 and end == len(buf) else buf[start:end]
            if not line.strip():
                return None
            d = _loads(line)
            if nesting_line(line) and type(d) is dict and too_deep(d.get("value")):
                raise Fallback  # the line-by-line reader names it
            if _big_float(d.get("value") if type(d) is dict else None):
                raise Fallback  # an integer beyond 64 bits: json keeps it, orjson does not
            op = _parse_op(d)
            if self.check_value is not None:
                self.check_value(op[1], op[3], op[2])
        except (KeyError, TypeError, ValueError, OverflowError):
            raise Fallback from None
        return op

    def _ids(self, buf, lo: int, hi: int, op):
        """The id list buf[lo:hi] packed (``_Ints``), checked; past SPILL_INTS ids written to the
        spill file as it is parsed (``_IntsRef``)."""
        ids = _Ints("q")
        out = [None, 0, 0]  # the spill file once used, where the list starts there, its length

        def put(v: np.ndarray) -> None:
            if out[0] is None and len(ids) + len(v) > SPILL_INTS:
                f = self._spill_file()
                if f is not None:
                    out[0], out[1] = f, self._spill_at
                    self._write(f, ids)
                    del ids[:]
            if out[0] is None:
                ids.frombytes(memoryview(v).cast("B"))
            else:
                self._write(out[0], v)
            out[2] += len(v)
        try:
            got = int_list(buf, lo, hi, put)
        except OSError:  # the spill file cannot take it: the chunk is read line by line
            got = None
        if got is None:
            raise Fallback
        value = ids if out[0] is None else _IntsRef(out[0], out[1], out[2])
        if self.check_value is not None:
            self.check_value(op[1], op[3], value)
        return value

    def _write(self, f, data) -> None:
        data = memoryview(data).cast("B")
        done = 0
        while done < len(data):
            done += os.pwrite(f.fd, data[done:done + (1 << 26)], self._spill_at + done)
        self._spill_at += len(data)

    def _spill_file(self):
        if self._spill is None:
            import tempfile  # (here: it brings random, shutil, bz2 and lzma, some 3 ms a start)
            try:
                fd, path = tempfile.mkstemp(prefix="ndbchaos-ids-")
            except OSError:
                self._spill = False
                return None
            os.unlink(path)
            f = _OpenFile.__new__(_OpenFile)
            f.fd, f.path = fd, f"{self.name} (its read ids, in a temporary file)"
            self._spill = f
        return self._spill or None

    def _append(self, n: int, fields, tpos, tmp, opos) -> None:
        """Append n rows: the template fields at rows tpos, tmp's rows at opos."""
        cols = self.cols
        base = len(cols)
        if tmp is None:
            full = fields
        else:
            fmap = np.array([cols.f_code(x) for x in tmp.f_names] or [0], dtype=np.uint8)
            nmap = np.array([cols.node_code(x) for x in tmp.node_names] + [-1], dtype=np.int16)
            full = {}
            for name, dt in _COLUMNS:
                col = np.zeros(n, dtype=dt)
                if fields is not None and fields[name] is not None:
                    col[tpos] = fields[name]
                if len(opos):
                    o = np.frombuffer(getattr(tmp, name), dtype=dt)
                    if name == "f":
                        o = fmap[o]
                    elif name == "node":
                        o = nmap[o]
                    col[opos] = o
                full[name] = col
            for k, v in tmp.objs.items():
                cols.objs[base + int(opos[k])] = v
            for k, v in tmp.msgs.items():
                cols.msgs[base + int(opos[k])] = v
        for name, dt in _COLUMNS:
            col = full[name]
            if col is None:  # no errors in the chunk
                col = np.zeros(n, dtype=dt)
            getattr(cols, name).frombytes(memoryview(np.ascontiguousarray(col, dtype=dt)).cast("B"))
        if fields is not None and fields["msgs"]:
            cols.msgs.update(zip((base + tpos[fields["msg_rows"]]).tolist(), fields["msgs"]))
