"""``ndbchaos check HISTORY``: a run of ours (or a bare history) judged by every checker of its
workload, printed as JSON with a summary line per checker.

What the user hands it is validated first (one line and exit 2 for anything wrong): the history
(its readers), its workload (a known one: built in, registered, an entry point of
``ndbchaos.workloads``, or a project's workload its run declared), the windows file, and the
shape of a run record. A history in which nothing could be judged (no operation succeeded; a
ledger with no insert of known outcome) is ``unknown``, never valid.
"""

from __future__ import annotations

import json
import math
import sys
from importlib.metadata import entry_points

import numpy as np

from ..checks import BY_WORKLOAD, UNKNOWN, Verdict, check_history, check_run
from ..checks.app import declared
from ..checks.frame import WindowError, parse_windows
from ..errors import UsageError
from ..history import INFO, OK, History, HistoryFormatError
from ..history.jsonl import MAX_DEPTH, too_deep
from ..workload import ENTRY_POINTS, WORKLOADS
from ._output import pretty


def load_windows(path: str):
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as e:
        raise UsageError(f"{path}: cannot open: {e.strerror or e}") from None
    try:
        data = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise UsageError(f"{path}: a value nested deeper than {MAX_DEPTH} levels") from None
    except UnicodeDecodeError as e:
        raise UsageError(f"{path}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    except ValueError as e:
        line = getattr(e, "lineno", None)
        raise UsageError(f"{path}:{line or 1}: not JSON: {e}") from None
    if too_deep(data):
        raise UsageError(f"{path}: a value nested deeper than {MAX_DEPTH} levels")
    try:
        windows = [w.to_json() for w in parse_windows(data)]
    except WindowError as e:
        raise UsageError(f"{path}: {e}") from None
    if not windows:
        raise UsageError(f"{path}: no fault window in it (leave --windows out for a run without faults)")
    return windows


def check_windows_span(windows: list[dict], history: History, path: str) -> None:
    """A window no operation's time span meets is on another clock (the windows are seconds on
    the history's clock): the fault phase would be judged on nothing."""
    c = history.cols
    c.flush()
    if not len(c):
        return
    t0 = float(np.frombuffer(c.start, dtype=np.float64).min())
    t1 = float(np.frombuffer(c.end, dtype=np.float64).max())
    for k, w in enumerate(windows):
        end = w["end"] if w["end"] is not None else math.inf
        if w["start"] > t1 or end < t0:
            raise UsageError(f"{path}: window {k} ({w['start']:g} to {'never' if w['end'] is None else f'{end:g}'} s) "
                             f"lies outside the history ({t0:g} to {t1:g} s): windows are seconds on the "
                             "history's clock")


def known_workloads() -> list[str]:
    return sorted(set(WORKLOADS) | set(BY_WORKLOAD) | {ep.name for ep in entry_points(group=ENTRY_POINTS)})


def check_workload(history: History, path: str) -> None:
    """A history's workload must be one whose checkers exist: judged as an unknown one, its own
    checkers (durability, invariant, transactions) would silently not run."""
    name = history.workload
    if name in WORKLOADS or name in BY_WORKLOAD or declared(history) is not None:
        return
    known = known_workloads()
    if name in known:
        return
    near = [k for k in known if k.lower() == name.strip().lower().replace("-", "_")]
    hint = f"; did you mean {near[0]!r}?" if near else ""
    raise UsageError(f"{path}: unknown workload {name!r}{hint} (known: {', '.join(known)}; a project's own "
                     f"workload is known by the declaration its run records, or by its {ENTRY_POINTS} entry point)")


_OBJECT, _LIST = (dict,), (list,)
#: the run record's fields the checkers walk, and what each must be
_RUN_SHAPES = {"windows": (list, dict), "check_options": _OBJECT, "expectation": _OBJECT, "steps": _LIST,
               "procedure": _OBJECT, "phases": _LIST, "events": _LIST, "cluster_samples": _LIST, "marks": _OBJECT}
_NAMES = {dict: "an object", list: "a list"}


def check_record(history: History, path: str) -> None:
    """The shape of a run record's fields and of a project's declaration (what the checkers walk),
    as ``Scenario`` writes them; anything else is named in one line."""
    run = history.run or {}
    for key, want in _RUN_SHAPES.items():
        v = run.get(key)
        if v is not None and not isinstance(v, want):
            raise UsageError(f"{path}: run record field {key!r} must be {' or '.join(_NAMES[t] for t in want)}, "
                             f"not {type(v).__name__}")
    for key in ("steps", "events", "cluster_samples"):
        for k, item in enumerate(run.get(key) or []):
            if not isinstance(item, dict):
                raise UsageError(f"{path}: run record {key}[{k}] must be an object, not {type(item).__name__}")
    for k, step in enumerate(run.get("steps") or []):
        for end in ("begin", "end"):
            if not _finite(step.get(end)):
                raise UsageError(f"{path}: run record steps[{k}].{end} must be a number (seconds)")
    for k, sample in enumerate(run.get("cluster_samples") or []):
        if not _finite(sample.get("t")):
            raise UsageError(f"{path}: run record cluster_samples[{k}].t must be a number (seconds)")
    bounds = [("check_options", run.get("check_options")), ("expectation", run.get("expectation"))]
    bounds += [(f"steps[{k}].{key}", step.get(key)) for k, step in enumerate(run.get("steps") or [])
               for key in ("check_options", "expectation")]
    for where, v in bounds:
        bad = _not_finite(v)
        if bad is not None:
            raise UsageError(f"{path}: run record {where}{bad} is {_brief(v, bad)}: a bound that is not a finite "
                             "number would compare false with everything and judge nothing")
    d = history.params.get("declared")
    if d is not None:
        ops = d.get("operations") if isinstance(d, dict) else None
        if not isinstance(ops, list) or not all(isinstance(o, dict) and isinstance(o.get("name"), str) for o in ops):
            raise UsageError(f"{path}: header params.declared must be {{\"operations\": [{{\"name\": str, ...}}, ...]}}"
                             " (a project's workload declaration)")


def _not_finite(v, at: str = "") -> str | None:
    """Where (".key[i]...") the first NaN or infinity in v is, or None (depth is bounded by the reader)."""
    if isinstance(v, float) and not math.isfinite(v):
        return at
    items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
    for k, x in items:
        found = _not_finite(x, f"{at}.{k}" if isinstance(v, dict) else f"{at}[{k}]")
        if found is not None:
            return found
    return None


def _brief(v, at: str) -> str:
    for part in at.replace("[", ".").replace("]", "").split(".")[1:]:
        v = v[part] if isinstance(v, dict) else v[int(part)]
    return repr(v)


def _finite(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def nothing_judged(history: History) -> str | None:
    """Why the checkers could judge nothing in this history (None when they could): no operation
    succeeded, or a ledger has no insert whose outcome is known (each checker alone may pass on
    that: nothing it reads is wrong)."""
    c = history.cols
    c.flush()
    types = np.frombuffer(c.type, dtype=np.uint8) if len(c) else np.zeros(0, np.uint8)
    if not (types == OK).any():
        return f"no operation succeeded ({len(c)} operations): nothing to judge"
    if history.workload == "ledger":
        f = np.frombuffer(c.f, dtype=np.uint8)
        code = c.f_names.index("insert") if "insert" in c.f_names else -1
        inserts = f == code
        n = int(inserts.sum())
        if not (inserts & (types != INFO)).any():
            return (f"no insert with a known outcome ({n} inserts, all indeterminate): durability has nothing to judge"
                    if n else "no insert in it: durability has nothing to judge")
    return None


#: the options of a transactional history's check (``--model``): refused without it, not ignored
_TXN_OPTIONS = ("--consistency-models", "--anomalies", "--linearizable-keys", "--sequential-keys", "--wfr-keys",
                "--directory")


def run(args) -> int:
    given = [o for o in _TXN_OPTIONS if getattr(args, o[2:].replace("-", "_")) not in (None, False)]
    if given:
        raise UsageError(f"{', '.join(given)}: only with --model (a transactional history); a run of ours "
                         "is judged with the consistency models its record names")
    if not args.bucket_ms > 0:
        raise UsageError("--bucket-ms must be positive")
    if args.max_outage is not None and not (math.isfinite(args.max_outage) and args.max_outage >= 0):
        raise UsageError(f"--max-outage must be a finite number of seconds, 0 or more, not {args.max_outage}")
    if (args.gcp_loss_window is None) != (args.cluster_crash_at is None):
        raise UsageError("--gcp-loss-window and --cluster-crash-at go together")
    windows = load_windows(args.windows) if args.windows else None
    options = {"bucket_ms": args.bucket_ms}
    if args.max_outage is not None:
        options["max_outage_s"] = args.max_outage
    if args.gcp_loss_window is not None:
        options["gcp_loss_window_s"] = args.gcp_loss_window
        options["cluster_crash_at"] = args.cluster_crash_at
    try:
        history = History.read(args.history)
    except HistoryFormatError as e:
        raise UsageError(str(e)) from None
    check_workload(history, args.history)
    check_record(history, args.history)
    if windows:
        check_windows_span(windows, history, args.windows)
    try:
        if history.run is not None and windows is None:
            # a scenario's saved run: its recorded windows, options and expectation, as live
            verdict = check_run(history, options)
        else:
            verdict = check_history(history, windows, options)
    except ValueError as e:  # values, options or windows the checkers cannot use
        msg = str(e)
        raise UsageError(msg if msg.startswith(f"{args.history}:") else f"{args.history}: {msg}") from None
    txns = verdict.checks.get("transactions")
    if txns is not None and "reason" in txns.details:  # its values are not transactions (txn.mops says where)
        reason = str(txns.details["reason"])
        raise UsageError(f"{args.history}:{reason[4:]}" if reason.startswith("run:") else f"{args.history}: {reason}")
    why = nothing_judged(history)
    if why is not None:
        verdict = verdict.adding(Verdict("input", UNKNOWN, why, {"reason": why}))
    body = verdict.to_json()
    out = json.dumps(body, separators=(",", ":")) if args.compact else pretty(body)
    sys.stdout.write(out + "\n")
    sys.stdout.flush()
    if not args.quiet:
        word = {True: "VALID", False: "INVALID"}.get(verdict.valid, "UNKNOWN")
        print(f"ndbchaos check: {args.history}: {word} ({verdict.ops} ops, workload {verdict.workload})",
              file=sys.stderr)
        for line in verdict.summary:
            print(f"  {line}", file=sys.stderr)
    return 0 if verdict.valid is True else 1
