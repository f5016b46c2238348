"""config.ini, my.cnf and the compose file of a layout spec (``spec.LayoutSpec``).

The shipped default files are the templates: the ``[ndbd default]`` parameters and their reasons
are read from ndb/config.ini, my.cnf is ndb/my.cnf with this layout's management nodes, and the
compose file repeats ndb.yml's service settings (see its comments for the reasons). Only the
nodes differ: ids, names, node groups, ranks and addresses follow ``LayoutSpec.nodes``.
"""

from __future__ import annotations

import re

from ...resources import COMPOSE_DIR
from .config import NO_NODEGROUP, replace_prefix
from .mycnf import canonical
from .spec import LayoutSpec

#: the default layout's subnet (ndb.yml), the prefix of the shipped templates' addresses
TEMPLATE_NET = "10.213.77"
#: label of every container of a generated layout: its spec, so a running cluster maps back to it
SPEC_LABEL = "ndbchaos.ndb_layout"


def _ndbd_default_body(params: dict | None = None) -> str:
    """The shipped [ndbd default] section after its NoOfReplicas line: every parameter with its
    reason, as the default layout has it; ``params`` (a twin's: the user's values) replace the
    same parameters' values, or are added at its end, each marked as the user's."""
    text = (COMPOSE_DIR / "ndb" / "config.ini").read_text()
    start = text.index("[ndbd default]")
    end = text.index("[ndb_mgmd default]")
    body = text[start:end].split("\n")
    cut = next(i for i, ln in enumerate(body) if ln.startswith("NoOfReplicas="))
    lines = body[cut + 1:]
    for key, value in (params or {}).items():
        at = next((i for i, ln in enumerate(lines) if ln.lower().startswith(key.lower() + "=")), None)
        mine = [f"# {key}: the value of the cluster this layout is the twin of", f"{key}={value}"]
        if at is None:
            while lines and not lines[-1].strip():
                lines.pop()
            lines += ["", *mine]
        else:
            lines[at:at + 1] = mine
    return "\n".join(lines).rstrip() + "\n"


def _replicas_reason(r: int) -> str:
    if r == 1:
        return ("# One copy of every fragment: losing any data node loses its node group's data and stops\n"
                "# the cluster (docs/facts.md NDB 5.1: a node group with no survivor).\n")
    return (f"# {r} copies of every fragment: a node group survives while one of its {r} members runs\n"
            "# (docs/facts.md NDB 5.1); the expectations derive every outcome from this value.\n")


