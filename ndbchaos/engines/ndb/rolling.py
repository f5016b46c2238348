"""Rolling configuration change (ndb-operations 3): data node parameters changed in config.ini,
the new file reloaded into the management servers, then every data node restarted one at a time
and then every SQL node, under load.

    reload configuration  the new config.ini checked by ndb_config, which parses it as ndb_mgmd
                          does (a file it refuses stops the procedure here, before anything is
                          stopped); every management server stopped; the first started with
                          ``--config-file=<new> --reload``, the others plainly (ndb-operations
                          3.1: never ``--reload`` on the others), through the image entrypoint's
                          options for one start; done when every management server serves the
                          new values. Measured on 9.7.2: the first logs "will try to set it once
                          started", the second's start completes the change ("Config change
                          completed! New generation: 2")
    restart <data node>   ``ndb_mgm -e "N RESTART"``, one node after the other: done when it is
                          started again (the node reads its configuration from the management
                          server when it starts)
    restart <SQL node>    SIGTERM (mysqld shuts down cleanly), started again: done when every
                          node is healthy and serving

Outcomes: every data node runs with the new values (``ndbinfo.config_values``), every node at
the configuration generation the reload made (``ndbinfo.nodes.config_generation``). The cleanup
reloads the original config.ini the same way and restarts every data node again, one at a time:
the cluster as it was.

Only parameters a rolling restart applies are accepted (restart type N, ndb-operations 3.3);
the others are refused with what they need instead.
"""

from __future__ import annotations

import re

from ...runtimes import docker
from ... import topology as TP
from ...errors import UsageError
from ...operations.procedure import Context, Outcome, Procedure, Step, StepFailed, one_line
from ...waiting import wait_until
from .operator import mgm, sql

#: data node parameters a node restart applies, one node after the other (restart type N in the
#: manual's tables; ndb-operations 3.3). HostName is per node and not a [ndbd default] value.
ROLLING = ("DataMemory", "HeartbeatIntervalDbDb", "HeartbeatIntervalDbApi", "Arbitration", "ArbitrationTimeout",
           "StopOnError", "ODirect", "ODirectSyncFlag", "DiskSyncSize", "TimeBetweenGlobalCheckpoints",
           "TimeBetweenGlobalCheckpointsTimeout", "TimeBetweenEpochs", "TimeBetweenEpochsTimeout",
           "LcpScanProgressTimeout", "StartNoNodeGroupTimeout", "StartPartialTimeout", "CompressedLCP",
           "EnablePartialLcp", "RecoveryWork")
#: what the other restart types need (ndb-operations 3.3), for the refusal
NEEDS = {
    "an initial node restart of each data node": (
        "DataDir", "FileSystemPath", "BackupDataDir", "FileSystemPathDD", "FileSystemPathDataFiles",
        "FileSystemPathUndoFiles", "NoOfFragmentLogFiles", "FragmentLogFileSize", "InitFragmentLogFiles",
        "NoOfFragmentLogParts", "EncryptedFileSystem"),
    "a system restart (the whole cluster at once)": (
        "MaxNoOfExecutionThreads", "ThreadConfig", "HeartbeatOrder", "MaxDiskWriteSpeed",
        "MaxDiskWriteSpeedOtherNodeRestart", "MaxDiskWriteSpeedOwnRestart", "MinDiskWriteSpeed",
        "EventLogBufferSize", "ServerPort", "LocationDomainId"),
    "a backup, an initial system restart and a restore": ("NodeId", "NodeGroup", "NoOfReplicas", "Diskless",
                                                          "NumCPUs"),
}
#: the new config.ini and the entrypoint's options for one start, in a management node's data
#: directory (its volume: they survive the container's stop)
CONFIG = "/var/lib/mysql/ndbchaos-config.ini"
ONCE = "/var/lib/mysql/ndbchaos-mgmd-once"
#: every management server stopped, started and the change committed. Measured on 9.7.2 idle:
#: 19 s for the stops (SIGTERM), 3 s to start, the change committed 0.1 s after the last start.
RELOAD_BOUND_S = 120.0
#: a data node's restart: measured on 9.7.2 idle, 19 s for the graceful stop (``N RESTART``
#: returns then) and 16 s through the start phases; a loaded 2-core host takes longer
NODE_RESTART_BOUND_S = 300.0
_SECTIONS = ("ndbd default", "db default")
_NODE_SECTIONS = ("ndbd", "db")


