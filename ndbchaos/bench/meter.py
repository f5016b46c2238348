"""What a bench round measures besides throughput: CPU time from /proc of the client processes,
the cluster's containers and the docker-proxy of a published port, and the SQL node's statement
counters (``Com_select``/``Com_update``, read identically for both clients)."""

from __future__ import annotations

import os
import time

from ..runtimes import docker as runtime
from ..sqlconn import connect

COUNTERS = ("Com_select", "Com_update", "Questions")
CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def proc_cpu(pids) -> float:
    """CPU seconds (user + system) used so far by these processes (all their threads)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                parts = fh.read().rsplit(")", 1)[1].split()
            total += int(parts[11]) + int(parts[12])  # utime, stime (fields 14, 15)
        except (OSError, IndexError, ValueError):
            pass
    return total / CLK_TCK


def docker_proxy_pids(port: int) -> list[int]:
    """The docker-proxy processes that publish ``port`` (none when the userland proxy is off)."""
    out = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return out
    needle = f"-host-port\0{port}\0".encode()
    for e in entries:
        if not e.isdigit():
            continue
        try:
            with open(f"/proc/{e}/cmdline", "rb") as fh:
                cmd = fh.read()
        except OSError:
            continue
        if cmd.startswith(b"/usr/bin/docker-proxy") or b"docker-proxy\0" in cmd[:80]:
            if needle in cmd:
                out.append(int(e))
    return out


def container_pids(project: str) -> list[int]:
    pids = []
    for c in runtime.project_containers(project):
        try:
            c.reload()
            pid = int(c.attrs.get("State", {}).get("Pid") or 0)
        except Exception:
            pid = 0
        if pid > 0:
            pids.append(pid)
    return pids


def loadavg() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


class Counters:
    """Reads the SQL node's statement counters over one connection of its own."""

    def __init__(self, port: int):
        self.conn = connect(port, "chaos", "chaos", "ndbchaos", read_timeout=30, write_timeout=30)
        self.sql = ("SHOW GLOBAL STATUS WHERE Variable_name IN ("
                    + ",".join(f"'{c}'" for c in COUNTERS) + ")")

    def read(self) -> tuple[float, dict]:
        cur = self.conn.cursor()
        t0 = time.monotonic()
        cur.execute(self.sql)
        rows = cur.fetchall()
        t1 = time.monotonic()
        cur.close()
        return (t0 + t1) / 2, {k: int(v) for k, v in rows}

    def close(self):
        try:
            self.conn.close()
        except Exception:
            pass


class Meter:
    """One measuring window: server counters and CPU of the parts, at open and at close."""

    def __init__(self, counters: Counters, parts: dict[str, list[int]]):
        self.counters, self.parts = counters, parts

    def open(self):
        self.cpu0 = {k: proc_cpu(p) for k, p in self.parts.items()}
        self.t0, self.c0 = self.counters.read()

    def close(self, counter: str) -> tuple[float, float, dict]:
        t1, c1 = self.counters.read()
        cpu1 = {k: proc_cpu(p) for k, p in self.parts.items()}
        window = t1 - self.t0
        n = c1[counter] - self.c0[counter]
        self.t1, self.n = t1, n
        self.cpu_s = {k: cpu1[k] - self.cpu0[k] for k in self.parts}  # CPU seconds in the window
        cpu = {k: v * 1e6 / n if n > 0 else None for k, v in self.cpu_s.items()}
        return n / window, window, cpu


# -- one run of each client ----------------------------------------------------------------------
