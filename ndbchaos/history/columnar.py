"""The columnar history file (docs/history-format.md section 1.6): the same header and operations
as the JSONL interchange format, stored as chunks of raw little-endian column arrays, so a large
history is read straight into ``Columns`` (no per-op Python object) and a worker process can
append its operations chunk by chunk (``HistoryAppender``) and still leave a readable file when it
dies mid-run.

File: ``MAGIC``, then blocks ``tag (4 bytes) | payload length (u64 LE) | payload | CRC-32 of the
payload (u32 LE)``: one ``HEAD`` (the JSON header), any number of ``OPS `` chunks, one ``END ``
(the total op count). Nothing here unpickles or evaluates anything read from the file.
"""

from __future__ import annotations

import json
import os
import struct
import sys
import zlib
from typing import Any, Iterable

import numpy as np

from .columns import Columns, _Ints, _IntsRef, _OpenFile, _pack
from .jsonl import MAX_DEPTH, VALUE_VALIDATORS, loads_checked, parse_header, too_deep
from .model import CLASSES, FORMAT_VERSION, NO_INT, TYPES, HistoryFormatError

MAGIC = b"\x93NDBCH\x01\n"
TAG_HEAD, TAG_OPS, TAG_END = b"HEAD", b"OPS ", b"END "
_BLOCK = struct.Struct("<4sQ")
_CRC = struct.Struct("<I")
_CHUNK_HEAD = struct.Struct("<II")
#: (attribute, array type code, numpy little-endian dtype), in their order in a chunk
COLUMNS = (("process", "i", "<i4"), ("f", "B", "u1"), ("type", "B", "u1"), ("start", "d", "<f8"),
           ("end", "d", "<f8"), ("node", "h", "<i2"), ("ival", "q", "<i8"), ("errno", "i", "<i4"),
           ("ecode", "i", "<i4"), ("ecls", "B", "u1"))
ROW_BYTES = sum(np.dtype(d).itemsize for _, _, d in COLUMNS)  # 41
#: ops per chunk written by ``History.write`` (an appender writes what it is given, split at this)
CHUNK_OPS = 65536
#: packed id lists longer than this stay in the file (``_IntsRef``) and are read on use
LAZY_INTS = 4096
#: a block longer than this is rejected (a corrupt length must not make the reader allocate it)
MAX_BLOCK = 1 << 36
_LITTLE = sys.byteorder == "little"
_enc = json.JSONEncoder(separators=(",", ":")).encode


