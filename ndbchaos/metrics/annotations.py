"""A run's phases and fault windows as Grafana annotations: each one the body of Grafana's
annotation HTTP API (``POST /api/annotations``): ``time`` and ``timeEnd`` in epoch milliseconds,
``tags`` and ``text``, so that they overlay the user's own dashboards (docs/metrics.md shows how
to post them).

``--annotations FILE`` keeps them in one JSON document, a list: each scenario's are appended when
it ends and the file is written again whole (to a temporary file renamed over it), so it is one
valid JSON document after every scenario, and a session stopped half way leaves the scenarios it
finished. A file from an earlier session is appended to; a file that is not such a list is a
usage error before anything starts.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..errors import UsageError
from .exposition import scenario_name


def annotations(run) -> list[dict]:
    """The annotations of ``run``: one per phase, then one per fault window since it began (a
    phase or window still open ends now)."""
    clock = run.clock
    now = clock.now()
    name = scenario_name(run)
    engine = run.cluster.engine.name

    def ms(t: float) -> int:
        return int(round(clock.wall(t) * 1000))

    out = []
    for ph in run.rec.phases:
        out.append({"time": ms(ph.start), "timeEnd": ms(ph.end if ph.end is not None else now),
                    "tags": ["ndbchaos", "phase", ph.name, name, engine],
                    "text": f"{name}: {ph.name}" + (f" ({ph.description})" if ph.description else "")})
    for w in run.cluster.journal.windows(since=getattr(run, "t0", None)):
        if w.start is None:
            continue
        out.append({"time": ms(w.start), "timeEnd": ms(w.end if w.end is not None else now),
                    "tags": ["ndbchaos", "fault", w.kind, name, engine, *w.targets],
                    "text": f"{name}: {w.kind} on {', '.join(w.targets)}"})
    return out


class AnnotationFile:
    """The ``--annotations`` file (see the module docstring)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path).expanduser()
        self.items: list[dict] = []
        if self.path.is_dir():
            raise UsageError(f"--annotations {self.path}: a folder, not a file")
        if not self.path.parent.is_dir():
            raise UsageError(f"--annotations {self.path}: no folder {self.path.parent}")
        if self.path.exists() and self.path.stat().st_size:
            try:
                found = json.loads(self.path.read_text())
            except (OSError, ValueError) as e:
                raise UsageError(f"--annotations {self.path}: not a JSON list of annotations ({e})") from None
            if not isinstance(found, list):
                raise UsageError(f"--annotations {self.path}: not a JSON list of annotations")
            self.items = found
        if not os.access(self.path.parent, os.W_OK):
            raise UsageError(f"--annotations {self.path}: {self.path.parent} is not writable")

    def append(self, items: list[dict]) -> None:
        self.items.extend(items)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.items, indent=1) + "\n")
        os.replace(tmp, self.path)


__all__ = ["AnnotationFile", "annotations"]
