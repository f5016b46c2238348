"""Pumba adapter: when a ``pumba`` binary is on PATH, kill / pause / netem go through it.

Only exact container names of this run's own containers are passed (each one checked with
``runtime.owned``), and every command also carries pumba's own ``--label
ndbchaos.project=<run>`` filter, so even a name collision cannot reach another container. Never a
``re2:`` pattern. Without pumba the same faults come from our implementation (docker-py for
kill/pause, tc in a helper for netem); ``NDBCHAOS_PUMBA=0`` forces ours, ``=1`` requires pumba.

Pumba's long-running commands (pause, netem) hold the fault for ``--duration`` and undo it on
exit; we run them in the background, stop them on heal (SIGTERM, which makes pumba restore), and
then check and restore ourselves too (Pumba #147/#166: a killed pumba leaves its state behind).
"""

from __future__ import annotations

import shutil
import signal
import subprocess

from .. import topology as TP
from ..errors import BlastRadiusError, NdbChaosError, UsageError
from ..settings import PUMBA_CHOICES, current
from ..waiting import wait_until

HOLD = "24h"  # pumba's --duration for held faults; heal ends it long before


def binary() -> str | None:
    return shutil.which(current().pumba_bin)


def backend(requested: str | None = None) -> str:
    """``pumba`` or ``native``: the caller's choice, else NDBCHAOS_PUMBA, else pumba if present."""
    want = PUMBA_CHOICES.get(requested.lower(), requested) if requested else current().pumba
    if want == "native":
        return "native"
    have = binary()
    if want == "pumba":
        if not have:
            raise UsageError("pumba was asked for (NDBCHAOS_PUMBA=1) but no pumba binary is on PATH")
        return "pumba"
    return "pumba" if have else "native"


def _names(cluster, nodes) -> list[str]:
    names = []
    for n in nodes:
        c = cluster.container(n)  # BlastRadiusError if not this run's
        if c.name.startswith("re2:") or any(ch in c.name for ch in "*?[]^$|()"):
            raise BlastRadiusError(f"refusing to pass {c.name!r} to pumba: not a plain container name")
        names.append(c.name)
    return names


def base_argv(cluster) -> list[str]:
    exe = binary() or "pumba"
    return [exe, "--label", f"{TP.PROJECT}={cluster.project}"]


def kill_argv(cluster, nodes, signal_name: str = "SIGKILL") -> list[str]:
    return base_argv(cluster) + ["kill", "--signal", str(signal_name), *_names(cluster, nodes)]


def pause_argv(cluster, nodes, duration: str = HOLD) -> list[str]:
    return base_argv(cluster) + ["pause", "--duration", duration, *_names(cluster, nodes)]


def netem_argv(cluster, nodes, command: list[str], tc_image: str, interface: str = "eth0",
               duration: str = HOLD, targets_ips: list[str] | None = None) -> list[str]:
    argv = base_argv(cluster) + ["netem", "--duration", duration, "--interface", interface,
                                 "--tc-image", tc_image, "--pull-image=false"]
    for ip in targets_ips or []:
        argv += ["--target", ip]
    return argv + list(command) + _names(cluster, nodes)


def run(argv: list[str], timeout: float = 60) -> str:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise NdbChaosError(f"pumba did not finish within {timeout:.0f}s: {' '.join(argv[1:4])} ...") from None
    if r.returncode != 0:
        raise NdbChaosError(f"pumba failed ({r.returncode}): {(r.stderr or r.stdout).strip()[-300:]}")
    return r.stdout


class Held:
    """A pumba command that holds a fault until stopped."""

    def __init__(self, argv: list[str]):
        self.argv = argv
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, start_new_session=True)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def output(self) -> str:
        try:
            return (self.proc.stdout.read() or "")[-500:] if not self.alive() else ""
        except Exception:
            return ""

    def stop(self, timeout: float = 15) -> None:
        if self.proc.poll() is not None:
            return
        try:
            self.proc.send_signal(signal.SIGTERM)  # pumba restores (unpause / tc del) on exit
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)


def wait_state(check, timeout: float) -> bool:
    return bool(wait_until(check, timeout, poll=0.1))
