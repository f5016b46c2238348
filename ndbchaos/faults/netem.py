"""Packet faults with tc netem: delay (+ jitter), loss, duplicate, corrupt, rate.

Applied in the target's own network namespace through a helper (or through pumba when it is on
PATH), on every interface but ``lo``, egress, under a root qdisc handle of our own (``4e44:``):
heal deletes exactly that handle and never a qdisc someone else added (Pumba #166 lesson), and
inject refuses to replace a foreign root qdisc. With ``to=`` (nodes) only traffic to those nodes
is affected (prio qdisc + u32 filters on the destination address).

netem needs the kernel's ``sch_netem``. Support is detected at run time by adding a netem qdisc
to the loopback of a throwaway helper that has a network namespace of its own (``network_mode=
"none"``: nothing else is in it); where it is missing every netem fault raises
``NetemUnsupported`` with the kernel's answer, which the pytest layer turns into a skip.
"""

from __future__ import annotations

import re
import threading
import uuid

from ..runtimes import docker
from .. import topology as TP
from ..errors import UsageError
from ..runtimes import netns
from . import pumba
from .base import Fault, FaultNotEffective, FaultUnsupported
from .targets import resolve

HANDLE = "4e44"  # "ND"; our root qdisc
CHILD = "4e45"  # netem under prio when filtering by destination
PUMBA_HANDLE = "504d"  # what pumba uses (PR #349): removed as a backstop only when pumba was ours


class NetemUnsupported(FaultUnsupported):
    """The kernel has no sch_netem: netem faults cannot run here."""


# -- detection ---------------------------------------------------------------------------------

_support: dict[str, tuple[bool, str]] = {}
_support_lock = threading.Lock()


def probe_netem(project: str) -> tuple[bool, str]:
    """Try a netem qdisc in a helper with a namespace of its own (touches nothing else).
    Cached per process: kernel modules do not come and go during a run."""
    with _support_lock:
        if "result" in _support:
            return _support["result"]
        image = netns.ensure_tools_image()
        script = ("tc qdisc add dev lo root handle 4e44: netem delay 1ms 2>&1 && "
                  "tc qdisc show dev lo && tc qdisc del dev lo root handle 4e44: ; echo rc=$?")
        c = docker.docker_client().containers.run(
            image, ["sleep", "60"], detach=True, network_mode="none", cap_add=["NET_ADMIN"],
            labels={TP.PROJECT: project, TP.ROLE: TP.HELPER, TP.LABEL_PREFIX + "purpose": "netem-probe"},
            name=f"{project}-helper-netemprobe-{uuid.uuid4().hex[:6]}")
        try:
            code, out = docker.exec_in(c, ["sh", "-c", script], timeout=15)
        finally:
            c.remove(force=True)
        result = parse_probe(out)
        _support["result"] = result
        return result


def parse_probe(out: str) -> tuple[bool, str]:
    if "qdisc netem 4e44:" in out:
        return True, "sch_netem available"
    low = out.lower()
    if "kind is unknown" in low or "unknown qdisc" in low:
        return False, ("the kernel has no sch_netem (tc: \"" + _first_line(out) + "\"); "
                       "netem delay/loss/duplicate/corrupt need it")
    return False, "netem could not be set up: " + _first_line(out)


def _first_line(s: str) -> str:
    for ln in s.splitlines():
        if ln.strip() and not ln.startswith("rc="):
            return ln.strip()[:200]
    return s.strip()[:200]


def require_netem(cluster) -> None:
    ok, why = probe_netem(cluster.project)
    if not ok:
        raise NetemUnsupported(why, reason=why)


# -- commands (pure) -------------------------------------------------------------------------------

