"""The documented channel failover: the channel moves from a lost binlog server to the standby
one, at the position of the last epoch the replica applied. Manual, "Implementing Failover with
NDB Cluster Replication" (https://dev.mysql.com/doc/refman/8.4/en/mysql-cluster-replication-failover.html):

1. on the replica, the newest applied epoch: ``MAX(epoch)`` of ``mysql.ndb_apply_status`` (here of
   the source's server ids, the manual's ``server_id IN (...)`` form);
2. on the standby binlog server, the binlog file and position right after that epoch:
   ``next_file`` (its base name) and ``next_position`` of that epoch's ``mysql.ndb_binlog_index`` row;
3. on the replica, ``STOP REPLICA``, ``CHANGE REPLICATION SOURCE TO`` the standby at that file and
   position, ``START REPLICA``.

The failover is an operator's ``Procedure`` (``ndbchaos.operations``): its three named steps run in
order on the run clock (``play``), each recorded as a ``StepRecord`` (start, end, outcome, the
engine's words). ``play(..., fault_step=NAME, fault=F)`` lands a fault on that step: ``F`` runs as
the step begins, the step's action right after it, so what the step meets is the fault in effect.
A step that cannot do its work is ``failed`` and the steps after it are ``skipped``: the channel
is only ever moved by the last step, with a position read in the steps before it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..operations.procedure import Context, Procedure, Step, StepRecord, act
from .channel import ReplicationError, applied_sql, parse_epoch
from .pair import ReplicationPair

STEPS = ("latest applied epoch", "position on the standby", "channel to the standby")


@dataclass(frozen=True)
class Failover:
    """One play of the procedure: its steps as recorded, and what they found (None: not reached)."""
    from_server: str
    to_server: str
    steps: tuple[StepRecord, ...]
    latest_epoch: int | None = None
    log_file: str | None = None
    log_pos: int | None = None
    fault: str | None = None  # the fault's name and the step it landed on

    @property
    def done(self) -> bool:
        return all(s.outcome == "done" for s in self.steps)

    @property
    def seconds(self) -> float:
        return self.steps[-1].end - self.steps[0].start

    def describe(self) -> str:
        return "; ".join(f"{s.name}: {s.outcome} {s.end - s.start:.2f}s ({s.detail})" for s in self.steps)


def position_sql(latest: int) -> str:
    return ("SELECT SUBSTRING_INDEX(next_file, '/', -1), next_position FROM mysql.ndb_binlog_index "
            f"WHERE epoch = {int(latest)} ORDER BY epoch ASC LIMIT 1")


def parse_position(rows: list[list[str]], latest: int, standby: str) -> tuple[str, int]:
    if not rows:
        raise ReplicationError(f"failover: the standby {standby} has no ndb_binlog_index row for epoch {latest} "
                               "(it did not log the last applied epoch: no position to resume from)")
    if len(rows[0]) != 2 or not rows[0][1].isdigit():
        raise ReplicationError(f"failover: unexpected ndb_binlog_index row on {standby}: {rows[0]!r}")
    return rows[0][0], int(rows[0][1])


#: the step ``reposition`` adds before the last one: the applier's relay logs and the state of its
#: workers reset (``RESET REPLICA``), and with ``forget_gtids`` its executed GTIDs too
APPLIER_RESET = "applier reset"


def procedure(pair: ReplicationPair, to: str, again: bool = False, forget_gtids: bool = False) -> Procedure:
    """The manual's channel failover to the standby binlog server ``to``, as three named steps.
    What a step learns is left in ``Context.state`` for the next (``epoch``, ``position``).
    ``again`` (``reposition``): ``to`` is the channel's own binlog server, and a step before the
    last resets the applier (``APPLIER_RESET``: ``RESET REPLICA``, and with ``forget_gtids``
    ``RESET BINARY LOGS AND GTIDS``)."""
    if to == pair.binlog_server and not again:
        raise ReplicationError(f"failover: {to} is already the channel's binlog server")
    if to not in {n.name for n in pair.source.topology.sql_nodes}:
        raise ReplicationError(f"failover: {to} is not an SQL node of the source "
                               f"({', '.join(n.name for n in pair.source.topology.sql_nodes)})")

    def latest(ctx: Context) -> str:
        e = parse_epoch(pair.sql("replica").rows(applied_sql(pair.source_ids)), "ndb_apply_status")
        ctx.state["epoch"] = e
        return f"epoch {e} (gci {e >> 32})"

    def position(ctx: Context) -> str:
        e = ctx.state["epoch"]
        ctx.state["position"] = parse_position(pair.sql("source", to).rows(position_sql(e)), e, to)
        return "{}: {}:{}".format(to, *ctx.state["position"])

    def channel(ctx: Context) -> str:
        log_file, log_pos = ctx.state["position"]
        pair.configure_channel(binlog_server=to, log_file=log_file, log_pos=log_pos)
        return f"STOP REPLICA; CHANGE REPLICATION SOURCE TO {to} {log_file}:{log_pos}; START REPLICA"

    def reset(ctx: Context) -> str:
        # RESET REPLICA: a multi-threaded applier stopped on an error may have gaps between its
        # workers, and CHANGE REPLICATION SOURCE is then refused (1802, measured on 9.7.2); its
        # relay logs are of no use once the channel is moved anyway
        app = pair.sql("replica")
        if not forget_gtids:
            app.rows("STOP REPLICA; RESET REPLICA")
            return "STOP REPLICA; RESET REPLICA"
        before = app.rows("SELECT @@gtid_executed")
        app.rows("STOP REPLICA; RESET REPLICA; RESET BINARY LOGS AND GTIDS")
        was = " ".join((before or [[""]])[0][0].split())[:160]
        return f"STOP REPLICA; RESET REPLICA; RESET BINARY LOGS AND GTIDS (gtid_executed was {was})"

    steps = (
        Step(STEPS[0], latest,
             description="on the replica: MAX(epoch) of ndb_apply_status for the source's server ids"),
        Step(STEPS[1], position, description="on the standby: next_file and next_position of that epoch's "
                                             "ndb_binlog_index row"),
        Step(STEPS[2], channel, description="on the replica: STOP REPLICA, CHANGE REPLICATION SOURCE TO the standby "
                                            "at that position, START REPLICA"))
    if again:
        steps = steps[:2] + (Step(APPLIER_RESET, reset, description="on the replica: RESET REPLICA (and with "
                                                                    "forget_gtids its executed GTIDs), so the epochs "
                                                                    "after that position are applied"),
                             steps[2])
    return Procedure("channel failover", steps=steps)


def play(pair: ReplicationPair, to: str, fault_step: str | None = None,
         fault: Callable[[], str | None] | None = None, again: bool = False,
         forget_gtids: bool = False) -> Failover:
    """The failover's steps in order on the run clock; ``fault`` (returns its name, or None) lands
    on ``fault_step`` (any of ``STEPS``; refused before anything runs when it names none). A step
    that raises is ``failed`` with what it raised (``operations.procedure.act``, as an operation's
    step), and the rest are ``skipped``."""
    proc = procedure(pair, to, again, forget_gtids)
    if fault_step is not None:
        proc.step(fault_step)  # ValueError naming the steps: before anything is done
        if fault is None:
            raise ValueError(f"fault_step {fault_step!r} without a fault")
    clock, frm = pair.clock, pair.binlog_server
    ctx = Context(pair.replica, clock)
    records: list[StepRecord] = []
    landed = stopped = None
    for step in proc.steps:
        t = clock.now()
        if stopped is not None:
            records.append(StepRecord(step.name, t, t, "skipped", step.expected, f"not run: {stopped}"))
            continue
        if step.name == fault_step:
            landed = f"{fault() or 'fault'} at {step.name!r}"
        outcome, detail = act(step, ctx)
        records.append(StepRecord(step.name, t, clock.now(), outcome, step.expected, detail,
                                  fault=landed if step.name == fault_step else None))
        if outcome != "done":
            stopped = f"{step.name} {outcome}"
    position = ctx.state.get("position") or (None, None)
    f = Failover(frm, to, tuple(records), ctx.state.get("epoch"), position[0], position[1], landed)
    if f.done:
        pair.replica.note("replication_failover", frm=frm, to=to, epoch=f.latest_epoch, file=f.log_file,
                          position=f.log_pos)
    return f


def failover(pair: ReplicationPair, to: str) -> Failover:
    """Move the channel to the standby binlog server ``to`` (a source SQL node's name); a step that
    failed is raised (``ReplicationError``, with every step's record)."""
    f = play(pair, to)
    if not f.done:
        raise ReplicationError(f"failover {f.from_server} -> {to} not done: {f.describe()}")
    return f


def reposition(pair: ReplicationPair, forget_gtids: bool = False) -> Failover:
    """The failover's steps on the channel's own binlog server: the channel restarted right after
    the newest epoch the replica holds (``ndb_apply_status``), not where the applier's own position
    says. After a replica cluster's crash (``ALL RESTART -a``) the applier's position is past the
    epochs the crash took, and ``START REPLICA`` alone never applies them again. On 9.7.2 with
    GTIDs on (its default) the applier also skips them as executed unless ``forget_gtids`` (its
    executed GTIDs reset with the applier, before the channel is moved; docs/facts.md NDB 15.11).
    Four steps: the applier is reset (``APPLIER_RESET``) before the last. A step that failed is
    raised."""
    f = play(pair, pair.binlog_server, again=True, forget_gtids=forget_gtids)
    if not f.done:
        raise ReplicationError(f"reposition on {pair.binlog_server} not done: {f.describe()}")
    return f
