"""Reading back an Allure results folder a run wrote: its test results, oldest first, and the
attachments of each (from the result and every step). ``ndbchaos summary`` and ``ndbchaos gate``
both read runs this way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator


def read_results(folder: Path) -> list[dict]:
    """Every parseable ``*-result.json`` of the folder, ordered by start time."""
    out = []
    for f in sorted(Path(folder).glob("*-result.json")):
        try:
            out.append(json.loads(f.read_text()))
        except (OSError, ValueError):
            continue
    return sorted(out, key=lambda r: r.get("start") or 0)


def attachments(node: dict) -> Iterator[dict]:
    """A result's attachments, its own first, then its steps' (depth first)."""
    yield from node.get("attachments", [])
    for s in node.get("steps", []):
        yield from attachments(s)


__all__ = ["attachments", "read_results"]
