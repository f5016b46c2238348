"""Helper containers that share one target's network namespace, and what runs in them.

A network fault never runs a tool inside an engine container (engine images need no tools) and
never touches the host: it starts a *helper*, an ``ndbchaos/tools`` container with
``network_mode="container:<target id>"`` and ``cap_add=["NET_ADMIN"]``, labelled
``ndbchaos.project=<run>`` and ``ndbchaos.role=helper``, and runs iptables/tc/nc there. Rules
added that way exist only in the target's namespace, which dies with the target; helpers are
removed after use (and by ``ndbchaos reap`` if a run is killed).

Every rule goes into a chain of our own, ``NDBCHAOS-<id>``, jumped to from INPUT by one rule
whose comment says which fault added it. Heal deletes exactly that jump and that chain.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import subprocess
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from . import docker
from .. import topology as TP
from ..errors import BlastRadiusError, NdbChaosError
from ..resources import BUILD
from ..settings import current

CHAIN_PREFIX = "NDBCHAOS"
HELPER_TTL_S = 3600  # a helper left behind by a killed run exits by itself after an hour
IPT = "iptables -w 5"
_SAFE_COMMENT = re.compile(r"[^A-Za-z0-9 _.,:;=+/@{}<>-]")  # no quotes, $, backslash or backtick


# -- the tools image --------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def tools_image() -> str:
    override = current().tools_image
    if override:
        return override
    r = subprocess.run(["bash", str(BUILD), "--tag", "tools"], capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.strip():
        raise NdbChaosError(f"cannot compute the tools image tag: {r.stderr.strip()[-200:]}")
    return r.stdout.strip()


_image_lock = threading.Lock()


def ensure_tools_image() -> str:
    img = tools_image()
    with _image_lock:
        if docker.image_present(img):
            return img
        if current().tools_image:
            raise NdbChaosError(f"image {img} is not present locally")
        r = subprocess.run(["bash", str(BUILD), "tools"], capture_output=True, text=True)
        if r.returncode != 0 or not docker.image_present(img):
            raise NdbChaosError(f"building {img} failed: {(r.stderr or r.stdout).strip()[-300:]}")
    return img


# -- names and commands (pure) ------------------------------------------------------------------

def new_chain() -> str:
    return f"{CHAIN_PREFIX}-{uuid.uuid4().hex[:8].upper()}"


def safe_comment(text: str) -> str:
    return _SAFE_COMMENT.sub("_", text)[:200]


def drop_rules_script(chain: str, sources: list[str], mode: str, comment: str) -> str:
    """Shell script (run in a helper) that drops packets from ``sources`` (IPs) in our chain.

    ``packets``: every packet from the source; ``connections``: packets of connections the
    source opened (``-m conntrack --ctdir ORIGINAL``), so the node can still reach the source."""
    if not re.fullmatch(rf"{CHAIN_PREFIX}-[A-Z0-9]{{1,18}}", chain):
        raise ValueError(f"not one of our chains: {chain!r}")
    match = " -m conntrack --ctdir ORIGINAL" if mode == "connections" else ""
    lines = ["set -e", f"{IPT} -N {chain}"]
    for ip in sources:
        _check_ip(ip)
        lines.append(f"{IPT} -A {chain} -s {ip}/32{match} -j DROP")
    lines.append(f"{IPT} -I INPUT 1 -m comment --comment {shlex.quote(safe_comment(comment))} -j {chain}")
    return "\n".join(lines)


def remove_chains_script(chains: list[str] | None = None) -> str:
    """Shell script that deletes the INPUT jumps to our chains and the chains themselves.
    ``chains=None``: every chain whose name starts with NDBCHAOS (for ``fault heal``).
    Prints one ``removed <chain>`` line per chain."""
    if chains is not None:
        for c in chains:
            if not re.fullmatch(rf"{CHAIN_PREFIX}-[A-Z0-9]{{1,18}}", c):
                raise ValueError(f"not one of our chains: {c!r}")
        pick = "printf '%s\\n' " + " ".join(chains)
    else:
        pick = f"{IPT} -S | sed -n 's/^-N \\({CHAIN_PREFIX}-[A-Z0-9]*\\)$/\\1/p'"
    return "\n".join([
        "rc=0",
        f"for c in $({pick}); do",
        f"  {IPT} -n -L \"$c\" >/dev/null 2>&1 || continue",
        # Every rule (in any built-in chain) that jumps to $c is deleted by its own spec.
        f"  {IPT} -S | grep -E -- \"-j $c( |\\$)\" | grep '^-A ' | sed 's/^-A /-D /' | "
        f"while IFS= read -r r; do eval {IPT} $r || exit 1; done || rc=1",
        f"  {IPT} -F \"$c\" && {IPT} -X \"$c\" && echo \"removed $c\" || rc=1",
        "done",
        "exit $rc",
    ])


LIST_RULES_SCRIPT = f"{IPT} -S 2>&1; echo '--- qdisc'; tc qdisc show 2>&1"


def parse_our_rules(iptables_s: str) -> list[dict]:
    """Our chains in ``iptables -S`` output: [{chain, comment, drops: [(ip, mode)]}]."""
    chains: dict[str, dict] = {}
    for line in iptables_s.splitlines():
        m = re.match(rf"^-N ({CHAIN_PREFIX}-\S+)$", line)
        if m:
            chains.setdefault(m.group(1), {"chain": m.group(1), "comment": "", "drops": []})
    for line in iptables_s.splitlines():
        m = re.match(rf"^-A \S+ .*-j ({CHAIN_PREFIX}-\S+)", line)
        if m and m.group(1) in chains:
            c = re.search(r'--comment (?:"([^"]*)"|(\S+))', line)
            if c:
                chains[m.group(1)]["comment"] = c.group(1) or c.group(2)
        m = re.match(rf"^-A ({CHAIN_PREFIX}-\S+) -s (\S+?)(?:/32)? (.*)-j DROP", line)
        if m and m.group(1) in chains:
            mode = "connections" if "--ctdir ORIGINAL" in m.group(3) else "packets"
            chains[m.group(1)]["drops"].append((m.group(2), mode))
    return list(chains.values())


def _check_ip(ip: str) -> None:
    parts = ip.split(".")
    if len(parts) != 4 or not all(p.isdigit() and 0 <= int(p) <= 255 for p in parts):
        raise ValueError(f"not an IPv4 address: {ip!r}")


def probe_script(probes: list[tuple[str, str, int]], wait_s: int = 1) -> str:
    """Probe each (label, ip, port) with ``nc -z -w`` in parallel; one line each:
    ``<label> <rc> <nc -v output>``."""
    lines = ['probe() { out=$(nc -v -z -w %d "$2" "$3" 2>&1); rc=$?; '
             'printf "%%s %%s %%s\\n" "$1" "$rc" "$(echo $out | tr -d \'\\n\')"; }' % wait_s]
    for label, ip, port in probes:
        _check_ip(ip)
        if not re.fullmatch(r"[A-Za-z0-9_.:-]+", label):
            raise ValueError(f"bad probe label {label!r}")
        lines.append(f"probe {label} {ip} {int(port)} &")
    lines.append("wait")
    return "\n".join(lines)


def parse_probes(out: str) -> dict[str, tuple[bool, str]]:
    """``{label: (reachable, evidence)}``. Reachable = the SYN got an answer: connected, or
    refused (the host is there, the port is not listening). Timeouts and unreachables = blocked."""
    res = {}
    for line in out.splitlines():
        parts = line.split(" ", 2)
        if len(parts) < 2 or not parts[1].lstrip("-").isdigit():
            continue
        label, rc, text = parts[0], int(parts[1]), (parts[2] if len(parts) > 2 else "")
        low = text.lower()
        ok = rc == 0 or "refused" in low
        res[label] = (ok, "open" if rc == 0 else ("refused" if ok else _reason(low)))
    return res


def _reason(low: str) -> str:
    for key in ("timed out", "no route", "unreachable", "not permitted"):
        if key in low:
            return key
    return low.strip()[:60] or "failed"


# -- helpers -------------------------------------------------------------------------------------

def host_netns() -> str | None:
    """The network namespace of this process (to refuse ever running a rule in it)."""
    try:
        return os.readlink("/proc/self/ns/net")
    except OSError:  # pragma: no cover - not Linux
        return None


#: what readlink /proc/self/ns/net answers
NETNS = re.compile(r"net:\[\d+\]")


def read_netns(container, attempts: int = 5) -> tuple[int | None, str]:
    """(exit code, namespace) of ``readlink /proc/self/ns/net`` in a helper, asked again (up to
    ``attempts`` times) while the answer is not a namespace: in a CI soak an exec in a helper just
    started, one of eight started at once on a loaded host, came back without one (the exit code
    and output were not recorded then; an exec that returns before the engine has its end is the
    suspect). An answer that is a namespace is final, the host's included (the caller refuses it)."""
    code, ns = None, ""
    for i in range(attempts):
        code, out = docker.exec_in(container, ["readlink", "/proc/self/ns/net"], timeout=10)
        ns = out.strip()
        if NETNS.fullmatch(ns):
            break
        time.sleep(0.2 * (i + 1))
    return code, ns


