"""The commands run in an NDB cluster's containers: the management client (``mgm``, and the
report of SHOW + ALL STATUS, ``mgm_report``), SQL as root through the server's socket
(``root_sql``), and the cluster log levels each management node is given after it starts.
"""

from __future__ import annotations

import logging

from ...runtimes import docker
from ... import topology as TP
from ...errors import ClusterNotReady
from ...waiting import wait_until
from .mgm import MgmReport, parse_mgm
from .mgm import answered as mgm_answered

log = logging.getLogger("ndbchaos")

#: the management client, run inside a management node's container
MGM_CLIENT = ["ndb_mgm", "-c", "127.0.0.1:1186"]
#: the same for a probe (status, readiness): one connection attempt. ndb_mgm's default retries a
#: refused connection 12 times, 5 s apart (9.7.2 --help), and a probe is always polled again, so
#: a management server that is not there now must not cost a minute. On a host that outlives its
#: ndb_mgmd (the inventory backend) a status read caught running when the server was killed
#: otherwise spent 12 s retrying, and that fault's window had no status sample at all.
#: (--connect-retries=0 means "retry for ever", measured.)
PROBE_MGM_CLIENT = [*MGM_CLIENT, "--connect-retries=1"]

#: Cluster log levels of ndb_mgmd. They are not config.ini parameters: ndb_mgmd starts with 7 for
#: every category, ERROR 15, CONNECTION 8, BACKUP 15 (MgmtSrvr.cpp constructor), which hides the
#: threshold-8 NodeRestart events (NODE_FAILREP "has failed", NodeFailCompleted "completed failure
#: of") that the expectations look for. Each ndb_mgmd has its own cluster log and its own levels,
#: and they reset when it restarts, so they are applied to each management node after it starts.
CLUSTERLOG = "ALL CLUSTERLOG STARTUP=15 SHUTDOWN=15 NODERESTART=15 CONNECTION=15 ERROR=15"


#: the last line root_sql's statements print, and its answer when that line never arrived
SQL_END = "-- ndbchaos: end of output --"
SQL_OUTPUT_LOST = -3


def sql_answer(code: int, out: str) -> tuple[int, str]:
    """(exit code, output) of root_sql's command without its end line; exit 0 without the end
    line is ``SQL_OUTPUT_LOST`` (the output did not arrive whole)."""
    lines = out.splitlines(keepends=True)
    ends = [i for i, ln in enumerate(lines) if ln.strip() == SQL_END]
    if ends:
        del lines[ends[-1]]
        return code, "".join(lines)
    if code == 0:
        return SQL_OUTPUT_LOST, (f"the SQL node answered exit 0 but its output did not arrive whole "
                                 f"(no end line; {len(out)} bytes came)")
    return code, out


