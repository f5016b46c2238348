"""Enough EDN to read Jepsen and Elle histories (and to write ours back).

Read: nil, true, false, integers (``N`` suffix too), floats (``M`` too), strings, characters,
keywords (as ``":name"`` strings), symbols (as strings), lists and vectors (as lists), maps (as
dicts; a vector key becomes a tuple), sets (as frozensets), tagged elements (``#inst "..."`` and
Jepsen's ``#jepsen.history.Op{...}`` records: the tag is dropped, the value kept), comments and
``#_`` discards. Anything else raises ``EdnError`` with its line.
"""

from __future__ import annotations

import re

_TOKEN = re.compile(r"""
    (?P<ws>[\s,]+|;[^\n]*)
  | (?P<str>"(?:[^"\\]|\\.)*")
  | (?P<open>\#\{|[\[({])
  | (?P<close>[\])}])
  | (?P<disc>\#_)
  | (?P<tag>\#[A-Za-z][^\s,\[\](){}"#;]*)
  | (?P<char>\\(?:newline|space|tab|return|u[0-9a-fA-F]{4}|\S))
  | (?P<atom>[^\s,\[\](){}"#;]+)
""", re.X)
_INT = re.compile(r"[+-]?\d+N?\Z")
_RATIO = re.compile(r"[+-]?\d+/\d+\Z")
_FLOAT = re.compile(r"[+-]?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?M?\Z")
_ESC = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "b": "\b", "f": "\f"}
_CHARS = {"newline": "\n", "space": " ", "tab": "\t", "return": "\r"}


class EdnError(ValueError):
    def __init__(self, line: int, msg: str):
        super().__init__(f"line {line}: {msg}")
        self.line = line
        self.msg = msg


def _string(s: str) -> str:
    body = s[1:-1]
    if "\\" not in body:
        return body
    return re.sub(r"\\(u[0-9a-fA-F]{4}|.)",
                  lambda m: chr(int(m.group(1)[1:], 16)) if m.group(1)[0] == "u" else _ESC.get(m.group(1), m.group(1)),
                  body)


def _atom(a: str):
    if a == "nil":
        return None
    if a == "true":
        return True
    if a == "false":
        return False
    c = a[0]
    if c.isdigit() or (c in "+-" and len(a) > 1 and a[1].isdigit()):
        if _INT.match(a):
            return int(a.rstrip("N"))
        if _FLOAT.match(a):
            return float(a.rstrip("M"))
        if _RATIO.match(a) and int(a.partition("/")[2]):  # a ratio
            n, _, d = a.partition("/")
            return int(n) / int(d)
        raise ValueError(f"{a!r} is not a number")  # a digit starts a number, never a symbol
    return a  # keywords keep their colon; symbols as they are


def _hashable(x):
    if isinstance(x, list):
        return tuple(_hashable(y) for y in x)
    if isinstance(x, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in x.items()))
    return x


#: how deep forms may nest (as ``ndbchaos.history.jsonl.MAX_DEPTH``): a deeper one is refused
#: with its line, before anything walks it recursively
MAX_DEPTH = 64
_CLOSE = {"[": "]", "(": ")", "{": "}", "#{": "}"}


def loads_all(text: str) -> list:
    """Every top-level form of ``text``."""
    forms: list = []
    # the stack holds [opening token, items, line, pending tag/discard markers]
    stack: list[list] = []
    pending: list[list] = [[]]  # per level: markers ("tag" | "disc") waiting for the next value
    line = 1
    pos = 0
    n = len(text)
    match = _TOKEN.match

    def emit(value):
        while pending[-1]:
            mark = pending[-1].pop()
            if mark == "disc":
                return
            # a tag: the value stays as it is
        (stack[-1][1] if stack else forms).append(value)

    while pos < n:
        m = match(text, pos)
        if m is None:
            raise EdnError(line, f"cannot read {text[pos:pos + 20]!r}")
        kind = m.lastgroup
        tok = m.group(kind)
        pos = m.end()
        if kind == "ws":
            line += tok.count("\n")
            continue
        if kind == "str":
            line += tok.count("\n")
            emit(_string(tok))
        elif kind == "atom":
            try:
                emit(_atom(tok))
            except (ValueError, OverflowError) as e:  # (a ratio too large for a float)
                raise EdnError(line, str(e)) from None
        elif kind == "char":
            body = tok[1:]
            emit(_CHARS.get(body, chr(int(body[1:], 16)) if len(body) == 5 and body[0] == "u" else body))
        elif kind == "open":
            if len(stack) >= MAX_DEPTH:
                raise EdnError(line, f"a value nested deeper than {MAX_DEPTH} levels")
            stack.append([tok, [], line])
            pending.append([])
        elif kind == "close":
            if not stack:
                raise EdnError(line, f"unexpected {tok!r}")
            opener, items, start = stack.pop()
            pending.pop()
            if _CLOSE[opener] != tok:
                raise EdnError(line, f"{opener!r} opened on line {start} closed by {tok!r}")
            if opener == "{":
                if len(items) % 2:
                    raise EdnError(line, f"a map (from line {start}) with an odd number of forms")
                value = {_hashable(items[i]): items[i + 1] for i in range(0, len(items), 2)}
            elif opener == "#{":
                value = frozenset(_hashable(x) for x in items)
            else:
                value = items
            emit(value)
        elif kind == "disc":
            pending[-1].append("disc")
        else:  # a tag
            pending[-1].append("tag")
    if stack:
        raise EdnError(stack[-1][2], f"{stack[-1][0]!r} is never closed")
    return forms


def _key(k):
    return k[1:] if isinstance(k, str) and k.startswith(":") else k


def op_from_edn(form) -> dict:
    """A Jepsen op map (keyword keys) as a plain dict: ``{"index", "type", "process", ...}``,
    ``type`` without its colon."""
    if not isinstance(form, dict):
        return form
    op = {_key(k): v for k, v in form.items()}
    for field in ("type", "f"):
        v = op.get(field)
        if isinstance(v, str) and v.startswith(":"):
            op[field] = v[1:]
    return op


def dumps(x) -> str:
    """EDN text of a JSON-like value (strings that start with ':' are written as keywords)."""
    if x is None:
        return "nil"
    if x is True:
        return "true"
    if x is False:
        return "false"
    if isinstance(x, (int, float)):
        return repr(x)
    if isinstance(x, str):
        if x.startswith(":") and len(x) > 1 and re.fullmatch(r":[^\s,\[\](){}\"#;]+", x):
            return x
        return '"' + x.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(x, (list, tuple)):
        return "[" + " ".join(dumps(y) for y in x) + "]"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{dumps(k)} {dumps(v)}" for k, v in x.items()) + "}"
    raise TypeError(f"cannot write {type(x).__name__} as EDN")


def dumps_op(ev: dict) -> str:
    """One Jepsen op as an EDN map with keyword keys (type and f as keywords, mop names too)."""
    out = {}
    for k, v in ev.items():
        if k in ("type", "f") and isinstance(v, str):
            v = ":" + v
        elif k == "value" and isinstance(v, list):
            v = [[":" + m[0], *m[1:]] if isinstance(m, list) and m and isinstance(m[0], str) else m for m in v]
        out[":" + k] = v
    return dumps(out)


__all__ = ["EdnError", "dumps", "dumps_op", "loads_all", "op_from_edn"]
