"""Client-path faults: Toxiproxy in front of the SQL nodes.

The overlay ``ndbchaos/data/compose/toxiproxy.yml`` adds a toxiproxy container to the cluster (image
``ndbchaos/toxiproxy:<hash>``: the static toxiproxy-server v2.12.0 binary alone). One proxy per
SQL node is created through the API after start; the workload connects to the proxy ports
instead of the SQL ports:

    from ndbchaos.faults import toxiproxy as TP
    cluster = Cluster(engine, TP.with_toxiproxy(ClusterOptions(galera_data_nodes=3)))
    cluster.up()
    ports = TP.proxy_ports(cluster)          # {"data1": 32801, ...} on 127.0.0.1
    with TP.Latency(cluster, T.sql(), latency_ms=300, jitter_ms=50): ...
    with TP.ProxyDown(cluster, T.node("data2")): ...

The client is our own (~100 lines on urllib), not toxiproxy-python: that package (0.1.1, 2019)
is unmaintained, declares Python 2 only, pulls in ``future``, keeps the server address in a
class-level global (one server per process), and updates proxies with POST, which the server
deprecated in 2.6 in favour of PATCH. The REST API itself is small and stable across 2.x.
"""

from __future__ import annotations

import socket
import time
import uuid

from ..errors import UsageError
from ..waiting import wait_until
from .base import Fault, FaultNotEffective
from .targets import sql
from .toxiproxy_server import (API_PORT, IMAGE_ENV, OVERLAY, SLOT_BASE, SLOTS, TOXIC_PREFIX, ToxiproxyAPI,
                               ToxiproxyError, api, ensure_image, image, proxy_container, proxy_ports, proxy_specs,
                               setup, slots, sql_nodes, with_toxiproxy)
from .toxiproxy_server import _same as _same  # re-exported: the unit tests check it here

# -- probing through a proxy --------------------------------------------------------------------------

def greeting(port: int, timeout: float = 2.0) -> dict:
    """Connect to 127.0.0.1:port and read the MySQL server greeting (the server speaks first).
    ``{"ok", "seconds", "error", "chunks", "bytes"}``."""
    t0 = time.monotonic()
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    chunks, got = 0, b""
    try:
        s.connect(("127.0.0.1", port))
        need = None
        while need is None or len(got) < need:
            b = s.recv(4096)
            if not b:
                return {"ok": False, "seconds": time.monotonic() - t0, "error": "closed", "chunks": chunks,
                        "bytes": len(got)}
            chunks += 1
            got += b
            if need is None and len(got) >= 4:
                need = 4 + int.from_bytes(got[:3], "little")
        return {"ok": True, "seconds": time.monotonic() - t0, "error": "", "chunks": chunks, "bytes": len(got)}
    except socket.timeout:
        return {"ok": False, "seconds": time.monotonic() - t0, "error": "timeout", "chunks": chunks, "bytes": len(got)}
    except ConnectionRefusedError:
        return {"ok": False, "seconds": time.monotonic() - t0, "error": "refused", "chunks": chunks, "bytes": len(got)}
    except ConnectionResetError:
        return {"ok": False, "seconds": time.monotonic() - t0, "error": "reset", "chunks": chunks, "bytes": len(got)}
    except OSError as e:
        return {"ok": False, "seconds": time.monotonic() - t0, "error": str(e)[:80], "chunks": chunks,
                "bytes": len(got)}
    finally:
        s.close()


# -- the faults ----------------------------------------------------------------------------------------

