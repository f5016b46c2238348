"""Your own workload: your application's schema and transactions, run under faults and judged like
the built-in workloads (docs/workloads.md, "Your own workload").

    from ndbchaos.workload.app import AppWorkload, Operation, Rejected, register_workload, transaction

    @register_workload
    class Orders(AppWorkload):
        name = "orders"
        defaults = {"items": 10, "stock": 1_000_000}
        operations = (
            Operation("place_order", "write", weight=9, key="order_id"),
            Operation("stock_level", "read", weight=1),
        )

        def schema(self, table_engine):                      # DDL, run once through one SQL node
            return ["DROP TABLE IF EXISTS ...", f"CREATE TABLE ... ENGINE={table_engine}"]

        def populate(self, cur):                             # initial rows (optional)
            ...

        def generate(self, op, rng, slot):                   # an operation's argument, drawn by the client
            return {"order_id": self.next_key(slot), "item": rng.randrange(self.params["items"]), "qty": 1}

        def place_order(self, cur, value):                   # one method per operation
            with transaction(cur):
                ...                                          # raise Rejected("...") to refuse, nothing written

        def stock_level(self, cur, value):
            ...

        def final_keys(self, cur):                           # the keys present at the end (durability)
            ...

        def final_state(self, cur):                          # what the invariant is checked on (optional)
            ...

        def invariant(self, state):                          # None, or what is wrong, in words
            ...

What is recorded: every attempt of an operation (its name, the argument ``generate`` drew, what
the method returned when it succeeded, ok / fail / info with the error and its class), as for the
built-in workloads; then ``final_state`` and ``final_keys`` once each on a healthy node. What is
judged: availability, latency and errors (every workload); durability when an operation declares
a ``key`` (every acknowledged write's key must be in ``final_keys``; one of unknown outcome may be
either way; one that failed definitely must not be there); the ``invariant`` on the final state
and on every successful result of an operation declared ``invariant=True``.

Outcomes: an error of the database makes a write ``info`` (may have taken effect) when its class
is unknown, else ``fail``; ``transaction(cur)`` marks an error before COMMIT as ``fail`` (rolled
back) and leaves COMMIT's own errors ``info``; ``Rejected`` is the application refusing (``fail``,
never counted as an error of the database). An operation declared ``idempotent=True`` whose
outcome is unknown is done again with the same argument, as an application retries it, up to
``retry_indeterminate`` times.

Registration: ``register_workload`` (decorator or call), an entry point in the group
``ndbchaos.workloads`` of the project's package (``orders = "orders_app.chaos:Orders"``), or the
class itself as a scenario's ``workload``. The load's worker processes are spawned: they import the
class again by its module (recorded in the run's header), so it must live in an importable module,
not in a test file's body.
"""

from __future__ import annotations

import bisect
import contextlib
import itertools
import random
from dataclasses import dataclass
from typing import Any, ClassVar, Iterable, Literal

from ..errors import UsageError
from .base import Workload
from .registry import WORKLOADS
from .txn import Aborted  # an error before COMMIT: rolled back, recorded fail (the transactional workloads')

READ, WRITE = "read", "write"
#: the final reads' names in the history (no operation may take them)
FINAL_STATE, FINAL_KEYS = "final_state", "final_keys"
#: the header parameter holding the declaration (no parameter of a workload may take it)
DECLARED = "declared"
#: keys of one connection: slot k draws from (k + 1) * KEY_SPAN upwards (as the ledger's ids)
KEY_SPAN = 1_000_000_000


@dataclass(frozen=True)
class Operation:
    """One operation of the mix.

    ``name``        the workload's method that runs it (``def name(self, cur, value)``) and its
                    name in the history
    ``kind``        ``"read"`` (never changes data: a failure is always ``fail``) or ``"write"``
    ``weight``      its share of the mix, relative to the others' (> 0)
    ``key``         writes: the field of the argument (a dict) holding the integer key the write
                    creates; declares the durability check (``final_keys`` must then be defined)
    ``idempotent``  doing it twice is doing it once: an outcome of unknown result is retried with
                    the same argument (``AppWorkload.retry_indeterminate`` times at most)
    ``invariant``   its successful results must satisfy ``AppWorkload.invariant`` too
    """

    name: str
    kind: Literal["read", "write"]
    weight: float = 1.0
    key: str | None = None
    idempotent: bool = False
    invariant: bool = False

    def to_json(self) -> dict:
        return {"name": self.name, "kind": self.kind, "weight": self.weight, "key": self.key,
                "idempotent": self.idempotent, "invariant": self.invariant}