def netem_args(delay_ms: float | None = None, jitter_ms: float = 0, correlation_pct: float = 0,
               loss_pct: float | None = None, duplicate_pct: float | None = None,
               corrupt_pct: float | None = None, rate: str | None = None) -> list[str]:
    """Arguments of ``tc qdisc ... netem`` (validated)."""
    args: list[str] = []
    if delay_ms is not None:
        if delay_ms < 0 or jitter_ms < 0:
            raise UsageError("delay and jitter must be >= 0")
        args += ["delay", f"{delay_ms:g}ms"]
        if jitter_ms:
            args.append(f"{jitter_ms:g}ms")
            if correlation_pct:
                args.append(f"{correlation_pct:g}%")
    for name, v in (("loss", loss_pct), ("duplicate", duplicate_pct), ("corrupt", corrupt_pct)):
        if v is not None:
            if not 0 <= v <= 100:
                raise UsageError(f"{name} must be a percentage (0-100), not {v}")
            args += [name, f"{v:g}%"]
    if rate is not None:
        if not re.fullmatch(r"\d+(\.\d+)?(bit|kbit|mbit|gbit|bps|kbps|mbps)", rate):
            raise UsageError(f"bad rate {rate!r} (e.g. 1mbit)")
        args += ["rate", rate]
    if not args:
        raise UsageError("netem: nothing to do (give delay, loss, duplicate, corrupt or rate)")
    return args


def apply_script(args: list[str], to_ips: list[str] | None = None) -> str:
    """Add our netem on every non-lo interface; refuse if a foreign root qdisc is there."""
    na = " ".join(args)
    lines = [
        "set -e",
        "ifs=$(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1 | grep -v '^lo$')",
        "for i in $ifs; do",
        # A root qdisc with a non-zero handle is someone else's: fail closed.
        "  if tc qdisc show dev $i root | grep -qvE '^qdisc (noqueue|pfifo_fast|fq_codel|mq) 0: '; then "
        "echo \"foreign root qdisc on $i: $(tc qdisc show dev $i root)\"; exit 3; fi",
    ]
    if to_ips:
        lines += [
            f"  tc qdisc add dev $i root handle {HANDLE}: prio bands 4 priomap 1 2 2 2 1 2 0 0 1 1 1 1 1 1 1 1",
            f"  tc qdisc add dev $i parent {HANDLE}:4 handle {CHILD}: netem {na}",
        ]
        for ip in to_ips:
            netns._check_ip(ip)
            lines.append(f"  tc filter add dev $i parent {HANDLE}: protocol ip prio 1 u32 match ip dst {ip}/32 "
                         f"flowid {HANDLE}:4")
    else:
        lines.append(f"  tc qdisc add dev $i root handle {HANDLE}: netem {na}")
    lines += ["done", "tc qdisc show"]
    return "\n".join(lines)


def remove_script(handles: tuple[str, ...] = (HANDLE,)) -> str:
    """Delete our root qdisc (by handle) wherever it is; prints ``removed <if> <handle>``."""
    lines = ["ifs=$(ip -o link show | awk -F': ' '{print $2}' | cut -d@ -f1)", "rc=0", "for i in $ifs; do"]
    for h in handles:
        lines.append(f"  if tc qdisc show dev $i root | grep -q ' {h}: '; then "
                     f"tc qdisc del dev $i root handle {h}: && echo \"removed $i {h}:\" || rc=1; fi")
    lines += ["done", "exit $rc"]
    return "\n".join(lines)


# -- the fault ------------------------------------------------------------------------------------

