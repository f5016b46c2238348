"""The availability picture: throughput, errors and latency over time, with the fault windows
shaded and node states as lanes underneath (Jepsen's perf plots, plus topology)."""

from __future__ import annotations

import io

from ..checks.figures import Series
from ..checks.verdict import RunVerdict
from ..record import Phase

FAULT_COLOURS = {"kill": "#E9A4A0", "stop": "#E9A4A0", "restart": "#E9A4A0", "pause": "#A0B1E9",
                 "partition": "#E9DCA0", "isolate": "#E9DCA0", "proxy": "#D1E8A0", "netem": "#D1E8A0"}
STATE_COLOURS = {True: "#6DB6FE", False: "#FFAA26"}


def _colour(kind: str) -> str:
    for k, c in FAULT_COLOURS.items():
        if k in kind:
            return c
    return "#DDDDDD"


#: engine log events drawn as markers on their node's lane (the rest are in the attachment)
MARKED_KINDS = {
    "view_change": "v", "non_primary": "x", "suspect": "1", "declared_dead": "x", "node_failed": "x",
    "node_disconnected": "x", "arbitration_won": "^", "arbitration_lost": "v",
    "arbitration_check_won": "^", "arbitration_check_lost": "v", "arbitration_required": "d",
    "forced_shutdown": "X", "node_started": "o", "synced": "o", "state_transfer_complete": "s",
    "ist_received": "s", "sst_received": "s", "arbitrator_lost": "x", "arbitrator_started": "o",
}


def timeline_png(verdict: RunVerdict, history, windows: list[dict], lanes: dict[str, list] | None = None,
                 title: str = "", events: list[dict] | None = None, phases: list[Phase] | None = None) -> bytes:
    """Throughput per SQL node and errors from the availability checker's series (the figures
    the verdict judged), latency of every successful operation from the history."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    av = verdict.availability
    ser = av.series if av is not None else Series()
    bucket, t_start = ser.bucket_s, ser.t0
    nb = max(1, len(ser.ok))
    t_end = t_start + nb * bucket
    ok = ser.ok_by_node
    nodes = sorted(ok)
    err, info = ser.fail or [0] * nb, ser.info or [0] * nb
    c = history.cols
    c.flush()
    lat_t, lat_v = [], []
    for i in range(len(c)):
        if c.type[i] == 0:
            lat_t.append(c.end[i])
            lat_v.append((c.end[i] - c.start[i]) * 1000)
    xs = [t_start + (k + 0.5) * bucket for k in range(nb)]
    n_lanes = len(lanes or {})
    heights = [3, 2, 2] + ([0.35 * n_lanes + 0.4] if n_lanes else [])
    fig, axes = plt.subplots(len(heights), 1, figsize=(12, sum(heights) + 1), sharex=True,
                             gridspec_kw={"height_ratios": heights})
    ax_tp, ax_err, ax_lat = axes[0], axes[1], axes[2]
    bottom = [0.0] * nb
    for nd in nodes:
        ys = [v / bucket for v in ok[nd]]
        ax_tp.fill_between(xs, bottom, [b + y for b, y in zip(bottom, ys)], step="mid", alpha=0.7, label=f"ok @ {nd}")
        bottom = [b + y for b, y in zip(bottom, ys)]
    ax_tp.set_ylabel("ok ops/s")
    ax_tp.legend(loc="upper right", fontsize=8)
    ax_err.bar(xs, [v / bucket for v in err], width=bucket, color="#FFAA26", label="fail")
    ax_err.bar(xs, [v / bucket for v in info], width=bucket, bottom=[v / bucket for v in err], color="#FEB5DA",
               label="info (indeterminate)")
    ax_err.set_ylabel("errors/s")
    ax_err.legend(loc="upper right", fontsize=8)
    ax_lat.scatter(lat_t[::max(1, len(lat_t) // 20000)], lat_v[::max(1, len(lat_v) // 20000)],
                   s=2, alpha=0.4, color="#6DB6FE")
    ax_lat.set_yscale("log")
    ax_lat.set_ylabel("latency ms (ok)")
    for w in windows:
        s, e = w.get("start"), w.get("end") or t_end
        if s is None:
            continue
        for ax in (ax_tp, ax_err, ax_lat):
            ax.axvspan(s, e, color=_colour(w.get("kind", "")), alpha=0.5, lw=0)
        ax_tp.text(s, ax_tp.get_ylim()[1] * 0.95, f" {w.get('kind')} {','.join(w.get('targets', []))}",
                   fontsize=8, va="top")
    if n_lanes:
        ax_l = axes[3]
        names = sorted(lanes)
        for k, nd in enumerate(names):
            seg = lanes[nd]
            for j, (t, label, healthy) in enumerate(seg):
                t2 = seg[j + 1][0] if j + 1 < len(seg) else t_end
                ax_l.barh(k, t2 - t, left=t, height=0.7, color=STATE_COLOURS[bool(healthy)], edgecolor="white")
                if t2 - t > (t_end - t_start) * 0.04:
                    ax_l.text(t + 0.1, k, label, va="center", fontsize=7)
        row = {nd: k for k, nd in enumerate(names)}
        for ev in events or []:
            mk = MARKED_KINDS.get(ev.get("kind"))
            t = ev.get("t")
            if mk and t is not None and ev.get("log") in row and t_start <= t <= t_end:
                ax_l.plot([t], [row[ev["log"]] + 0.38], marker=mk, color="black", ms=4, ls="none")
        ax_l.set_yticks(range(len(names)))
        ax_l.set_yticklabels(names, fontsize=8)
        ax_l.set_ylabel("node state")
    for ph in phases or []:
        for ax in axes:
            ax.axvline(ph.start, color="#888888", lw=0.6, ls="--")
        ax_tp.text(ph.start, 0, f" {ph.name}", fontsize=7, color="#555555", va="bottom")
    axes[-1].set_xlabel("seconds on the run clock (markers: engine log events)")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return buf.getvalue()


def memory_png(samples: list[dict], windows: list[dict], title: str = "") -> bytes:
    """Resident memory of the controller and of the workload workers over the run, with the
    fault windows shaded (a soak: memory must stay flat however long the run)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 3.2))
    for w in windows or []:
        if w.get("start") is not None:
            ax.axvspan(w["start"], w["end"] if w.get("end") is not None else w["start"], color=_colour(w["kind"]),
                       alpha=0.5, lw=0)
    t = [s["t"] for s in samples]
    ax.plot(t, [s["controller_mb"] for s in samples], label="controller (pytest)", color="#1F5FA6")
    ax.plot(t, [s["workers_mb"] for s in samples], label="workload workers (sum)", color="#C05A00")
    ax.set_xlabel("run time [s]")
    ax.set_ylabel("resident memory [MB]")
    ax.set_ylim(bottom=0)
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return buf.getvalue()
