"""The history: every client operation of a run, as evidence.

Recording happens on the hot path of every operation. ``Recorder.record`` only appends one tuple
to a buffer; every 1024 operations the buffer is folded into typed column arrays (a few machine
words per op, no dict per op). Values that are not plain integers and error messages are kept
sparsely, by op index; lists of integers (a ledger read) are kept as packed 64-bit arrays.

A ``History`` is the merge of all recorders of a run, ordered by completion time, plus a header.
It is exported as the interchange format (JSON Lines, optionally gzip; docs/history-format.md):

    {"history": 1, "workload": "<name>", "params": {...}}                      first line
    {"process": int, "f": str, "value": any, "type": "ok"|"fail"|"info",
     "start": float, "end": float, "node": str|null,
     "error": null|{"errno": int|null, "engine_code": int|null,
                    "class": "temporary"|"unknown"|"permanent"|null, "message": str}}

Times are seconds on the run's clock (ndbchaos.clock).

The package:

* ``model``: the type and error-class codes, ``ErrorInfo``, ``Op``, ``HistoryFormatError``;
* ``columns``: ``Columns``, the typed column storage shared by recorders and histories;
* ``recorder``: ``Recorder``, the per-thread recorder on the hot path;
* ``core``: ``History``: the merge of a run's recorders, its order, header and files;
* ``interchange``: writing a history's ops as JSON Lines, reading a file's back into columns;
* ``jsonl``: reading the interchange format in chunks of whole lines, checking each op and value
  shape line by line;
* ``loader``: a chunk's lines into the columns: those in the shape ``dump`` writes column by
  column (``scan``: numpy passes over the chunk), the others one by one (a long id list by
  ``idlists``); a chunk with anything wrong goes line by line;
* ``columnar``: the columnar file (raw column chunks) and ``HistoryAppender``, which streams a
  worker's operations to such a file chunk by chunk.
"""

from __future__ import annotations

from .columnar import HistoryAppender
from .columns import Columns
from .core import History
from .jsonl import VALUE_VALIDATORS
from .model import (CLASS_CODE, CLASSES, COLUMNAR_SUFFIX, FAIL, FINAL_PROCESS, FORMAT_VERSION, INFO, NO_INT, OK,
                    TYPE_CODE, TYPES, ErrorInfo, HistoryFormatError, Op)
from .recorder import Recorder

# private names that checks.ledger and the unit tests import from here
from .columns import _Ints as _Ints
from .model import _FLUSH_AT as _FLUSH_AT

__all__ = ["CLASS_CODE", "CLASSES", "COLUMNAR_SUFFIX", "FAIL", "FINAL_PROCESS", "FORMAT_VERSION", "INFO", "NO_INT",
           "OK", "TYPE_CODE", "TYPES", "VALUE_VALIDATORS", "Columns", "ErrorInfo", "History", "HistoryAppender",
           "HistoryFormatError", "Op", "Recorder"]
