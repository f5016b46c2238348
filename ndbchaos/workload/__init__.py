"""Workloads and the runner that drives them against the SQL nodes.

A workload is named in a scenario (``Scenario(..., workload="bank")``): one of the built-in ones,
a project's own (``ndbchaos.workload.app``: registered with ``register_workload``, or found through
the ``ndbchaos.workloads`` entry-point group of an installed package), or its class itself.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

from ..errors import UsageError
from . import bank, fakebook, ledger, oltp, pk_update, txn  # noqa: F401  (each registers its workload)
from .app import AppWorkload, register_workload
from .registry import WORKLOADS, register  # noqa: F401  (register: the built-in workloads' decorator)

#: the entry-point group a project's package declares its workloads in (name = its class)
ENTRY_POINTS = "ndbchaos.workloads"


def _entry_points() -> list:
    return list(entry_points(group=ENTRY_POINTS))


def workload_class(name):
    """The class of a workload: a registered name, an entry point of ``ndbchaos.workloads``, a
    ``module:qualname`` reference (how a worker process finds a project's class again), or a
    project's class itself (registered on the way)."""
    if isinstance(name, type):
        if issubclass(name, AppWorkload):
            return register_workload(name)
        if name.name in WORKLOADS and WORKLOADS[name.name] is name:
            return name
        raise UsageError(f"workload class {name.__qualname__}: not a registered workload nor an AppWorkload")
    cls = WORKLOADS.get(name)
    if cls is not None:
        return cls
    if isinstance(name, str) and ":" in name:
        return register_workload(_import(name, name))
    for ep in _entry_points():
        if ep.name == name:
            cls = _import(ep.value, f"entry point {ep.name} ({ENTRY_POINTS})")
            if getattr(cls, "name", None) != name:
                raise UsageError(f"entry point {ep.name} ({ENTRY_POINTS}) names {ep.value}, whose name is "
                                 f"{getattr(cls, 'name', None)!r}: the two must be the same")
            return register_workload(cls)
    known = sorted(set(WORKLOADS) | {ep.name for ep in _entry_points()})
    raise UsageError(f"unknown workload {name!r} (known: {', '.join(known)})")


def _import(reference: str, what: str):
    module, _, qualname = reference.partition(":")
    try:
        obj = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as e:
        raise UsageError(f"workload {what}: {reference} cannot be imported here: {e}") from None
    return obj


def get_workload(name, **params):
    return workload_class(name)(**params)
