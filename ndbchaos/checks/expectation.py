"""The engine's expectation of a scenario, judged on the run record.

A scenario's driver records *marks* on the run clock (``fault``: applying the fault began;
``in_place``: the fault was in effect; ``reacted``: the engine excluded the lost nodes and the
survivors served again; ``stopped_serving``: the last successful operation anywhere, when the
cluster was expected to stop; ``shut_down``: the nodes the rules stop had stopped; ``heal``: the
heal began; ``healthy``: every node healthy again). A mark is None when it was never reached
(the driver waits up to the bound plus a margin, then carries on: the verdict judges, the driver
does not). This checker compares the marks, the history, the engine's events and the status
samples with the expectation (``Engine.expectation`` / ``partition_outcome``):

* ``detection``: in_place -> reacted within ``detection_bound_s`` (a fault the cluster survives);
* ``stopped serving``: fault -> stopped_serving within ``detection_bound_s`` (a cluster that stops);
* ``outage on <node>``: every SQL node expected to keep serving has no outage longer than
  ``detection_bound_s`` plus the node's pace (its longest gap between successes before the
  fault: the gap began at its last success, up to one such gap before the fault), or
  ``details["max_outage_s"]`` when given (0: none at all), measured as the availability checker
  does (the longest gap between its successful operations);
* ``stops serving <node>``: an SQL node expected to stop has no success later than
  fault + ``detection_bound_s`` until the heal;
* ``shut down``: in_place -> shut_down within ``details["decision_bound_s"]`` when the rules name
  nodes that stop themselves (``details["shut_down"]``);
* ``exit codes``: each of those nodes logged a forced shutdown with ``details["exit_codes"]``;
* ``exit on heal``: each node of ``details["exit_on_heal"]`` logged a forced shutdown with its code
  after the heal began (NDB: a data node frozen past the heartbeat timeout, 2315 once thawed);
* ``events``: every entry of ``details["expected_events"]`` (a kind, or kinds joined by ``|``;
  a dict's values are lists of such entries) occurs in the engine's events after the fault;
* ``no other rule``: none of ``details["unexpected_events"]`` occurs after the fault (NDB: a
  loss decided by majority never asks the arbitrator);
* ``arbitrator``: ``details["arbitrator_after"]`` is the arbitrator of the last status sample
  before the heal;
* ``master``: ``details["master_after"]`` is the master data node of the last status sample
  before the heal (NDB: the oldest survivor, read from the succession order before the fault);
* ``held down``: the nodes of ``details["held_down"]["nodes"]`` are unhealthy in every status
  sample between the fault in place and the heal, over at least ``min_s`` seconds of samples (a
  restart that must wait for something the fault took away: an NDB data node waits for a
  management server);
* ``recovery``: heal -> healthy within ``recovery_bound_s``;
* ``served again <node>``: every SQL node succeeds within ``detection_bound_s`` of healthy (not
  the lost ones when their clients failed over: they stay on the node they moved to);
* ``clients served again`` (``failover``): the clients whose SQL node the fault took away are
  served again by another SQL node within ``bound_s`` of their first error (the client's
  failover); without failover only the figure (they wait for their own node);
* ``latency on <node>`` (a latency fault, ``latency``): the target's median latency while the
  fault was in place is at least ``min_p50_ms``, the other endpoints' at most ``others_max_p50_ms``.

SQL nodes in ``affected`` have no requirement while the fault is in place (a client-path fault
disturbs its target's clients by design).

* ``fault reached the clients``: a client-path fault (a window with ``client_path``: toxiproxy)
  acts only on clients that go through the proxy. When the record says the clients did not
  (``via_proxy`` false), the fault never reached them: the run did not test what it declared, so
  this objective is missed and the objectives about its targets' clients (stops serving, clients
  served again, latency) are not judged. A record without ``via_proxy`` (written before it was
  recorded) is judged as before.

Valid: False when an objective is missed, "unknown" when one cannot be judged from the record
(e.g. no status sample), else True. ``details["objectives"]`` lists every objective with its
measured value and bound.
"""

