"""Backup and a verified restore (ndb-operations 2): ``START BACKUP`` under load, then
``ndb_restore`` of it into a fresh cluster, and the restored table read back for the backup
checker (``ndbchaos.checks.backup``), which proves it holds exactly what the backup must.

    start backup      START BACKUP WAIT STARTED SNAPSHOTEND|SNAPSHOTSTART: ``issued`` before the
                      command, ``started`` when ndb_mgm says it started
    backup completes  the cluster log's ``Backup N ... completed`` (StartGCP, StopGCP, #Records):
                      ``completed`` when it is seen (an upper bound of the end), or ``aborted``
    (prepare)         a fresh cluster of layout ``into`` started beside this one before the load
                      (its own project and subnet), torn down by the cleanup on every path
    restore           each data node's BACKUP-<id> directory copied into the fresh cluster's
                      management node's container, ``ndb_restore -m`` once (the workload's
                      table only), ``-r`` once per source data node
    read back         the restored table's ids and row count, from the fresh cluster's SQL node

The times are on the run clock, the history's: the checker compares them with the clients' ops.
"""

from __future__ import annotations

import re

from ...runtimes import docker, factory
from ... import topology as TP
from ...errors import UsageError
from ...settings import current
from ...operations.procedure import Context, Procedure, Step, StepFailed, one_line
from ...waiting import wait_until
from ...workload.ballast import ensure as ensure_ballast
from .clusterlog import DATADIR
from .layout import TWIN_PREFIX
from .spec import resolve as resolve_spec
from ...vocabulary import ClusterOptions

SNAPSHOTS = {"end": "SNAPSHOTEND", "start": "SNAPSHOTSTART"}
#: ``into``: the source cluster's own layout (a fresh cluster as large as the source)
SAME = "same"
#: where the copies of the backup go in the fresh cluster's management node's container
RESTORE_DIR = "/tmp/ndbchaos-restore"
#: how long a backup may run: a few MB here take well under a second (KillDuringBackup's
#: measurement: 16 MB over four data nodes in 0.21 s); the bound is for a loaded machine
BACKUP_BOUND_S = 300.0
#: subnets (first three octets of a /24) a fresh cluster may take, the first one no network uses
RESTORE_NETS = tuple(f"10.213.{i}" for i in range(90, 100))
#: how long the fresh cluster's SQL node may take to see a restored table (it learns of tables
#: created in NDB by its metadata check, ndb_metadata_check_interval: 60 s by default)
DISCOVERY_BOUND_S = 90.0


def _free_subnet() -> str:
    used = set()
    for nw in docker.docker_client().networks.list():
        for cfg in ((nw.attrs.get("IPAM") or {}).get("Config") or []):
            used.add(".".join(str(cfg.get("Subnet", "")).split(".")[:3]))
    for net in RESTORE_NETS:
        if net not in used:
            return net
    raise StepFailed(f"no free subnet for a fresh cluster among {RESTORE_NETS[0]}.0/24 .. {RESTORE_NETS[-1]}.0/24")


