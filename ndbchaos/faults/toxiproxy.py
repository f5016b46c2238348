"""Client-path faults: Toxiproxy in front of the SQL nodes.

The overlay ``cluster/compose/toxiproxy.yml`` adds a toxiproxy container to the cluster (image
``ndbchaos/toxiproxy:<hash>``: the static toxiproxy-server v2.12.0 binary alone). One proxy per
SQL node is created through the API after start; the workload connects to the proxy ports
instead of the SQL ports:

    from ndbchaos.faults import toxiproxy as TP
    cluster = Cluster(engine, TP.with_toxiproxy({"galera_data_nodes": 3}))
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

import json
import os
import socket
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

from .. import runtime
from .. import topology as T
from ..engines.base import COMPOSE_DIR, REPO
from ..errors import BlastRadiusError, NdbChaosError, UsageError
from .base import Fault, FaultNotEffective, wait_until

OVERLAY = COMPOSE_DIR / "toxiproxy.yml"
BUILD = REPO / "cluster" / "images" / "build.sh"
API_PORT = 8474
SLOT_BASE = 21001
SLOTS = 8  # container ports 21001-21008 are published by the overlay
IMAGE_ENV = "NDBCHAOS_TOXIPROXY_IMAGE"
TOXIC_PREFIX = "ndbchaos-"


class ToxiproxyError(NdbChaosError):
    pass


# -- image and overlay ---------------------------------------------------------------------------

def image() -> str:
    if os.environ.get(IMAGE_ENV):
        return os.environ[IMAGE_ENV]
    r = subprocess.run(["bash", str(BUILD), "--tag", "toxiproxy"], capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.strip():
        raise NdbChaosError(f"cannot compute the toxiproxy image tag: {r.stderr.strip()[-200:]}")
    return r.stdout.strip()


def ensure_image() -> str:
    img = image()
    if runtime.image_present(img):
        return img
    r = subprocess.run(["bash", str(BUILD), "toxiproxy"], capture_output=True, text=True)
    if r.returncode != 0 or not runtime.image_present(img):
        raise NdbChaosError(f"building {img} failed: {(r.stderr or r.stdout).strip()[-300:]}")
    return img


def with_toxiproxy(options: dict | None = None) -> dict:
    """Cluster options with the toxiproxy overlay added (and its image built if missing).

    The image reaches compose through the environment (``NDBCHAOS_TOXIPROXY_IMAGE``, the same
    value for every cluster of the process) and through ``options["compose_env"]``."""
    opts = dict(options or {})
    img = ensure_image()
    os.environ.setdefault(IMAGE_ENV, img)
    overlays = [Path(p) for p in opts.get("overlays", [])]
    if OVERLAY not in overlays:
        overlays.append(OVERLAY)
    opts["overlays"] = overlays
    opts["compose_env"] = {**(opts.get("compose_env") or {}), IMAGE_ENV: img}
    opts["toxiproxy"] = True
    return opts


# -- REST client ------------------------------------------------------------------------------------

class ToxiproxyAPI:
    """The toxiproxy 2.x REST API (https://github.com/Shopify/toxiproxy#http-api)."""

    def __init__(self, base_url: str, timeout: float = 5.0):
        if not base_url.startswith(("http://127.0.0.1:", "http://localhost:")):
            raise BlastRadiusError(f"refusing a toxiproxy API that is not on 127.0.0.1: {base_url}")
        self.base = base_url.rstrip("/")
        self.timeout = timeout

    def _req(self, method: str, path: str, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"} if data else {})
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                raw = r.read()
        except urllib.error.HTTPError as e:
            detail = e.read().decode("utf-8", "replace").strip()
            raise ToxiproxyError(f"toxiproxy {method} {path}: HTTP {e.code} {detail[:200]}") from None
        except (urllib.error.URLError, OSError) as e:
            raise ToxiproxyError(f"toxiproxy API {self.base} unreachable: {getattr(e, 'reason', e)}") from None
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            return raw.decode("utf-8", "replace")

    def version(self) -> str:
        v = self._req("GET", "/version")
        return v.get("version", str(v)) if isinstance(v, dict) else str(v).strip()

    def proxies(self) -> dict:
        return self._req("GET", "/proxies") or {}

    def populate(self, proxies: list[dict]) -> list[dict]:
        """Create or replace proxies (idempotent): [{name, listen, upstream, enabled}]."""
        r = self._req("POST", "/populate", proxies)
        return (r or {}).get("proxies", []) if isinstance(r, dict) else r

    def proxy(self, name: str) -> dict:
        return self._req("GET", f"/proxies/{name}")

    def set_enabled(self, name: str, enabled: bool) -> dict:
        try:
            return self._req("PATCH", f"/proxies/{name}", {"enabled": enabled})
        except ToxiproxyError as e:
            if "HTTP 405" not in str(e):
                raise
            return self._req("POST", f"/proxies/{name}", {"enabled": enabled})  # servers < 2.6

    def toxics(self, name: str) -> list[dict]:
        return self._req("GET", f"/proxies/{name}/toxics") or []

    def add_toxic(self, proxy: str, type: str, attributes: dict, name: str,
                  stream: str = "downstream", toxicity: float = 1.0) -> dict:
        return self._req("POST", f"/proxies/{proxy}/toxics",
                         {"name": name, "type": type, "stream": stream, "toxicity": toxicity,
                          "attributes": attributes})

    def remove_toxic(self, proxy: str, name: str) -> None:
        self._req("DELETE", f"/proxies/{proxy}/toxics/{name}")

    def reset(self) -> None:
        """Enable every proxy and remove every toxic."""
        self._req("POST", "/reset")


# -- the proxy of a cluster ---------------------------------------------------------------------

def proxy_container(cluster):
    cs = [c for c in runtime.project_containers(cluster.project)
          if (c.labels or {}).get(T.ROLE) == T.PROXY]
    if not cs:
        raise UsageError(f"project {cluster.project} has no toxiproxy container "
                         f"(start the cluster with toxiproxy.with_toxiproxy(options))")
    return runtime.owned(cs[0], cluster.project)


def api(cluster, wait: float = 15.0) -> ToxiproxyAPI:
    c = proxy_container(cluster)
    port = wait_until(lambda: runtime.published_port(c, API_PORT), wait, poll=0.2)
    if not port:
        raise ToxiproxyError(f"toxiproxy container {c.name} publishes no API port ({runtime.container_state(c)})")
    a = ToxiproxyAPI(f"http://127.0.0.1:{port}")
    last = None
    deadline = time.monotonic() + wait
    while True:
        try:
            a.version()
            return a
        except ToxiproxyError as e:
            last = e
        if time.monotonic() > deadline:
            raise ToxiproxyError(f"toxiproxy API not answering: {last}")
        time.sleep(0.2)


def sql_nodes(cluster) -> list:
    topo = cluster.topology or cluster.discover()
    nodes = [n for n in topo.nodes if n.serves_sql and n.role != T.PROXY]
    return sorted(nodes, key=lambda n: (n.nodeid if n.nodeid is not None else 1 << 30, n.name))


def slots(cluster) -> dict[str, int]:
    """``{sql node: container port of its proxy}`` (stable: by node id)."""
    nodes = sql_nodes(cluster)
    if len(nodes) > SLOTS:
        raise UsageError(f"{len(nodes)} SQL nodes, but the toxiproxy overlay publishes {SLOTS} proxy slots")
    return {n.name: SLOT_BASE + i for i, n in enumerate(nodes)}


def proxy_specs(cluster) -> list[dict]:
    port = getattr(cluster.engine, "sql_private_port", 3306)
    topo = cluster.topology
    return [{"name": name, "listen": f"0.0.0.0:{slot}", "upstream": f"{topo.node(name).container}:{port}",
             "enabled": True} for name, slot in slots(cluster).items()]


def setup(cluster) -> dict[str, int]:
    """Create (or re-create) one proxy per SQL node; return ``proxy_ports(cluster)``."""
    a = api(cluster)
    have = a.proxies()
    # Only proxies that are missing or different: populate replaces a proxy, which drops its
    # open connections. The server reports listen as "[::]:21001", so compare ports.
    todo = [s for s in proxy_specs(cluster) if not _same(have.get(s["name"]), s)]
    if todo:
        a.populate(todo)
    return _published(cluster)


def _same(have: dict | None, want: dict) -> bool:
    if not have:
        return False
    port = lambda listen: str(listen).rsplit(":", 1)[-1]  # noqa: E731
    return have.get("upstream") == want["upstream"] and port(have.get("listen")) == port(want["listen"])


def _published(cluster) -> dict[str, int]:
    c = proxy_container(cluster)
    out = {}
    for name, slot in slots(cluster).items():
        p = runtime.published_port(c, slot)
        if p is None:
            raise ToxiproxyError(f"toxiproxy publishes no port for slot {slot} ({name})")
        out[name] = p
    return out


def proxy_ports(cluster) -> dict[str, int]:
    """``{sql node name: port on 127.0.0.1}``: where a workload connects to go through the
    proxy (instead of ``Node.sql_port``). Creates the proxies on first use."""
    return setup(cluster)


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
                return {"ok": False, "seconds": time.monotonic() - t0, "error": "closed", "chunks": chunks, "bytes": len(got)}
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
        return {"ok": False, "seconds": time.monotonic() - t0, "error": str(e)[:80], "chunks": chunks, "bytes": len(got)}
    finally:
        s.close()


# -- the faults ----------------------------------------------------------------------------------------

class Toxic(Fault):
    """Add a toxic to the proxies of some SQL nodes (default: all of them).

    ``Toxic(cluster, targets, type="latency", attributes={"latency": 300}, stream="downstream")``.
    Each toxic is named ``ndbchaos-<kind>-<id>``; heal removes exactly those."""

    kind = "toxic"
    toxic_type: str | None = None

    def __init__(self, cluster, targets=None, type: str | None = None, attributes: dict | None = None,
                 stream: str = "downstream", toxicity: float = 1.0, **params):
        from .targets import sql
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
        return f"{self.toxic_type}({attrs}) {self.stream} on proxies of {', '.join(t.name for t in self.targets)}; " + "; ".join(seen)

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

    def __init__(self, cluster, targets=None):
        from .targets import sql
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
            p = {"ok": False}
            deadline = time.monotonic() + 5
            while not p["ok"] and time.monotonic() < deadline:
                p = greeting(self.ports[t.name], 2.0)
                if not p["ok"]:
                    time.sleep(0.1)
            if not p["ok"]:
                raise FaultNotEffective(f"proxy of {t.name} does not answer after enable: {p.get('error')}")
            out.append(f"{t.name} {p['seconds'] * 1000:.0f}ms")
        return "proxy up: " + ", ".join(out)