from __future__ import annotations

import math

import numpy as np

from ..history import FINAL_PROCESS
from .frame import OK, Frame
from .verdict import UNKNOWN, Verdict, compose


def _obj(name: str, ok, measured=None, bound=None, note: str = "") -> dict:
    r = lambda x: round(x, 3) if isinstance(x, float) and math.isfinite(x) else x  # noqa: E731
    return {"name": name, "valid": ok, "measured": r(measured), "bound": r(bound), "note": note}


def _within(name: str, start, end, bound: float, what: str) -> dict:
    if start is None:
        return _obj(name, UNKNOWN, None, bound, f"no start mark: {what}")
    if end is None:
        return _obj(name, False, None, bound, f"not reached: {what}")
    took = end - start
    return _obj(name, took <= bound, took, bound, what)


def _node_ok_ends(fr: Frame, node: str) -> np.ndarray:
    if node not in fr.node_names:
        return np.empty(0)
    k = fr.node_names.index(node)
    return np.sort(fr.end[(fr.node == k) & (fr.type == OK) & (fr.process < FINAL_PROCESS)])


def _p50_ms(fr: Frame, nodes: list[str], t0, t1) -> float | None:
    codes = [fr.node_names.index(n) for n in nodes if n in fr.node_names]
    if t0 is None or t1 is None or not codes:
        return None
    m = (fr.type == OK) & np.isin(fr.node, codes) & (fr.start >= t0) & (fr.end <= t1)
    if not m.any():
        return None
    return float(np.median(fr.end[m] - fr.start[m]) * 1000)


def _latency(fr: Frame, lat: dict, t0, t1) -> list[dict]:
    node = lat["node"]
    slow = _p50_ms(fr, [node], t0, t1)
    out = [_obj(f"latency on {node}", UNKNOWN if slow is None else slow >= lat["min_p50_ms"], slow,
                lat["min_p50_ms"], "median latency (ms) while the fault was in place: at least this")]
    others = [n for n in fr.node_names if n != node]
    fast = _p50_ms(fr, others, t0, t1)
    if others and fast is not None:
        out.append(_obj("latency elsewhere", fast <= lat["others_max_p50_ms"], fast, lat["others_max_p50_ms"],
                        "median latency (ms) of the other endpoints meanwhile: at most this"))
    return out


def _matches(entry: str, kinds: set[str]) -> bool:
    return any(k.strip() in kinds for k in entry.split("|"))


def _expected_entries(spec) -> list[str]:
    if isinstance(spec, dict):
        return [e for v in spec.values() for e in (v if isinstance(v, list) else [v])]
    return list(spec or [])


def clients_served_again(fr: Frame, nodes: list[str], since: float) -> dict[int, float | None]:
    """The clients (connection slots) whose last operation that ended before ``since`` was on one
    of ``nodes`` and that then got an error: {slot: seconds from that first error (the client
    noticed) to its next success on any SQL node, or None}. A slot is ``process % concurrency``
    (a process that got an indeterminate result is retired and continues as ``process +
    concurrency``, Jepsen's convention)."""
    n = int(fr.history.params.get("concurrency") or 0)
    codes = [fr.node_names.index(x) for x in nodes if x in fr.node_names]
    load = fr.process < FINAL_PROCESS
    if not n or not codes or not load.any():
        return {}
    slot = np.where(load, fr.process % n, -1)
    out: dict[int, float | None] = {}
    for s in range(n):
        mine = slot == s
        before = np.flatnonzero(mine & (fr.end <= since))
        if not len(before) or fr.node[before[-1]] not in codes:
            continue
        errs = fr.end[mine & (fr.type != OK) & (fr.end > since)]
        if not len(errs):
            continue  # never noticed the fault
        after = fr.end[mine & (fr.type == OK) & (fr.end > errs[0])]
        out[s] = round(float(after[0]) - float(errs[0]), 3) if len(after) else None
    return out


