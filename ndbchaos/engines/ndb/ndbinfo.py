"""Query helpers for the ndbinfo tables used in assertions (docs/facts.md NDB 4).

Every query is ``SELECT *`` and rows come back as dicts keyed by the column names the server
reports, so a column that differs between versions (restart_info's later columns are
[UNVERIFIED]) cannot break a query. Functions take any DB-API cursor (mysql-connector or
PyMySQL); ``parse_tsv`` reads the same tables from ``mysql -B`` output run inside a container.

The judgement helpers (``nodes_ready``, ``arbitrator_summary``) are pure functions over rows.
"""

from __future__ import annotations

TABLES = ("nodes", "membership", "arbitrator_validity_summary", "arbitrator_validity_detail",
          "restart_info", "processes", "config_nodes")


def query(cursor, table: str, where: str = "") -> list[dict]:
    if table not in TABLES:
        raise ValueError(f"unknown ndbinfo table {table!r}")
    cursor.execute(f"SELECT * FROM ndbinfo.{table}" + (f" WHERE {where}" if where else ""))
    cols = [d[0] for d in cursor.description]
    return [dict(zip(cols, _plain(row))) for row in cursor.fetchall()]


def _plain(row) -> list:
    out = []
    for v in row:
        if isinstance(v, (bytes, bytearray)):
            v = v.decode("utf-8", "replace")
        out.append(v)
    return out


def nodes(cursor) -> list[dict]:
    """``node_id, uptime, status, start_phase, config_generation``; only running data nodes
    have a row (a dead node has none). status in NOTHING, CMVMI, STARTING, STARTED, SINGLEUSER,
    STOPPING_1..4."""
    return query(cursor, "nodes")


def membership(cursor) -> list[dict]:
    """Each data node's view: ``node_id, group_id, left_node, right_node, president, successor,
    succession_order, Conf_HB_order, arbitrator, arb_ticket, arb_state, arb_connected,
    connected_rank1_arbs, connected_rank2_arbs``."""
    return query(cursor, "membership")


def arbitrator_validity_summary(cursor) -> list[dict]:
    """``arbitrator, arb_ticket, arb_connected, consensus_count``: one row in steady state."""
    return query(cursor, "arbitrator_validity_summary")


def restart_info(cursor) -> list[dict]:
    """The most recent restart of each node with per-phase seconds and ``total_restart_secs``."""
    return query(cursor, "restart_info")


def parse_tsv(text: str) -> list[dict]:
    """Rows of ``mysql -B`` output (header line, tab-separated, ``NULL`` for nulls). Lines
    before the header that are warnings (``mysql: [Warning] ...``) are skipped."""
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith(("mysql: [Warning]", "Warning:"))]
    if not lines:
        return []
    header = lines[0].split("\t")
    rows = []
    for ln in lines[1:]:
        vals = ln.split("\t")
        if len(vals) != len(header):
            continue
        rows.append({k: (None if v == "NULL" else _num(v)) for k, v in zip(header, vals)})
    return rows


def _num(v: str):
    try:
        return int(v)
    except ValueError:
        return v


def started_ids(rows: list[dict]) -> list[int]:
    """The data node ids ``ndbinfo.nodes`` lists as STARTED, in order: the members of the
    cluster the SQL node that read them is connected to."""
    return sorted(int(r["node_id"]) for r in rows if str(r.get("status")) == "STARTED")


def nodes_ready(rows: list[dict], expected_ids) -> tuple[bool, list[str]]:
    """Readiness rule 2 (ndb.md section 10): ``ndbinfo.nodes`` seen from an SQL node lists every
    expected data node as STARTED."""
    seen = {int(r["node_id"]): str(r.get("status")) for r in rows}
    problems = []
    for nid in expected_ids:
        st = seen.get(int(nid))
        if st is None:
            problems.append(f"data node {nid} missing from ndbinfo.nodes")
        elif st != "STARTED":
            problems.append(f"data node {nid} is {st} in ndbinfo.nodes")
    return not problems, problems


def arbitrator_summary(rows: list[dict]) -> dict:
    """Readiness rule 3: exactly one row in ``arbitrator_validity_summary`` with
    ``arb_connected = Yes``. Returns ``{"agreed": bool, "arbitrator": id|None, "rows": n, ...}``."""
    out = {"agreed": False, "arbitrator": None, "rows": len(rows), "arb_connected": None,
           "consensus_count": None, "ticket": None}
    if len(rows) == 1:
        r = rows[0]
        arb = r.get("arbitrator")
        out.update(arbitrator=int(arb) if arb not in (None, "", 0, "0") else None,
                   arb_connected=r.get("arb_connected"), consensus_count=r.get("consensus_count"),
                   ticket=r.get("arb_ticket"))
        out["agreed"] = out["arbitrator"] is not None and str(r.get("arb_connected")) == "Yes"
    return out


def president(rows: list[dict]) -> int | None:
    """The president every data node agrees on in ``ndbinfo.membership`` (None if they differ)."""
    vals = {r.get("president") for r in rows}
    if len(vals) == 1:
        v = vals.pop()
        return int(v) if v not in (None, "") else None
    return None


def succession(rows: list[dict]) -> list[int]:
    """Data node ids in the order they succeed to the presidency (``ndbinfo.membership``: each
    row gives its own node's ``succession_order``; the president is first). The order is the
    order in which the nodes joined the cluster, not node ids: on 9.7.2 a start gave 11, 14,
    12, 13, and after node 11 was killed node 14 took over (measured). A node that restarts
    joins at the end. Empty when the rows disagree on the president."""
    if not rows or president(rows) is None:
        return []
    ordered = sorted((int(r["succession_order"]), int(r["node_id"])) for r in rows
                     if r.get("succession_order") not in (None, "") and r.get("node_id") not in (None, ""))
    return [nid for _, nid in ordered]

