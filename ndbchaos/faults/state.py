"""What faults are in effect in a project, found from their traces, and how to remove them all.

Used by ``ndbchaos status`` and ``ndbchaos fault heal`` on a cluster that another process (or a
killed one) left faulted. Nothing is remembered in files: every fault of the catalogue leaves a
trace that can be read back from Docker alone:

=================  =========================================================================
partition          a chain ``NDBCHAOS-*`` in the node's own network namespace, jumped to from
                   INPUT by a rule whose comment names the fault (read with a helper)
netem              a root qdisc with our handle ``4e44:`` (or pumba's ``504d:``)
pause              the container's state ``paused``
kill/stop          the container's state ``exited`` / ``dead`` / ``created``
disconnect         a running node with no endpoint on a project network
toxics / down      the toxiproxy API: toxics named ``ndbchaos-*``, proxies ``enabled: false``
helpers            containers with ``ndbchaos.role=helper`` (a run that died mid-fault)
storage            the faultfs layers' own status (their control sockets) and ballast files
stuck              a running node with a thread in uninterruptible sleep (``holds.stuck``)
error_insert       a data node whose current process logged NDB_TAMPER with a code not cleared since
=================  =========================================================================

``heal`` releases what holds a node first (``ndbchaos.holds``: faultfs layers, frozen
containers), and looks into no namespace whose process is stuck; ``traces`` is what can be read
of a project without attaching to it (no engine, no helper).
"""

from __future__ import annotations

from .. import holds
from ..runtimes import docker
from .. import topology as TP
from ..runtimes import factory
from ..runtimes.compose.cluster import ComposeCluster
from ..engines import get_engine
from ..errors import NdbChaosError, UsageError
from . import netem, storage
from ..runtimes import netns
from . import toxiproxy as TX
from ..vocabulary import ClusterOptions

DOWN_STATES = ("exited", "dead", "created")


def attach(project: str) -> ComposeCluster:
    """The compose runtime's handle on a running project, its engine read from the
    ``ndbchaos.engine`` label and its options from its topology (we did not start it)."""
    if not project:
        raise UsageError("no project given (--project ID; `ndbchaos status` lists the projects)")
    docker.docker_client()
    cs = docker.project_containers(project)
    if not cs:
        raise NdbChaosError(f"no containers labelled {TP.PROJECT}={project}")
    engines = sorted({(c.labels or {}).get(TP.ENGINE) for c in cs} - {None, ""})
    if len(engines) != 1:
        raise NdbChaosError(f"project {project}: cannot tell the engine from the {TP.ENGINE} labels "
                            f"({', '.join(engines) or 'none'})")
    engine = get_engine(engines[0])
    cluster = factory.compose(engine, ClusterOptions(), project=project)
    topo = cluster.discover()
    cluster.options = engine.options_from_topology(topo)
    cluster.started = True
    return cluster


def projects() -> dict[str, dict]:
    """Every project with containers on this host: {project: {engine, containers, helpers}}."""
    out: dict[str, dict] = {}
    for c in docker.project_containers(None):
        lab = c.labels or {}
        p = out.setdefault(lab.get(TP.PROJECT, "?"), {"engine": "", "containers": 0, "helpers": 0, "running": 0})
        if lab.get(TP.ENGINE):
            p["engine"] = lab[TP.ENGINE]
        if lab.get(TP.ROLE) == TP.HELPER:
            p["helpers"] += 1
        else:
            p["containers"] += 1
            p["running"] += c.status == "running"
    return out


def _nodes(cluster):
    return [n for n in cluster.topology.nodes if n.role not in (TP.HELPER, TP.PROXY)]


def traces(project: str) -> tuple[list[dict], list[str]]:
    """What the containers of ``project`` show by themselves (helpers, paused, down, unplugged)
    and its storage faults, read from Docker and the host alone (no engine, no helper, no
    topology: what ``status`` shows of a project it cannot attach to): ([{kind, node, detail}],
    the node names whose container runs or is paused)."""
    found: list[dict] = []
    running = []
    project_nets = {n.id for n in docker.project_networks(project)}
    for c in docker.project_containers(project):
        lab = c.labels or {}
        role = lab.get(TP.ROLE)
        name = lab.get(TP.NODE) or c.name
        if role == TP.HELPER:
            found.append({"kind": "helper", "node": lab.get(TP.LABEL_PREFIX + "target", "?"),
                          "detail": f"{c.name} ({lab.get(TP.LABEL_PREFIX + 'purpose', '?')}, {c.status})"})
            continue
        if c.status == "paused":
            found.append({"kind": "pause", "node": name, "detail": "container paused"})
        elif c.status in DOWN_STATES:
            code = (c.attrs.get("State") or {}).get("ExitCode")
            found.append({"kind": "down", "node": name, "detail": f"container {c.status} (exit code {code})"})
        if c.status in ("running", "paused"):  # a paused container keeps its namespace
            nets = (c.attrs.get("NetworkSettings") or {}).get("Networks") or {}
            if project_nets and not any(ep.get("NetworkID") in project_nets for ep in nets.values()):
                found.append({"kind": "disconnect", "node": name, "detail": "no endpoint on the project network"})
            if role != TP.PROXY:
                running.append(name)
            why = holds.stuck(holds.pid_of(c))
            if why and c.status == "running":
                found.append({"kind": "stuck", "node": name, "detail": why})
    found += storage.active(project)
    return found, running


