"""Log event readers: turn engine logs into events on one schema.

Every event is a dict that starts with

    {"time": "<ISO 8601>" | None, "reporter": int | None, "node": int | None, "kind": "<kind>", ...}

followed by kind-specific fields (``count`` of a missed heartbeat, ``phase``/``start_type`` of a
start phase, ``exit_code`` of a forced shutdown, ``arbitrator`` of an arbitration result, ...)
and three common ones: ``severity`` (log level), ``source`` (cluster_log | node_log | mgm_client |
error_log | text) and ``text`` (the event text as logged).

``time`` is the log's own wall-clock stamp, without a zone (NDB and MariaDB containers log in
UTC unless TZ is set); ``time_to_epoch`` converts it for the run clock (``RunClock.from_wall``).

The readers are in the engine packages (``ndbchaos.engines.ndb.logs``,
``ndbchaos.engines.galera.logs``); this is their engine-neutral front.

API (used by the report, the scenarios and ``ndbchaos events``):

    parse_line(line, engine="ndb", reporter=None, keep_other=False) -> dict | None
    parse_lines(lines, engine="ndb", reporter=None, keep_other=False) -> Iterator[dict]
    parse_file(path, engine="ndb", reporter=None, keep_other=False) -> Iterator[dict]
    KINDS[engine] -> tuple of kinds the engine's reader produces

``parse_line`` sees one line only; multi-line records (Galera views and quorum results, NDB
error reports) need ``parse_lines``/``parse_file``. Unknown lines are skipped, or returned as
kind ``other`` with ``keep_other=True``; no input line ever raises.
"""

from __future__ import annotations

import calendar
import datetime as _dt
from pathlib import Path
from typing import Iterable, Iterator

from ..engines import ENGINES, log_reader
from ..errors import UsageError


def kinds(engine: str) -> tuple:
    """The event kinds the engine's reader knows."""
    return tuple(_reader(engine).KINDS)


def _reader(engine: str):
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r} for events (expected {' or '.join(ENGINES)})")
    return log_reader(engine)


def parse_line(line: str, engine: str = "ndb", reporter: int | None = None, keep_other: bool = False) -> dict | None:
    return _reader(engine).parse_line(line, reporter=reporter, keep_other=keep_other)


def parse_lines(lines: Iterable[str], engine: str = "ndb", reporter: int | None = None,
                keep_other: bool = False) -> Iterator[dict]:
    return _reader(engine).parse_lines(lines, reporter=reporter, keep_other=keep_other)


def parse_file(path: str | Path, engine: str = "ndb", reporter: int | None = None,
               keep_other: bool = False) -> Iterator[dict]:
    """Events of a log file, in file order. Raises UsageError (one line) when the file cannot be
    opened; undecodable bytes are replaced, never fatal."""
    _reader(engine)
    p = Path(path)
    try:
        fh = open(p, "r", encoding="utf-8", errors="replace")
    except OSError as e:
        raise UsageError(f"cannot read {p}: {e.strerror or e}") from None
    if p.is_dir():
        fh.close()
        raise UsageError(f"cannot read {p}: is a directory")

    def gen():
        with fh:
            yield from parse_lines(fh, engine, reporter=reporter, keep_other=keep_other)

    return gen()


def time_to_epoch(iso: str | None) -> float | None:
    """Seconds since the epoch of an event's ``time``, read as UTC."""
    if not iso:
        return None
    try:
        d = _dt.datetime.fromisoformat(iso)
    except ValueError:
        return None
    if d.tzinfo is not None:
        return d.timestamp()
    return calendar.timegm(d.timetuple()) + d.microsecond / 1e6


def merge_streams(streams: Iterable[list[dict]], window: float = 2.0, late: float = 0.0) -> list[dict]:
    """One time-ordered list from several logs that report the same events (NDB: each data
    node's own log, and every ndb_mgmd's cluster log that gets the node's reports).

    An event is a copy of an earlier-listed stream's event (the *original*) when reporter, kind,
    subject and text are equal, the logs differ, and its run time ``t`` is within ``window``
    seconds before, or up to ``max(window, late)`` seconds after, the original's: a report can
    reach a later log late (an ndb_mgmd cut off from a node gets its reports when the link is
    back), never early. Of several candidates the nearest in time wins, each original taking at
    most one copy per log. The original is kept (its ``log`` says where it came from) and
    ``also_in`` lists the logs that had a copy. Events without ``t`` are kept as they are,
    after the timed ones."""
    kept: list[dict] = []
    index: dict[tuple, list[dict]] = {}
    ahead = max(window, late)
    for stream in streams:
        for ev in stream:
            key = (ev.get("reporter"), ev.get("kind"), ev.get("node"), ev.get("text"))
            t, log = ev.get("t"), ev.get("log")
            twin = None
            if t is not None:
                cands = [k for k in index.get(key, ()) if k.get("log") != log and log not in k.get("also_in", ())
                         and -window <= t - k["t"] <= ahead]
                twin = min(cands, key=lambda k: abs(t - k["t"]), default=None)
            if twin is not None:
                if log:
                    twin.setdefault("also_in", []).append(log)
                continue
            kept.append(ev)
            if t is not None:
                index.setdefault(key, []).append(ev)
    kept.sort(key=lambda e: (e.get("t") is None, e.get("t") or 0.0))
    return kept


__all__ = ["ENGINES", "KINDS", "merge_streams", "parse_line", "parse_lines", "parse_file", "time_to_epoch"]
