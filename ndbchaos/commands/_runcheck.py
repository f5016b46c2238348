"""``ndbchaos check HISTORY``: a run of ours (or a bare history) judged by every checker of its
workload, printed as JSON with a summary line per checker."""

from __future__ import annotations

import json
import sys

from ..checks import check_history, check_run
from ..checks.frame import WindowError, parse_windows
from ..errors import UsageError
from ..history import History, HistoryFormatError
from ._output import pretty


def load_windows(path: str):
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as e:
        raise UsageError(f"{path}: cannot open: {e.strerror or e}") from None
    except (ValueError, UnicodeDecodeError) as e:
        line = getattr(e, "lineno", None)
        raise UsageError(f"{path}:{line or 1}: not JSON: {e}") from None
    try:
        return [w.to_json() for w in parse_windows(data)]
    except WindowError as e:
        raise UsageError(f"{path}: {e}") from None


def run(args) -> int:
    if not args.bucket_ms > 0:
        raise UsageError("--bucket-ms must be positive")
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
        if history.run is not None and windows is None:
            # a scenario's saved run: its recorded windows, options and expectation, as live
            verdict = check_run(history, options)
        else:
            verdict = check_history(history, windows, options)
    except HistoryFormatError as e:
        raise UsageError(str(e)) from None
    except ValueError as e:  # options or windows the checkers cannot use
        raise UsageError(f"{args.history}: {e}") from None
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
