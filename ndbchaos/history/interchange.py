"""The interchange format of a history (JSON Lines, docs/history-format.md): ``dump_ops`` writes
a history's ops, ``read_ops`` reads a file's back into columns: a chunk at a time through
``loader.ChunkLoader``, a chunk with anything wrong in it line by line (``_load_lines``: one
orjson parse per batch, ``_fast_batch`` column-wise, else op by op naming the bad line)."""

from __future__ import annotations

import gc
import io
import json
import struct
from contextlib import contextmanager

import numpy as np

from .columns import Columns, _Ints, _IntsRef
from .jsonl import (MAX_DEPTH, VALUE_VALIDATORS, _any_big_float, _num, _parse_error, _parse_op, _Source, loads_checked,
                    nesting_line, parse_header, too_deep)
from .loader import ChunkLoader
from .model import NO_INT, TYPE_CODE, HistoryFormatError

try:  # a C JSON parser, several times faster than json on long histories
    import orjson as _orjson
    _LOADS: tuple = (_orjson.loads, json.loads)
except ImportError:  # pragma: no cover - orjson is a dependency
    _LOADS = (json.loads,)


_NUM_TYPES = {int, float}


def dump_ops(fh: io.TextIOBase, header: dict, c: Columns, order) -> None:
    """Write the header line, then each op's line in ``order`` (row indices), in the one shape
    ``scan.template`` reads column by column."""
    enc = json.JSONEncoder(separators=(",", ":")).encode
    fh.write(enc(header) + "\n")
    c.flush()
    fjs = [enc(n) for n in c.f_names]
    njs = [enc(n) for n in c.node_names] + ["null"]  # node -1 -> null
    tjs = ['"ok"', '"fail"', '"info"']
    process, f, type_, start, end, node, ival = c.process, c.f, c.type, c.start, c.end, c.node, c.ival
    errno, objs, msgs = c.errno, c.objs, c.msgs
    out = []
    for i in order:
        v = ival[i]
        if v != NO_INT:
            vs = str(v)
        else:
            o = objs.get(i)
            if type(o) is _IntsRef:
                o = o.load()
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


def read_ops(fh, name: str = "<history>") -> tuple[str, dict, dict | None, Columns]:
    """The workload, params, run record and op columns of an interchange file open for reading
    (binary or text), in file order. The op lines are read a chunk at a time (``loader``): those
    in the shape ``dump_ops`` writes column by column, the others with orjson; a chunk with
    anything wrong in it line by line, naming the line."""
    src = _Source(fh, name)
    first = src.header()
    if first is None or not first.strip():
        raise HistoryFormatError(f"{name}:1: empty file, expected a header line")
    text = src.text(first, 1)
    try:
        head = loads_checked(text, f"{name}:1: header")
    except HistoryFormatError:
        raise
    except ValueError as e:
        raise HistoryFormatError(f"{name}:1: header is not JSON: {e}{_jepsen_hint(text)}") from None
    try:
        workload, params, run = parse_header(head, f"{name}:1")
    except HistoryFormatError as e:
        raise HistoryFormatError(f"{e}{_jepsen_hint(text)}") from None
    cols = Columns()
    check_value = VALUE_VALIDATORS.get(head["workload"])

    def by_line(buf: bytes, first_lineno: int) -> int:
        return _load_lines(cols, buf, first_lineno, src, check_value)
    loader = ChunkLoader(cols, check_value, by_line, name)
    with without_gc():  # few containers are built; the collector would only scan them
        for buf in src.chunks():
            src.lineno += loader.feed(buf, src.lineno + 1)
            del buf  # the source reads into it again
    return workload, params, run, cols


def _jepsen_hint(first_line: str) -> str:
    """What to say when a history's first line is not our header but looks like Jepsen's or
    Elle's history (a JSON array, an EDN map, an op with a process and a type)."""
    t = first_line.lstrip()
    jepsen = t.startswith(("[", "{:")) or ('"process"' in t and '"type"' in t and '"history"' not in t)
    return " (a Jepsen/Elle history? judge it with --model list-append or rw-register)" if jepsen else ""


