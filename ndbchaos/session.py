"""A pytest session's own state, typed, kept in pytest's stash (``config.stash[SESSION]``) rather
than in module state: the cluster, why its engine was chosen, and each scenario's terminal line
until it is printed. The plugin creates it when the session is configured; the fixtures' work
(``ndbchaos.fixtures``) reads and writes it. Nothing here imports the project's heavy modules: the
plugin loads it in every pytest session."""

from __future__ import annotations

from dataclasses import dataclass, field

from .killswitch import Condition


@dataclass
class Session:
    cluster: object | None = None  # the session cluster while it is up (a ClusterHandle)
    last_cluster: object | None = None  # the last one, for the report's environment after teardown
    engine_reason: str = ""  # why its engine (--engine auto: what was found)
    lines: dict[str, str] = field(default_factory=dict)  # node id -> the scenario's line, until printed
    dry_run: bool = False  # --dry-run: plans printed, nothing touched
    seed: int | None = None  # the session's seed (--seed; a dry run draws one when none is given)
    kill_switch: bool = True  # --no-kill-switch turns it off
    abort_when: tuple[Condition, ...] = ()  # --abort-when conditions

    def hold(self, cluster, reason: str) -> None:
        """The session's cluster is ``cluster``, its engine chosen for ``reason``."""
        self.cluster = self.last_cluster = cluster
        self.engine_reason = reason

    def release(self):
        """The cluster, no longer the session's (None when there was none)."""
        cluster, self.cluster = self.cluster, None
        return cluster


__all__ = ["Session"]
