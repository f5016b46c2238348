"""What an operator types during a procedure, where they type it: SQL as root inside an SQL
node's container (``root_sql``), ``ndb_mgm`` commands inside a management node's. Each returns
the engine's words, or raises ``StepFailed`` with them (one line)."""

from __future__ import annotations

from ...runtimes import docker
from ... import topology as TP
from ...operations.procedure import Context, StepFailed, one_line
from .mgm import reply

#: DDL may wait for the schema lock, a node restart, or a node failure's handling
DDL_TIMEOUT_S = 300.0


def running_sql(cluster) -> TP.Node:
    """The first SQL node (in node id order) whose container runs: where statements go."""
    for n in sorted(cluster.topology.sql_nodes, key=lambda n: n.nodeid or 0):
        if docker.container_state(cluster.container(n)) == "running":
            return n
    raise StepFailed("no SQL node's container is running")


def sql(ctx: Context, statement: str, node: TP.Node | None = None, timeout: float = DDL_TIMEOUT_S) -> str:
    """Run ``statement`` as root on ``node`` (the first running SQL node); its output, or
    ``StepFailed`` with the server's error."""
    node = node or running_sql(ctx.cluster)
    code, out = ctx.cluster.engine.root_sql(ctx.cluster, node, statement, timeout=timeout)
    if code != 0:
        raise StepFailed(f"{node.name}: {one_line(out)}")
    return out


def mgm(ctx: Context, command: str, timeout: float = 60.0) -> str:
    """Run one ndb_mgm command; its output, or ``StepFailed`` with the client's last words."""
    code, out, src = ctx.cluster.engine.mgm(ctx.cluster, command, timeout=timeout)
    said, refused = reply(out)
    if code != 0 or refused:
        raise StepFailed(f"ndb_mgm '{command}' via {src or 'no management node'}: {'; '.join(said[-3:]) or out}")
    return "; ".join(said[-3:])


__all__ = ["DDL_TIMEOUT_S", "mgm", "running_sql", "sql"]
