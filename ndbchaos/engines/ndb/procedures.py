"""NDB's operator procedures as ``ndbchaos.operations`` steps: online schema change, online add
node group, backup and a verified restore (``backup.py``), rolling configuration change
(``rolling.py``). What each command is and what NDB documents for it: the project's reference
ndb-operations (sections 1 to 4).

Every statement runs where an operator types it: SQL as root inside an SQL node's container
(``root_sql``), management commands with ``ndb_mgm`` inside a management node's (``mgm``). A step
says what the engine said, on one line; a refusal is ``StepFailed`` with the engine's words.
"""

from __future__ import annotations

import re

from ...runtimes import docker
from ... import topology as TP
from ...errors import UsageError
from ...waiting import wait_until
from ...operations.procedure import Context, Outcome, Procedure, Step, StepFailed, one_line
from ...workload.ballast import TABLE as BALLAST, ensure as ensure_ballast
from .backup import backup_restore
from .operator import DDL_TIMEOUT_S, mgm, running_sql, sql
from .rolling import rolling_config_change
from .spec import SPARE

#: the column and index an online schema change adds (names no workload uses)
NEW_COLUMN = "chaos_note"
NEW_INDEX = "chaos_ix"
#: the ballast an index build on it lasts long enough for a fault to land during it: an ordered
#: index on 32,768 rows took 2.4 s on an idle 9.7.2 cluster here. (64 MB cannot be filled: its
#: last doubling, one 32 MB transaction, fails with 921 at SharedGlobalMemory=32M.)
INDEX_BALLAST_MB = 32.0


def ndb_dictionary(ctx: Context, table: str) -> tuple[set[str], set[str]]:
    """(column names, index names) of ``table`` in NDB's own dictionary, the cluster's source of
    truth that every SQL node's data dictionary caches (``ndb_desc`` in a management node's
    container). ``StepFailed`` when it cannot be read."""
    db = ctx.cluster.engine.sql_database
    mgms = sorted(ctx.cluster.topology.role(TP.MGM), key=lambda n: n.nodeid or 0)
    last = "no management node"
    for n in mgms:
        code, out = docker.exec_in(ctx.cluster.container(n), ["ndb_desc", "-c", "127.0.0.1:1186", "-d", db, table],
                                    timeout=60)
        if code == 0 and "-- Attributes --" in out:
            return parse_ndb_desc(out)
        last = f"{n.name}: {one_line(out, 160)}"
    raise StepFailed(f"ndb_desc {db} {table}: {last}")


def parse_ndb_desc(text: str) -> tuple[set[str], set[str]]:
    """``ndb_desc`` output -> (column names, index names): the lines of its "-- Attributes --" and
    "-- Indexes --" sections (9.7.2: ``slot Int NOT NULL ...``, ``chaos_ix(id) - OrderedIndex``)."""
    cols: set[str] = set()
    idx: set[str] = set()
    section = None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("-- ") and s.endswith("--"):
            section = s.strip("- ").lower()
            continue
        if not s or section is None:
            continue
        if section == "attributes":
            cols.add(s.split()[0])
        elif section == "indexes" and "(" in s:
            idx.add(s.split("(")[0].strip())
    return cols, idx


