"""The registry of workloads by name: the built-in ones register with ``register`` when the
package imports them, a project's own through ``ndbchaos.workload.app.register_workload``."""

from __future__ import annotations

WORKLOADS: dict = {}


def register(cls):
    WORKLOADS[cls.name] = cls
    return cls
