"""Reading back an Allure results folder a run wrote: its test results, oldest first, and the
attachments of each (from the result and every step). ``ndbchaos summary`` and ``ndbchaos gate``
both read runs this way.

The folder is the user's input: a result that is not what Allure writes is one line naming its
file (``UsageError``), and an attachment whose file lies outside the folder (``../``, an absolute
path, a symbolic link pointing out) is refused, never read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

from ..errors import UsageError, shown


def read_results(folder: Path) -> list[dict]:
    """Every ``*-result.json`` of the folder, ordered by start time; UsageError on one that is not
    an Allure result or names an attachment outside the folder."""
    out = []
    for f in sorted(Path(folder).glob("*-result.json")):
        try:
            r = json.loads(f.read_bytes().decode("utf-8"))
        except OSError as e:
            raise UsageError(f"{shown(f)}: cannot read it ({e.strerror or e})") from None
        except RecursionError:
            raise UsageError(f"{shown(f)}: not an Allure result: a value nested too deep") from None
        except ValueError as e:  # not UTF-8, not JSON
            raise UsageError(f"{shown(f)}: not an Allure result: not JSON ({e})") from None
        _check_result(f, r, Path(folder))
        out.append(r)
    return sorted(out, key=lambda r: r.get("start") or 0)


def _check_result(f: Path, r, folder: Path) -> None:
    def bad(why: str) -> UsageError:
        return UsageError(f"{shown(f)}: not an Allure result: {why}")

    if not isinstance(r, dict):
        raise bad(f"a JSON {type(r).__name__}, not an object")
    for k in ("name", "fullName", "status"):
        if k in r and not isinstance(r[k], str):
            raise bad(f"{k} must be a string")
    start = r.get("start")
    if start is not None and (not isinstance(start, (int, float)) or isinstance(start, bool)):
        raise bad("start must be a number (ms since the epoch)")
    for k in ("labels", "parameters"):
        v = r.get(k, [])
        if not isinstance(v, list) or not all(isinstance(x, dict) and isinstance(x.get("name", ""), str)
                                               and isinstance(x.get("value", ""), str) for x in v):
            raise bad(f'{k} must be a list of {{"name": ..., "value": ...}} strings')
    root = folder.resolve()
    todo = [(r, "")]
    while todo:
        node, where = todo.pop()
        att, steps = node.get("attachments", []), node.get("steps", [])
        if not isinstance(att, list):
            raise bad(f"{where}attachments must be a list")
        for i, a in enumerate(att):
            if not isinstance(a, dict) or not isinstance(a.get("name"), str) or not isinstance(a.get("source"), str):
                raise bad(f'{where}attachments[{i}] must be {{"name": ..., "source": ...}} strings')
            target = (folder / a["source"]).resolve()
            if not a["source"] or not target.is_relative_to(root) or target == root:
                raise bad(f"attachment {a['name']!r}: source {a['source']!r} is outside the results folder "
                          "(never read)")
        if not isinstance(steps, list) or not all(isinstance(s, dict) for s in steps):
            raise bad(f"{where}steps must be a list of objects")
        todo += [(s, f"{where}steps[{i}] ") for i, s in enumerate(steps)]


def attachments(node: dict) -> Iterator[dict]:
    """A result's attachments, its own first, then its steps' (depth first)."""
    yield from node.get("attachments", [])
    for s in node.get("steps", []):
        yield from attachments(s)


__all__ = ["attachments", "read_results", "shown"]