class Rejected(Exception):
    """The application refused the operation (out of stock, insufficient funds): nothing was
    written. Recorded as ``fail`` with the message, counted apart from the database's errors."""

    errno = 0
    outcome = "fail"

    def __init__(self, message: str):
        super().__init__(message)
        self.msg = message


@contextlib.contextmanager
def transaction(cur):
    """``START TRANSACTION`` ... ``COMMIT``. An error before COMMIT rolls back (best effort: the
    connection may be gone) and is a definite failure; an error of COMMIT itself stays of unknown
    outcome; ``Rejected`` passes through as it is."""
    cur.execute("START TRANSACTION")
    try:
        yield
    except BaseException as e:
        with contextlib.suppress(Exception):
            cur.execute("ROLLBACK")
        if isinstance(e, (Rejected, Aborted)) or not isinstance(e, Exception):
            raise
        raise Aborted(e) from e
    cur.execute("COMMIT")


class AppWorkload(Workload):
    """Base of a project's own workload: subclass it, declare ``name``, ``operations`` and
    ``defaults``, write ``schema`` and one method per operation (module docstring)."""

    name: ClassVar[str] = ""
    operations: ClassVar[tuple[Operation, ...]] = ()
    defaults: ClassVar[dict[str, Any]] = {}
    #: how many times an idempotent operation of unknown outcome is done again
    retry_indeterminate: ClassVar[int] = 3

    def __init__(self, **params):
        declare(type(self))
        super().__init__(**params)
        self._ops = {op.name: op for op in self.operations}
        self._mix = list(self.operations)
        self._cum = list(itertools.accumulate(float(op.weight) for op in self._mix))
        self._keys: dict[int, int] = {}

    # -- what a workload writes ---------------------------------------------------------------
    def schema(self, table_engine: str) -> list[str]:
        """The statements that create the tables (``table_engine``: NDBCLUSTER or InnoDB); drop
        what an earlier run left first, every run starts from the same state."""
        raise NotImplementedError(f"{type(self).__name__}.schema")

    def populate(self, cur) -> None:
        """The initial rows (through one SQL node, autocommit), after ``schema``."""

    def generate(self, op: str, rng: random.Random, slot: int) -> Any:
        """The argument of the next ``op`` on connection ``slot`` (JSON-able), drawn with ``rng``.
        An operation with a ``key`` needs a dict holding it (``next_key`` gives unique ones)."""
        return None

    def final_state(self, cur) -> Any:
        """What the invariant is checked on at the end (JSON-able), read once on a healthy node."""
        raise NotImplementedError

    def final_keys(self, cur) -> Iterable[int]:
        """Every key present at the end that the operations with a ``key`` create."""
        raise NotImplementedError(f"{type(self).__name__}.final_keys")

    def invariant(self, state: Any) -> str | None:
        """None when ``state`` (the final state, or the result of an operation declared
        ``invariant=True``) is as the application promises; else what is wrong, in words."""
        return None

    # -- helpers ------------------------------------------------------------------------------
    def next_key(self, slot: int) -> int:
        """A key no other connection of the run draws: ``(slot + 1) * 10**9 + n``."""
        n = self._keys.get(slot, 0) + 1
        self._keys[slot] = n
        return (slot + 1) * KEY_SPAN + n

    # -- the Workload protocol (the runner's side) -----------------------------------------
    def load(self, conn, table_engine: str) -> None:
        self._check_arguments()
        super().load(conn, table_engine)
        cur = conn.cursor()
        try:
            self.populate(cur)
        finally:
            cur.close()

    def next_op(self, rng, slot):
        op = self._mix[bisect.bisect_right(self._cum, rng.random() * self._cum[-1])]
        return op.name, self.generate(op.name, rng, slot), op.kind == WRITE

    def execute(self, cur, f, value):
        if f == FINAL_STATE:
            return self.final_state(cur)
        if f == FINAL_KEYS:
            return sorted(int(k) for k in self.final_keys(cur))
        result = getattr(self, f)(cur, value)
        if self._ops[f].key and result is not None:  # the key stays in the record with the result
            return {**value, "result": result}
        return result

    def redo_indeterminate(self, f: str) -> int:
        op = self._ops.get(f)
        return self.retry_indeterminate if op is not None and op.idempotent else 0

    def final_reads(self):
        out = []
        if has_final_state(type(self)):
            out.append((FINAL_STATE, None))
        if any(op.key for op in self.operations):
            out.append((FINAL_KEYS, None))
        return out

    def spec(self) -> tuple:
        return self.name, dict(self.params), ref(type(self))

    def header_params(self) -> dict:
        return {**self.params, DECLARED: declaration(type(self))}

    def _check_arguments(self) -> None:
        """Each keyed operation's argument holds its integer key (checked once, before the load
        starts, so that a slip is one line and not a run of indeterminate operations)."""
        rng = random.Random(0)
        for op in self.operations:
            if not op.key:
                continue
            v = type(self)(**self.params).generate(op.name, rng, 0)
            if not isinstance(v, dict) or not isinstance(v.get(op.key), int) or isinstance(v.get(op.key), bool):
                raise UsageError(f"workload {self.name}: operation {op.name} declares key {op.key!r}, so its "
                                 f"argument must be a dict with an integer {op.key!r} (generate gave {v!r:.80})")