def backup_restore(cluster, snapshot: str, into: str, table: str, ballast_mb: float,
                   node_failure: bool = False, bank: bool = False) -> Procedure:
    """The procedure (module docstring). ``node_failure``: a fault hits the backup while it runs,
    so it may end aborted (1326 "Backup aborted due to node failure", ndb-operations 2.3); the
    operator's retry, once the cluster has recovered, must then complete and restore ("next
    backup with that node down should succeed", NDBT's NdbBackup.cpp). ``bank``: ``table`` is the
    bank workload's: the sum of the restored balances is read back too, for the backup checker
    (a consistent snapshot of transfers that conserve the total holds exactly that total)."""
    if snapshot not in SNAPSHOTS:
        raise UsageError(f"backup_restore: snapshot must be one of {', '.join(SNAPSHOTS)}, not {snapshot!r}")
    engine = cluster.engine
    if into == SAME:  # the source's own layout option: a named layout, a spec, or a twin's config.ini
        into = cluster.options.ndb_layout or current().ndb_layout or "default"
    if not str(into).lower().startswith(TWIN_PREFIX):
        resolve_spec(into)  # a bad layout is refused before anything starts
    db = engine.sql_database
    command = f"START BACKUP WAIT STARTED {SNAPSHOTS[snapshot]}"

    def prepare(ctx: Context) -> None:
        if ballast_mb:
            ctx.state["ballast"] = ensure_ballast(cluster, ballast_mb)
        # The fresh cluster starts before the load: on this 2-core host a cluster started beside
        # a loaded one took 283 s to be ready, 20 s beside an idle one (9.7.2, one data node).
        target = factory.beside(cluster, ClusterOptions(ndb_layout=into, ndb_subnet=_free_subnet()))
        ctx.state["target"] = target
        target.up()
        ctx.state["target_ready_s"] = round(target.ready_seconds or 0.0, 1)

    def start(ctx: Context) -> str:
        # every management server's cluster log: each logs the data nodes' backup reports, so a
        # management server lost during the backup does not hide its end
        mgms = [n for n in sorted(cluster.topology.role(TP.MGM), key=lambda n: n.nodeid or 0)
                if docker.container_state(cluster.container(n)) == "running"]
        followers = [engine.cluster_log_follower(cluster, n) for n in mgms]
        for f in followers:
            f.seek_end()
        ctx.state["logs"] = followers
        issued = ctx.clock.now()
        code, out, src = engine.mgm(cluster, command, timeout=120.0)
        started = ctx.clock.now()
        m = re.search(r"Backup (\d+) started", out or "")
        if m is None:  # no backup: nothing for the record to check
            raise StepFailed(f"ndb_mgm '{command}' via {src}: {one_line(out)}")
        ctx.backup = {"id": int(m.group(1)), "snapshot": snapshot, "command": command, "issued": round(issued, 6),
                      "started": round(started, 6), "completed": None}
        return one_line(out)

    def complete(ctx: Context) -> str:
        if ctx.backup is None:
            raise StepFailed("no backup was started")
        bid, followers = ctx.backup["id"], ctx.state["logs"]
        found: list[dict] = []

        def ended() -> bool:
            for f in followers:
                found.extend(e for e in f.poll() if e.get("kind") in ("backup_completed", "backup_aborted")
                             and e.get("backup") == bid)
            return bool(found)

        if not wait_until(ended, BACKUP_BOUND_S, poll=0.2):
            raise StepFailed(f"backup {bid}: neither completed nor aborted in the cluster log within "
                             f"{BACKUP_BOUND_S:.0f} s")
        ev = found[0]
        text = ev.get("text") or ev.get("message") or ""
        if ev["kind"] == "backup_aborted":
            # nothing to restore: the record keeps no backup to check (the step says what NDB did)
            ctx.state["aborted"], ctx.backup = ctx.backup, None
            raise StepFailed(f"backup {bid} aborted: error {ev.get('error')} ({one_line(text)})", outcome="aborted")
        ctx.backup["completed"] = round(ctx.clock.now(), 6)
        for key, pat in (("start_gcp", r"StartGCP: (\d+)"), ("stop_gcp", r"StopGCP: (\d+)"),
                         ("records", r"#Records: (\d+)")):
            mm = re.search(pat, text)
            ctx.backup[key] = int(mm.group(1)) if mm else None
        return one_line(text) or f"backup {bid} completed"

    def retry(ctx: Context) -> str:
        if ctx.backup is not None:
            return "not needed: the backup completed"
        aborted = ctx.state.get("aborted") or {}
        said = start(ctx)
        done = complete(ctx)
        return f"backup {aborted.get('id')} had aborted; again: {said}; {done}"

    def restore(ctx: Context) -> str:
        bid, target = ctx.backup["id"], ctx.state["target"]
        tmgm = sorted(target.topology.role(TP.MGM), key=lambda n: n.nodeid or 0)[0]
        tc = target.container(tmgm)
        docker.exec_in(tc, ["sh", "-c", f"rm -rf {RESTORE_DIR} && mkdir -p {RESTORE_DIR}"], timeout=30)
        sources = []
        for d in sorted(cluster.topology.data_nodes + cluster.topology.role("spare"), key=lambda n: n.nodeid or 0):
            src = cluster.container(d)
            code, where = docker.exec_in(src, ["sh", "-c", f"find {DATADIR} -type d -name BACKUP-{bid} 2>/dev/null"],
                                          timeout=60)
            path = next((p.strip() for p in where.splitlines() if p.strip()), "")
            if not path:
                continue  # a data node in no node group holds no fragment
            stream, _ = src.get_archive(path)
            data = b"".join(stream)
            dest = f"{RESTORE_DIR}/n{d.nodeid}"
            docker.exec_in(tc, ["mkdir", "-p", dest], timeout=30)
            tc.put_archive(dest, data)
            sources.append((d.nodeid, f"{dest}/BACKUP-{bid}", len(data)))
        if not sources:
            raise StepFailed(f"backup {bid}: no data node holds a BACKUP-{bid} directory")
        said = []
        for i, (nid, path, _size) in enumerate(sources):
            args = ["ndb_restore", "-c", "127.0.0.1:1186", "-n", str(nid), "-b", str(bid), f"--backup-path={path}",
                    f"--include-tables={db}.{table}", "-r"] + (["-m"] if i == 0 else [])
            code, out = docker.exec_in(tc, args, timeout=600)
            if code != 0:
                raise StepFailed(f"ndb_restore of node {nid}'s backup {bid} (exit {code}): {one_line(out[-400:])}")
            said.append(f"node {nid}: {_restored_rows(out)}")
        ctx.state["archive_bytes"] = sum(s for _, _, s in sources)
        return (f"ndb_restore of backup {bid} into a fresh {into} (project {target.project}, ready in "
                f"{ctx.state['target_ready_s']} s before the load): " + ", ".join(said))

    def read_back(ctx: Context) -> str:
        target = ctx.state["target"]
        node = target.topology.sql_nodes[0]
        got: dict = {}

        def visible() -> bool:
            code, out = target.engine.root_sql(target, node, f"SELECT COUNT(*) FROM {db}.{table}", timeout=60)
            if code == 0 and out.strip().isdigit():
                got["rows"] = int(out.strip())
                return True
            got["last"] = one_line(out)
            return False

        if not wait_until(visible, DISCOVERY_BOUND_S, poll=1.0):
            raise StepFailed(f"{node.name} of the fresh cluster does not see {db}.{table} "
                             f"{DISCOVERY_BOUND_S:.0f} s after the restore: {got.get('last')}")
        code, out = target.engine.root_sql(target, node, f"SELECT id FROM {db}.{table}", timeout=300)
        if code != 0:
            raise StepFailed(f"reading {db}.{table} from the fresh cluster: {one_line(out)}")
        ids = [int(x) for x in out.split()]
        ctx.backup["restored"] = {"into": into, "table": table, "ids": ids, "rows": got["rows"]}
        if bank:
            code, out = target.engine.root_sql(target, node, f"SELECT SUM(balance) FROM {db}.{table}", timeout=60)
            if code != 0 or not out.strip().lstrip("-").isdigit():
                raise StepFailed(f"summing {db}.{table}'s balances on the fresh cluster: {one_line(out)}")
            ctx.backup["restored"]["sum"] = int(out.strip())
            return f"{got['rows']} accounts in {table} on the fresh cluster, holding {int(out.strip())}"
        return f"{got['rows']} rows in {table} on the fresh cluster"

    def cleanup(ctx: Context) -> None:
        target = ctx.state.get("target")
        if target is not None:
            target.down()
        bid = (ctx.backup or {}).get("id")
        if bid is not None:  # the source's backup files: the data nodes' disks are not ours to fill
            for d in cluster.topology.data_nodes + cluster.topology.role("spare"):
                try:
                    drop = f"find {DATADIR} -type d -name BACKUP-{bid} -prune -exec rm -rf {{}} +"
                    docker.exec_in(cluster.container(d), ["sh", "-c", drop], timeout=60)
                except Exception:
                    pass

    return Procedure(f"backup_restore_{snapshot}", (
        Step("start backup", start, description=command),
        Step("backup completes", complete, expected=("done", "aborted") if node_failure else ("done",),
             stop_if_not_done=False, description="the cluster log: completed (or aborted)"),
        Step("retry backup", retry, description="the operator's retry, when the backup aborted"),
        Step("restore", restore, description="ndb_restore -m once, -r per source data node"),
        Step("read back", read_back, description=f"SELECT id FROM {table} on the fresh cluster"),
    ), prepare=prepare, cleanup=cleanup)


def _restored_rows(out: str) -> str:
    """ndb_restore's count of the rows it restored (9.7.2: "Restored 1234 tuples and 12 log entries")."""
    m = re.search(r"Restored (\d+) tuples(?: and (\d+) log entries)?", out)
    if m is None:
        return "? rows"
    return f"{m.group(1)} rows" + (f" + {m.group(2)} log entries" if m.group(2) else "")


__all__ = ["BACKUP_BOUND_S", "SNAPSHOTS", "backup_restore"]
