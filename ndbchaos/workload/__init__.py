"""Workloads and the runner that drives them against the SQL nodes."""

from __future__ import annotations

from ..errors import UsageError

WORKLOADS = {}


def register(cls):
    WORKLOADS[cls.name] = cls
    return cls


def get_workload(name: str, **params):
    from . import ledger, pk_update, bank, txn  # noqa: F401  (registration)
    try:
        from . import fakebook, oltp  # noqa: F401
    except ImportError:
        pass
    try:
        cls = WORKLOADS[name]
    except KeyError:
        raise UsageError(f"unknown workload {name!r} (known: {', '.join(sorted(WORKLOADS))})") from None
    return cls(**params)
