"""A judged run: its history (whose header holds the run record), the record, and the verdict.

    result = Result.judge(history)           # a saved run.jsonl read back, judged again
    result.measurements                      # the driver's figures, then those of the verdict

This is the value the report, the terminal line, the gate rows and the trend read, whether the
run just finished (``ScenarioRun.finish``) or was read back from its file (``ndbchaos report``):
they never read the live run. The figures a verdict adds to the driver's (the outage on every SQL
node, the clients served again, throughput back) are derived here, once, from the record and the
verdict (``verdict_measurements``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .checks import RunVerdict, check_run
from .history import History
from .record import Measurement, RunRecord


@dataclass(frozen=True)
class Result:
    history: History  # its ``run`` is the record's JSON form
    verdict: RunVerdict
    record: RunRecord

    @classmethod
    def judge(cls, history: History) -> "Result":
        """A saved run judged again from its file alone (``check_run`` on its record)."""
        if not history.run:
            raise ValueError("the history has no run record (a bare history: nothing to report but its ops)")
        record = RunRecord.from_json(history.run)
        return cls(history, check_run(history), record)

    @property
    def valid(self):
        return self.verdict.valid

    @property
    def events(self) -> list[dict]:
        return self.record.events or []

    @property
    def windows(self) -> list[dict]:
        return self.record.windows

    @property
    def phases(self):
        return self.record.phases

    @property
    def status_after(self) -> dict | None:
        return self.record.status_after

    @property
    def measurements(self) -> dict[str, Measurement]:
        """Every figure of the run: the driver's, then the verdict's (which win on a name)."""
        return {**self.record.measurements, **verdict_measurements(self.record, self.verdict)}


@dataclass(frozen=True)
class Incomplete:
    """A run that did not reach its verdict (an error, a timeout): its record so far (no status
    after) and its history when the load ran."""
    record: RunRecord
    history: History | None


def verdict_measurements(record: RunRecord, verdict: RunVerdict) -> dict[str, Measurement]:
    """The figures a verdict measures: the longest outage on all SQL nodes and on each, the
    slowest failover of a lost SQL node's clients, and how long throughput took to come back."""
    out: dict[str, Measurement] = {}

    def put(name, value, unit="", note="", bound=None):
        out[name] = Measurement(name, round(value, 3) if isinstance(value, float) else value, unit, note, bound)

    av = verdict.availability
    if av is not None and av.longest_outage_s is not None:
        put("outage (all SQL nodes)", av.longest_outage_s, "s",
            note="longest time with no successful operation on any SQL node")
    targets = {t for w in record.windows for t in (w.get("targets") or [])}
    for node, longest in sorted((av.per_node if av is not None else {}).items()):
        put(f"outage on {node}", longest if longest is not None else 0.0, "s",
            note="longest time with no successful operation on this SQL node"
            + ("; a fault target, so its own downtime is included" if node in targets else ""))
    exp = verdict.expectation
    fo = exp.objective("clients served again") if exp is not None else None
    if fo is not None and isinstance(fo.measured, (int, float)):
        put("clients served again", fo.measured, "s", bound=fo.bound,
            note="the slowest of the lost SQL node's clients: its first error -> its next success "
            + ("(failover to the next SQL node)" if fo.bound is not None
               else "(no failover: on their own node, once it was back)"))
    if av is not None and av.throughput_recovered_s is not None:
        put("throughput back to 90%", av.throughput_recovered_s, "s",
            note="after the last heal, until throughput is back to 90% of baseline")
    return out


__all__ = ["Incomplete", "Result", "verdict_measurements"]
