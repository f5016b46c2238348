"""``pytest --gate FILE``: the gate inside a pytest session.

Registered by the ndbchaos plugin when ``--gate`` is given (a bad file stops the session with
one line before anything starts). Checks every pattern against the collected catalogue before
any cluster starts, judges each scenario as it finishes (its rows are attached to its Allure
result and summed up in one line), and at the end prints one table, writes ``gate.json`` and,
when no test failed otherwise, exits with ``GATE_FAILED`` if an objective of severity fail was
missed, or with ``NOTHING_JUDGED`` (pytest's usage error, 4, the code of a pattern that names no
scenario) if no objective of the gate could be evaluated on any scenario: never a pass.
Scenarios the gate names that did not run are NOT EVALUATED.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from . import FAIL, GATE_FAILED, NOT_EVALUATED, WARN, Run, evaluate, judge, table
from ..checks import RunVerdict
from ..errors import UsageError
from .evaluate import summarize
from .results import CATALOGUE, load_baseline
from .spec import NOTHING_JUDGED, Gate

NAME = "ndbchaos-gate"


def scenario_ids(item) -> tuple[list[str], list[str]]:
    """(ids, markers) of a collected scenario: its test id (name with parameters), the scenario
    name (the parameter id) and node id; its markers."""
    ids = [item.name]
    spec = getattr(item, "callspec", None)
    if spec is not None:
        ids.append(spec.id)
    ids.append(item.nodeid)
    return ids, [m.name for m in item.iter_markers()]


class GatePlugin:
    def __init__(self, gate: Gate, out: Path, baseline: str | None):
        if out.is_dir() or (out.parent.exists() and not out.parent.is_dir()):
            raise UsageError(f"--gate-out {out}: " + ("a folder" if out.is_dir() else f"{out.parent} is not a folder")
                             + ", give a file path")
        self.gate, self.out = gate, out
        self.baseline = load_baseline(baseline or gate.baseline)
        self.runs: list[Run] = []
        self.expected: list[tuple[list[str], list[str]]] = []
        self.declared: dict[str, object] = {}  # test id -> its Scenario declaration
        self.engine: str | None = None  # the engine under test, once the session's cluster knows it
        self.lines: dict[str, str] = {}
        self.result: dict | None = None
        self.aborted = False  # the session stopped on a bad pattern: nothing to judge or write

    @pytest.hookimpl(tryfirst=True)  # before -m/-k deselect: the whole catalogue that was collected
    def pytest_collection_modifyitems(self, session, config, items):
        played = [i for i in items if "play" in getattr(i, "fixturenames", ())]
        self.expected = [scenario_ids(i) for i in played]
        self.declared = {i.name: getattr(i, "callspec", None) and i.callspec.params.get("sc") for i in played}
        unknown = self.gate.unknown_patterns([ids for ids, _ in self.expected],
                                             {m for _, ms in self.expected for m in ms})
        alluredir = getattr(config.option, "allure_report_dir", None) if config is not None else None
        if alluredir and not unknown:  # offline, `ndbchaos gate` knows what this session could have run
            Path(alluredir).mkdir(parents=True, exist_ok=True)
            (Path(alluredir) / CATALOGUE).write_text(json.dumps(
                [{"ids": ids, "markers": markers} for ids, markers in self.expected], indent=0))
        if unknown:
            e = unknown[0]
            self.aborted = True
            raise pytest.UsageError(f"{self.gate.path}:{e.line}: match {e.patterns}: no collected scenario or "
                                    "marker matches (a typo, or a scenario outside the collected paths)")

    def _applies(self, test_id: str) -> bool:
        """Whether a scenario can run on the engine under test: a declaration for other engines
        only is not expected of this session (not NOT EVALUATED: there is nothing to evaluate)."""
        sc = self.declared.get(test_id)
        why_not = getattr(sc, "skip_reason", None)
        return not (self.engine and why_not and why_not(self.engine))

    def add(self, item, history, verdict: RunVerdict | None = None) -> tuple[list[dict], str]:
        """A finished scenario: judged now; (its rows, the same as a text table) for its report,
        and one progress line."""
        ids, markers = scenario_ids(item)
        run = Run(ids[0], markers, history, ids[1:])
        self.runs.append(run)
        rows, _ = judge(run, self.gate, self.baseline, verdict)
        bad = [r for r in rows if r.status in (FAIL, WARN)]
        self.lines[item.nodeid] = (f"gate {ids[0]}: " + ("; ".join(f"{r.objective} {r.measured} > {r.limit} {r.status}"
                                                              for r in bad) or "every objective met"))
        one = summarize(self.gate, rows)
        return one["rows"], table(one)

    def pytest_runtest_logreport(self, report):
        if report.when == "teardown" and report.nodeid in self.lines:
            tr = self._terminal()
            if tr is not None:
                tr.write_line(self.lines.pop(report.nodeid))

    @pytest.hookimpl(trylast=True)  # after the ndbchaos plugin wrote the Allure environment
    def pytest_sessionfinish(self, session):
        if self.aborted:
            return
        ran = {r.test_id for r in self.runs}
        expected = [x for x in self.expected if x[0][0] not in ran and self._applies(x[0][0])]
        elsewhere = [x for x in self.expected if not self._applies(x[0][0])]
        self.result = evaluate(self.gate, self.runs, expected + [(r.ids, r.markers) for r in self.runs],
                               self.baseline, not_applicable=elsewhere)
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.out.write_text(json.dumps(self.result, indent=1))
        if self.result["result"] == "fail" and session.exitstatus == 0:
            session.exitstatus = GATE_FAILED
        elif self.result["result"] == "not evaluated" and session.exitstatus == 0:
            session.exitstatus = NOTHING_JUDGED
        alluredir = getattr(session.config.option, "allure_report_dir", None)
        env = Path(alluredir) / "environment.properties" if alluredir else None
        if env is not None and env.exists():
            c = self.result["counts"]
            with env.open("a") as fh:
                fh.write(f"gate={self.result['result'].upper()} ({c[FAIL]} failed, {c[WARN]} warned, "
                         f"{c[NOT_EVALUATED]} not evaluated; {Path(self.gate.path).name})\n")

    def pytest_terminal_summary(self, terminalreporter):
        if self.result is None:
            return
        terminalreporter.section("availability gate")
        terminalreporter.write_line(table(self.result))
        c = self.result["counts"]
        terminalreporter.write_line(f"written to {self.out}" + (f"; {c[NOT_EVALUATED]} not evaluated"
                                                                 if c[NOT_EVALUATED] else ""))
        if self.result["result"] == "fail":
            terminalreporter.write_line(f"exit code {GATE_FAILED}: the gate failed", red=True)
        elif self.result["result"] == "not evaluated":
            terminalreporter.write_line(f"exit code {NOTHING_JUDGED}: no objective of the gate could be evaluated "
                                        "on any scenario of this session", red=True)

    def _terminal(self):
        return getattr(self, "_tr", None)

    @pytest.hookimpl(trylast=True)
    def pytest_configure(self, config):
        self._tr = config.pluginmanager.get_plugin("terminalreporter")


__all__ = ["GatePlugin", "NAME", "scenario_ids"]
