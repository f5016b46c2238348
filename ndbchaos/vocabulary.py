"""The engines' vocabulary, on the ground floor: what a cluster looks like (``ClusterStatus`` of
``NodeStatus``), what shapes one (``ClusterOptions``), what a fault must do (``Expectation``) and
what a transactional workload may see (``TxnModels``).

Engines produce these values; runtimes, faults, the driver, checks and reports read them. The
module imports nothing of the project, so every layer can name them without reaching an engine
or a runtime.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Mapping


class OptionError(ValueError):
    """A cluster option that does not exist or has a value of the wrong kind (one line)."""


@dataclass(frozen=True)
class ClusterOptions:
    """What shapes a cluster this project starts or attaches to: the engine's layout and image,
    the runtime's overlays, ports and disks. A value: a runtime that adds an overlay makes a new
    one (``with_``). The session's settings (``ndbchaos.settings``) fill in what is not given here,
    in the engine's own methods.

    NDB: ``ndb_layout`` (``default``, ``small``, a spec, or ``config=PATH`` for a twin),
    ``ndb_subnet`` (a /24 prefix), ``ndb_image``, ``ndb_root_password``, ``ndb_start_timeout``
    (seconds for the whole start). Galera: ``galera_data_nodes`` (2 or 3), ``galera_image``.
    The runtime: ``data_disk_mb`` (each data node's data directory on a disk of this size),
    ``overlays`` (compose files over the engine's), ``compose_env`` (their variables), ``ports``
    (service -> host port), ``keep`` (leave the cluster running), ``seed`` (the run's seed, for
    seeded target choices), ``inventory`` (the inventory file of a cluster on hosts)."""

    ndb_layout: str | None = None
    ndb_subnet: str | None = None
    ndb_image: str | None = None
    ndb_root_password: str | None = None
    ndb_start_timeout: float | None = None
    galera_data_nodes: int | None = None
    galera_image: str | None = None
    data_disk_mb: int | None = None
    overlays: tuple[str, ...] = ()
    compose_env: Mapping[str, str] = field(default_factory=dict)
    ports: Mapping[str, int] = field(default_factory=dict)
    keep: bool = False
    seed: int | None = None
    inventory: str | None = None

    @classmethod
    def of(cls, value: ClusterOptions | Mapping[str, Any] | None) -> ClusterOptions:
        """The options of ``value``: itself, none, or a mapping of option names (the edge where a
        caller's plain mapping comes in); a name that is not an option, or a value of the wrong
        kind, is an ``OptionError`` naming it."""
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if not isinstance(value, Mapping):
            raise OptionError(f"cluster options must be a mapping of names to values, not {type(value).__name__}")
        _check_names(value)
        return cls(**{k: _coerce(k, v) for k, v in value.items() if v is not None})

    def with_(self, **changes) -> ClusterOptions:
        """A copy with ``changes`` (names and values checked as ``of`` checks them)."""
        _check_names(changes)
        return replace(self, **{k: _coerce(k, v) for k, v in changes.items()})

    def given(self) -> dict[str, Any]:
        """The options set to other than their default, as plain values (for a journal or a
        command line)."""
        out = {}
        for f in fields(self):
            v = getattr(self, f.name)
            default = f.default_factory() if callable(f.default_factory) else f.default  # type: ignore[misc]
            if v != default:
                out[f.name] = list(v) if isinstance(v, tuple) else dict(v) if isinstance(v, Mapping) else v
        return out


_KINDS: dict[str, type | tuple[type, ...]] = {
    "ndb_layout": str, "ndb_subnet": str, "ndb_image": str, "ndb_root_password": str,
    "ndb_start_timeout": (int, float), "galera_data_nodes": int, "galera_image": str, "data_disk_mb": int,
    "keep": bool, "seed": int, "inventory": str,
}


def _check_names(names) -> None:
    known = {f.name for f in fields(ClusterOptions)}
    unknown = sorted(set(names) - known)
    if unknown:
        raise OptionError(f"unknown cluster option {unknown[0]!r} (known: {', '.join(sorted(known))})")


def _coerce(name: str, value: Any) -> Any:
    if value is None:
        return None
    if name == "overlays":
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            raise OptionError(f"cluster option overlays: a list of compose files, not {value!r}")
        return tuple(str(v) for v in value)
    if name in ("compose_env", "ports"):
        if not isinstance(value, Mapping):
            raise OptionError(f"cluster option {name}: a mapping, not {value!r}")
        return {str(k): (int(v) if name == "ports" else str(v)) for k, v in value.items()}
    kind = _KINDS[name]
    if kind is str and hasattr(value, "__fspath__"):
        return str(value)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise OptionError(f"cluster option {name}: {value!r} is not {_KIND_NAMES[kind]}")
    return value


_KIND_NAMES = {str: "a string", int: "a whole number", (int, float): "a number", bool: "true or false"}


@dataclass
class NodeStatus:
    """What one node looks like right now.

    ``state`` is engine vocabulary (Galera: Synced/Joining/...; NDB: started/starting/not connected);
    ``healthy`` is the engine's judgement of that state; ``details`` carries the raw fields.
    """

    node: str
    role: str
    container: str  # running | paused | exited | gone ...
    state: str
    healthy: bool
    details: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {"node": self.node, "role": self.role, "container": self.container,
                "state": self.state, "healthy": self.healthy, "details": self.details}


@dataclass
class ClusterStatus:
    t: float  # run clock
    nodes: list[NodeStatus]
    healthy: bool
    problems: list[str]
    summary: dict = field(default_factory=dict)  # engine-level facts (component size, arbitrator...)

    def node(self, name: str) -> NodeStatus:
        for n in self.nodes:
            if n.node == name:
                return n
        raise KeyError(name)

    def to_dict(self) -> dict:
        return {"t": round(self.t, 3), "healthy": self.healthy, "problems": self.problems,
                "summary": self.summary, "nodes": [n.to_dict() for n in self.nodes]}


@dataclass
class Expectation:
    """The outcome a fault must have, and the rule it is derived from."""

    family: str
    survivors_serve: bool  # do clients on surviving SQL nodes keep succeeding?
    cluster_survives: bool  # does a primary/running cluster remain?
    rule: str  # where the expectation comes from (reference section, formula)
    detection_bound_s: float  # fault start -> engine reacts (membership change), upper bound
    recovery_bound_s: float  # heal/restart -> node healthy again, upper bound
    recovery: str  # node_restart | system_restart | bootstrap | none
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class TxnModels:
    """The consistency models an engine promises for a transactional workload variant, where
    that promise comes from, and what it allows (what the checker may report without failing)."""

    models: tuple[str, ...]
    source: str
    allows: str = ""

    def to_dict(self) -> dict:
        return {"models": list(self.models), "source": self.source, "allows": self.allows}


__all__ = ["ClusterStatus", "Expectation", "NodeStatus", "TxnModels"]