def _schema_agrees(ctx: Context, table: str, column: str | None, index: str | None) -> tuple[bool | None, str]:
    """Whether NDB's dictionary has ``column`` / ``index`` on ``table`` and every SQL node's data
    dictionary agrees with it, within what NDB's automatic schema synchronisation takes: each SQL
    node compares its data dictionary with NDB's every ``ndb_metadata_check_interval`` seconds
    (read from the node; 60 by default) and synchronises what differs, so the bound is two
    intervals (a mismatch found at one check is synchronised after it) and 10 s for a loaded host.
    How long the nodes took to agree, and who disagreed first, is said."""
    db = ctx.cluster.engine.sql_database
    nodes = list(ctx.cluster.topology.sql_nodes)
    code, out = ctx.cluster.engine.root_sql(ctx.cluster, nodes[0], "SELECT @@ndb_metadata_check_interval", timeout=30)
    interval = int(out.strip()) if code == 0 and out.strip().isdigit() else 60
    bound = 2 * interval + 10.0
    q = (f"SELECT (SELECT COUNT(*) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA='{db}' AND "
         f"TABLE_NAME='{table}' AND COLUMN_NAME='{column or ''}'), (SELECT COUNT(*) FROM "
         f"information_schema.STATISTICS WHERE TABLE_SCHEMA='{db}' AND TABLE_NAME='{table}' AND "
         f"INDEX_NAME='{index or ''}')")
    what = " and ".join(w for w in (f"column {column}" if column else "", f"index {index}" if index else "") if w)
    t0 = ctx.clock.now()
    first: list[str] = []
    now: list[str] = []
    truth: dict = {}

    def agreed() -> bool:
        now.clear()
        cols, idx = ndb_dictionary(ctx, table)
        truth.update(col=column in cols if column else None, idx=index in idx if index else None)
        for n in nodes:
            code, out = ctx.cluster.engine.root_sql(ctx.cluster, n, q, timeout=30)
            if code != 0:
                now.append(f"{n.name} (not answering: {one_line(out, 80)})")
                continue
            c, i = (int(x) > 0 for x in out.split())
            if (column and c != truth["col"]) or (index and i != truth["idx"]):
                now.append(f"{n.name} ({'has' if (c if column else i) else 'lacks'} it)")
        if not first:
            first.extend(now or ["-"])
        return not now

    converged = wait_until(agreed, bound, poll=2.0)
    names = (("col", f"column {column}"), ("idx", f"index {index}"))
    in_ndb = "NDB's dictionary " + " and ".join(
        f"{'has' if truth[k] else 'lacks'} the {w}" for k, w in names if truth.get(k) is not None)
    if not converged:
        return False, (f"{in_ndb}; {', '.join(now)} still disagree(s) {bound:.0f} s on "
                       f"(2 x ndb_metadata_check_interval {interval} s + 10 s)")
    wanted = all(v for v in (truth.get("col"), truth.get("idx")) if v is not None)
    said = (f"{in_ndb} and every SQL node agrees" if first == ["-"] else
            f"{in_ndb}; every SQL node agrees after {ctx.clock.now() - t0:.1f} s (at first {', '.join(first)}; "
            f"automatic schema synchronisation, interval {interval} s)")
    return wanted, said if wanted else f"{said}: the {what} is missing on {table}"