def _failover(fr: Frame, fo: dict, fault, heal) -> dict:
    """The lost SQL nodes' clients: with failover, each served again within ``bound_s`` of the
    fault (before the heal); without, the figure only (they wait for their node)."""
    what = f"clients of {', '.join(fo['nodes'])}"
    if fault is None:
        return _obj("clients served again", UNKNOWN, None, fo.get("bound_s"), f"{what}: no fault mark")
    per = clients_served_again(fr, fo["nodes"], fault)
    if not per:
        return _obj("clients served again", UNKNOWN, None, fo.get("bound_s"), f"{what}: none found in the history")
    never = [s for s, t in per.items() if t is None]
    worst = max((t for t in per.values() if t is not None), default=None)
    bound = fo.get("bound_s")
    if not fo.get("clients_fail_over"):
        return _obj("clients served again", True, worst, None,
                    f"{what}, no failover: {len(per)} client(s) waited for their node (figure, no bound)"
                    + (f"; {len(never)} never served again" if never else ""))
    ok = not never and worst is not None and worst <= bound
    return _obj("clients served again", ok, worst if not never else f"{len(never)} of {len(per)} never", bound,
                f"{what}, failover to the next SQL node: each client's first error -> its next success "
                f"({len(per)} client(s))")


def unreached(run: dict) -> list[dict]:
    """The client-path fault windows of ``run`` that never reached its clients: the clients did
    not go through the proxies (``via_proxy`` false). Empty when they did, or when the record
    does not say."""
    if run.get("via_proxy") is not False:
        return []
    return [w for w in run.get("windows") or [] if w.get("client_path")]


def _reached(windows: list[dict]) -> dict:
    faults = ", ".join(f"{w.get('kind')} on {', '.join(w.get('targets') or [])}" for w in windows)
    return _obj("fault reached the clients", False, "never", None,
                f"{faults}: a fault on the clients' path through toxiproxy, but the clients of this run connected "
                "to the SQL nodes directly, so it never reached them: the run did not test what it declared")