@dataclass
class Helper:
    """A running tools container in one target's network namespace."""

    container: object  # docker-py Container (the helper)
    target_name: str  # node name
    target_id: str
    target_pid: int  # the target's main pid when the helper joined: its netns identity
    netns: str

    def exec(self, script: str, timeout: float = 30) -> tuple[int, str]:
        return docker.exec_in(self.container, ["sh", "-c", script], timeout=timeout)

    def install(self, chain: str, script: str, timeout: float = 30) -> tuple[int, str]:
        """Add ``chain`` (``drop_rules_script``). Its namespace dies with the target, so it needs
        no guard of its own; ``reap`` removes the helper."""
        return self.exec(script, timeout)

    def uninstall(self, chain: str, timeout: float = 30) -> tuple[int, str]:
        return self.exec(remove_chains_script([chain]), timeout)

    def current(self) -> bool:
        """Is the helper still in the target's *current* namespace (target not restarted)?"""
        try:
            c = docker.docker_client().containers.get(self.target_id)
        except Exception:
            return False
        st = c.attrs.get("State") or {}
        return bool(st.get("Running")) and int(st.get("Pid") or 0) == self.target_pid

    def remove(self) -> None:
        try:
            self.container.remove(force=True)
        except Exception as e:
            if "No such container" not in str(e) and "is already in progress" not in str(e):
                raise


