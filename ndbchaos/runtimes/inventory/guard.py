"""What a fault leaves on a host carries its own expiry there.

A controller can die in the middle of a partition or a freeze (SIGKILL, a lost laptop, a CI
runner gone), and then nothing it would have healed is healed. So every such change on an
inventory host is paired with a *guard*: a detached process on the host (its own session, immune
to the ssh session's end) that sleeps until the deadline and then undoes the change by itself.
The normal heal cancels the guard first, then undoes the change. ``ndbchaos reap --inventory``
removes whatever is left (chains, guards, frozen processes).

Guards are named ``ndbchaos-guard-<KEY>`` in their command line (``sh -c SCRIPT NAME``: NAME is
the shell's $0), so they can be found with a pattern that does not match the finder itself.
"""

from __future__ import annotations

import re
import shlex
import time

from ...errors import NdbChaosError
from .. import netns
from ...settings import Settings, current

#: how long a guard waits before it undoes a change on its own (NDBCHAOS_GUARD_S overrides); far
#: above any hold in the catalogue (60 s at most), so it only acts for a controller that is gone
DEFAULT_GUARD_S = 300
PREFIX = "ndbchaos-guard-"
KEY = re.compile(r"^[A-Za-z0-9_.-]{1,120}$")


def guard_seconds(inventory_value: int | None = None, settings: Settings | None = None) -> int:
    """The settings' NDBCHAOS_GUARD_S (a whole number, checked there), else the inventory's, else
    DEFAULT_GUARD_S; ``settings``: default, the process'."""
    v = (settings or current()).guard_s or inventory_value or DEFAULT_GUARD_S
    try:
        s = int(v)
    except (TypeError, ValueError):
        raise NdbChaosError(f"the guard must be a whole number of seconds, not {v!r}") from None
    if s < 5:
        raise NdbChaosError(f"a guard of {s} s would undo a fault before it is verified (5 s at least)")
    return s


def arm_script(key: str, undo: str, seconds: int) -> str:
    """Shell that starts a guard: after ``seconds`` it runs ``undo`` (as the host's shell)."""
    if not KEY.match(key):
        raise ValueError(f"bad guard key {key!r}")
    body = f"sleep {int(seconds)}; {undo}"
    return (f"setsid nohup sh -c {shlex.quote(body)} {PREFIX}{key} </dev/null >/dev/null 2>&1 & "
            f"echo guard {PREFIX}{key} until $(( $(date +%s) + {int(seconds)} ))")


def disarm_script(key: str | None = None) -> str:
    """Shell that stops the guard ``key`` (every guard when None) and its sleep: the whole process
    group of the guard's session. Prints ``disarmed <name>`` per guard."""
    if key is not None and not KEY.match(key):
        raise ValueError(f"bad guard key {key!r}")
    # [-] in the pattern: the pattern text itself does not match it, so the finder is not found
    pat = "ndbchaos-guard[-]" + (re.escape(key) + "$" if key else "")
    return (f"for p in $(pgrep -f -- {shlex.quote(pat)}); do "
            'n=$(tr "\\0\\n" "  " < /proc/$p/cmdline 2>/dev/null | awk "{print \\$NF}"); '
            'kill -- -$p 2>/dev/null || kill $p 2>/dev/null; echo "disarmed $n"; done; exit 0')


def list_script() -> str:
    return ("for p in $(pgrep -f -- 'ndbchaos-guard[-]'); do "
            'tr "\\0\\n" "  " < /proc/$p/cmdline 2>/dev/null | awk "{print \\$NF}"; done; exit 0')


class HostNetHelper:
    """The partition machinery's helper for a node on an inventory host: the host's own network
    namespace, reached over ssh (``faults/partition.py`` drives it as it drives a helper
    container). Its chain is guarded on the host."""

    def __init__(self, remote, node: str, guard_s: int):
        self.remote = remote
        self.target_name = node
        self.guard_s = guard_s

    def exec(self, script: str, timeout: float = 30) -> tuple[int, str]:
        return self.remote.run(script, timeout=timeout)

    def install(self, chain: str, script: str, timeout: float = 30) -> tuple[int, str]:
        """Add the chain, then its guard (which removes the chain after ``guard_s``). The guard is
        armed only when the rules went in; if arming fails, the rules come out again."""
        code, out = self.exec(script, timeout)
        if code != 0:
            return code, out
        undo = netns.remove_chains_script([chain])
        c2, o2 = self.exec(arm_script(chain, undo, self.guard_s), timeout=15)
        if c2 != 0 or "guard " not in o2:
            self.exec(netns.remove_chains_script([chain]), timeout=30)
            raise NdbChaosError(f"{self.target_name}: could not arm the guard of {chain} on "
                                f"{self.remote.name}; rules removed: {o2.strip()[-200:]}")
        return code, out + o2

    def uninstall(self, chain: str, timeout: float = 30) -> tuple[int, str]:
        self.exec(disarm_script(chain), timeout=15)
        return self.exec(netns.remove_chains_script([chain]), timeout)

    def current(self) -> bool:
        return True  # a host's namespace outlives the node's processes

    def remove(self) -> None:
        pass


def wait_gone(remote, chain: str, timeout: float) -> float | None:
    """Seconds until ``chain`` is gone from the host's iptables (None: still there)."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        code, out = remote.run(f"{netns.IPT} -S", timeout=15)
        if code == 0 and f"-N {chain}" not in out:
            return time.monotonic() - t0
        time.sleep(0.5)
    return None