def check(fr: Frame, opts: dict, run: dict, availability: dict | None = None) -> Verdict:
    """``availability``: the details of the availability verdict of the same history (its
    per-node longest outages are the figures judged here, so the report shows one number)."""
    exp = run["expectation"]
    d = exp.get("details") or {}
    marks = run.get("marks") or {}
    det = float(exp["detection_bound_s"])
    fault, in_place, heal = marks.get("fault"), marks.get("in_place"), marks.get("heal")
    objectives = []
    missed_path = unreached(run)
    if missed_path:
        objectives.append(_reached(missed_path))
    # what the targets' clients must have seen cannot be judged on clients the fault never reached
    untouched = {t for w in missed_path for t in w.get("targets") or []}

    if exp.get("engine_reacts", True) and exp["cluster_survives"]:
        objectives.append(_within("detection", in_place, marks.get("reacted"), det,
                                  "fault in place -> the survivors re-formed without the lost nodes"))
    if not exp["cluster_survives"]:
        objectives.append(_within("stopped serving", fault, marks.get("stopped_serving"), det,
                                  "fault -> the last successful operation anywhere"))

    per_node = (availability or {}).get("per_node") or {}
    # ``max_outage_s``: a tighter promise than the detection bound (0: no outage at all, e.g. a
    # rolling restart)
    promised = d.get("max_outage_s") is not None
    for node in exp.get("serving") or []:
        pn = per_node.get(node) or {}
        gap = pn.get("longest_outage_s")
        # The gap is measured between this node's successes, so besides the engine's detection it
        # holds the clients' own time without a success: the gap began at the node's last success,
        # which came up to the longest such pause of the node before the fault (its pace, measured
        # in the baseline). A fast workload's is tens of ms. A contended transactional one stalls
        # now and then until a lock wait times out (TransactionDeadlockDetectionTimeout, 1.2 s):
        # measured on 9.7.2, soak_txn's SQL nodes went up to 1.67 s without a success before a
        # freeze, and their last success came 1.25 s before it (outage 5.4 s, detection 4.7 s);
        # on the loaded CI machine one SQL node's outage was 7.96 s against 5 heartbeats + 2 s.
        pace = None if promised else pn.get("baseline_gap_max_s")
        most = float(d["max_outage_s"]) if promised else round(det + (pace or 0.0), 3)
        why = "expected to keep serving: longest time without a successful operation"
        if most == 0:
            why += " (0: no outage at all, as the availability checker counts them)"
        elif pace:
            why += f" (bound: detection {det:g} s + the node's longest pause before the fault, {pace:.3f} s)"
        objectives.append(_obj(f"outage on {node}", UNKNOWN if gap is None else gap <= most, gap, most, why))
    for node in [n for n in exp.get("stopped_sql") or [] if n not in untouched]:
        if fault is None:
            objectives.append(_obj(f"stops serving {node}", UNKNOWN, None, None, "no fault mark"))
            continue
        ends = _node_ok_ends(fr, node)
        until = heal if heal is not None else math.inf
        late = ends[(ends > fault + det) & (ends < until)]
        objectives.append(_obj(f"stops serving {node}", len(late) == 0, int(len(late)), 0,
                               f"successes later than {det:g} s after the fault, before the heal"))

    shut = list(d.get("shut_down") or [])
    if shut:
        bound = float(d.get("decision_bound_s") or det)
        objectives.append(_within("shut down", in_place, marks.get("shut_down"), bound,
                                  f"fault in place -> {', '.join(shut)} stopped by their own decision"))
    events = [e for e in run.get("events") or [] if fault is None or e.get("t") is None or e["t"] >= fault - 1]
    codes = d.get("exit_codes") or {}
    if shut and codes:
        ids = {n["name"]: n.get("nodeid") for n in (run.get("topology") or {}).get("nodes", [])}
        seen: dict = {}
        for e in events:
            if e.get("kind") == "forced_shutdown":
                seen.setdefault(e.get("node"), []).append(e.get("exit_code"))
        # a code, or the codes any of which the engine may give
        wrong = {n: seen.get(ids.get(n)) for n in shut if codes.get(n) is not None
                 and not set(codes[n] if isinstance(codes[n], list) else [codes[n]]) & set(seen.get(ids.get(n)) or [])}
        objectives.append(_obj("exit codes", not wrong, wrong or {n: codes.get(n) for n in shut}, codes,
                               "forced shutdowns in the nodes' own logs"))
    on_heal = d.get("exit_on_heal") or {}
    if on_heal:
        ids = {n["name"]: n.get("nodeid") for n in (run.get("topology") or {}).get("nodes", [])}
        after = [e for e in run.get("events") or [] if e.get("kind") == "forced_shutdown"
                 and heal is not None and e.get("t") is not None and e["t"] >= heal - 1]
        seen = {n: [e.get("exit_code") for e in after if e.get("node") == ids.get(n)] for n in on_heal}
        # a code, or the codes any of which the engine may give (its rule says when which)
        wrong = {n: seen[n] for n, code in on_heal.items()
                 if not set(code if isinstance(code, list) else [code]) & set(seen[n])}
        objectives.append(_obj("exit on heal", UNKNOWN if run.get("events") is None or heal is None else not wrong,
                               wrong or {n: on_heal[n] for n in on_heal}, on_heal,
                               "forced shutdowns logged by the nodes once healed (they were declared dead)"))
    unexpected = [k for k in d.get("unexpected_events") or [] if k in {e.get("kind") for e in events}]
    if d.get("unexpected_events"):
        objectives.append(_obj("no other rule", not unexpected if run.get("events") is not None else UNKNOWN,
                               unexpected or "none", [], "events the rule excludes "
                               f"({', '.join(d['unexpected_events'])}) after the fault"))
    expected = _expected_entries(d.get("expected_events"))
    if expected:
        kinds = {e.get("kind") for e in events}
        missing = [x for x in expected if not _matches(x, kinds)]
        objectives.append(_obj("events", (not missing) if run.get("events") is not None else UNKNOWN,
                               missing or "all present", expected, "the engine's log events after the fault"))
    during = [s for s in run.get("cluster_samples") or []
              if (heal is None or s["t"] < heal) and (in_place is None or s["t"] > in_place)]
    if "arbitrator_after" in d:
        last = during[-1].get("arbitrator") if during else None
        objectives.append(_obj("arbitrator", UNKNOWN if not during else last == d["arbitrator_after"], last,
                               d["arbitrator_after"], "the arbitrator in effect before the heal"))
    if d.get("master_after") is not None:
        seen = [s for s in during if "master" in s]
        last = seen[-1]["master"] if seen else None
        objectives.append(_obj("master", UNKNOWN if not seen else last == d["master_after"], last,
                               d["master_after"], "the master data node before the heal (succession order "
                               f"{d.get('succession')} before the fault)"))
    held = d.get("held_down") or {}
    if held.get("nodes"):
        seen = [s for s in during if "unhealthy" in s]
        up = sorted({n for s in seen for n in held["nodes"] if n not in s["unhealthy"]})
        span = seen[-1]["t"] - seen[0]["t"] if seen else 0.0
        short = float(held.get("min_s") or 0.0)
        objectives.append(_obj("held down", UNKNOWN if not seen or span < short else not up,
                               up or span, short, f"{', '.join(held['nodes'])}: "
                               + held.get("why", "not healthy until the heal")
                               + (f" (seen unhealthy for {span:.1f} s; at least {short:g} s needed to tell)"
                                  if short else "")))

    lat = exp.get("latency")
    if lat and lat["node"] not in untouched:
        objectives += _latency(fr, lat, in_place, heal)
    fo = exp.get("failover")
    if fo and fo.get("nodes") and not set(fo["nodes"]) <= untouched:
        # from the fault's start: a client can have moved before the kill was confirmed
        objectives.append(_failover(fr, fo, fault, heal))

    objectives.append(_within("recovery", heal, marks.get("healthy"), float(exp["recovery_bound_s"]),
                              f"heal ({exp.get('recovery')}) -> every node healthy"))
    healthy = marks.get("healthy")
    # clients that failed over stay where they went: the lost node's own service is judged by
    # "recovery" (every node healthy includes its SQL answering)
    moved = set((fo or {}).get("nodes") or []) if (fo or {}).get("clients_fail_over") else set()
    for node in [n for n in exp.get("sql_nodes") or [] if n not in moved]:
        if healthy is None:
            objectives.append(_obj(f"served again {node}", UNKNOWN, None, det, "never healthy"))
            continue
        ends = _node_ok_ends(fr, node)
        after = ends[ends > healthy]
        first = float(after[0]) if len(after) else None
        objectives.append(_within(f"served again {node}", healthy, first, det,
                                  "every node healthy -> the first success on this SQL node"))

    valid = compose(o["valid"] for o in objectives)
    missed = [o for o in objectives if o["valid"] is not True]
    if missed:
        summ = "; ".join(f"{o['name']}: {o['measured']}" + (f" > {o['bound']}" if o["valid"] is False
                                                           and isinstance(o["bound"], (int, float)) else "")
                         + f" ({o['note']})" for o in missed)
    else:
        summ = f"{len(objectives)} objectives met ({exp.get('family')}: {exp.get('rule', '')[:120]})"
    return Verdict("expectation", valid, summ, {"objectives": objectives, "rule": exp.get("rule"),
                                                "family": exp.get("family")})