@contextmanager
def without_gc(freeze: bool = False):
    """The cyclic garbage collector off while a history's objects are built (they hold no cycles;
    its passes over millions of new containers would be most of the reading time), back as it was
    afterwards. ``freeze``: what was built is moved out of the collector's sight (``gc.freeze``)
    instead of scanned once more later; only for a process that ends after its check (the CLI),
    since anything frozen is never collected again."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            if freeze:
                gc.freeze()
            gc.enable()


def _load_lines(cols: Columns, buf: bytes, first_lineno: int, src: _Source, check_value) -> int:
    """Append a chunk of op lines (buf, ending with a newline) in batches of 4096 lines: one
    orjson parse per batch (json for a batch orjson cannot take exactly), then ``_fast_batch``;
    op by op when that fails, naming the first bad line. Returns the number of lines."""
    name = src.name
    add = cols.append
    lines = buf.split(b"\n")
    lines.pop()  # after the last newline
    for off in range(0, len(lines), 4096):
        batch = lines[off:off + 4096]
        first = first_lineno + off
        parsed = None
        joined = b"[" + b",".join(batch) + b"]"
        for loads in _LOADS:  # one parse per batch: orjson, else (big ints, NaN ...) json
            try:
                parsed = loads(joined)
            except (ValueError, RecursionError):  # RecursionError: json, on a value nested too deep
                continue
            if loads is not json.loads and _any_big_float(parsed):
                parsed = None
                continue  # orjson turns integers beyond 64 bits into floats: json keeps them
            if len(parsed) != len(batch):
                parsed = None
            break
        del joined
        linenos = None
        if parsed is None:  # find the bad line (or skip blank lines) one by one
            parsed, linenos = [], []
            for k, line in enumerate(batch):
                text = src.text(line, first + k)
                if not text.strip():
                    continue
                try:
                    d = json.loads(text)
                except RecursionError:
                    _nested(name, first + k)
                except ValueError as e:
                    raise HistoryFormatError(f"{name}:{first + k}: not JSON: {e}") from None
                if nesting_line(line) and type(d) is dict and too_deep(d.get("value")):
                    _nested(name, first + k)
                parsed.append(d)
                linenos.append(first + k)
        else:  # a value nested too deep is refused before anything walks it
            for k, line in enumerate(batch):
                if nesting_line(line) and type(parsed[k]) is dict and too_deep(parsed[k].get("value")):
                    _nested(name, first + k)
        if linenos is None and _fast_batch(cols, parsed, check_value):
            continue
        flat: list = []
        try:
            for k, d in enumerate(parsed):
                row = _parse_op(d)
                if check_value is not None:
                    check_value(row[1], row[3], row[2])
                flat += row
            cols.extend_flat(flat)
        except (KeyError, TypeError, ValueError, OverflowError, struct.error) as e:
            err = e
            if len(flat) == 8 * len(parsed):  # every op parsed: a storage limit was hit
                k = 0
                try:
                    for k in range(len(parsed)):
                        add(*flat[8 * k: 8 * k + 8])
                except (KeyError, TypeError, ValueError, OverflowError) as e2:
                    err = e2
            lineno = linenos[k] if linenos is not None else first + k
            what = f"missing field {err}" if isinstance(err, KeyError) else str(err)
            raise HistoryFormatError(f"{name}:{lineno}: bad operation: {what}") from None
    return len(lines)


def _nested(name: str, lineno: int):
    raise HistoryFormatError(f"{name}:{lineno}: bad operation: a value nested deeper than {MAX_DEPTH} levels") from None


def _fast_batch(cols: Columns, parsed: list, check_value) -> bool:
    """Append a batch of decoded op lines column-wise, checking them with a few passes over
    each column instead of per op. Returns False, appending nothing, at anything unusual (a
    missing field, a wrong type, a bad value): the caller then takes the op-by-op path, which
    names the line and the reason."""
    try:
        P = [d["process"] for d in parsed]
        F = [d["f"] for d in parsed]
        T = [d["type"] for d in parsed]
        S = [d["start"] for d in parsed]
        E = [d["end"] for d in parsed]
        V = [d.get("value") for d in parsed]
        N = [d.get("node") for d in parsed]
        ER = [d.get("error") for d in parsed]
    except (KeyError, TypeError, AttributeError):
        return False
    if (set(map(type, P)) != {int} or set(map(type, F)) != {str} or set(map(type, T)) != {str}
            or not set(T) <= TYPE_CODE.keys()
            or not set(map(type, S)) | set(map(type, E)) <= _NUM_TYPES
            or not set(map(type, N)) <= {str, type(None)}):
        return False
    try:
        p = np.array(P, dtype=np.int64)
        s, e = np.array(S, dtype=np.float64), np.array(E, dtype=np.float64)
    except (OverflowError, ValueError):
        return False
    if (p.min() < -2**31 or p.max() >= 2**31 or not np.isfinite(s).all() or not np.isfinite(e).all()
            or (e < s).any()):
        return False
    if ER.count(None) != len(ER):
        try:
            ER = [None if x is None else _parse_error(x) for x in ER]
        except (TypeError, ValueError):
            return False
    if check_value is not None:
        # every value that is not a plain int, and one op per (f, type) whose value is one
        seen = set()
        try:
            for f_, t_, v in zip(F, T, V):
                if type(v) is int:
                    if (f_, t_) in seen:
                        continue
                    seen.add((f_, t_))
                check_value(f_, t_, v)
        except (TypeError, ValueError):
            return False
    try:
        cols.extend_columns(P, F, V, T, S, E, N, ER)
    except (KeyError, TypeError, ValueError, OverflowError, struct.error):
        return False
    return True