class Toxic(Fault):
    """Add a toxic to the proxies of some SQL nodes (default: all of them).

    ``Toxic(cluster, targets, type="latency", attributes={"latency": 300}, stream="downstream")``.
    Each toxic is named ``ndbchaos-<kind>-<id>``; heal removes exactly those."""

    kind = "toxic"
    client_path = True  # between the clients and an SQL node: the engine itself is untouched
    toxic_type: str | None = None

    def __init__(self, cluster, targets=None, type: str | None = None, attributes: dict | None = None,
                 stream: str = "downstream", toxicity: float = 1.0, **params):
        self.toxic_type = type or self.toxic_type
        if not self.toxic_type:
            raise UsageError("toxic: no type")
        if self.kind == "toxic":
            self.kind = self.toxic_type
        if stream not in ("upstream", "downstream"):
            raise UsageError(f"stream must be upstream or downstream, not {stream!r}")
        if not 0 <= toxicity <= 1:
            raise UsageError("toxicity is a probability (0-1)")
        self.attributes = dict(attributes or {})
        super().__init__(cluster, targets if targets is not None else sql(), stream=stream,
                         toxicity=toxicity, **self.attributes, **params)
        self.stream = stream
        self.toxicity = toxicity
        self.toxic_name = f"{TOXIC_PREFIX}{self.kind}-{uuid.uuid4().hex[:6]}"
        self.window.params["toxic"] = self.toxic_name
        proxy_container(cluster)  # blast radius: the proxy must be this run's
        have = slots(cluster)
        missing = [t.name for t in self.targets if t.name not in have]
        if missing:
            raise UsageError(f"{self.kind}: {', '.join(missing)} not behind the proxy (SQL nodes: {', '.join(have)})")
        self.ports: dict[str, int] = {}
        self.api: ToxiproxyAPI | None = None

    def _apply(self) -> None:
        self.ports = setup(self.cluster)
        self.api = api(self.cluster)
        for t in self.targets:
            self.api.add_toxic(t.name, self.toxic_type, self.attributes, self.toxic_name, self.stream, self.toxicity)

    def _listed(self) -> list[str]:
        out = []
        for t in self.targets:
            names = [x.get("name") for x in self.api.toxics(t.name)]
            if self.toxic_name not in names:
                raise FaultNotEffective(f"toxic {self.toxic_name} not listed on proxy {t.name}")
            out.append(t.name)
        return out

    def _effect(self, probe: dict) -> tuple[bool, str]:
        """Does a greeting probe show the toxic? Default: nothing observable (listed is enough)."""
        return True, f"greeting {'ok' if probe['ok'] else probe['error']} in {probe['seconds']:.2f}s"

    def _probe_timeout(self) -> float:
        return 2.0

    def _verify_applied(self) -> str:
        self._listed()
        seen = []
        for t in self.targets:
            p = greeting(self.ports[t.name], self._probe_timeout())
            ok, why = self._effect(p)
            if not ok:
                raise FaultNotEffective(f"{self.kind} on {t.name}: {why}")
            seen.append(f"{t.name}: {why}")
        attrs = ",".join(f"{k}={v}" for k, v in self.attributes.items())
        return (f"{self.toxic_type}({attrs}) {self.stream} on proxies of {', '.join(t.name for t in self.targets)}; "
                + "; ".join(seen))

    def _revert(self) -> None:
        a = self.api or api(self.cluster)
        for t in self.targets:
            try:
                a.remove_toxic(t.name, self.toxic_name)
            except ToxiproxyError as e:
                if "404" not in str(e):
                    raise

    def _verify_healed(self) -> str:
        a = self.api or api(self.cluster)
        out = []
        for t in self.targets:
            if any(x.get("name") == self.toxic_name for x in a.toxics(t.name)):
                raise FaultNotEffective(f"toxic {self.toxic_name} still on {t.name}")
            p = greeting(self.ports[t.name], 3.0)
            if not p["ok"]:
                raise FaultNotEffective(f"after heal, no greeting through the proxy of {t.name}: {p['error']}")
            out.append(f"{t.name} {p['seconds'] * 1000:.0f}ms")
        return "toxic removed, greeting through the proxy: " + ", ".join(out)


class Latency(Toxic):
    """Delay data by ``latency_ms`` (+- ``jitter_ms``) on the client path."""

    kind = "latency"
    toxic_type = "latency"

    def __init__(self, cluster, targets=None, latency_ms: int = 300, jitter_ms: int = 0, **kw):
        super().__init__(cluster, targets, attributes={"latency": int(latency_ms), "jitter": int(jitter_ms)}, **kw)

    def _probe_timeout(self):
        return 2.0 + 2 * (self.attributes["latency"] + self.attributes["jitter"]) / 1000

    def _effect(self, p):
        if self.stream != "downstream":
            return True, "listed (upstream latency does not delay the server greeting)"
        lo = max(0, self.attributes["latency"] - self.attributes["jitter"]) / 1000
        if not p["ok"]:
            return False, f"no greeting ({p['error']})"
        if p["seconds"] < 0.8 * lo:
            return False, f"greeting after {p['seconds'] * 1000:.0f}ms, expected >= {lo * 1000:.0f}ms"
        return True, f"greeting after {p['seconds'] * 1000:.0f}ms"


class Bandwidth(Toxic):
    """Limit the client path to ``rate_kb`` KB/s."""

    kind = "bandwidth"
    toxic_type = "bandwidth"

    def __init__(self, cluster, targets=None, rate_kb: int = 16, **kw):
        super().__init__(cluster, targets, attributes={"rate": int(rate_kb)}, **kw)


