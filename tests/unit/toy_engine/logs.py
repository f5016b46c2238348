"""The toy engine's log reader: lines like ``12.5 node 3 died``."""

KINDS = ("node_died",)


def parse_line(line, reporter=None, keep_other=False):
    parts = line.split()
    if len(parts) == 4 and parts[1] == "node" and parts[3] == "died":
        return {"time": float(parts[0]), "reporter": reporter, "node": int(parts[2]), "kind": "node_died"}
    return {"kind": "other", "line": line} if keep_other else None


def parse_lines(lines, reporter=None, keep_other=False):
    for ln in lines:
        ev = parse_line(ln, reporter, keep_other)
        if ev is not None:
            yield ev