def config_ini(spec: LayoutSpec, net: str = TEMPLATE_NET) -> str:
    nodes = spec.nodes()
    table = []
    for role, name, nid, ng in nodes:
        what = {"mgm": f"ndb_mgmd, ArbitrationRank {spec.rank(nid)}",
                "data": f"ndbmtd, node group {ng}",
                "spare": f"ndbmtd, no node group (NodeGroup={NO_NODEGROUP})",
                "sql": "mysqld"}[role]
        table.append(f"#   {name:<7}NodeId {nid:<4}{net}.{100 + nid:<5}{what}")
    api = spec.api_ids
    out = [f"# ndbchaos NDB layout {spec} (mounted as /etc/mysql-cluster.cnf; read by ndb_mgmd -f),",
           "# generated from the spec by ndbchaos.engines.ndb.render; `ndbchaos layout SPEC` prints it.",
           "#", *table,
           *([f"#   NodeIds {api[0]}-{api[-1]}: spare [api] slots, any host (ndbinfo_select_all, ndb_restore, "
              "NDB API tools)"] if api else []),
           "#",
           "# Addresses follow \"last octet = 100 + NodeId\" and equal the ipv4_address of each service of",
           "# the compose file generated with it. The [ndbd default] values and their reasons are the",
           "# default layout's (ndbchaos/data/compose/ndb/config.ini).",
           *_twin_notes(spec),
           "", "[system]", "Name=ndbchaos", "", "[ndbd default]",
           _replicas_reason(spec.replicas) + f"NoOfReplicas={spec.replicas}",
           _ndbd_default_body(spec.params)]
    if spec.spare:
        out += ["# Spare data nodes (NodeGroup=65536) join no node group until CREATE NODEGROUP; when one is",
                "# absent the others start after StartNoNodegroupTimeout (default 15000 ms; ndb-operations 1.1).",
                ""]
    out += ["[ndb_mgmd default]", "DataDir=/var/lib/mysql", ""]
    for role, name, nid, ng in nodes:
        host = f"HostName={net}.{100 + nid}"
        if role == "mgm":
            rank = spec.rank(nid)
            why = {1: "# Rank 1 is preferred over rank 2 (8.4 manual): the arbitrator after start, usually.",
                   2: "# Rank 2: the arbitrator's designated successor (mgmnode_loss)."}.get(
                rank, "# Rank 0: this management node never arbitrates.")
            out += ["[ndb_mgmd]", f"NodeId={nid}", host, why, f"ArbitrationRank={rank}", ""]
        elif role in ("data", "spare"):
            out += ["[ndbd]", f"NodeId={nid}", host, f"NodeGroup={NO_NODEGROUP if ng is None else ng}", ""]
        else:
            rank = spec.rank(nid)
            out += ["[mysqld]", f"NodeId={nid}", host,
                    "# SQL nodes never arbitrate (rank 0): losing every management node leaves no arbitrator."
                    if rank == 0 else f"# Rank {rank}: this SQL node is an arbitrator candidate.",
                    f"ArbitrationRank={rank}", ""]
    for nid in api:
        out += ["[api]", f"NodeId={nid}", "ArbitrationRank=0", ""]
    return "\n".join(out).rstrip() + "\n"


def _twin_notes(spec) -> list[str]:
    """A twin's header: each of its nodes' host in the user's cluster, and what changed and why."""
    if not hasattr(spec, "mapping"):
        return []
    out = ["#", f"# The twin of {spec.source}: host (NodeId) -> container", *(f"#   {m}" for m in spec.mapping())]
    if spec.changes:
        out += ["# What differs from that file, and why:", *(f"#   - {c}" for c in spec.changes)]
    return out


def my_cnf(spec: LayoutSpec, net: str = TEMPLATE_NET) -> str:
    """The shipped my.cnf with this layout's management nodes in both connect strings."""
    text = replace_prefix((COMPOSE_DIR / "ndb" / "my.cnf").read_text(), TEMPLATE_NET, net)
    cs = ",".join(f"{net}.{100 + nid}:1186" for role, _, nid, _ in spec.nodes() if role == "mgm")
    text = re.sub(r"(?m)^ndb-connectstring=.*$", f"ndb-connectstring={cs}", text)
    head = f"# ndbchaos NDB layout {spec}: /etc/my.cnf of every container, generated from ndb/my.cnf.\n"
    return head + _with_mysqld(text.split("\n", 1)[1], getattr(spec, "mysqld", None) or {},
                               getattr(spec, "mycnf", ""))


def _with_mysqld(text: str, options: dict, source: str) -> str:
    """``text`` (a my.cnf) with ``options`` in its [mysqld] section: an option it sets already
    takes the user's value in place, the others are added at the end of the section under a
    comment naming ``source``."""
    if not options:
        return text
    lines = text.split("\n")
    start = next(i for i, ln in enumerate(lines) if ln.strip().lower() == "[mysqld]")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")), len(lines))
    left = dict(options)
    for i in range(start + 1, end):
        key = lines[i].split("=", 1)[0].strip()
        if key and not key.startswith("#") and canonical(key) in left:
            k = canonical(key)
            v = left.pop(k)
            lines[i] = f"{k}={v}" if v != "" else k
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    added = [f"# yours ({source}): the options that decide what your SQL nodes' clients see"] + [
        f"{k}={v}" if v != "" else k for k, v in sorted(left.items())] if left else []
    return "\n".join(lines[:end] + added + lines[end:])


