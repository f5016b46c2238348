"""Storage faults through the faultfs layer over a data node's bounded disk (``ndbchaos.runtimes.compose.faultfs``):
a slow or stalled disk, failing I/O, and a power loss that loses every write not synced.

The cluster must have been started with ``--data-disk SIZE`` where FUSE works (the layer is
mounted with the disks, before the containers); otherwise the fault refuses in one line.

Each fault is verified where the node meets it: the layer counts the node's calls it delayed,
failed or dropped, and ``inject`` waits until the counters show the node met the fault (a slowed
fsync really waited, a failing write really failed, unsynced bytes really were lost). Healing
clears the layer's faults (a call waiting in a delay ends at once) and is verified by its status.
A controller killed in between leaves the faults in the layer: ``ndbchaos reap``, ``fault heal``
and ``status`` clear them first (``ndbchaos.holds``: a node's call waiting in a stall holds its
container beyond Docker's reach), and reap then unmounts and stops the layer with the disks.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from ..runtimes.compose import disks, faultfs
from ..errors import NdbChaosError
from ..runtimes.compose.faultfs import Failure, Faults
from ..waiting import wait_until
from .base import Fault, FaultNotEffective
from .disk import BALLAST
from .node import Kill

#: how long the node gets to meet the fault: NDB writes and syncs its REDO log at every global
#: checkpoint (TimeBetweenGlobalCheckpoints, 2 s by default) under a write load; 10 s holds
#: several of them on a loaded 2-core host
MEET_TIMEOUT_S = 10.0
#: how long the calls a heal woke may take to leave their wait (they need the layer's lock)
HEAL_TIMEOUT_S = 2.0


def _service(node) -> str:
    return node.labels.get("com.docker.compose.service", node.name)


class _LayerFault(Fault):
    """A fault set in the faultfs layer of each target's disk."""

    calls: tuple[str, ...] = ()

    def __init__(self, cluster, targets, **params):
        super().__init__(cluster, targets, **params)
        self.layers = _layers_of(self)
        self.before: dict[str, dict] = {}

    def faults(self) -> Faults:
        raise NotImplementedError

    def _apply(self) -> None:
        self.before = {n: faultfs.status(s) for n, s in self.layers.items()}
        for s in self.layers.values():
            faultfs.set_faults(s, self.faults())

    def _met(self, name: str, st: dict) -> int:
        """How many of the node's calls met the fault since it was set."""
        raise NotImplementedError

    def _verify_applied(self) -> str:
        seen: dict[str, dict] = {}

        def met() -> bool:
            for n, s in self.layers.items():
                seen[n] = faultfs.status(s)
            return all(self._met(n, seen[n]) > 0 for n in self.layers)

        wait_until(met, MEET_TIMEOUT_S, poll=0.2)
        missing = [n for n in self.layers if self._met(n, seen[n]) <= 0]
        if missing:
            raise FaultNotEffective(f"{', '.join(missing)}: no {'/'.join(self.calls)} met the fault within "
                                    f"{MEET_TIMEOUT_S:.0f} s (its layer counted none)")
        return "; ".join(f"{n}: {self._evidence(n, seen[n])}" for n in self.layers)

    def _evidence(self, name: str, st: dict) -> str:
        raise NotImplementedError

    def _revert(self) -> None:
        errors = []
        for n, s in self.layers.items():
            try:
                faultfs.set_faults(s, Faults())
            except NdbChaosError as e:
                errors.append(f"{n}: {e}")
        if errors:
            raise NdbChaosError(f"{self.kind}: could not clear the layer of " + "; ".join(errors))

    def _verify_healed(self) -> str:
        out = []
        for n, s in self.layers.items():
            # a call woken by the heal leaves its wait once it has the layer's lock again
            st = faultfs.status(s)
            if st["waiting"]:
                wait_until(lambda: not faultfs.status(s)["waiting"], HEAL_TIMEOUT_S)
                st = faultfs.status(s)
            if st["delay_ms"] or st["fail"] or st["lazy"] or st["waiting"]:
                raise FaultNotEffective(f"{n}: its layer still has faults (delay {st['delay_ms']}, fail {st['fail']}, "
                                        f"lazy {st['lazy']}, {st['waiting']} call(s) waiting)")
            out.append(n)
        return "layer cleared, no call waiting: " + ", ".join(out)


