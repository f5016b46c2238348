"""``ndbchaos check --model list-append|rw-register``: a transactional history judged by the
anomaly checker (ndbchaos.txn), printed as Elle prints its result map."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import UsageError
from ..history.interchange import without_gc
from ..txn import CheckOptions, TxnFormatError, TxnHistory, check
from ..txn.picture import cycle_svg
from ._output import pretty


def _names(text: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in text.split(",") if x.strip())


def options(args) -> CheckOptions:
    models = _names("strict-serializable" if args.consistency_models is None else args.consistency_models)
    anomalies = _names(args.anomalies or "")
    if args.anomalies is not None and not anomalies:
        raise UsageError("--anomalies names no anomaly (leave it out for none)")
    if not models and not anomalies:
        raise UsageError("--consistency-models names no model: nothing would be judged (name one, e.g. "
                         "strict-serializable, or give --anomalies to check only those)")
    try:
        return CheckOptions(model=args.model, consistency_models=models,
                            anomalies=anomalies, wfr_keys=args.wfr_keys,
                            sequential_keys=args.sequential_keys, linearizable_keys=args.linearizable_keys,
                            cycle_search_timeout_ms=args.cycle_search_timeout)
    except ValueError as e:
        raise UsageError(str(e)) from None


def run_txn(args) -> int:
    if args.windows:
        raise UsageError("--windows is for runs of ours, not for transactional histories")
    opts = options(args)
    with without_gc(freeze=True):  # a one-shot process: what it built is never scanned again
        try:
            history = TxnHistory.read(args.history)
        except TxnFormatError as e:
            raise UsageError(str(e)) from None
        if history.model is not None and history.model != opts.model:
            raise UsageError(f"{args.history}: a run of the {history.model.replace('-', '_')} workload is judged "
                             f"with --model {history.model}, not {opts.model}")
        verdict = check(history, opts)
    out = verdict.to_json()
    if args.directory:
        write_directory(Path(args.directory), verdict)
    sys.stdout.write((json.dumps(out, separators=(",", ":")) if args.compact else pretty(out)) + "\n")
    sys.stdout.flush()
    if not args.quiet:
        word = {True: "VALID", False: "INVALID"}.get(verdict.valid, "UNKNOWN")
        print(f"ndbchaos check: {args.history}: {word} ({opts.model}, {verdict.summary()}; "
              f"{verdict.seconds:.2f} s)", file=sys.stderr)
        if verdict.anomaly_types:
            print(f"  forbidden by {', '.join(opts.consistency_models) or 'no model'}"
                  f"{' and ' + ', '.join(opts.anomalies) if opts.anomalies else ''}: "
                  f"{', '.join(verdict.anomaly_types)}", file=sys.stderr)
        if verdict.not_:
            print(f"  not {', '.join(verdict.not_)}" + (f"; also not {', '.join(verdict.also_not)}"
                                                       if verdict.also_not else ""), file=sys.stderr)
        for level in (verdict.weak or {}).get("levels", ()):
            held = {True: "held", False: "NOT held"}.get(level["valid"], "unknown")
            why = f" ({', '.join(level['anomalies'])})" if level.get("anomalies") and level["valid"] is False else ""
            print(f"  {level['model']}: {held}{why}: {level['definition']}", file=sys.stderr)
    return 0 if verdict.valid is True else 1


def write_directory(d: Path, verdict) -> None:
    """Elle's output directory: <type>.txt with every explanation, an SVG per cycle."""
    try:
        d.mkdir(parents=True, exist_ok=True)
        for kind, cases in verdict.anomalies.items():
            texts = []
            for i, a in enumerate(cases):
                texts.append(f"{kind} #{i}\n{a.explain(verdict.history)}\n")
                if a.steps:
                    (d / f"{kind}-{i}.svg").write_text(cycle_svg(a, verdict.history), encoding="utf-8")
            (d / f"{kind}.txt").write_text("\n".join(texts), encoding="utf-8")
    except OSError as e:
        raise UsageError(f"{d}: cannot write: {e.strerror or e}") from None
