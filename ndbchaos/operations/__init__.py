"""Operations: the procedures operators fear, played under load and under failure.

``procedure`` types a procedure (steps, outcomes, cleanup); ``driver`` plays an ``Operation``
declaration (a procedure, optionally a fault during one of its steps). The engine's own steps
(NDB: ``ndbchaos.engines.ndb.procedures``) are reached through the engine's ability
``Procedures`` (``ndbchaos.engines.protocols``). The package imports only ``procedure``, which the
engines use: the driver (``ndbchaos.operations.driver``) is imported by its own name.
"""

from __future__ import annotations

from .procedure import Context, Outcome, Procedure, Step, StepFailed, StepRecord

__all__ = ["Context", "Outcome", "Procedure", "Step", "StepFailed", "StepRecord"]
