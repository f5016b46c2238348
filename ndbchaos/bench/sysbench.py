"""The sysbench side of the bench: finding (or installing) sysbench, its command line, and one
round of it measured like ours (server counters, CPU from /proc)."""

from __future__ import annotations

import math
import os
import re
import shutil
import subprocess
import time

from ..errors import NdbChaosError
from .config import TESTS, BenchConfig, Sample
from .meter import Counters, Meter


def ensure_sysbench() -> str:
    """The sysbench binary; installed with apt-get when missing and we are root, else an error."""
    path = shutil.which("sysbench")
    if path:
        return path
    is_root = hasattr(os, "geteuid") and os.geteuid() == 0
    if not is_root or not shutil.which("apt-get"):
        raise NdbChaosError("sysbench is not installed; install it (Debian/Ubuntu: apt-get install sysbench) and retry")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    r = subprocess.run(["apt-get", "install", "-y", "-q", "sysbench"], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True, text=True)
        r = subprocess.run(["apt-get", "install", "-y", "-q", "sysbench"], env=env, capture_output=True, text=True)
    path = shutil.which("sysbench")
    if r.returncode != 0 or not path:
        last = (r.stderr or r.stdout).strip().splitlines()[-1:] or ["no output"]
        raise NdbChaosError(f"sysbench is not installed and apt-get install sysbench failed: {last[0]}")
    return path


def sysbench_version(path: str) -> str:
    try:
        return subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception:
        return "sysbench (version unknown)"


_SB_QUERIES = re.compile(r"queries:\s+(\d+)\s+\(([\d.]+) per sec")
_SB_ERRORS = re.compile(r"ignored errors:\s+(\d+)")


def sysbench_cmd(path: str, test: str, ep, cfg: BenchConfig, seconds: float) -> list[str]:
    script = TESTS[test][0]
    return [path, script, "--db-driver=mysql", "--mysql-host=127.0.0.1", f"--mysql-port={ep.port}",
            "--mysql-user=chaos", "--mysql-password=chaos", "--mysql-db=ndbchaos",
            "--tables=1", f"--table-size={cfg.table_size}", f"--threads={cfg.threads}",
            f"--time={int(math.ceil(seconds))}", "--rand-type=uniform", "--report-interval=0", "run"]


def run_sysbench(path: str, test: str, ep, cfg: BenchConfig, counters: Counters, server_pids: dict,
                 seconds: float) -> Sample:
    counter = TESTS[test][2]
    total = cfg.settle + seconds + 1.0
    proc = subprocess.Popen(sysbench_cmd(path, test, ep, cfg, total), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(cfg.settle)  # sysbench connects every thread before its first event
        if proc.poll() is not None:
            out = proc.stdout.read()
            raise NdbChaosError(f"sysbench exited early: {_last_line(out)}")
        meter = Meter(counters, {"client": [proc.pid], **server_pids})
        meter.open()
        time.sleep(seconds)
        rate, window, cpu = meter.close(counter)
        out, _ = proc.communicate(timeout=total + 30)
    except BaseException:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        raise
    if proc.returncode != 0:
        raise NdbChaosError(f"sysbench failed (exit {proc.returncode}): {_last_line(out)}")
    m = _SB_QUERIES.search(out)
    e = _SB_ERRORS.search(out)
    return Sample("sysbench", test, rate, window, float(m.group(2)) if m else None,
                  int(e.group(1)) if e else 0, cpu)


def _last_line(out: str) -> str:
    lines = [x for x in (out or "").strip().splitlines() if x.strip()]
    return lines[-1] if lines else "no output"
