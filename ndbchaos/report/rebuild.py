"""A saved run's report, rebuilt from its file alone: an Allure result written into a results
folder, rendered by the same code as the live one (``ndbchaos.report.allure.attach_result``),
so its description, parameters, labels and attachments are the live report's.

    rebuild(Result.judge(History.read("run.jsonl")), Path("reports/rebuilt"))

What the live report has besides (the gate's rows and the trend) belongs to the session, not to
the run: the gate's rows are added when a gate file is given (``ndbchaos report --gate``), the
trend is not (it is the trend file's history, not the run's). The steps come from the record's
outline (the steps the run took, with their times); a run recorded before the outline existed
has none.
"""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path

from allure_commons.logger import AllureFileLogger
from allure_commons.model2 import (Attachment, Label, Parameter, Status, StatusDetails, TestResult,
                                   TestStepResult)

from ..outcome import Result
from .allure import attach_result


class FolderSink:
    """One Allure result collected in memory, its attachments written at once into ``folder``."""

    def __init__(self, folder: Path):
        self.logger = AllureFileLogger(str(folder))
        self.result = TestResult(uuid=str(uuid.uuid4()))

    def attach(self, body, name, kind, extension=None):
        ext = extension or (kind.extension if kind is not None else "attach")
        source = f"{uuid.uuid4()}-attachment.{ext}"
        self.logger.report_attached_data(body=body, file_name=source)
        self.result.attachments.append(Attachment(name=name, source=source,
                                                  type=kind.mime_type if kind is not None else None))

    def title(self, text):
        if text:
            self.result.name = text

    def label(self, name, value):
        self.result.labels.append(Label(name=name, value=value))

    def description(self, markdown):
        self.result.description = markdown

    def parameter(self, name, value):
        self.result.parameters.append(Parameter(name=name, value=str(value), excluded=True))


def _ms(wall0: float | None, t: float | None) -> int | None:
    return None if wall0 is None or t is None else int(round((wall0 + t) * 1000))


def _steps(outline: list[dict], wall0: float | None) -> list[TestStepResult]:
    return [TestStepResult(name=s.get("title") or "", status=Status.FAILED if s.get("failed") else Status.PASSED,
                           start=_ms(wall0, s.get("start")), stop=_ms(wall0, s.get("stop")),
                           steps=_steps(s.get("steps") or [], wall0))
            for s in outline if isinstance(s, dict)]


def rebuild(result: Result, folder: Path, extra=None) -> TestResult:
    """Write ``result``'s report into the results folder ``folder``; ``extra(sink)`` adds the
    session's own attachments (the gate's rows). Returns the Allure result written."""
    folder.mkdir(parents=True, exist_ok=True)
    sink = FolderSink(folder)
    record = result.record
    sc = record.scenario
    tr = sink.result
    tr.name = (sc.test if sc else "") or record.title or "run"
    tr.fullName = (sc.nodeid if sc else "") or tr.name
    tr.historyId = tr.testCaseId = hashlib.md5(tr.fullName.encode()).hexdigest()
    attach_result(result, sink)
    if extra is not None:
        extra(sink)
    for m in sc.markers if sc else ():
        sink.label("tag", m)
    sink.label("framework", "ndbchaos report")
    valid = result.verdict.valid
    tr.status = Status.PASSED if valid is True else Status.FAILED
    if valid is not True:
        tr.statusDetails = StatusDetails(message="\n".join(result.verdict.summary))
    tr.steps = _steps(record.outline, record.wall0)
    times = [t for s in record.outline for t in (s.get("start"), s.get("stop")) if isinstance(t, (int, float))]
    tr.start, tr.stop = (_ms(record.wall0, min(times)), _ms(record.wall0, max(times))) if times else (None, None)
    sink.logger.report_result(tr)
    return tr


__all__ = ["FolderSink", "rebuild"]