_HEAD = """\
# MySQL NDB Cluster for ndbchaos, layout {spec}: generated by ndbchaos.engines.ndb.render
# (`ndbchaos layout SPEC --compose` prints it). Variables, volumes, start order and the reasons
# behind each setting are those of ndbchaos/data/compose/ndb.yml; nodes, ids and addresses are
# in the config.ini generated with it.

x-image: &image
  image: ${{NDBCHAOS_NDB_IMAGE:-container-registry.oracle.com/mysql/community-cluster:8.4}}
  # The image's HEALTHCHECK never passes for ndb_mgmd/ndbmtd containers (ndb.md 1.2).
  healthcheck:
    disable: true
  # A data node ignores SIGTERM (its angel is PID 1): `docker stop` kills it after this period.
  stop_grace_period: 30s
  volumes:
    - ${{NDBCHAOS_NDB_CONFIG:-{ini}}}:/etc/mysql-cluster.cnf:ro
    - ${{NDBCHAOS_NDB_MYCNF:-{cnf}}}:/etc/my.cnf:ro
    - /var/lib/mysql

x-labels: &labels
  ndbchaos.project: ${{NDBCHAOS_PROJECT:-ndbchaos-manual}}
  ndbchaos.engine: ndb
  {label}: "{spec}"

x-data: &data
  <<: *image
  depends_on: [{mgm}]
x-sql: &sql
  <<: *image
  depends_on: [{data}]
  environment:
    MYSQL_ROOT_PASSWORD: ${{NDBCHAOS_NDB_ROOT_PASSWORD:-ndbchaos-root}}

services:
"""

_TAIL = """\
networks:
  net:
    ipam:
      config:
        - subnet: ${{NDBCHAOS_NDB_SUBNET:-{net}}}.0/24
    labels:
      ndbchaos.project: ${{NDBCHAOS_PROJECT:-ndbchaos-manual}}
"""


def compose(spec: LayoutSpec, net: str = TEMPLATE_NET, ini: str = "./ndb/config.ini",
            cnf: str = "./ndb/my.cnf") -> str:
    """The compose file; ``ini``/``cnf``: the config files mounted when the environment names none.
    Spare data nodes carry the role ``spare``: they start with the data nodes, but no fault picks
    them and no rule counts them (they are in no node group)."""
    nodes = spec.nodes()
    names = {r: [n for rr, n, _, _ in nodes if rr == r] for r in ("mgm", "data", "spare", "sql")}
    out = [_HEAD.format(spec=spec, ini=ini, cnf=cnf, label=SPEC_LABEL, mgm=", ".join(names["mgm"]),
                        data=", ".join(names["data"] + names["spare"]))]
    for role, name, nid, ng in nodes:
        anchor = {"mgm": "image", "data": "data", "spare": "data", "sql": "sql"}[role]
        cmd = {"mgm": f'"ndb_mgmd", "--ndb-nodeid={nid}", "--configdir=/var/lib/mysql"',
               "data": f'"ndbmtd", "--ndb-nodeid={nid}"', "spare": f'"ndbmtd", "--ndb-nodeid={nid}"',
               "sql": f'"mysqld", "--ndb-nodeid={nid}"'}[role]
        svc = [f"  {name}:", f"    <<: *{anchor}", f"    hostname: {name}", f"    command: [{cmd}]"]
        if role == "sql":
            n = name[len("sql"):]
            svc.append(f'    ports: ["127.0.0.1:${{NDBCHAOS_PORT_SQL{n}:-}}:3306"]')
        svc += ["    networks:", "      net:", f"        ipv4_address: ${{NDBCHAOS_NDB_SUBNET:-{net}}}.{100 + nid}",
                "    labels:", "      <<: *labels", f"      ndbchaos.role: {role}",
                f'      ndbchaos.nodegroup: "{"" if ng is None else ng}"', f"      ndbchaos.node: {name}",
                f'      ndbchaos.nodeid: "{nid}"', ""]
        out.append("\n".join(svc) + "\n")
    out.append(_TAIL.format(net=net))
    return "".join(out)