def has_final_state(cls) -> bool:
    return getattr(cls, "final_state", None) is not AppWorkload.final_state


def ref(cls) -> str:
    """``module:qualname``: how a worker process (or ``ndbchaos check``) imports the class again."""
    return f"{cls.__module__}:{cls.__qualname__}"


def declaration(cls) -> dict:
    """The declaration recorded in the run's header: enough to judge durability from the file
    alone; the class's ``ref`` for the invariant."""
    return {"ref": ref(cls), "operations": [op.to_json() for op in cls.operations],
            "final_state": has_final_state(cls), "final_keys": any(op.key for op in cls.operations)}


_DECLARED: set = set()


def declare(cls) -> type:
    """Check a workload class's declaration once (``UsageError``, one line, for any slip)."""
    if cls in _DECLARED:
        return cls
    where = f"workload {cls.__module__}.{cls.__qualname__}"
    if not (isinstance(cls, type) and issubclass(cls, AppWorkload)):
        raise UsageError(f"{where}: not a subclass of ndbchaos.workload.app.AppWorkload")
    if not isinstance(cls.name, str) or not cls.name.isidentifier():
        raise UsageError(f"{where}: its name must be an identifier, not {cls.name!r}")
    if not cls.operations:
        raise UsageError(f"{where}: declares no operations")
    if DECLARED in cls.defaults:
        raise UsageError(f"{where}: the parameter name {DECLARED!r} is the framework's")
    if cls.schema is AppWorkload.schema:
        raise UsageError(f"{where}: has no schema()")
    seen = set()
    for op in cls.operations:
        if not isinstance(op, Operation):
            raise UsageError(f"{where}: operations must be Operation(...), not {op!r:.60}")
        if not op.name.isidentifier() or op.name in (FINAL_STATE, FINAL_KEYS) or op.name.startswith("_"):
            raise UsageError(f"{where}: operation name {op.name!r} (an identifier, not final_state or final_keys)")
        if op.name in seen:
            raise UsageError(f"{where}: operation {op.name} is declared twice")
        seen.add(op.name)
        if op.kind not in (READ, WRITE):
            raise UsageError(f"{where}: operation {op.name}: kind {op.kind!r} (expected 'read' or 'write')")
        if not isinstance(op.weight, (int, float)) or isinstance(op.weight, bool) or not op.weight > 0:
            raise UsageError(f"{where}: operation {op.name}: weight must be a positive number, not {op.weight!r}")
        if op.key is not None and (op.kind != WRITE or not isinstance(op.key, str) or not op.key):
            raise UsageError(f"{where}: operation {op.name}: a key is declared by a write, as a field name")
        method = getattr(cls, op.name, None)
        if not callable(method) or method is getattr(AppWorkload, op.name, None):
            raise UsageError(f"{where}: operation {op.name} has no method {op.name}(self, cur, value)")
    if any(op.key for op in cls.operations) and cls.final_keys is AppWorkload.final_keys:
        raise UsageError(f"{where}: an operation declares a key, so final_keys(self, cur) is needed")
    _DECLARED.add(cls)
    return cls


def register_workload(cls):
    """Register a project's workload under its ``name`` (a decorator, or a call from a fixture or
    conftest): scenarios then name it as ``Scenario(..., workload="orders")``."""
    declare(cls)
    known = WORKLOADS.get(cls.name)
    if known is not None and known is not cls and ref(known) != ref(cls):
        raise UsageError(f"workload name {cls.name!r} is taken by {ref(known)}; {ref(cls)} needs another")
    WORKLOADS[cls.name] = cls
    return cls


__all__ = ["AppWorkload", "Operation", "Rejected", "Aborted", "transaction", "register_workload", "READ", "WRITE"]
