"""A cycle drawn as a small SVG: its transactions on a circle, each edge an arrow labelled with
its relation and key, the relation's colour as in the report's legend."""

from __future__ import annotations

import math
from html import escape

from .anomaly import Anomaly
from .history import TxnHistory

COLOURS = {"ww": "#1f77b4", "wr": "#2ca02c", "rw": "#d62728", "process": "#9467bd", "realtime": "#ff7f0e"}


def cycle_svg(a: Anomaly, h: TxnHistory, size: int = 360) -> str:
    names = a.names()
    nodes = list(names)
    n = len(nodes)
    cx = cy = size / 2
    r = size / 2 - 60 if n > 1 else 0
    angle = [2 * math.pi * i / n - math.pi / 2 for i in range(n)]
    pos = {t: (cx + r * math.cos(angle[i]), cy + r * math.sin(angle[i])) for i, t in enumerate(nodes)}
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size + 40}" '
           f'viewBox="0 0 {size} {size + 40}" font-family="sans-serif" font-size="11">',
           '<defs>' + "".join(
               f'<marker id="m-{rel}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
               f'orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="{c}"/></marker>' for rel, c in COLOURS.items())
           + '</defs>',
           f'<text x="{cx}" y="16" text-anchor="middle" font-size="13" font-weight="bold">{escape(a.type)}</text>']
    node_r = 22
    for s in a.steps:
        (x1, y1), (x2, y2) = pos[s.a], pos[s.b]
        dx, dy = x2 - x1, y2 - y1
        d = math.hypot(dx, dy) or 1.0
        ux, uy = dx / d, dy / d
        # bend each arrow a little to the left so that two opposite edges do not overlap
        mx, my = (x1 + x2) / 2 - uy * 24, (y1 + y2) / 2 + ux * 24
        sx, sy = x1 + ux * node_r, y1 + uy * node_r
        ex, ey = x2 - ux * node_r, y2 - uy * node_r
        colour = COLOURS.get(s.rel, "#555")
        out.append(f'<path d="M{sx:.1f},{sy:.1f} Q{mx:.1f},{my:.1f} {ex:.1f},{ey:.1f}" fill="none" '
                   f'stroke="{colour}" stroke-width="1.6" marker-end="url(#m-{s.rel})"/>')
        label = s.rel + (f" {s.key}" if s.key is not None else "")
        out.append(f'<text x="{mx:.1f}" y="{my:.1f}" text-anchor="middle" fill="{colour}">{escape(label)}</text>')
    for t in nodes:
        x, y = pos[t]
        txn = h.txns[t]
        out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{node_r}" fill="#fff" stroke="#333"/>')
        out.append(f'<text x="{x:.1f}" y="{y + 4:.1f}" text-anchor="middle" font-weight="bold">{names[t]}</text>')
        out.append(f'<text x="{x:.1f}" y="{y + node_r + 13:.1f}" text-anchor="middle" fill="#555">'
                   f'op {txn.index}, p{txn.process}</text>')
    legend = "  ".join(f'<tspan fill="{c}">{rel}</tspan>' for rel, c in COLOURS.items())
    out.append(f'<text x="{cx}" y="{size + 30}" text-anchor="middle">{legend}</text>')
    out.append("</svg>")
    return "\n".join(out)


__all__ = ["cycle_svg"]
