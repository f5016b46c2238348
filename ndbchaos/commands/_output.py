"""How the commands print a verdict: JSON with nested objects indented and lists of scalars on one
line (``pretty``)."""

from __future__ import annotations

import json


def pretty(obj, indent: int = 2, _level: int = 0) -> str:
    """JSON with nested objects indented but lists of scalars kept on one line."""
    pad, inner = " " * (indent * _level), " " * (indent * (_level + 1))
    if isinstance(obj, dict):
        if not obj:
            return "{}"
        items = [f"{inner}{json.dumps(str(k))}: {pretty(v, indent, _level + 1)}" for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, (list, tuple)):
        if all(not isinstance(x, (dict, list, tuple)) for x in obj):
            return json.dumps(list(obj), separators=(", ", ": "))
        return "[\n" + ",\n".join(inner + pretty(x, indent, _level + 1) for x in obj) + "\n" + pad + "]"
    return json.dumps(obj)