def check_changes(changes: dict) -> dict[str, str]:
    """The changes as ``{parameter: value}`` with the manual's spelling of each parameter; a
    parameter a rolling restart does not apply is refused (UsageError, one line)."""
    if not changes:
        raise UsageError("rolling_config_change: no parameter to change (e.g. {'DataMemory': '80M'})")
    known = {p.lower(): p for p in ROLLING}
    out = {}
    for k, v in changes.items():
        name = known.get(str(k).lower())
        if name is None:
            for needs, params in NEEDS.items():
                if str(k).lower() in (p.lower() for p in params):
                    raise UsageError(f"rolling_config_change: {k} cannot be changed by a rolling restart; it needs "
                                     f"{needs} (ndb-operations 3.3)")
            raise UsageError(f"rolling_config_change: {k} is not a data node parameter a rolling restart applies "
                             f"(those are: {', '.join(ROLLING)})")
        value = str(v).strip()
        if not value or any(c in value for c in "\n\r#[]="):
            raise UsageError(f"rolling_config_change: {name}={v!r} is not a config.ini value")
        out[name] = value
    return out


def set_parameters(text: str, changes: dict[str, str]) -> str:
    """``text`` (a config.ini) with each parameter of ``changes`` set in ``[ndbd default]``: the
    line replaced where it is, else added at the end of the section; a data node's own section
    that sets it too gets the new value as well (it would override the default)."""
    lines = text.splitlines()
    section, default_at, default_end = None, None, None
    done_default: set[str] = set()
    for i, ln in enumerate(lines):
        m = re.match(r"\s*\[([^\]]+)\]", ln)
        if m:
            if section in _SECTIONS and default_end is None:
                default_end = i
            section = m.group(1).strip().lower()
            if section in _SECTIONS and default_at is None:
                default_at = i
            continue
        if section not in _SECTIONS + _NODE_SECTIONS:
            continue
        m = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*[=:]", ln)
        if not m:
            continue
        for k, v in changes.items():
            if m.group(1).lower() == k.lower():
                lines[i] = f"{k}={v}"
                if section in _SECTIONS:
                    done_default.add(k)
    if default_at is None:
        raise UsageError("rolling_config_change: the cluster's config.ini has no [ndbd default] section")
    if default_end is None:  # the default section is the last one
        default_end = len(lines)
    add = [f"{k}={v}" for k, v in changes.items() if k not in done_default]
    at = default_end
    while at > default_at + 1 and not lines[at - 1].strip():
        at -= 1
    lines[at:at] = add
    return "\n".join(lines) + "\n"


def parse_query(out: str, params: list[str]) -> dict[int, dict[str, str]]:
    """``ndb_config --type=ndbd --query=nodeid,P1,P2`` (rows ``11,83886080,...`` separated by
    spaces or newlines) as ``{node id: {parameter: value}}``."""
    rows = {}
    for tok in out.split():
        parts = tok.split(",")
        if len(parts) != len(params) + 1 or not parts[0].isdigit():
            continue
        rows[int(parts[0])] = dict(zip(params, parts[1:]))
    return rows


def _mgms(cluster) -> list[TP.Node]:
    return sorted(cluster.topology.role(TP.MGM), key=lambda n: n.nodeid or 0)


