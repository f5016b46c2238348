"""A transaction's micro-operations read from a history's value: ``[f, k, v]`` each, keys and
values numbers or strings (a read's value a list of them), checked where they are read so an
error names the op (``TxnFormatError``)."""

from __future__ import annotations

from typing import Any


class TxnFormatError(ValueError):
    """A history that cannot be read as transactions; the message names the place."""


def _short(x: Any) -> str:
    try:
        s = repr(x)
    except RecursionError:  # (the readers refuse such values; this names them)
        return f"a {type(x).__name__} nested too deeply to show"
    return s if len(s) <= 120 else s[:117] + "..."


#: micro-op names as Jepsen's JSON and EDN spell them (keywords keep their colon in JSON)
_MOP_NAMES = {"append": "append", "r": "r", "w": "w", ":append": "append", ":r": "r", ":w": "w"}


def _fast_mops(value) -> list | None:
    """``_mops`` for well-formed values (keys and values scalars, a read's value a list of them)
    in a few steps; None for anything else, which ``_mops`` then reads or names."""
    if value is None:
        return []
    names = _MOP_NAMES
    try:
        out = [(names[f], k, tuple(v) if type(v) is list else v) for f, k, v in value]
    except (KeyError, TypeError, ValueError):
        return None
    sc = _SCALAR
    for _f, k, v in out:
        if type(k) not in sc or (type(v) not in sc and (type(v) is not tuple or not set(map(type, v)) <= sc)):
            return None  # a vector key, or a value _mops refuses
    return out


def _valid_mops(value) -> bool:
    """Whether ``_fast_mops`` takes value (not None), without building its micro-ops: an
    invocation's, checked and then left for its completion's."""
    if value is None:
        return True
    names, sc = _MOP_NAMES, _SCALAR
    try:
        for f, k, v in value:
            if f not in names or type(k) not in sc or (
                    type(v) not in sc and (type(v) not in (list, tuple) or not set(map(type, v)) <= sc)):
                return False
    except (TypeError, ValueError):
        return False
    return True


def _mop_name(f) -> str | None:
    if isinstance(f, str):
        return f[1:] if f.startswith(":") else f
    return None


#: what a micro-op's key or value may be (a vector key, a list value: a tuple of these); a map, a
#: set or a nested list is refused (the analyses compare and hash keys and values)
_SCALAR = {int, float, str, bool, type(None)}


def _flat(x, where: str, what: str):
    """x as a key or value the analyses can use: a scalar, or a list of scalars as a tuple."""
    t = type(x)
    if t in _SCALAR:
        return x
    if (t is list or t is tuple) and set(map(type, x)) <= _SCALAR:
        return tuple(x)
    kind = {dict: "a map", frozenset: "a set", set: "a set"}.get(t) or (
        "a nested list" if t in (list, tuple) else f"a {t.__name__}")
    raise TxnFormatError(f"{where}: micro-op {what} is {kind} ({_short(x)}); keys and values must be numbers "
                         "or strings (a read's value a list of them)")


def _mops(value, where: str, invoke: bool = False) -> list:
    """A transaction's value as a list of (f, k, v) tuples (reads of lists, and vector keys, as
    tuples); raises TxnFormatError for a key or value that is a map, a set or a nested list."""
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise TxnFormatError(f"{where}: value is not a list of micro-ops: {_short(value)}")
    out = []
    for m in value:
        if not isinstance(m, (list, tuple)) or len(m) != 3:
            raise TxnFormatError(f"{where}: micro-op is not [f, k, v]: {_short(m)}")
        f = _mop_name(m[0])
        if f is None:
            raise TxnFormatError(f"{where}: micro-op name {m[0]!r} is not a string or keyword")
        k = _flat(m[1], where, "key")
        v = None if invoke and f == "r" else _flat(m[2], where, "value")
        out.append((f, k, v))
    return out