class Timeout(Toxic):
    """Stop all data and close the connection after ``timeout_ms`` (0: never close: a
    black hole that keeps the connection open)."""

    kind = "timeout"
    toxic_type = "timeout"

    def __init__(self, cluster, targets=None, timeout_ms: int = 0, **kw):
        super().__init__(cluster, targets, attributes={"timeout": int(timeout_ms)}, **kw)

    def _probe_timeout(self):
        return 1.5 if not self.attributes["timeout"] else 1.5 + self.attributes["timeout"] / 1000

    def _effect(self, p):
        if p["ok"]:
            return False, f"greeting arrived in {p['seconds'] * 1000:.0f}ms"
        return True, f"no greeting ({p['error']} after {p['seconds']:.1f}s)"


class ResetPeer(Toxic):
    """Reset connections (TCP RST) after ``timeout_ms``."""

    kind = "reset_peer"
    toxic_type = "reset_peer"

    def __init__(self, cluster, targets=None, timeout_ms: int = 0, **kw):
        super().__init__(cluster, targets, attributes={"timeout": int(timeout_ms)}, **kw)

    def _probe_timeout(self):
        return 2.0 + self.attributes["timeout"] / 1000

    def _effect(self, p):
        if p["ok"]:
            return False, f"greeting arrived in {p['seconds'] * 1000:.0f}ms"
        return True, f"connection {p['error']} after {p['seconds'] * 1000:.0f}ms"


class Slicer(Toxic):
    """Slice data into ``average_size`` (+- ``size_variation``) byte pieces, ``delay_us``
    apart: exercises the client's partial-read handling."""

    kind = "slicer"
    toxic_type = "slicer"

    def __init__(self, cluster, targets=None, average_size: int = 8, size_variation: int = 4,
                 delay_us: int = 2000, **kw):
        super().__init__(cluster, targets, attributes={"average_size": int(average_size),
                                                       "size_variation": int(size_variation),
                                                       "delay": int(delay_us)}, **kw)

    def _effect(self, p):
        if not p["ok"]:
            return False, f"no greeting ({p['error']})"
        return True, f"greeting in {p['chunks']} pieces ({p['bytes']} bytes, {p['seconds'] * 1000:.0f}ms)"


class ProxyDown(Fault):
    """Take the proxies of some SQL nodes down (toxiproxy ``enabled: false``): listening stops
    and open connections drop, i.e. the SQL node vanishes for clients only."""

    kind = "proxy_down"
    client_path = True

    def __init__(self, cluster, targets=None):
        super().__init__(cluster, targets if targets is not None else sql())
        proxy_container(cluster)
        have = slots(cluster)
        missing = [t.name for t in self.targets if t.name not in have]
        if missing:
            raise UsageError(f"proxy_down: {', '.join(missing)} not behind the proxy")
        self.ports: dict[str, int] = {}

    def _apply(self) -> None:
        self.ports = setup(self.cluster)
        a = api(self.cluster)
        for t in self.targets:
            a.set_enabled(t.name, False)

    def _verify_applied(self) -> str:
        out = []
        for t in self.targets:
            p = greeting(self.ports[t.name], 1.5)
            if p["ok"]:
                raise FaultNotEffective(f"proxy of {t.name} still answers")
            out.append(f"{t.name} {p['error']}")
        return "proxy down: " + ", ".join(out)

    def _revert(self) -> None:
        a = api(self.cluster)
        for t in self.targets:
            a.set_enabled(t.name, True)

    def _verify_healed(self) -> str:
        out = []
        for t in self.targets:
            last = [{"ok": False}]

            def answers(port=self.ports[t.name]):
                last[0] = greeting(port, 2.0)
                return last[0]["ok"]

            wait_until(answers, 5, poll=0.1)
            p = last[0]
            if not p["ok"]:
                raise FaultNotEffective(f"proxy of {t.name} does not answer after enable: {p.get('error')}")
            out.append(f"{t.name} {p['seconds'] * 1000:.0f}ms")
        return "proxy up: " + ", ".join(out)


__all__ = ["API_PORT", "IMAGE_ENV", "OVERLAY", "SLOT_BASE", "SLOTS", "TOXIC_PREFIX", "Bandwidth", "Latency",
           "ProxyDown", "ResetPeer", "Slicer", "Timeout", "Toxic", "ToxiproxyAPI", "ToxiproxyError", "api",
           "ensure_image", "greeting", "image", "proxy_container", "proxy_ports", "proxy_specs", "setup", "slots",
           "sql_nodes", "with_toxiproxy"]
