"""ndbchaos summary: what each scenario of a run measured, as one table.

Reads the Allure results a run wrote (``reports/allure-results`` by default) and prints, per
scenario: its status, the engine, detection / shut-down / stopped-serving / recovery times with
their bounds, the longest outage per SQL node, the client errors by class and code, and the
durability verdict (lost acknowledged writes, those within the engine's crash window, writes of
unknown outcome). Markdown by default (what docs/ndb.md's figures table is made of), JSON with
``--json``. Exit 2 with one line naming the file when the folder has no results, a result is not
one Allure writes, an attachment lies outside the folder, or a measurements or verdict attachment
is not what a run writes.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..checks.verdict import RunVerdict
from ..errors import UsageError, shown
from ..report.results import attachments, read_results
from . import HELP

TIMES = ("fault applied", "detection", "shut down", "stopped serving", "recovery")


def register(sub) -> None:
    p = sub.add_parser("summary", help=HELP["summary"],
                       description="Reads a run's Allure results and prints what each scenario measured: "
                                   "times with bounds, outage per SQL node, client errors by class and code, "
                                   "lost writes. Markdown by default.")
    p.add_argument("results", nargs="?", default="reports/allure-results", metavar="RESULTS",
                   help="the Allure results folder of a run (default reports/allure-results)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a Markdown table")
    p.set_defaults(func=run)


def _load(folder: Path, source: str, what: str):
    """The JSON of an attachment (read_results checked it lies inside the folder); one line
    naming its file when it cannot be read or is not JSON."""
    f = folder / source
    try:
        return json.loads(f.read_bytes().decode("utf-8"))
    except OSError as e:
        raise UsageError(f"{shown(f)}: the {what} attachment cannot be read ({e.strerror or e})") from None
    except RecursionError:
        raise UsageError(f"{shown(f)}: not the {what} a run writes: a value nested too deep") from None
    except ValueError as e:
        raise UsageError(f"{shown(f)}: not the {what} a run writes: not JSON ({' '.join(str(e).split())})") from None


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _measurements(f: Path, m) -> dict:
    """The measurements attachment, checked where the table reads it: {name: {value, bound}}."""
    if not isinstance(m, dict):
        raise UsageError(f"{shown(f)}: not the measurements a run writes: a JSON {type(m).__name__}, not an object")
    for k, v in m.items():
        if k not in TIMES and not k.startswith("outage on "):
            continue
        if not isinstance(v, dict) or not _number(v.get("value")) or not (
                v.get("bound") is None or _number(v.get("bound"))):
            raise UsageError(f"{shown(f)}: measurement {k!r}: must be {{\"value\": number, \"bound\": number or null}}")
    return m


def _verdict_cells(f: Path, saved) -> tuple[dict, str]:
    """(errors, durability) of the saved verdict; one line naming its file when it is not one."""
    if not isinstance(saved, dict):
        raise UsageError(f"{shown(f)}: not the verdict a run writes: a JSON {type(saved).__name__}, not an object")
    checks = saved.get("checks", {})
    if not isinstance(checks, dict) or not all(isinstance(c, dict) for c in checks.values()):
        raise UsageError(f"{shown(f)}: not the verdict a run writes: checks must map check names to objects")
    try:
        verdict = RunVerdict.from_json(saved)
        return _errors(verdict), _durability(verdict)
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as e:
        raise UsageError(f"{shown(f)}: not the verdict a run writes ({type(e).__name__}: "
                         f"{' '.join(str(e).split())})") from None


def scenario_rows(folder: Path) -> list[dict]:
    """One dict per scenario result of the folder, in test order."""
    if not folder.is_dir():
        raise UsageError(f"{shown(folder)}: no such folder (a run writes its results with --alluredir)")
    rows = []
    for r in read_results(folder):
        att = {a["name"]: a["source"] for a in attachments(r)}
        if "measurements" not in att and "measurements (incomplete run)" not in att:
            continue  # not a scenario (framework tests write no measurements)
        source = att.get("measurements") or att["measurements (incomplete run)"]
        m = _measurements(folder / source, _load(folder, source, "measurements"))
        errors, durability = (_verdict_cells(folder / att["verdict"], _load(folder, att["verdict"], "verdict"))
                              if "verdict" in att else ({}, ""))
        engine = next((lb["value"].split(":", 1)[1].strip() for lb in r.get("labels", [])
                       if lb.get("name") == "epic" and str(lb.get("value", "")).startswith("engine:")), "")
        # the scenario's own name (its declaration: the "sc" or "sk" parameter), not the test function's
        name = next((p.get("value") for p in r.get("parameters", []) if p.get("name") in ("sc", "sk")), None)
        row = {"test": name or r.get("fullName", "").rsplit("#", 1)[-1].rsplit(".", 1)[-1],
               "title": r.get("name", ""),
               "engine": engine, "status": r.get("status", ""), "start": r.get("start", 0),
               "times": {k: (m[k]["value"], m[k].get("bound")) for k in TIMES if k in m},
               "outage": {k[len("outage on "):]: v["value"] for k, v in m.items() if k.startswith("outage on ")},
               "errors": errors, "durability": durability}
        rows.append(row)
    if not rows:
        raise UsageError(f"{shown(folder)}: no scenario results in it")
    return rows


def _errors(verdict: RunVerdict | None) -> dict:
    e = verdict.errors if verdict is not None else None
    return {c.label: (c.count, c.klass) for c in e.all.codes} if e is not None else {}


def _durability(verdict: RunVerdict | None) -> str:
    if verdict is None:
        return ""
    d = verdict.durability
    if d is not None:
        lost, expl = d.lost or 0, d.explained_by_gcp
        s = f"{d.acknowledged} acked, lost {lost}"
        if expl:
            s += f" (all {expl} in the crash window)" if expl == lost else f" ({expl} in the crash window)"
        return s + f", unknown outcome {d.indeterminate}"
    if "invariant" in verdict.checks:
        return "invariant " + ("held" if verdict.validity("invariant") is True else "BROKEN")
    t = verdict.transactions
    if t is not None:
        n = t.txns
        return (f"{n.get('ok', 0)}/{n.get('fail', 0)}/{n.get('info', 0)} txns ok/fail/info, "
                f"{'held' if t.valid_models is True else 'NOT'} {', '.join(t.consistency_models)}, "
                f"{t.found_text()}, lost {t.lost}")
    return ""


def _fmt_time(v) -> str:
    value, bound = v
    return f"{value:.1f}" + (f" (≤{bound:.0f})" if isinstance(bound, (int, float)) else "")


def markdown(rows: list[dict]) -> str:
    head = ["scenario", "engine", "result", *[f"{t} s" for t in TIMES], "longest outage per SQL node s",
            "client errors (errno/NDB code x count)", "durability"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        errs = ", ".join(f"{k} x{n}" for k, (n, _) in sorted(r["errors"].items(), key=lambda kv: -kv[1][0])) or "none"
        classes = sorted({c for _, c in r["errors"].values()})
        if classes:
            errs += f" ({', '.join(classes)})"
        cells = [r["test"], r["engine"], r["status"],
                 *[_fmt_time(r["times"][t]) if t in r["times"] else "" for t in TIMES],
                 ", ".join(f"{n} {v:.1f}" for n, v in sorted(r["outage"].items())), errs, r["durability"]]
        out.append("| " + " | ".join(str(c).replace("|", "/") for c in cells) + " |")
    return "\n".join(out)


def run(args) -> int:
    rows = scenario_rows(Path(args.results))
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(markdown(rows))
    return 0