def _query(ctx: Context, node: TP.Node, source: list[str], params: list[str]) -> dict[int, dict[str, str]]:
    """The data nodes' values of ``params`` by ndb_config in ``node``'s container, from a file
    (``--config-file=...``: ndb_config parses it as ndb_mgmd does and refuses what it would) or
    from the management server (``--ndb-connectstring=...``); StepFailed with its words."""
    code, out = docker.exec_in(ctx.cluster.container(node), ["ndb_config", *source, "--type=ndbd",
                                                               "--query=nodeid," + ",".join(params)], timeout=60)
    rows = parse_query(out, params) if code == 0 else {}
    if not rows:
        errors = [ln.split("-- ", 1)[-1] for ln in out.splitlines() if "ERROR" in ln] or [one_line(out)]
        raise StepFailed(f"ndb_config {' '.join(source)} on {node.name}: {'; '.join(errors[:3])}")
    return rows


def reload(ctx: Context, text: str, params: list[str], unchanged: dict | None = None) -> tuple[dict, str]:
    """``text`` as every management server's configuration (the module docstring's first step).
    Returns the data nodes' values it sets and what the servers said; StepFailed when ndb_config
    refuses the file or it sets the values ``unchanged`` (the ones in force) again (nothing
    stopped), or when the servers do not take it (they are started again on their cache, the
    configuration they had)."""
    cluster, engine = ctx.cluster, ctx.cluster.engine
    mgms = _mgms(cluster)
    for n in mgms:
        docker.put_file(cluster.container(n), CONFIG, text.encode())
    try:
        want = _query(ctx, mgms[0], [f"--config-file={CONFIG}"], params)
    except StepFailed as e:
        raise StepFailed(f"the new config.ini is refused, nothing was changed: {e}") from None
    if unchanged is not None and want == unchanged:
        raise StepFailed(f"the new config.ini sets {', '.join(params)} to the values in force: nothing was changed")
    for n in mgms:
        engine.stop_node(cluster, n, 30)
    docker.put_file(cluster.container(mgms[0]), ONCE, f"--config-file={CONFIG}\n--reload\n".encode())
    t0 = ctx.clock.now()
    engine.recover_nodes(cluster, mgms)
    last = [""]

    def served() -> bool:
        for n in mgms:
            try:
                have = _query(ctx, n, ["--ndb-connectstring=127.0.0.1:1186"], params)
            except StepFailed as e:
                last[0] = str(e)
                return False
            if have != want:
                last[0] = f"{n.name} still serves {have}"
                return False
        return True

    if not wait_until(served, RELOAD_BOUND_S, poll=1.0):
        said = one_line(" ".join(ln for ln in _log(cluster, mgms[0]).splitlines() if "ERROR" in ln)[-400:])
        docker.exec_in(cluster.container(mgms[0]), ["rm", "-f", ONCE], timeout=10)
        engine.recover_nodes(cluster, [n for n in mgms if docker.container_state(cluster.container(n)) != "running"])
        raise StepFailed(f"the management servers did not take the new config.ini within {RELOAD_BOUND_S:.0f} s "
                         f"({said or last[0]}); started again on the configuration they had")
    return want, f"every management server serves it {ctx.clock.now() - t0:.1f} s after the first started"


def _log(cluster, node: TP.Node) -> str:
    try:
        return cluster.container(node).logs(tail=40).decode("utf-8", "replace")
    except Exception:
        return ""


def _state(cluster, nodeid: int):
    rep, _ = cluster.engine.mgm_report(cluster)
    return rep.node(nodeid) if rep is not None else None