class NdbProcedures:
    """The procedures an operation declaration asks the NDB engine for (the ability
    ``Procedures``: ``cluster.engine.procedures``)."""

    def online_schema_change(self, cluster, table: str = "", index_on_ballast: bool = False,
                             node_failure: bool = False) -> Procedure:
        """``ALTER TABLE ... ALGORITHM=INPLACE, ADD COLUMN`` then ``CREATE INDEX ... ALGORITHM=INPLACE``
        on the workload's table under load (ndb-operations 4: in place, DML allowed, the table
        locked only against the issuing SQL node), and the operator's retry of an index that
        failed. ``index_on_ballast``: the index is built on the ballast table instead
        (``INDEX_BALLAST_MB``), which takes long enough for a fault to land during it.
        ``node_failure``: a fault hits a step, so it may fail as NDB documents (786 "Schema
        transaction aborted due to node-failure", a temporary error; ndb-operations 4), and the
        retry must then succeed. Outcome: every SQL node sees the new column and index."""
        db = cluster.engine.sql_database
        work = table or "ledger"
        itable = BALLAST if index_on_ballast else work
        icol = "id" if index_on_ballast else "slot"
        may = ("done", "failed") if node_failure else ("done",)
        # the clients' bound of an in-place step; with a fault during the procedure, the fault's
        # own expectation bounds what the clients feel (its detection bound), not this one
        most = None if node_failure else INPLACE_OUTAGE_S
        create_sql = f"CREATE INDEX {NEW_INDEX} ON {db}.{itable} ({icol}) ALGORITHM=INPLACE"

        def prepare(ctx: Context) -> None:
            if index_on_ballast:
                ctx.state["ballast"] = ensure_ballast(cluster, INDEX_BALLAST_MB)
                _drop_index(ctx, itable)

        def add_column(ctx: Context) -> str:
            sql(ctx, f"ALTER TABLE {db}.{work} ALGORITHM=INPLACE, ADD COLUMN {NEW_COLUMN} VARCHAR(32) NULL")
            return f"ALTER TABLE {work} ALGORITHM=INPLACE, ADD COLUMN {NEW_COLUMN}: done"

        def create_index(ctx: Context) -> str:
            try:
                sql(ctx, create_sql)
            except StepFailed:
                ctx.state["index"] = "failed"
                raise
            ctx.state["index"] = "done"
            return f"CREATE INDEX {NEW_INDEX} ON {itable} ({icol}) ALGORITHM=INPLACE: done"

        def retry(ctx: Context) -> str:
            if ctx.state.get("index") == "done":
                return "not needed: the index was created"
            # NDB's dictionary decides (an SQL node's data dictionary may disagree with it for a
            # while: docs/ndb.md finding 36), once every node is back
            ctx.cluster.wait_healthy(DDL_TIMEOUT_S)
            if NEW_INDEX in ndb_dictionary(ctx, itable)[1]:
                return "not needed: NDB's dictionary has the index (the failed CREATE INDEX was rolled forward)"
            sql(ctx, create_sql)
            return f"NDB's dictionary lacked the index; CREATE INDEX {NEW_INDEX} again: done"

        def cleanup(ctx: Context) -> None:
            if index_on_ballast:
                _drop_index(ctx, itable)

        return Procedure("online_schema_change", (
            Step("add column", add_column, expected=may, max_outage_s=most,
                 description=f"ALTER TABLE {work} ALGORITHM=INPLACE, ADD COLUMN {NEW_COLUMN}"),
            Step("create index", create_index, expected=may, max_outage_s=most, stop_if_not_done=False,
                 description=f"CREATE INDEX {NEW_INDEX} ON {itable} ({icol}) ALGORITHM=INPLACE"),
            Step("retry create index", retry, max_outage_s=most,
                 description="the operator's retry, when the index was not created"),
        ), outcomes=(
            Outcome("NDB has the new column and every SQL node agrees",
                    lambda ctx: _schema_agrees(ctx, work, NEW_COLUMN, None)),
            Outcome("NDB has the new index and every SQL node agrees",
                    lambda ctx: _schema_agrees(ctx, itable, None, NEW_INDEX)),
        ), prepare=prepare, cleanup=cleanup)

    def add_nodegroup(self, cluster, tables: tuple[str, ...] = ("ledger",), ballast: bool = False,
                      node_failure: bool = False, nodes: tuple[int, ...] | None = None) -> Procedure:
        """Online add node group with spare data nodes (ndb-operations 1.1, procedure B): ``CREATE
        NODEGROUP`` of as many spares as NoOfReplicas, then per table ``ALTER TABLE ...
        ALGORITHM=INPLACE, REORGANIZE PARTITION`` and ``OPTIMIZE TABLE``, under load. Outcome:
        each table's fragments are on the new node group's nodes too (``ndbinfo.memory_per_fragment``).
        Cleanup: the reorganized tables dropped (the next run creates its own) and ``DROP NODEGROUP``,
        which needs no table on the group (ndb-operations 1.3): the spares are spares again.
        ``ballast``: the ballast table (``INDEX_BALLAST_MB``) is reorganized too, last, long enough
        for a fault to land during it. ``node_failure``: a fault hits a step, which NDB rolls
        forward or aborts (ndb-operations 1.5), so a reorganization may fail; the operator's retry
        must then succeed. ``nodes``: the node ids of the new group (default: the first spares in
        node id order); each must be a spare data node, as many as NoOfReplicas."""
        if ballast:
            tables = (*tables, BALLAST)
        spares = spare_nodes(cluster)
        replicas = replicas_of(cluster)
        if len(spares) < replicas:
            raise UsageError(f"add_nodegroup: a node group needs {replicas} data nodes (NoOfReplicas) in no node "
                             f"group; this cluster has {len(spares)} (start it with --ndb-layout ...,spare={replicas})")
        new = spares[:replicas]
        if nodes is not None:
            by_id = {n.nodeid: n for n in spares}
            wrong = [i for i in nodes if i not in by_id]
            if wrong:
                raise UsageError(f"add_nodegroup: node {wrong[0]} is no spare data node (spares: "
                                 f"{', '.join(str(i) for i in sorted(by_id)) or 'none'})")
            if len(set(nodes)) != replicas:
                raise UsageError(f"add_nodegroup: a node group needs {replicas} different data nodes (NoOfReplicas), "
                                 f"not {len(set(nodes))}")
            new = [by_id[i] for i in nodes]
        ids = ",".join(str(n.nodeid) for n in new)
        db = cluster.engine.sql_database

        def create(ctx: Context) -> str:
            # bad input stops the procedure before it changes anything: every table must exist
            names = ",".join(f"'{t}'" for t in tables)
            have = sql(ctx, f"SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA='{db}' AND "
                            f"TABLE_NAME IN ({names}) AND ENGINE='ndbcluster'", timeout=30).split()
            unknown = [t for t in tables if t not in have]
            if unknown:
                raise StepFailed(f"no NDB table {', '.join(f'{db}.{t}' for t in unknown)} to reorganize: "
                                 "nothing was changed")
            ctx.state["creating"] = True  # a fault may wait for this moment (Operation.fault_when)
            try:
                out = mgm(ctx, f"CREATE NODEGROUP {ids}", timeout=120.0)
            except StepFailed as e:
                if not node_failure:
                    raise
                # the operator's retry once every node is back: the group may have been created
                # before the failure took the answer away (the spares then show a node group)
                ctx.cluster.wait_healthy(DDL_TIMEOUT_S)
                ng = _nodegroup_of(ctx, new)
                if ng is None:
                    out = f"CREATE NODEGROUP {ids} failed ({e}); again: " + mgm(ctx, f"CREATE NODEGROUP {ids}",
                                                                                 timeout=120.0)
                else:
                    out = f"CREATE NODEGROUP {ids} failed ({e}), yet Nodegroup {ng} created (ndb_mgm SHOW)"
            m = re.search(r"Nodegroup (\d+) created", out)
            if m is None:
                raise StepFailed(f"ndb_mgm 'CREATE NODEGROUP {ids}': {out}")
            ctx.state["nodegroup"] = ng = int(m.group(1))
            cluster.joined.update({n.name: ng for n in new})  # the rules count them from now on
            cluster.discover()
            return out

        def reorganize(t: str):
            def act(ctx: Context) -> str:
                statement = f"ALTER TABLE {db}.{t} ALGORITHM=INPLACE, REORGANIZE PARTITION"
                try:
                    sql(ctx, statement)
                except StepFailed as e:
                    if not node_failure:
                        raise
                    ctx.state.setdefault("retried", []).append(f"{t}: {e}")
                    # the operator's retry once every node is back: during a node restart NDB
                    # refuses DDL (711, ndb-operations 3.2)
                    ctx.cluster.wait_healthy(DDL_TIMEOUT_S)
                    sql(ctx, statement)
                    return f"ALTER TABLE {t} REORGANIZE PARTITION failed ({e}); again: done"
                return f"ALTER TABLE {t} ALGORITHM=INPLACE, REORGANIZE PARTITION: done"
            return act

        def optimize(t: str):
            return lambda ctx: f"OPTIMIZE TABLE {t}: " + one_line(sql(ctx, f"OPTIMIZE TABLE {db}.{t}"))

        def spread(t: str):
            def observe(ctx: Context) -> tuple[bool | None, str]:
                out = sql(ctx, "SELECT DISTINCT node_id FROM ndbinfo.memory_per_fragment "
                               f"WHERE fq_name = '{db}/def/{t}' ORDER BY node_id", timeout=30)
                on = sorted(int(x) for x in out.split())
                want = sorted(n.nodeid for n in new)
                lack = [i for i in want if i not in on]
                return (not lack, f"{t}'s fragments are on nodes {on}" +
                        (f"; none on {lack} of the new node group" if lack else ", the new node group's among them"))
            return observe

        def cleanup(ctx: Context) -> None:
            if "nodegroup" not in ctx.state:
                return
            for t in tables:
                sql(ctx, f"DROP TABLE IF EXISTS {db}.{t}", timeout=120)
            mgm(ctx, f"DROP NODEGROUP {ctx.state['nodegroup']}", timeout=120.0)
            for n in new:
                cluster.joined.pop(n.name, None)
            cluster.discover()

        def prepare(ctx: Context) -> None:
            if ballast:
                ctx.state["ballast"] = ensure_ballast(cluster, INDEX_BALLAST_MB)

        steps = [Step("create nodegroup", create, description=f"CREATE NODEGROUP {ids}")]
        for t in tables:
            steps += [Step(f"reorganize {t}", reorganize(t), description=f"ALTER TABLE {t} REORGANIZE PARTITION"),
                      Step(f"optimize {t}", optimize(t), description=f"OPTIMIZE TABLE {t}")]
        return Procedure("add_nodegroup", tuple(steps),
                         outcomes=tuple(Outcome(f"{t}'s fragments on the new node group", spread(t)) for t in tables),
                         prepare=prepare, cleanup=cleanup)

    def backup_restore(self, cluster, snapshot: str = "end", into: str = "nodegroups=1,replicas=1,sql=1,mgm=1",
                       table: str = "ledger", ballast_mb: float = 0.0, node_failure: bool = False,
                       bank: bool = False) -> Procedure:
        """``START BACKUP`` under load, then ``ndb_restore`` into a fresh cluster of layout ``into``
        (``backup.py``; ``into="same"``: the source's own layout; ``bank``: ``table`` is the bank
        workload's, whose restored balances must hold its total)."""
        return backup_restore(cluster, snapshot, into, table, ballast_mb, node_failure, bank)

    def rolling_config_change(self, cluster, changes: dict, node_failure: bool = False,
                              refused: bool = False) -> Procedure:
        """Data node parameters changed in config.ini, reloaded into the management servers, then
        every data node restarted one at a time and every SQL node (``rolling.py``)."""
        return rolling_config_change(cluster, changes, node_failure, refused)