class SlowDisk(_LayerFault):
    """Each of the targets' ``calls`` (write, fsync, read, open) waits ``delay_ms`` before it runs:
    a slow disk, or with a long enough delay a stalled one."""

    kind = "slow_disk"

    def __init__(self, cluster, targets, delay_ms: float, calls=("write", "fsync")):
        calls = tuple(calls)
        if not calls:
            raise NdbChaosError("slow_disk: no call to slow")
        self.delay_ms, self.calls = delay_ms, calls
        self._faults = Faults(delay_ms=dict.fromkeys(calls, delay_ms))
        super().__init__(cluster, targets, delay_ms=delay_ms, calls=list(calls))

    def faults(self) -> Faults:
        return self._faults

    def _met(self, name, st):
        return sum(st["delayed"][c] - self.before[name]["delayed"][c] for c in self.calls)

    def _evidence(self, name, st):
        counts = ", ".join(f"{st['delayed'][c] - self.before[name]['delayed'][c]} {c}" for c in self.calls)
        return f"{counts} delayed {self.delay_ms:g} ms ({st['waiting']} waiting now)"


class FailingIO(_LayerFault):
    """Each of the targets' ``call`` fails with ``errno`` with probability ``p`` (seeded)."""

    kind = "failing_io"

    def __init__(self, cluster, targets, call: str = "write", errno: str = "EIO", p: float = 1.0, seed: int = 0):
        self.calls = (call,)
        self._faults = Faults(fail={call: Failure(errno, p)}, seed=seed)
        self.call, self.errno = call, errno
        super().__init__(cluster, targets, call=call, errno=errno, p=p, seed=seed)

    def faults(self) -> Faults:
        return self._faults

    def _met(self, name, st):
        return st["failed"][self.call] - self.before[name]["failed"][self.call]

    def _evidence(self, name, st):
        c = self.call
        return (f"{self._met(name, st)} of {st['counts'][c] - self.before[name]['counts'][c]} {c} call(s) "
                f"failed with {self.errno}")


class PowerLoss(Kill):
    """Every target loses power at the same moment, between a write and its sync.

    The layer keeps each node's writes in memory until they are synced (``lazy``) for
    ``window_s`` under the running load (the preparation: the fault window opens after it). Then
    the cut waits for a moment when some node holds written but unsynced data (NDB writes its
    REDO log at each global checkpoint and syncs it at once: a kill at a random moment mostly
    finds nothing unsynced), stalls every sync at that moment (so the global checkpoint in flight
    cannot complete), kills every target (SIGKILL, together) and drops every write not synced.
    Healed by clearing the layers and starting the nodes again (the engine's recovery: NDB's
    system restart from what was synced)."""

    kind = "power_loss"
    #: the sync stall of the cut: longer than any kill takes (the cut ends it)
    STALL_MS = 600_000
    #: the signals' head start on the cut: Docker delivers a kill in a few ms
    SIGNAL_S = 0.2

    def __init__(self, cluster, targets, window_s: float = 6.0, cut_timeout_s: float = 30.0):
        if not isinstance(window_s, (int, float)) or window_s <= 0:
            raise NdbChaosError(f"power_loss: window_s must be a number of seconds > 0, not {window_s!r}")
        super().__init__(cluster, targets)
        self.window.params["window_s"] = window_s
        self.window_s, self.cut_timeout_s = window_s, cut_timeout_s
        self.layers = _layers_of(self)
        self.dropped: dict[str, dict] = {}
        self.unsynced_at_cut: dict[str, int] = {}

    def _set_all(self, faults: Faults) -> None:
        for s in self.layers.values():
            faultfs.set_faults(s, faults)

    def _pending(self) -> dict[str, int]:
        return {n: faultfs.status(s)["pending_bytes"] for n, s in self.layers.items()}

    def _prepare(self) -> None:
        # before the fault window opens: the power is still on while writes pile up unsynced
        self._set_all(Faults(lazy=True))
        time.sleep(self.window_s)

    def _apply(self) -> None:
        deadline = time.monotonic() + self.cut_timeout_s
        while True:
            if any(self._pending().values()):
                self._set_all(Faults(lazy=True, delay_ms={"fsync": self.STALL_MS}))
                pending = self._pending()
                if any(pending.values()):  # still there once no sync can take it: the moment
                    self.unsynced_at_cut = pending
                    break
                self._set_all(Faults(lazy=True))  # a sync already under way took it: wait for the next
            if time.monotonic() > deadline:
                raise FaultNotEffective(f"power_loss: no node held an unsynced write within {self.cut_timeout_s:g} s "
                                        "(no write load?)")
            time.sleep(0.005)
        # SIGKILL every target; a process whose sync waits in the layer exits only once it is
        # answered, so the cut (every unsynced write lost, every waiting and later write or
        # sync failed) follows the signals while Docker waits for the exits
        with ThreadPoolExecutor(1) as pool:
            kill = pool.submit(self._signal_all)
            time.sleep(self.SIGNAL_S)
            self.dropped = {n: faultfs.drop(s, cut=True) for n, s in self.layers.items()}
            kill.result()

    def _verify_applied(self) -> str:
        killed = super()._verify_applied()
        total = sum(d["dropped_bytes"] for d in self.dropped.values())
        if total <= 0:
            raise FaultNotEffective(f"no unsynced write was lost on {', '.join(self.layers)}")
        self.window.params["dropped"] = self.dropped
        lost = ", ".join(f"{n} {d['dropped_bytes'] / 1024:.0f} KiB in {d['dropped_files']} file(s)"
                         for n, d in self.dropped.items())
        return f"{killed}; unsynced writes lost: {lost}"

    def _revert(self) -> None:
        self._set_all(Faults())
        super()._revert()