def inspect(cluster, netns_rules: bool = True, error_inserts: bool = True) -> list[dict]:
    """The active faults of a project: [{kind, node, detail}]. A node whose namespace cannot be
    looked into (its process stuck, a helper that does not start) is one entry saying why.
    ``error_inserts``: also read the data nodes' output for codes still armed (their whole logs)."""
    found, running = traces(cluster.project)
    storage_found = [f for f in found if f["kind"] in ("storage", "disk_full")]
    found = [f for f in found if f not in storage_found]
    if netns_rules:
        stuck = {f["node"] for f in found if f["kind"] == "stuck"}
        nodes = [cluster.topology.node(n) for n in running
                 if n in cluster.topology._by_name and n not in stuck
                 and not any(f["kind"] == "pause" and f["node"] == n for f in found)]

        def look(n):
            try:
                h = netns.start_helper(cluster, n, purpose="inspect")
            except Exception as e:
                return n.name, None, docker.one_line(e)
            try:
                return n.name, h.exec(netns.LIST_RULES_SCRIPT, timeout=20)[1], None
            except Exception as e:
                return n.name, None, docker.one_line(e)
            finally:
                _quietly(h.remove)

        for name, out, err in netns.parallel(look, nodes):
            if err is not None:
                found.append({"kind": "unknown", "node": name, "detail": f"its namespace was not looked into: {err}"})
                continue
            ipt, _, tc = out.partition("--- qdisc")
            for ch in netns.parse_our_rules(ipt):
                drops = ", ".join(f"{ip}{'' if m == 'packets' else ' (connections)'}" for ip, m in ch["drops"])
                found.append({"kind": "partition", "node": name,
                              "detail": f"{ch['chain']} \"{ch['comment']}\" drops from {drops or 'nothing'}"})
            for line in tc.splitlines():
                if f" {netem.HANDLE}:" in line or f" {netem.PUMBA_HANDLE}:" in line:
                    found.append({"kind": "netem", "node": name, "detail": line.strip()})
    found += _toxiproxy_state(cluster)
    found += storage_found
    if error_inserts:
        found += [{"kind": "error_insert", "node": n, "detail": ", ".join(f"{b} {c}" for b, c in sorted(codes.items()))}
                  for n, codes in _armed(cluster).items()]
    return found


def _armed(cluster) -> dict[str, dict[str, int]]:
    """Error-insert codes still armed in running data nodes (an engine that has them)."""
    read = getattr(cluster.engine, "armed_error_inserts", None)
    try:
        return read(cluster) if read is not None else {}
    except Exception:  # a status read: what cannot be read is not a fault found
        return {}


def _remove_helpers(project: str, done: list[str], say: bool = False) -> None:
    for c in docker.project_containers(project):
        if (c.labels or {}).get(TP.ROLE) == TP.HELPER:
            try:
                c.remove(force=True)
                if say:
                    done.append(f"removed helper {c.name}")
            except Exception as e:
                if "No such container" not in str(e):
                    done.append(f"removing helper {c.name} failed: {docker.one_line(e)}")


def _quietly(fn) -> None:
    try:
        fn()
    except Exception:  # a helper left behind is listed by status and removed by heal or reap
        pass


def _toxiproxy_state(cluster) -> list[dict]:
    try:
        TX.proxy_container(cluster)
    except UsageError:
        return []
    try:
        a = TX.api(cluster, wait=3)
        out = []
        for name, p in sorted(a.proxies().items()):
            if not p.get("enabled", True):
                out.append({"kind": "proxy_down", "node": name, "detail": f"proxy {p.get('listen')} disabled"})
            for t in p.get("toxics") or []:
                out.append({"kind": "toxic", "node": name,
                            "detail": f"{t.get('name')} {t.get('type')} {t.get('stream')} {t.get('attributes')}"})
        return out
    except TX.ToxiproxyError as e:
        return [{"kind": "proxy", "node": "toxiproxy", "detail": f"API unreachable: {e}"}]