#: The longest global outage an in-place ALTER may cause. NDB documents in-place DDL as online
#: (DML allowed; the altered table locked only against the issuing SQL node, ndb-operations 4):
#: the clients of every other SQL node keep being served, so no SQL node-wide gap is expected.
#: The bound is the availability checker's shortest outage (0.2 s) plus a scheduling margin on a
#: loaded 2-core host (1 s): a longer gap is a stall the documentation does not allow.
INPLACE_OUTAGE_S = 1.2


def _index_present(ctx: Context, table: str) -> bool:
    db = ctx.cluster.engine.sql_database
    out = sql(ctx, f"SELECT COUNT(*) FROM information_schema.STATISTICS WHERE TABLE_SCHEMA='{db}' AND "
                   f"TABLE_NAME='{table}' AND INDEX_NAME='{NEW_INDEX}'", timeout=30)
    return out.strip() not in ("", "0")


def _drop_index(ctx: Context, table: str) -> None:
    if _index_present(ctx, table):
        sql(ctx, f"DROP INDEX {NEW_INDEX} ON {ctx.cluster.engine.sql_database}.{table} ALGORITHM=INPLACE")


def _nodegroup_of(ctx: Context, nodes: list[TP.Node]) -> int | None:
    """The node group the management server shows ``nodes`` in, when they are all in one."""
    rep, _ = ctx.cluster.engine.mgm_report(ctx.cluster)
    shown = [rep.node(n.nodeid) if rep is not None else None for n in nodes]
    groups = {None if m is None or m.no_nodegroup else m.nodegroup for m in shown}
    return groups.pop() if len(groups) == 1 else None


def spare_nodes(cluster) -> list[TP.Node]:
    """The data nodes in no node group (a layout's spares), in node id order."""
    return sorted(cluster.topology.role(SPARE), key=lambda n: n.nodeid or 0)


def replicas_of(cluster) -> int:
    return int(cluster.engine.config(cluster.options).replicas)


__all__ = ["NdbProcedures", "INPLACE_OUTAGE_S", "NEW_COLUMN", "NEW_INDEX", "mgm", "ndb_dictionary", "parse_ndb_desc",
           "replicas_of", "running_sql", "spare_nodes", "sql"]
