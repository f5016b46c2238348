"""Faults: objects with a window. Inject, verify it took effect, hold, heal, verify it healed.

Every fault registers with its cluster before it touches anything, so it is healed on every path
out (normal exit, assertion failure, exception, Ctrl-C, session end) by ``Cluster.heal_all()``.
"""

from .base import Fault, FaultNotEffective, FaultWindow  # noqa: F401