def _layers_of(fault) -> dict[str, Path]:
    """The control socket of each target's layer; one line naming what is missing otherwise."""
    out = {}
    for t in fault.targets:
        try:
            sock = disks.layer_of(fault.cluster.project, _service(t))
        except NdbChaosError:
            sock = None
        if sock is None:
            why = faultfs.unavailable()
            raise NdbChaosError(f"{fault.kind}: {t.name}'s data directory has no faultfs layer (start the cluster "
                                f"with --data-disk SIZE where FUSE works{': ' + why if why else ''})")
        out[t.name] = sock
    return out


def active(project: str) -> list[dict]:
    """The storage faults left in ``project``'s layers and disks (a detached fault, a controller
    killed mid-run): [{kind, node, detail}] as ``ndbchaos status`` lists faults."""
    out = []
    for svc, sock in disks.layers(project).items():
        try:
            st = faultfs.call(sock, {"cmd": "status"}, faultfs.RELEASE_TIMEOUT_S)
        except NdbChaosError as e:
            out.append({"kind": "storage", "node": svc, "detail": f"faultfs layer not answering: {e}"})
            continue
        what = faultfs.describe(st)
        if what:
            out.append({"kind": "storage", "node": svc, "detail": "faultfs: " + what})
    for svc, ballast in _ballasts(project):
        mb = ballast.stat().st_size // 2**20
        out.append({"kind": "disk_full", "node": svc, "detail": f"ballast {mb} MB on its disk"})
    return out


def _ballasts(project: str) -> list[tuple[str, Path]]:
    """(service, ballast) of each disk of ``project`` that holds one (on the disk itself, not seen
    again through the layer over it)."""
    root = disks.project_dir(project)
    if not root.is_dir():
        return []
    out = []
    for d in disks.subdirs(root):
        if not d.name.endswith(".disk") and (root / f"{d.name}.disk").is_dir():
            continue  # a layer: its ballast is the disk's below it
        if (d / BALLAST).exists():
            out.append((d.name.removesuffix(".disk"), d / BALLAST))
    return out


def clear(project: str) -> list[str]:
    """Remove every storage fault of ``project``: clear each layer, delete each ballast; what was done."""
    done = []
    for f in active(project):
        if f["kind"] == "storage" and "not answering" not in f["detail"]:
            faultfs.set_faults(disks.layers(project)[f["node"]], Faults())
            done.append(f"cleared the faultfs layer of {f['node']} ({f['detail'].removeprefix('faultfs: ')})")
        elif f["kind"] == "disk_full":
            for svc, b in _ballasts(project):
                if svc == f["node"]:
                    b.unlink(missing_ok=True)
            done.append(f"removed the ballast on {f['node']}'s disk")
    return done


__all__ = ["FailingIO", "PowerLoss", "SlowDisk", "active", "clear"]