def is_columnar(path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


# -- writing ------------------------------------------------------------------------------

def _block(tag: bytes, payload: bytes) -> bytes:
    return _BLOCK.pack(tag, len(payload)) + payload + _CRC.pack(zlib.crc32(payload))


def header_block(header: dict) -> bytes:
    return _block(TAG_HEAD, _enc(header).encode("utf-8"))


def end_block(total: int) -> bytes:
    return _block(TAG_END, struct.pack("<Q", total))


def chunk_blocks(cols: Columns, rows: np.ndarray | None = None, sparse: dict | None = None) -> Iterable[bytes]:
    """The OPS blocks of ``cols`` (its rows in insertion order, or the rows ``rows`` in that
    order), ``CHUNK_OPS`` ops per block. ``sparse``: for ``rows``, ``{row: position}`` of the rows
    that have an object value or an error message (computed by the caller, once)."""
    n = len(cols) if rows is None else len(rows)
    arrays = [(np.frombuffer(getattr(cols, a), dtype=np.dtype(d).newbyteorder("=")) if len(cols) else
               np.empty(0, dtype=d), d) for a, _, d in COLUMNS]
    if sparse is None:
        keys = sorted(set(cols.objs) | set(cols.msgs))
        pos = keys
    else:
        keys = sorted(sparse, key=sparse.__getitem__)
        pos = [sparse[k] for k in keys]
    j = 0
    names = {"f": cols.f_names, "node": cols.node_names}
    for lo in range(0, n, CHUNK_OPS):
        hi = min(n, lo + CHUNK_OPS)
        parts = []
        for a, d in arrays:
            part = a[lo:hi] if rows is None else a[rows[lo:hi]]
            parts.append(part.astype(d, copy=False).tobytes())
        objs, msgs, ints, ids, texts, text_idx = [], [], [], [], [], {}
        while j < len(keys) and pos[j] < hi:
            k, i = keys[j], pos[j] - lo
            j += 1
            if k in cols.objs:
                o = cols.objs[k]
                if type(o) is _IntsRef:
                    o = o.load()
                if type(o) is _Ints:
                    ints.append([i, len(o)])
                    ids.append(o.tobytes() if _LITTLE else np.frombuffer(o, dtype=np.int64).astype("<i8").tobytes())
                else:
                    objs.append([i, o])
            if k in cols.msgs:
                m = cols.msgs[k]
                t = text_idx.get(m)
                if t is None:
                    t = text_idx[m] = len(texts)
                    texts.append(m)
                msgs.append([i, t])
        meta = dict(names)
        for key, v in (("objs", objs), ("texts", texts), ("msgs", msgs), ("ints", ints)):
            if v:
                meta[key] = v
        mb = _enc(meta).encode("utf-8")
        yield _block(TAG_OPS, b"".join([_CHUNK_HEAD.pack(hi - lo, len(mb)), mb, *parts, *ids]))


def write_history(path, header: dict, cols: Columns, order: np.ndarray | None) -> None:
    """Write a whole history (``order``: its rows in completion order, None when already so)."""
    cols.flush()
    sparse = None
    if order is not None:
        keys = set(cols.objs) | set(cols.msgs)
        if keys:
            inv = np.empty(len(cols), dtype=np.int64)
            inv[order] = np.arange(len(cols), dtype=np.int64)
            sparse = {k: int(inv[k]) for k in keys}
            del inv
        else:
            sparse = {}
    with open(path, "wb") as fh:
        fh.write(MAGIC + header_block(header))
        for b in chunk_blocks(cols, order, sparse):
            fh.write(b)
        fh.write(end_block(len(cols)))


class HistoryAppender:
    """Stream a worker's operations to a columnar file, chunk by chunk.

        w = HistoryAppender(path, "ledger", params)      # the file starts with its header
        w.append(recorder)   # a Recorder (flushed here) or Columns: written as one or more chunks
        rec = Recorder()     # ... the caller starts a fresh one
        w.close()            # writes the end block; a file without it was cut short

    Each ``append`` writes whole blocks and flushes them to the OS, so a process that dies
    leaves every appended chunk readable (``History.read(path, torn="stop")`` or
    ``History.read_parts``); with ``fsync=True`` each append also survives a machine crash.
    """

    def __init__(self, path, workload: str, params: dict | None = None, run: dict | None = None,
                 fsync: bool = False):
        head = {"history": FORMAT_VERSION, "workload": workload, "params": dict(params or {})}
        if run is not None:
            head["run"] = run
        self.path = str(path)
        self.count = 0
        self._fsync = fsync
        self._fh = open(self.path, "wb")
        self._write(MAGIC + header_block(head))

    def _write(self, data: bytes) -> None:
        self._fh.write(data)
        self._fh.flush()
        if self._fsync:
            os.fsync(self._fh.fileno())

    def append(self, cols: Columns) -> int:
        """Write the ops of ``cols`` (in its order); returns how many."""
        if self._fh is None:
            raise ValueError("HistoryAppender is closed")
        cols.flush()
        n = len(cols)
        if n:
            self._write(b"".join(chunk_blocks(cols)))
            self.count += n
        return n

    def close(self) -> None:
        if self._fh is not None:
            try:
                self._write(end_block(self.count))
            finally:
                self._fh.close()
                self._fh = None

    def __enter__(self) -> "HistoryAppender":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# -- reading ------------------------------------------------------------------------------

class _Reader:
    def __init__(self, path: str, torn: str):
        self.path = path
        self.torn = torn
        self.texts: dict[str, str] = {}
        self.file: _OpenFile | None = None  # kept open for the id lists left in the file

    def fail(self, offset: int, why: str):
        raise HistoryFormatError(f"{self.path}:offset {offset}: {why}") from None


def read_columnar(path, into: Columns | None = None, torn: str = "error"
                  ) -> tuple[str, dict, dict | None, Columns, bool]:
    """Read a columnar history file into ``into`` (a new Columns when None).

    Returns ``(workload, params, run, columns, complete)``. ``torn="error"``: a file cut short
    (no end block, or a last block shorter than its length says) raises HistoryFormatError naming
    the offset; ``torn="stop"`` (a spool of a process that died) keeps every complete chunk and
    returns ``complete=False`` (and ``workload=None`` when not even the header is complete).
    A corrupt block (CRC mismatch, bad contents) always raises."""
    path = str(path)
    r = _Reader(path, torn)
    try:
        fh = open(path, "rb")
    except OSError as e:
        raise HistoryFormatError(f"{path}: cannot open: {e.strerror or e}") from None
    out = into if into is not None else Columns()
    n0 = len(out)
    workload = params = run = check_value = None
    with fh:
        size = os.fstat(fh.fileno()).st_size
        magic = fh.read(len(MAGIC))
        if magic != MAGIC:
            if MAGIC.startswith(magic):  # died before its header was out
                if torn == "stop":
                    return None, {}, None, out, False
                r.fail(0, "truncated: no complete header block")
            r.fail(0, "not a columnar history (bad magic bytes)")
        offset = len(MAGIC)
        complete = False
        chunks = 0
        while True:
            hb = fh.read(_BLOCK.size)
            tag, length = _BLOCK.unpack(hb) if len(hb) == _BLOCK.size else (hb[:4], 0)
            if hb and tag not in (TAG_HEAD, TAG_OPS, TAG_END) and len(hb) >= 4:
                r.fail(offset, f"corrupt: unknown block tag {tag!r}")
            if not hb or len(hb) < _BLOCK.size or offset + _BLOCK.size + length + _CRC.size > size:
                if torn == "stop":
                    break  # a spool cut short: keep the complete chunks (none before its header)
                if workload is None:
                    r.fail(offset, "truncated: no complete header block")
                if not hb:
                    r.fail(offset, f"truncated: the file ends without its end block ({len(out) - n0} ops in "
                                   f"{chunks} complete chunks before this offset; the writer did not finish)")
                r.fail(offset, f"truncated: block {tag!r} is cut short (it needs {length} bytes, the file "
                               f"has {max(0, size - offset - _BLOCK.size)} after its header)")
            if length > MAX_BLOCK:
                r.fail(offset, f"corrupt: block length {length} too large")
            payload = fh.read(length)
            crc = fh.read(_CRC.size)
            if len(payload) < length or len(crc) < _CRC.size:
                r.fail(offset, f"truncated: block {tag!r} is cut short (the file shrank while read)")
            if zlib.crc32(payload) != _CRC.unpack(crc)[0]:
                r.fail(offset, f"corrupt: CRC mismatch in block {tag!r}")
            if workload is None:
                if tag != TAG_HEAD:
                    r.fail(offset, f"expected the header block, found {tag!r}")
                try:
                    head = loads_checked(payload.decode("utf-8"), f"{path}:offset {offset}: header")
                except HistoryFormatError:
                    raise
                except (UnicodeDecodeError, ValueError) as e:
                    r.fail(offset, f"header is not JSON: {e}")
                workload, params, run = parse_header(head, f"{path}:offset {offset}")
                check_value = VALUE_VALIDATORS.get(workload)
            elif tag == TAG_OPS:
                _decode_chunk(r, offset, offset + _BLOCK.size, payload, out, check_value)
                chunks += 1
            elif tag == TAG_END:
                if length != 8:
                    r.fail(offset, "corrupt: end block must hold the op count (8 bytes)")
                (total,) = struct.unpack("<Q", payload)
                if total != len(out) - n0:
                    r.fail(offset, f"corrupt: end block says {total} ops, the chunks hold {len(out) - n0}")
                if fh.read(1):
                    r.fail(offset + _BLOCK.size + length + _CRC.size, "corrupt: data after the end block")
                complete = True
                break
            else:
                r.fail(offset, "corrupt: a second header block")
            offset += _BLOCK.size + length + _CRC.size
            del payload
    return workload, params, run, out, complete


_BRACKET = np.zeros(256, dtype=np.int8)
_BRACKET[[91, 123]] = 1  # [ {
_BRACKET[[93, 125]] = -1  # ] }


def json_depth(raw: bytes) -> int:
    """How deep valid JSON text nests (lists and objects; brackets inside strings aside), in a
    few numpy passes over its bytes instead of a walk of every value it holds."""
    a = np.frombuffer(raw, dtype=np.uint8)
    if not len(a):
        return 0
    quote = a == 34
    if b"\\" in raw:  # a quote after an odd run of backslashes is escaped
        bs = a == 92
        seen = np.cumsum(bs, dtype=np.int32)
        run = seen - np.maximum.accumulate(np.where(bs, 0, seen))  # the backslashes ending at each byte
        quote[1:] &= (run[:-1] & 1) == 0
    step = _BRACKET[a]
    step[(np.cumsum(quote, dtype=np.int32) & 1) == 1] = 0  # inside a string
    return int(np.cumsum(step, dtype=np.int32).max())


def _decode_chunk(r: _Reader, offset: int, data_offset: int, payload: bytes, out: Columns, check_value) -> None:
    def bad(why: str):
        r.fail(offset, f"bad chunk: {why}")

    if len(payload) < _CHUNK_HEAD.size:
        bad("shorter than its header")
    n, mlen = _CHUNK_HEAD.unpack_from(payload)
    off = _CHUNK_HEAD.size + mlen
    if off > len(payload):
        bad("metadata longer than the chunk")
    raw = payload[_CHUNK_HEAD.size:off]
    try:
        meta = json.loads(raw.decode("utf-8"))
    except RecursionError:
        bad(f"a value nested deeper than {MAX_DEPTH} levels")
    except (UnicodeDecodeError, ValueError) as e:
        bad(f"metadata is not JSON: {e}")
    if type(meta) is not dict:
        bad("metadata must be an object")
    fnames, nnames = meta.get("f", []), meta.get("node", [])
    objs, msgs, ints = meta.get("objs", []), meta.get("msgs", []), meta.get("ints", [])
    texts = meta.get("texts", [])
    for what, v in (("f", fnames), ("node", nnames), ("texts", texts)):
        if type(v) is not list or not all(type(x) is str for x in v):
            bad(f"metadata {what} must be a list of strings")
    for what, v, second in (("objs", objs, None), ("msgs", msgs, int), ("ints", ints, int)):
        if type(v) is not list or not all(type(e) is list and len(e) == 2 and type(e[0]) is int and 0 <= e[0] < n
                                          and (second is None or type(e[1]) is second) for e in v):
            bad(f"metadata {what} must be a list of [op index, value] pairs with indexes below {n}")
    if json_depth(raw) > MAX_DEPTH + 3:  # {"objs": [[i, value], ...]}: a value's outermost list or object at 4
        for i, v in objs:
            if too_deep(v):
                r.fail(offset, f"op {i} of this chunk: bad operation: a value nested deeper than {MAX_DEPTH} levels")
    if not all(0 <= t < len(texts) for _, t in msgs):
        bad("metadata msgs must index the chunk's texts")
    counts = [c for _, c in ints]
    if any(c < 1 for c in counts):
        bad("an id list must hold at least one id")
    need = off + n * ROW_BYTES + 8 * sum(counts)
    if need != len(payload):
        bad(f"{len(payload)} bytes where {n} ops and {sum(counts)} ids need {need}")
    view: dict[str, Any] = {}
    o = off
    for a, _, d in COLUMNS:
        dt = np.dtype(d)
        view[a] = np.frombuffer(payload, dtype=dt, count=n, offset=o)
        o += n * dt.itemsize

    def first(mask: np.ndarray, why: str):
        k = int(np.flatnonzero(mask)[0])
        r.fail(offset, f"op {k} of this chunk: bad operation: {why}")

    if n:
        m = view["f"] >= len(fnames)
        if m.any():
            first(m, "f is not one of the chunk's operation names")
        m = (view["node"] < -1) | (view["node"] >= len(nnames))
        if m.any():
            first(m, "node is not one of the chunk's node names")
        m = view["type"] >= len(TYPES)
        if m.any():
            first(m, "type must be ok, fail or info")
        m = view["ecls"] >= len(CLASSES)
        if m.any():
            first(m, "error class must be temporary, unknown, permanent or null")
        s, e = view["start"], view["end"]
        m = ~(np.isfinite(s) & np.isfinite(e))
        if m.any():
            first(m, "start and end must be finite numbers (seconds)")
        m = e < s
        if m.any():
            k = int(np.flatnonzero(m)[0])
            first(m, f"end {float(e[k])} is before start {float(s[k])}")
    sparse_rows = [i for i, _ in objs] + [i for i, _ in ints]
    if len(set(sparse_rows)) != len(sparse_rows):
        bad("an op has two values")
    if len(set(i for i, _ in msgs)) != len(msgs):
        bad("an op has two error messages")
    ival = view["ival"]
    if sparse_rows and (ival[sparse_rows] != NO_INT).any():
        bad("an op with an integer value also has an object value")
    # workload value shapes: every non-integer value, and one op per (f, type) of integer values
    if check_value is not None and n:
        iv = ival != NO_INT
        key = view["f"].astype(np.int64) * 4 + view["type"]
        uk, idx = np.unique(key[iv], return_index=True)
        cands = [(int(k), int(ival[k])) for k in np.flatnonzero(iv)[idx]]
        values = dict((i, v) for i, v in objs)
        values.update((i, []) for i, _ in ints)  # a packed id list: a list of ints
        cands += [(int(k), values.get(int(k))) for k in np.flatnonzero(~iv)]
        for k, v in cands:
            try:
                check_value(fnames[view["f"][k]], TYPES[view["type"][k]], v)
            except (TypeError, ValueError) as ex:
                r.fail(offset, f"op {k} of this chunk: bad operation: {ex}")
    # append
    try:
        fmap = [out.f_code(x) for x in fnames]
        nmap = [out.node_code(x) for x in nnames]
    except ValueError as ex:
        bad(str(ex))
    base = len(out)
    for a, tc, d in COLUMNS:
        col = view[a]
        if a == "f" and fmap != list(range(len(fmap))):
            col = np.array(fmap or [0], dtype=np.uint8)[col]
        elif a == "node" and nmap != list(range(len(nmap))):
            col = np.array(nmap + [-1], dtype=np.int16)[col]
        if not _LITTLE:
            col = col.astype(np.dtype(d).newbyteorder("="))
        getattr(out, a).frombytes(memoryview(col).cast("B"))
    for i, v in objs:
        out.objs[base + i] = _pack(v)
    texts = [r.texts.setdefault(t, t) for t in texts]  # one string object per distinct message
    for i, t in msgs:
        out.msgs[base + i] = texts[t]
    for i, c in ints:
        if c > LAZY_INTS and _LITTLE:
            if r.file is None:
                try:
                    r.file = _OpenFile(r.path)
                except OSError as e:
                    r.fail(offset, f"cannot open the file again for its id lists: {e.strerror or e}")
            out.objs[base + i] = _IntsRef(r.file, data_offset + o, c)
        else:
            a = _Ints("q")
            a.frombytes(payload[o:o + 8 * c])
            if not _LITTLE:
                a.byteswap()
            out.objs[base + i] = a
        o += 8 * c


__all__ = ["MAGIC", "HistoryAppender", "read_columnar", "write_history", "is_columnar", "chunk_blocks"]