def restart_data_node(ctx: Context, node: TP.Node) -> str:
    """``N RESTART`` and the node started again. ``ctx.state["left"]`` names the node once it has
    left the cluster (a fault may wait for it: ``Operation.fault_when``)."""
    t0 = ctx.clock.now()
    said = mgm(ctx, f"{node.nodeid} RESTART", timeout=NODE_RESTART_BOUND_S)
    if not wait_until(lambda: (m := _state(ctx.cluster, node.nodeid)) is not None and not m.started, 120.0,
                      poll=0.2):
        raise StepFailed(f"{node.name} still started 120 s after '{node.nodeid} RESTART' ({said})")
    ctx.state["left"] = node.name
    if not wait_until(lambda: (m := _state(ctx.cluster, node.nodeid)) is not None and m.started,
                      NODE_RESTART_BOUND_S, poll=0.5):
        raise StepFailed(f"{node.name} not started again {NODE_RESTART_BOUND_S:.0f} s after '{node.nodeid} RESTART'")
    return f"'{node.nodeid} RESTART': {said}; started again {ctx.clock.now() - t0:.1f} s after"


def restart_sql_node(ctx: Context, node: TP.Node) -> str:
    """SIGTERM (mysqld's clean shutdown), started again, every node healthy."""
    cluster = ctx.cluster
    t0 = ctx.clock.now()
    how = cluster.engine.stop_node(cluster, node, 60)
    if not wait_until(lambda: cluster.engine.process_stopped(cluster, node), 90.0, poll=0.5):
        raise StepFailed(f"{node.name} still running 90 s after {how}")
    cluster.engine.recover_nodes(cluster, [node])
    cluster.wait_healthy(NODE_RESTART_BOUND_S)
    return f"{how}, started again, serving {ctx.clock.now() - t0:.1f} s after"


def _config_values(ctx: Context, params: list[str]) -> dict[int, dict[str, str]]:
    names = ",".join(f"'{p}'" for p in params)
    out = sql(ctx, "SELECT v.node_id, p.param_name, v.config_value FROM ndbinfo.config_values v JOIN "
                   "ndbinfo.config_params p ON v.config_param = p.param_number "
                   f"WHERE p.param_name IN ({names}) ORDER BY v.node_id", timeout=30)
    have: dict[int, dict[str, str]] = {}
    for ln in out.splitlines():
        parts = ln.split("\t")
        if len(parts) == 3 and parts[0].strip().isdigit():
            have.setdefault(int(parts[0]), {})[parts[1].strip()] = parts[2].strip()
    return have


def _generations(ctx: Context) -> dict[int, int]:
    out = sql(ctx, "SELECT node_id, config_generation FROM ndbinfo.nodes ORDER BY node_id", timeout=30)
    return {int(a): int(b) for a, b in (ln.split("\t") for ln in out.splitlines() if "\t" in ln)}