def heal(cluster) -> list[str]:
    """Remove every trace of a fault in the project; return what was done, one line each (a
    step that failed says so in its line: NdbChaosError only for the engine's node recovery)."""
    # 0. what holds a node first (faultfs layers, frozen containers): nothing below may wait on it
    done, problems = holds.release(cluster.project, remount=True)
    done += [f"failed: {p}" for p in problems]
    # 1. helpers of dead runs (they hold nothing: rules live in the targets' namespaces)
    _remove_helpers(cluster.project, done, say=True)
    # 2. unplugged nodes back on their project network (before anything needs the network)
    nets = docker.project_networks(cluster.project)
    for f in [f for f in inspect(cluster, netns_rules=False, error_inserts=False) if f["kind"] == "disconnect"]:
        c = cluster.container(cluster.topology.node(f["node"]))
        for net in nets:
            try:
                net.connect(c, aliases=[f["node"]])
                done.append(f"reconnected {f['node']} to {net.name}")
            except Exception as e:
                done.append(f"reconnect {f['node']} to {net.name} failed: {e}")
    # 3. unpause (a paused target still has its namespace; its rules are removed below)
    for n in _nodes(cluster):
        c = cluster.container(n)
        if docker.container_state(c) == "paused":
            try:
                done.append(holds.thaw(c))
            except NdbChaosError as e:
                done.append(f"failed: {e}")
    # 4. our chains and qdiscs, in every running node's namespace (not a stuck one's: a helper
    #    cannot start there, and its namespace goes with it)
    running = []
    for n in _nodes(cluster):
        c = cluster.container(n)
        if docker.container_state(c) != "running":
            continue
        why = holds.stuck(holds.pid_of(c))
        if why:
            done.append(f"did not look for chains in {n.name}: {why}")
        else:
            running.append(n)

    def clean(n):
        try:
            h = netns.start_helper(cluster, n, purpose="heal")
        except Exception as e:
            if docker.container_state(cluster.container(n)) != "running":  # it stopped meanwhile
                return [f"{n.name} stopped meanwhile: its namespace went, with any rule in it"]
            return [f"removing chains in {n.name} failed: no helper in its namespace ({docker.one_line(e)})"]
        try:
            code, out = h.exec(netns.remove_chains_script(None), timeout=30)
            lines = [f"removed chain {ln.split()[1]} in {n.name}" for ln in out.splitlines()
                     if ln.startswith("removed ")]
            if code != 0:
                lines.append(f"removing chains in {n.name} failed: {out.strip()[-200:]}")
            code, out = h.exec(netem.remove_script((netem.HANDLE, netem.PUMBA_HANDLE)), timeout=20)
            lines += [f"removed qdisc {' '.join(ln.split()[1:])} in {n.name}" for ln in out.splitlines()
                      if ln.startswith("removed ")]
            return lines
        except Exception as e:
            return [f"removing chains in {n.name} failed: {docker.one_line(e)}"]
        finally:
            _quietly(h.remove)

    for lines in netns.parallel(clean, running):
        done += lines
    _remove_helpers(cluster.project, done)  # one whose start failed is left created
    # 5. toxics and disabled proxies
    try:
        TX.proxy_container(cluster)
        a = TX.api(cluster, wait=5)
        before = [f for f in _toxiproxy_state(cluster) if f["kind"] in ("toxic", "proxy_down")]
        a.reset()
        done += [f"removed {f['kind']} on proxy {f['node']}" for f in before]
    except UsageError:
        pass
    except TX.ToxiproxyError as e:
        done.append(f"toxiproxy reset failed: {e}")
    # 6. storage faults: the faultfs layers cleared (done in 0 unless set again since), ballasts deleted
    try:
        done += storage.clear(cluster.project)
    except NdbChaosError as e:
        done.append(f"failed: clearing the storage faults: {e}")
    # 7. error-insert codes left armed (``ndbchaos fault error-insert`` of a stall, or a code whose
    #    event never came): ERROR 0 clears every block of the node
    for name, codes in _armed(cluster).items():
        node = cluster.topology.node(name)
        code, out, _ = cluster.engine.mgm(cluster, f"{node.nodeid} ERROR 0", timeout=20)
        what = ", ".join(f"{b} {c}" for b, c in sorted(codes.items()))
        done.append(f"cleared error insert {what} on {name}" if code == 0
                    else f"failed: clearing error insert {what} on {name}: ndb_mgm exit {code}")
    # 8. nodes that are down come back by the engine's node recovery
    down = [n for n in _nodes(cluster) if docker.container_state(cluster.container(n)) in DOWN_STATES]
    if down:
        cluster.engine.recover_nodes(cluster, down)
        done += [f"restarted {n.name}" for n in down]
    return done