class NdbShell:
    """The commands of the other NDB parts: run in a container (``exec``), SQL as root, the
    management client and its report, the cluster log levels (remembered per management node,
    by when its container started, so a restarted ndb_mgmd gets them again)."""

    def __init__(self):
        self._clusterlog_applied: dict[str, str] = {}  # mgm node -> container StartedAt

    def raise_if_exited(self, cluster, node: TP.Node) -> None:
        c = cluster.container(node)
        st = docker.container_state(c)
        if st in ("exited", "dead"):
            tail = c.logs(tail=20).decode("utf-8", "replace").strip().splitlines()
            last = [ln for ln in tail if ln.strip()][-1:] or ["(no output)"]
            raise ClusterNotReady(f"{node.name} exited during start: {last[0][-240:]}")

    def wait_mgm(self, cluster, node: TP.Node, timeout: float) -> None:
        last = [""]

        def answers():
            self.raise_if_exited(cluster, node)
            code, out = self.exec(cluster, node, PROBE_MGM_CLIENT + ["-e", "show"], timeout=10)
            last[0] = (out.strip().splitlines() or [""])[-1]
            return code == 0 and "Cluster Configuration" in out

        wait_until(answers, max(timeout, 1), poll=1.0, on_timeout=lambda: ClusterNotReady(
            f"{node.name}: ndb_mgmd did not answer within {timeout:.0f}s ({last[0][-200:]})"))

    # -- commands -------------------------------------------------------------------------
    def exec(self, cluster, node: TP.Node, cmd: list[str] | str, timeout: float = 10) -> tuple[int, str]:
        try:
            c = cluster.container(node)
            return docker.exec_in(c, cmd, timeout=timeout)
        except Exception as e:  # paused, gone, docker error: an answer, not an exception
            # Docker's own words when it gave them ("Container ... is not running"), not the URL
            return -1, f"{type(e).__name__}: {getattr(e, 'explanation', None) or e}"

    def root_sql(self, cluster, node: TP.Node, sql: str, timeout: float = 30) -> tuple[int, str]:
        """Run SQL as root@localhost inside an SQL node's container, through the server's socket
        (the image sets MYSQL_UNIX_PORT); the password is the container's MYSQL_ROOT_PASSWORD.
        Returns (exit code, output).

        The statements are followed by one that prints ``SQL_END``, removed from the output: an
        answer of exit 0 without it lost its output on the way (Docker's exec can return a short
        process's exit code with none of its output: moby#27289, docker-py#2042; CI saw an empty
        answer to a query that always returns one row). That answer is ``SQL_OUTPUT_LOST``, not
        an empty result."""
        body = sql.rstrip().rstrip(";").rstrip()
        end = f"SELECT '{SQL_END}'"
        # a statement ended by \G (or \g) is complete; any other gets its ';' on a line of its own
        # (after a trailing -- comment, a ';' on the same line would be commented out)
        body += f"\n{end};" if body.endswith(("\\G", "\\g")) else f"\n;{end}"
        cmd = ["sh", "-c", 'MYSQL_PWD="$MYSQL_ROOT_PASSWORD" exec mysql -uroot -N -B -e "$0"', body]
        code, out = self.exec(cluster, node, cmd, timeout=timeout)
        return sql_answer(code, out)

    def mgm(self, cluster, command: str, node: TP.Node | None = None,
            timeout: float = 10) -> tuple[int, str, str | None]:
        """Run one ndb_mgm command in a management container (the given one, or the first
        running one in node id order); (exit code, output, node name that answered)."""
        candidates = [node] if node is not None else sorted(cluster.topology.role(TP.MGM), key=lambda n: n.nodeid or 0)
        last = (-1, "no management node container is running", None)
        for n in candidates:
            try:
                if docker.container_state(cluster.container(n)) != "running":
                    continue
            except Exception:
                continue
            code, out = self.exec(cluster, n, MGM_CLIENT + ["-e", command], timeout=timeout)
            if code == 0 and mgm_answered(out):
                return code, out, n.name
            last = (code, out, n.name)
        return last

    def apply_clusterlog(self, cluster, node: TP.Node) -> bool:
        code, out, _ = self.mgm(cluster, CLUSTERLOG, node=node, timeout=15)
        ok = code == 0 and "failed" not in out
        if ok:
            try:
                c = cluster.container(node)
                self._clusterlog_applied[node.name] = (c.attrs.get("State") or {}).get("StartedAt", "")
            except Exception:
                pass
        else:
            log.warning("CLUSTERLOG levels not applied on %s: %s", node.name, out.strip()[-200:])
        return ok

    def reapply_clusterlog(self, cluster, cstates: dict) -> None:
        """A management node that restarted since its levels were applied gets them again."""
        for n in cluster.topology.role(TP.MGM):
            if cstates.get(n.name) != "running":
                continue
            try:
                started = (cluster.container(n).attrs.get("State") or {}).get("StartedAt", "")
            except Exception:
                continue
            if self._clusterlog_applied.get(n.name) not in (None, started):
                self.apply_clusterlog(cluster, n)

    def mgm_report(self, cluster) -> tuple[MgmReport | None, str | None]:
        """SHOW + ALL STATUS from the first management node that answers, parsed together."""
        script = " ".join(PROBE_MGM_CLIENT) + " -e show; echo; " + " ".join(PROBE_MGM_CLIENT) + " -e 'all status'"
        for n in sorted(cluster.topology.role(TP.MGM), key=lambda n: n.nodeid or 0):
            try:
                if docker.container_state(cluster.container(n)) != "running":
                    continue
            except Exception:
                continue
            _, out = self.exec(cluster, n, ["sh", "-c", script], timeout=20)
            if "Cluster Configuration" not in out:
                continue
            rep = parse_mgm(out)
            if rep.nodes:
                return rep, n.name
        return None, None
