"""The gate file: availability objectives per scenario, in TOML (docs/gate.md).

    version = 1
    baseline = "reports/baseline/gate.json"     # optional: for regression_pct

    [defaults]                                  # every scenario
    recovery_s = 300

    [[scenario]]
    match = "datanode_loss"                     # a marker, a scenario name or a test id; globs
    outage_per_node_s = 1.0
    latency_p99_ms = { fault = 500, recovery = 50 }
    warn = ["latency_p99_ms"]                   # these only warn

Every error is one line naming the file, the line and the key. Safety (no lost acknowledged
write, no broken invariant) is not an objective of the file: it always applies and always fails.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path

import tomllib

from ..errors import NdbChaosError, UsageError, read_user_text, shown
from ..txn.models import check_models

PHASES = ("baseline", "fault", "recovery", "all")

#: objective name -> (kind, what it bounds). Kinds: "s" a number of seconds, "ms_by_phase" a
#: number or {phase or "phase.operation": ms}, "share_by_phase" a number or {phase: 0..1},
#: "s_by_step"/"ms_by_step" a number for every step of an operator's procedure or {step name or
#: glob ("restart data*"): limit},
#: "pct" 1..100, "classes" a list of error classes, "codes" a list of error numbers, "outcome",
#: "models" a list of consistency models.
OBJECTIVES: dict[str, tuple[str, str]] = {
    "outage_s": ("s", "longest time no SQL node served an operation"),
    "outage_per_node_s": ("s", "longest outage of each SQL node the engine says keeps serving"),
    "first_success_s": ("s", "fault in place -> first success of an operation begun after it"),
    "throughput_back_s": ("s", "last heal -> throughput back to throughput_back_pct of baseline"),
    "throughput_back_pct": ("pct", "the level throughput_back_s waits for (default 90)"),
    "latency_p50_ms": ("ms_by_phase", "median latency of successful operations"),
    "latency_p99_ms": ("ms_by_phase", "99th percentile latency of successful operations"),
    "latency_max_ms": ("ms_by_phase", "largest latency of a successful operation"),
    "failed_share": ("share_by_phase", "failed operations / all operations"),
    "indeterminate_share": ("share_by_phase", "operations of unknown outcome / all operations"),
    "allowed_error_classes": ("classes", "error classes clients may see"),
    "allowed_error_codes": ("codes", "error numbers (MySQL errno or NDB code) clients may see"),
    "detection_s": ("s", "fault in place -> the engine excluded the lost nodes and served again"),
    "recovery_s": ("s", "heal -> every node healthy"),
    "arbitration": ("outcome", "true: the engine's expected outcome held (who serves, who shuts "
                               "down, exit codes, arbitrator, events)"),
    "cluster": ("outcome", '"survives" or "stops": what the cluster did'),
    "step_outage_s": ("s_by_step", "an operations run: the longest time the clients had no success during each "
                                   "step of the procedure"),
    "step_p99_ms": ("ms_by_step", "an operations run: the 99th percentile latency of successes during each step"),
    "consistency_models": ("models", "consistency models a transactional run must satisfy (Elle's names); an "
                                     "anomaly they forbid always fails, like a lost write"),
}
ERROR_CLASSES = ("temporary", "unknown", "permanent", "unclassified")
ENTRY_KEYS = {"match", "severity", "warn", "regression_pct"}
TOP_KEYS = {"version", "baseline", "defaults", "scenario"}


@dataclass
class Entry:
    patterns: list[str]
    objectives: dict
    severity: str = "fail"
    warn: set = field(default_factory=set)
    regression_pct: dict = field(default_factory=dict)
    line: int = 0


@dataclass
class Gate:
    path: str
    defaults: Entry
    entries: list[Entry]
    baseline: str | None = None

    @property
    def states_objectives(self) -> bool:
        """Whether the file states any objective. One that states none still judges every run's
        safety (no acknowledged write lost, no invariant broken: not the file's to relax), so a lost
        write fails it; a run that is safe leaves it judging nothing (``NOTHING_JUDGED``)."""
        return bool(self.defaults.objectives or self.defaults.regression_pct
                    or any(e.objectives or e.regression_pct for e in self.entries))

    def for_scenario(self, ids: list[str], markers: list[str]) -> tuple[dict, dict, dict]:
        """(objectives, severity per objective, regression_pct) of one scenario: the defaults,
        then every matching entry in file order (a later entry overrides an earlier one)."""
        objectives, severity, regression = {}, {}, {}
        for e in [self.defaults] + [e for e in self.entries if matches(e, ids, markers)]:
            for k, v in e.objectives.items():
                objectives[k] = v
                severity[k] = "warn" if k in e.warn else e.severity
            for k, v in e.regression_pct.items():
                regression[k] = v
                severity[f"regression {k}"] = "warn" if k in e.warn else e.severity
        return objectives, severity, regression

    def unknown_patterns(self, ids: list[list[str]], markers: set[str]) -> list[Entry]:
        """Entries none of whose patterns names a known marker or scenario."""
        return [e for e in self.entries
                if not any(p in markers or any(fnmatchcase(i, p) for one in ids for i in one) for p in e.patterns)]


def matches(e: Entry, ids: list[str], markers: list[str]) -> bool:
    return any(p in markers or any(fnmatchcase(i, p) for i in ids) for p in e.patterns)


class GateFileError(UsageError):
    pass


#: exit code of a gate that judged nothing: a gate file with no objective, a pattern that names no
#: scenario, or a session in which no objective of the gate could be evaluated on any scenario.
#: The same live (``pytest --gate``: pytest's usage error, 4) and offline (``ndbchaos gate``).
NOTHING_JUDGED = 4


class GateJudgedNothing(NdbChaosError):
    """The gate cannot judge what it names: never a pass (``NOTHING_JUDGED``)."""

    exit_code = NOTHING_JUDGED


def load(path: str | Path) -> Gate:
    p = Path(path)
    if not p.exists():
        raise GateFileError(f"gate file {shown(p)}: not found")
    text = read_user_text(p, f"gate file {shown(p)}", "TOML", GateFileError)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise GateFileError(f"{shown(p)}: not valid TOML: {e}") from None
    except RecursionError:
        raise GateFileError(f"{shown(p)}: not a gate file: a value nested too deep") from None
    where = _Locator(shown(p), text)
    for k in data:
        if k not in TOP_KEYS:
            raise where.error(None, k, f"unknown key (known: {', '.join(sorted(TOP_KEYS))})")
    version = data.get("version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version != 1:
        raise where.error(None, "version", "must be 1")
    baseline = data.get("baseline")
    if baseline is not None and not isinstance(baseline, str):
        raise where.error(None, "baseline", "must be a path (string)")
    defaults = data.get("defaults", {})
    if not isinstance(defaults, dict):
        raise where.error(None, "defaults", "must be a table")
    entries = data.get("scenario", [])
    if not isinstance(entries, list) or not all(isinstance(x, dict) for x in entries):
        raise where.error(None, "scenario", "must be an array of tables ([[scenario]])")
    return Gate(str(p), _entry(defaults, where, None), [_entry(x, where, i) for i, x in enumerate(entries)],
                baseline)


def _entry(d: dict, where: "_Locator", index: int | None) -> Entry:
    section = "defaults" if index is None else index
    keys = ENTRY_KEYS | set(OBJECTIVES)
    for k in d:
        if k not in keys or (index is None and k == "match"):
            raise where.error(section, k, "unknown key (objectives: " + ", ".join(OBJECTIVES) + ")")
    patterns: list[str] = []
    if index is not None:
        m = d.get("match")
        patterns = [m] if isinstance(m, str) else m if isinstance(m, list) else []
        if not patterns or not all(isinstance(x, str) and x for x in patterns):
            raise where.error(section, "match", "must be a marker, scenario name, test id or glob (or a list of them)")
    sev = d.get("severity", "fail")
    if sev not in ("fail", "warn"):
        raise where.error(section, "severity", 'must be "fail" or "warn"')
    warn = d.get("warn", [])
    if not isinstance(warn, list) or any(not isinstance(w, str) or w not in OBJECTIVES for w in warn):
        raise where.error(section, "warn", "must be a list of objective names (" + ", ".join(OBJECTIVES) + ")")
    objectives = {k: _objective(k, v, where, section) for k, v in d.items() if k in OBJECTIVES}
    reg = d.get("regression_pct", {})
    if not isinstance(reg, dict):
        raise where.error(section, "regression_pct", "must be a table {objective = percent}")
    for k, v in reg.items():
        if k not in OBJECTIVES or OBJECTIVES[k][0] != "s":
            raise where.error(section, "regression_pct",
                              f"{k!r}: only objectives in seconds can regress ({', '.join(_seconds())})")
        if not _number(v) or v < 0:
            raise where.error(section, "regression_pct", f"{k}: must be a percentage >= 0")
    return Entry(patterns, objectives, sev, set(warn), dict(reg), where.line_of(section, "match"))


def _seconds() -> list[str]:
    return [k for k, (kind, _) in OBJECTIVES.items() if kind == "s"]


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _objective(key: str, v, where: "_Locator", section):
    kind = OBJECTIVES[key][0]
    bad = lambda why: where.error(section, key, why)  # noqa: E731
    if kind == "s":
        if not _number(v) or v < 0:
            raise bad("must be a number of seconds >= 0")
        return float(v)
    if kind == "pct":
        if not _number(v) or not 0 < v <= 100:
            raise bad("must be a percentage in (0, 100]")
        return float(v)
    if kind in ("ms_by_phase", "share_by_phase"):
        limit_ok = (lambda x: _number(x) and x > 0) if kind == "ms_by_phase" else (lambda x: _number(x) and 0 <= x <= 1)
        what = "a number of ms > 0" if kind == "ms_by_phase" else "a share between 0 and 1"
        table = v if isinstance(v, dict) else {"all": v}
        if not table:
            raise bad("an empty table bounds nothing: give a number or {phase = limit}")
        out = {}
        for ph, x in table.items():
            phase, _, op = ph.partition(".")
            if phase not in PHASES or (op and kind != "ms_by_phase"):
                raise bad(f"{ph!r}: keys are phases ({', '.join(PHASES)})"
                          + (' or "phase.operation"' if kind == "ms_by_phase" else ""))
            if not limit_ok(x):
                raise bad(f"{ph}: must be {what}")
            out[ph] = float(x)
        return out
    if kind in ("s_by_step", "ms_by_step"):
        table = v if isinstance(v, dict) else {"*": v}
        if not table:
            raise bad('an empty table bounds nothing: give a number or {"step name or glob" = limit}')
        out = {}
        for step, x in table.items():
            if not isinstance(step, str) or not step.strip():
                raise bad("keys are step names or globs, e.g. \"restart data*\"")
            if not _number(x) or x < 0 or (kind == "ms_by_step" and x == 0):
                raise bad(f"{step}: must be " + ("a number of seconds >= 0" if kind == "s_by_step" else
                                                 "a number of ms > 0"))
            out[step] = float(x)
        return out
    if kind == "classes":
        if not isinstance(v, list) or any(c not in ERROR_CLASSES for c in v):
            raise bad(f"must be a list of error classes ({', '.join(ERROR_CLASSES)})")
        return list(v)
    if kind == "codes":
        if not isinstance(v, list) or any(not isinstance(c, int) or isinstance(c, bool) for c in v):
            raise bad("must be a list of integer error numbers")
        return list(v)
    if kind == "models":
        if not isinstance(v, list) or not v or any(not isinstance(x, str) for x in v):
            raise bad('must be a list of consistency models, e.g. ["read-committed"]')
        try:
            return check_models(v)
        except ValueError as e:
            raise bad(str(e)) from None
    if key == "cluster":
        if v not in ("survives", "stops"):
            raise bad('must be "survives" or "stops"')
        return v
    if v is not True:
        raise bad("must be true (false is the same as leaving it out)")
    return True


class _Locator:
    """Line numbers for errors: tomllib gives none once a file has parsed."""

    def __init__(self, name: str, text: str):
        self.name, self.lines = name, text.splitlines()

    def line_of(self, section, key: str | None) -> int:
        current, seen = None, -1
        for n, line in enumerate(self.lines, 1):
            s = line.strip()
            if re.match(r"^\[\[\s*scenario\s*\]\]", s):
                seen += 1
                current = seen
                if section == current and key is None:
                    return n
                continue
            if re.match(r"^\[\s*defaults\s*\]", s):
                current = "defaults"
                continue
            if s.startswith("["):
                current = ("other", s)
                continue
            if current == section and key and re.match(rf"^\"?{re.escape(key)}\"?\s*=", s):
                return n
        return 0

    def error(self, section, key: str, why: str) -> GateFileError:
        n = self.line_of(section, key)
        where = f"{self.name}:{n}" if n else self.name
        scope = "" if section is None else "[defaults] " if section == "defaults" else f"[[scenario]] #{section + 1} "
        return GateFileError(f"{where}: {scope}{key}: {why}")


__all__ = ["ERROR_CLASSES", "Entry", "Gate", "GateFileError", "GateJudgedNothing", "NOTHING_JUDGED", "OBJECTIVES",
           "PHASES", "load", "matches"]