def start_helper(cluster, node, purpose: str = "fault") -> Helper:
    """Start a helper in ``node``'s network namespace. Refuses (BlastRadiusError) a container
    without the run's project label, one that shares the host's network namespace, and one
    whose namespace belongs to a container of another project."""
    target = cluster.container(node)  # raises BlastRadiusError if not ours
    target.reload()
    hc = target.attrs.get("HostConfig") or {}
    mode = hc.get("NetworkMode") or ""
    if mode == "host":
        raise BlastRadiusError(f"refusing a network fault on {node.name}: it uses the host's network namespace")
    if mode.startswith("container:"):
        docker.owned(mode.split(":", 1)[1], cluster.project)  # the namespace owner must be ours too
    st = target.attrs.get("State") or {}
    if not st.get("Running"):
        raise NdbChaosError(f"{node.name} is {st.get('Status', '?')}: no network namespace to work in")
    image = ensure_tools_image()
    labels = {TP.PROJECT: cluster.project, TP.ROLE: TP.HELPER, TP.LABEL_PREFIX + "target": target.name,
              TP.LABEL_PREFIX + "purpose": purpose}
    engine = (target.labels or {}).get(TP.ENGINE)
    if engine:
        labels[TP.ENGINE] = engine
    name = f"{cluster.project}-helper-{node.name}-{uuid.uuid4().hex[:6]}"
    c = docker.docker_client().containers.run(
        image, ["sleep", str(HELPER_TTL_S)], detach=True, name=name, labels=labels,
        network_mode=f"container:{target.id}", cap_add=["NET_ADMIN"], auto_remove=False,
    )
    try:
        code, ns = read_netns(c)
        host = host_netns()
        if host and ns == host:
            raise BlastRadiusError(f"refusing: the helper for {node.name} is in this host's network namespace ({ns})")
        if not NETNS.fullmatch(ns):
            raise NdbChaosError(f"the helper for {node.name} could not tell its network namespace "
                                f"(readlink exit code {code}, output {ns!r}): no rule is put in an unknown one")
    except BaseException:
        c.remove(force=True)
        raise
    return Helper(c, node.name, target.id, int(st.get("Pid") or 0), ns)


def start_helpers(cluster, nodes, purpose: str = "fault") -> dict[str, Helper]:
    """Helpers for several nodes at once (in parallel; all or nothing)."""
    nodes = list(nodes)
    if not nodes:
        return {}
    out: dict[str, Helper] = {}
    errors: list[BaseException] = []
    with ThreadPoolExecutor(max_workers=min(8, len(nodes))) as ex:
        futs = {ex.submit(start_helper, cluster, n, purpose): n for n in nodes}
        for f, n in futs.items():
            try:
                out[n.name] = f.result()
            except BaseException as e:
                errors.append(e)
    if errors:
        remove_helpers(out.values())
        raise errors[0]
    return out


def remove_helpers(helpers) -> None:
    helpers = list(helpers)
    if not helpers:
        return
    with ThreadPoolExecutor(max_workers=min(8, len(helpers))) as ex:
        list(ex.map(lambda h: h.remove(), helpers))


def parallel(fn, items):
    """Run ``fn(item)`` for each item in threads; return results in order; raise the first error."""
    items = list(items)
    if not items:
        return []
    with ThreadPoolExecutor(max_workers=min(8, len(items))) as ex:
        return list(ex.map(fn, items))


def container_ips(container) -> list[str]:
    nets = (container.attrs.get("NetworkSettings") or {}).get("Networks") or {}
    return sorted({n["IPAddress"] for n in nets.values() if n.get("IPAddress")})


class HelperMixin:
    """For faults that work through helper containers in their targets' namespaces: the helpers
    (``self.helpers``, node name -> Helper) are removed on every way out of ``heal`` and when the
    fault is detached. Put it before ``Fault`` in the bases."""

    helpers: dict

    def heal(self, verify: bool = True):
        try:
            return super().heal(verify=verify)
        finally:
            self._drop_helpers()

    def _drop_helpers(self) -> None:
        hs, self.helpers = list(self.helpers.values()), {}
        remove_helpers(hs)

    def _on_detach(self) -> None:
        self._drop_helpers()