def rolling_config_change(cluster, changes: dict, node_failure: bool = False, refused: bool = False) -> Procedure:
    """The procedure (module docstring). ``changes``: ``{parameter: value}`` for ``[ndbd
    default]``, parameters a rolling restart applies. ``node_failure``: a fault hits a data
    node's restart, so that step may fail (the cluster stopped under it); the procedure goes on
    once the cluster has recovered. ``refused``: the values are ones NDB refuses (e.g.
    DataMemory below its minimum): the reload must fail before anything stops, and the cluster
    keep the configuration it had."""
    changes = check_changes(changes)
    params = list(changes)
    datas = sorted(cluster.topology.data_nodes, key=lambda n: n.nodeid or 0)
    sqls = sorted(cluster.topology.sql_nodes, key=lambda n: n.nodeid or 0)
    may = ("done", "failed") if node_failure else ("done",)

    def prepare(ctx: Context) -> None:
        first = _mgms(cluster)[0]
        original = docker.get_file(cluster.container(first), "/etc/mysql-cluster.cnf").decode()
        if "[" not in original:
            raise UsageError(f"rolling_config_change: no config.ini in {first.name}'s container")
        ctx.state["original"] = original
        ctx.state["new"] = new = set_parameters(original, changes)
        if new == original:
            raise UsageError("rolling_config_change: the new config.ini is the one the cluster has")
        ctx.state["before"] = _query(ctx, first, ["--ndb-connectstring=127.0.0.1:1186"], params)
        ctx.state["generations_before"] = _generations(ctx)

    def reload_step(ctx: Context) -> str:
        want, said = reload(ctx, ctx.state["new"], params, unchanged=ctx.state["before"])
        ctx.state["want"] = want
        ctx.state["reloaded"] = True
        return f"{', '.join(f'{k}={v}' for k, v in changes.items())}: {said}"

    def applied(ctx: Context) -> tuple[bool | None, str]:
        want = ctx.state.get("want")
        if want is None:
            return None, "the configuration was not reloaded"
        have = _config_values(ctx, params)
        wrong = {i: have.get(i) for i in want if have.get(i) != want[i]}
        if wrong:
            return False, f"data nodes not running with the new values: {wrong} (want {want})"
        return True, f"every data node runs with {', '.join(f'{k}={v}' for k, v in next(iter(want.values())).items())}"

    def generation(ctx: Context) -> tuple[bool | None, str]:
        if "want" not in ctx.state:
            return None, "the configuration was not reloaded"
        before, now = ctx.state["generations_before"], _generations(ctx)
        data = {n.nodeid for n in datas}
        gens = {g for i, g in now.items() if i in data}
        old = max((g for i, g in before.items() if i in data), default=0)
        ok = len(gens) == 1 and min(gens) > old
        return ok, f"data nodes' configuration generations {sorted(gens)} (before the change: {old})"

    def cleanup(ctx: Context) -> None:
        if not ctx.state.get("reloaded"):
            return
        ctx.cluster.wait_healthy(NODE_RESTART_BOUND_S)
        reload(ctx, ctx.state["original"], params)
        # the data nodes as they were, one at a time as in the procedure: NDB refuses to stop two
        # at once without -a (9.7.2: "5031-Unsupported multi node shutdown. Abort option required")
        for n in datas:
            restart_data_node(ctx, n)

    def kept(ctx: Context) -> tuple[bool | None, str]:
        before = ctx.state["before"]
        for n in _mgms(cluster):
            have = _query(ctx, n, ["--ndb-connectstring=127.0.0.1:1186"], params)
            if have != before:
                return False, f"{n.name} serves {have}, not the configuration it had ({before})"
        gens = _generations(ctx)
        if gens != ctx.state["generations_before"]:
            return False, f"configuration generations changed: {ctx.state['generations_before']} -> {gens}"
        return True, f"every management server serves what it had; generations {sorted(set(gens.values()))} as before"

    steps = [Step("reload configuration", reload_step, expected=("failed",) if refused else ("done",),
                  description="ndb_mgmd --reload with the new config.ini, the other management servers plain")]
    if refused:
        return Procedure("rolling_config_change", tuple(steps), outcomes=(
            Outcome("the cluster keeps the configuration it had", kept),), prepare=prepare, cleanup=cleanup)
    steps += [Step(f"restart {n.name}", (lambda node: lambda ctx: restart_data_node(ctx, node))(n), expected=may,
                   stop_if_not_done=not node_failure, description=f"ndb_mgm -e '{n.nodeid} RESTART'")
              for n in datas]
    steps += [Step(f"restart {n.name}", (lambda node: lambda ctx: restart_sql_node(ctx, node))(n),
                   description="mysqld stopped (SIGTERM) and started") for n in sqls]
    return Procedure("rolling_config_change", tuple(steps), outcomes=(
        Outcome(f"every data node runs with {', '.join(f'{k}={v}' for k, v in changes.items())}", applied),
        Outcome("every data node at the configuration generation of the reload", generation),
    ), prepare=prepare, cleanup=cleanup)


__all__ = ["CONFIG", "NEEDS", "ONCE", "ROLLING", "check_changes", "parse_query", "reload", "restart_data_node",
           "restart_sql_node", "rolling_config_change", "set_parameters"]