class Netem(netns.HelperMixin, Fault):
    """``Netem(cluster, targets, delay_ms=100, jitter_ms=20)`` / ``loss_pct=`` /
    ``duplicate_pct=`` / ``corrupt_pct=`` / ``rate=``; ``to=`` limits it to traffic towards
    some nodes. Raises ``NetemUnsupported`` at construction where the kernel lacks sch_netem."""

    kind = "netem"

    def __init__(self, cluster, targets, to=None, backend: str | None = None, **netem):
        self.args = netem_args(**netem)
        super().__init__(cluster, targets, netem=" ".join(self.args))  # blast radius first
        require_netem(cluster)
        self.to_nodes = []
        if to is not None:
            self.to_nodes, _ = resolve(cluster, to)
            for n in self.to_nodes:
                cluster.container(n)
            self.window.params["to"] = [n.name for n in self.to_nodes]
        self.backend = pumba.backend(backend)
        self.helpers: dict[str, netns.Helper] = {}
        self._held = None

    def _to_ips(self) -> list[str]:
        return [ip for n in self.to_nodes for ip in netns.container_ips(self.cluster.container(n))]

    def _apply(self) -> None:
        if self.backend == "pumba":
            cmd = _pumba_command(self.args)
            self._held = pumba.Held(pumba.netem_argv(self.cluster, self.targets, cmd, netns.ensure_tools_image(),
                                                     targets_ips=self._to_ips()))
            return
        self.helpers = netns.start_helpers(self.cluster, self.targets, purpose=self.kind)
        script = apply_script(self.args, self._to_ips() or None)

        def one(t):
            code, out = self.helpers[t.name].exec(script, timeout=30)
            if code != 0:
                raise FaultNotEffective(f"netem on {t.name} failed: {out.strip()[-300:]}")

        netns.parallel(one, self.targets)

    def _verify_applied(self) -> str:
        if not self.helpers:
            self.helpers = netns.start_helpers(self.cluster, self.targets, purpose=self.kind)
        want = PUMBA_HANDLE if self.backend == "pumba" else HANDLE
        for t in self.targets:
            ok = pumba.wait_state(lambda: "netem" in self.helpers[t.name].exec("tc qdisc show")[1], 10)
            code, out = self.helpers[t.name].exec("tc qdisc show")
            if not ok or "netem" not in out:
                raise FaultNotEffective(f"no netem qdisc on {t.name}: {out.strip()[-200:]}")
            if self.backend != "pumba" and f"{want}:" not in out:
                raise FaultNotEffective(f"netem on {t.name} is not under our handle {want}:")
        return f"netem {' '.join(self.args)} on " + ", ".join(t.name for t in self.targets)

    def _revert(self) -> None:
        if self._held is not None:
            self._held.stop()
            self._held = None
        handles = (HANDLE, PUMBA_HANDLE) if self.backend == "pumba" else (HANDLE,)

        def one(t):
            if docker.container_state(self.cluster.container(t)) != "running":
                return
            h = self.helpers.get(t.name)
            if h is None or not h.current():
                h = self.helpers[t.name] = netns.start_helper(self.cluster, t, purpose=self.kind)
            h.exec(remove_script(handles), timeout=20)

        netns.parallel(one, self.targets)

    def _verify_healed(self) -> str:
        try:
            for t in self.targets:
                h = self.helpers.get(t.name)
                if h is None:
                    continue
                out = h.exec("tc qdisc show")[1]
                if f" {HANDLE}:" in out:
                    raise FaultNotEffective(f"our netem qdisc is still on {t.name}")
            return "netem removed: " + ", ".join(t.name for t in self.targets)
        finally:
            self._drop_helpers()


def _pumba_command(args: list[str]) -> list[str]:
    """Our netem args as a pumba subcommand (one kind at a time, as pumba takes them)."""
    kinds = [a for a in args if a in ("delay", "loss", "duplicate", "corrupt", "rate")]
    if len(kinds) != 1:
        raise UsageError("with pumba, give one netem kind at a time")
    k = kinds[0]
    vals = args[1:]
    num = lambda v: v.rstrip("ms%")  # noqa: E731
    if k == "delay":
        cmd = ["delay", "--time", num(vals[0])]
        if len(vals) > 1:
            cmd += ["--jitter", num(vals[1])]
        return cmd
    if k == "rate":
        return ["rate", "--rate", vals[0]]
    return [k, "--percent", num(vals[0])]


def Delay(cluster, targets, delay_ms: float = 100, jitter_ms: float = 0, **kw) -> Netem:
    return Netem(cluster, targets, delay_ms=delay_ms, jitter_ms=jitter_ms, **kw)


def Loss(cluster, targets, loss_pct: float = 20, **kw) -> Netem:
    return Netem(cluster, targets, loss_pct=loss_pct, **kw)


def Duplicate(cluster, targets, duplicate_pct: float = 20, **kw) -> Netem:
    return Netem(cluster, targets, duplicate_pct=duplicate_pct, **kw)


def Corrupt(cluster, targets, corrupt_pct: float = 20, **kw) -> Netem:
    return Netem(cluster, targets, corrupt_pct=corrupt_pct, **kw)
