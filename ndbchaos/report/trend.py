"""Trends across runs: each scenario's headline figures (outage, detection, recovery, first
success, throughput back) appended to ``reports/trends.jsonl`` after every run, and drawn for the
report as the scenario's last runs next to this one.

One JSON object per line: ``{"at": ISO time, "test": test id, "engine": name, "figures": {...}}``.
Keep the file between CI runs (examples/ci/ cache it) to see a scenario drift over releases.
"""

from __future__ import annotations

import datetime as dt
import io
import json
from pathlib import Path

FIGURES = ("outage_s", "detection_s", "recovery_s", "first_success_s", "throughput_back_s")
LAST = 20  # runs drawn


def previous(path: Path, test: str, engine: str) -> list[dict]:
    """Earlier entries of this scenario on this engine, oldest first (unreadable lines skipped)."""
    out = []
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return out
    for ln in lines:
        try:
            e = json.loads(ln)
        except ValueError:
            continue
        if isinstance(e, dict) and e.get("test") == test and e.get("engine") == engine:
            out.append(e)
    return out[-(LAST - 1):]


def append(path: Path, test: str, engine: str, figures: dict) -> dict:
    entry = {"at": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"), "test": test,
             "engine": engine, "figures": {k: figures.get(k) for k in FIGURES}}
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fh.write(json.dumps(entry) + "\n")
    return entry


def trend_png(entries: list[dict], title: str) -> bytes | None:
    """One line per figure over the runs (the last one is this run); None with fewer than 2 runs."""
    if len(entries) < 2:
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(9, 3.2))
    x = list(range(1, len(entries) + 1))
    for k in FIGURES:
        ys = [(e.get("figures") or {}).get(k) for e in entries]
        if any(isinstance(y, (int, float)) for y in ys):
            ax.plot(x, [y if isinstance(y, (int, float)) else float("nan") for y in ys], marker="o", label=k)
    ax.set_xticks(x, [e["at"][5:16].replace("T", " ") for e in entries], rotation=45, ha="right", fontsize=7)
    ax.set_ylabel("seconds")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return buf.getvalue()


__all__ = ["FIGURES", "append", "previous", "trend_png"]
