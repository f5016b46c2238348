"""The toxiproxy server of a cluster: its image and compose overlay, the REST client (ours, on
urllib: see ``toxiproxy`` for why) and the proxies, one per SQL node. The faults are in
``toxiproxy``, which re-exports these names."""

from __future__ import annotations

import functools
import json
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Mapping

from ..runtimes import docker
from .. import topology as TP
from ..errors import BlastRadiusError, NdbChaosError, UsageError
from ..resources import BUILD, COMPOSE_DIR
from ..settings import current
from ..vocabulary import ClusterOptions
from ..waiting import wait_until

OVERLAY = COMPOSE_DIR / "toxiproxy.yml"
API_PORT = 8474
SLOT_BASE = 21001
SLOTS = 8  # container ports 21001-21008 are published by the overlay
IMAGE_ENV = "NDBCHAOS_TOXIPROXY_IMAGE"
TOXIC_PREFIX = "ndbchaos-"


class ToxiproxyError(NdbChaosError):
    pass


# -- image and overlay ---------------------------------------------------------------------------

def image() -> str:
    """The settings' NDBCHAOS_TOXIPROXY_IMAGE, else the recipe's tag (computed once)."""
    return current().toxiproxy_image or _recipe_tag()


@functools.lru_cache(maxsize=1)
def _recipe_tag() -> str:
    r = subprocess.run(["bash", str(BUILD), "--tag", "toxiproxy"], capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.strip():
        raise NdbChaosError(f"cannot compute the toxiproxy image tag: {r.stderr.strip()[-200:]}")
    return r.stdout.strip()


def ensure_image() -> str:
    img = image()
    if docker.image_present(img):
        return img
    r = subprocess.run(["bash", str(BUILD), "toxiproxy"], capture_output=True, text=True)
    if r.returncode != 0 or not docker.image_present(img):
        raise NdbChaosError(f"building {img} failed: {(r.stderr or r.stdout).strip()[-300:]}")
    return img


def with_toxiproxy(options: ClusterOptions | Mapping | None = None) -> ClusterOptions:
    """Cluster options with the toxiproxy overlay added (and its image built if missing).

    The image reaches compose as ``NDBCHAOS_TOXIPROXY_IMAGE`` in ``options.compose_env``, which
    the cluster hands to every compose command it runs."""
    opts = ClusterOptions.of(options)
    img = ensure_image()
    overlays = [Path(p) for p in opts.overlays]
    if OVERLAY not in overlays:
        overlays.append(OVERLAY)
    return opts.with_(overlays=overlays, compose_env={**opts.compose_env, IMAGE_ENV: img})


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
    cs = [c for c in docker.project_containers(cluster.project)
          if (c.labels or {}).get(TP.ROLE) == TP.PROXY]
    if not cs:
        raise UsageError(f"project {cluster.project} has no toxiproxy container "
                         f"(start the cluster with toxiproxy.with_toxiproxy(options))")
    return docker.owned(cs[0], cluster.project)


def api(cluster, wait: float = 15.0) -> ToxiproxyAPI:
    c = proxy_container(cluster)
    port = wait_until(lambda: docker.published_port(c, API_PORT), wait, poll=0.2)
    if not port:
        raise ToxiproxyError(f"toxiproxy container {c.name} publishes no API port ({docker.container_state(c)})")
    a = ToxiproxyAPI(f"http://127.0.0.1:{port}")
    last: list = [None]

    def answers():
        try:
            return a.version() or True
        except ToxiproxyError as e:
            last[0] = e
            return False

    wait_until(answers, wait, poll=0.2,
               on_timeout=lambda: ToxiproxyError(f"toxiproxy API not answering: {last[0]}"))
    return a


def sql_nodes(cluster) -> list:
    topo = cluster.topology or cluster.discover()
    nodes = [n for n in topo.nodes if n.serves_sql and n.role != TP.PROXY]
    return sorted(nodes, key=lambda n: (n.nodeid if n.nodeid is not None else 1 << 30, n.name))


def slots(cluster) -> dict[str, int]:
    """``{sql node: container port of its proxy}`` (stable: by node id)."""
    nodes = sql_nodes(cluster)
    if len(nodes) > SLOTS:
        raise UsageError(f"{len(nodes)} SQL nodes, but the toxiproxy overlay publishes {SLOTS} proxy slots")
    return {n.name: SLOT_BASE + i for i, n in enumerate(nodes)}


def proxy_specs(cluster) -> list[dict]:
    port = cluster.engine.sql_private_port
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
        p = docker.published_port(c, slot)
        if p is None:
            raise ToxiproxyError(f"toxiproxy publishes no port for slot {slot} ({name})")
        out[name] = p
    return out


def proxy_ports(cluster) -> dict[str, int]:
    """``{sql node name: port on 127.0.0.1}``: where a workload connects to go through the
    proxy (instead of ``Node.sql_port``). Creates the proxies on first use."""
    return setup(cluster)
