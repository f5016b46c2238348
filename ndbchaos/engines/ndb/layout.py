"""The cluster layouts of the NDB engine: compose files, config.ini/my.cnf (rendered for another
subnet when asked), their services, the image, the ports a fault probes, and the options that
reproduce a running cluster's shape.

Addresses are fixed because config.ini names every node's ``HostName``: last octet = 100 + node
id in the cluster's own /24 (``LAYOUTS``' default prefix, or ``NDBCHAOS_NDB_SUBNET``).

Options first, then the process' settings (``ndbchaos.settings.current()``: the pytest session's
``--ndb-layout`` over ``NDBCHAOS_NDB_LAYOUT``, the subnet, the root password): the engine's
methods take the cluster's options, and a call without them (a fault's facts, ``_config_node``)
still finds the session's layout.
"""

from __future__ import annotations

import functools
import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ...runtimes import docker
from ... import topology as TP
from ...errors import InventoryError, UsageError
from ...resources import COMPOSE_DIR, tools_dir
from ...settings import current, normalize_subnet
from ...vocabulary import ClusterOptions
from .config import NdbConfig, parse_config_ini, read_config, replace_prefix
from .mycnf import parse as parse_mycnf
from .mycnf import server_options
from .image import choose as choose_image
from .image import ensure as ensure_image
from .liveconfig import check as check_live_config
from .liveconfig import parse as parse_live_config
from .liveconfig import queries as live_config_queries
from .render import SPEC_LABEL
from .render import compose as render_compose
from .render import config_ini as render_config_ini
from .render import my_cnf as render_my_cnf
from .spec import LayoutSpec, resolve
from .twin import MYCNF_SEP, TwinLayout, twin_of

if TYPE_CHECKING:  # pragma: no cover
    from ...runtimes.inventory.cluster import InventoryCluster

DEFAULT_ROOT_PASSWORD = "ndbchaos-root"

LAYOUTS = {
    # compose file, config.ini, my.cnf, default subnet prefix (first three octets of a /24)
    "default": ("ndb.yml", "ndb/config.ini", "ndb/my.cnf", "10.213.77"),
    "small": ("ndb-small.yml", "ndb/config-small.ini", "ndb/my-small.cnf", "10.213.78"),
}
#: default subnet of a layout generated from a spec (``spec``, ``render``): one of its own, so a
#: default, a small and a generated cluster can run at the same time
GENERATED_NET = "10.213.79"


def _cached(name: str, suffix: str, text: str) -> Path:
    """``text`` in the tool cache as ``<name>-<content hash><suffix>``, written atomically once."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    dst = tools_dir().parent / "ndb" / f"{name}-{digest}{suffix}"
    if not dst.exists():
        dst.parent.mkdir(parents=True, exist_ok=True)
        tmp = dst.with_suffix(dst.suffix + f".{os.getpid()}.tmp")
        tmp.write_text(text)
        tmp.replace(dst)
    return dst


def _slug(spec: LayoutSpec | TwinLayout) -> str:
    """``nodegroups=3,replicas=2,...`` -> ``ng3-r2-sql2-mgm2-spare0``, a twin -> ``twin-<its file's
    hash>`` (a file name)."""
    if isinstance(spec, TwinLayout):
        return f"twin-{spec.digest}"
    return f"ng{spec.nodegroups}-r{spec.replicas}-sql{spec.sql}-mgm{spec.mgm}-spare{spec.spare}"


#: the layout option of a twin: ``config=<path of the user's config.ini>``
TWIN_PREFIX = "config="


def _resolve(value: str) -> tuple[str, LayoutSpec | TwinLayout]:
    """A layout option -> (name, layout): ``spec.resolve``, or a twin of a user's config.ini
    (``config=PATH``: ``twin.twin_of``, named by its absolute path)."""
    v = str(value).strip()
    if v.lower().startswith(TWIN_PREFIX):
        ini, _, cnf = v[len(TWIN_PREFIX):].partition(MYCNF_SEP)
        stamps = []
        for flag, f in (("--ndb-config", ini), ("--ndb-mycnf", cnf)):
            if not f:
                stamps.append(None)
                continue
            p = Path(f).expanduser()
            try:
                st = p.stat()
            except OSError as e:
                raise UsageError(f"{flag} {p}: {e.strerror or e}") from None
            stamps.append((str(p.resolve()), st.st_mtime_ns, st.st_size))
        twin = _twin(*stamps)
        return str(twin), twin
    return resolve(v)


@functools.lru_cache(maxsize=8)
def _twin(ini: tuple, cnf: tuple | None) -> TwinLayout:
    return twin_of(ini[0], cnf[0] if cnf else None)


def _default_net(layout: str) -> str:
    return LAYOUTS[layout][3] if layout in LAYOUTS else GENERATED_NET


class NdbLayouts:
    """The layouts part: images, compose files and their environment, config files (and the
    configuration they make, or the one adopted from a running cluster), services, probe ports,
    the options that reproduce a running cluster. The Lifecycle, Status and Rules parts ask it;
    ``sql_port`` is the SQL port inside an SQL node's container."""

    def __init__(self, sql_port: int = 3306):
        self.sql_port = sql_port
        #: the configuration read from a running cluster (an inventory's: ``check_inventory``);
        #: when set, it is the configuration of this engine's cluster instead of a shipped config.ini
        self._adopted: NdbConfig | None = None
        self._shipped_cfg: dict[str, NdbConfig] = {}  # layout -> its shipped config.ini, for probe_ports

    # -- images and compose ---------------------------------------------------------------
    def image(self, options: ClusterOptions) -> str:
        """The image of this run: ``ndbchaos.engines.ndb.image.choose`` (explicit, else an official
        image present locally, else one built from NDBCHAOS_NDB_DIST)."""
        return choose_image(options).image

    def images(self, options: ClusterOptions) -> list[str]:
        return [self.image(options)]

    def ensure_images(self, options: ClusterOptions) -> None:
        """Build the image of NDBCHAOS_NDB_DIST when it is the one chosen and missing; refuse, in
        one line, any other missing image. Never pulls."""
        ensure_image(choose_image(options))

    def layout(self, options: ClusterOptions) -> str:
        """The layout in use: ``default``, ``small`` or a spec's canonical text
        (``nodegroups=3,replicas=2,sql=2,mgm=2,spare=0``): option ndb_layout, else
        the settings' (``--ndb-layout``, NDBCHAOS_NDB_LAYOUT), else default. UsageError (one line)
        for an impossible spec."""
        return _resolve(options.ndb_layout or current().ndb_layout or "default")[0]

    def layout_spec(self, options: ClusterOptions) -> LayoutSpec:
        return _resolve(self.layout(options))[1]

    def layout_text(self, options: ClusterOptions, which: str) -> str:
        """The text of the layout's ``config.ini``, ``my.cnf`` or ``compose`` file, for the subnet in
        use, without writing anything (``ndbchaos layout``)."""
        lay, net = self.layout(options), self.subnet(options)
        if lay in LAYOUTS:
            name, ini, cnf, default_net = LAYOUTS[lay]
            text = (COMPOSE_DIR / {"config.ini": ini, "my.cnf": cnf, "compose": name}[which]).read_text()
            return text if which == "compose" else replace_prefix(text, default_net, net)
        spec = _resolve(lay)[1]
        if which == "compose":
            return render_compose(spec, net)
        return (render_config_ini if which == "config.ini" else render_my_cnf)(spec, net)

    def subnet(self, options: ClusterOptions) -> str:
        v = options.ndb_subnet
        return normalize_subnet(v) if v else current().ndb_subnet or _default_net(self.layout(options))

    def config_files(self, options: ClusterOptions) -> tuple[Path, Path]:
        """(config.ini, my.cnf) in use: the shipped files, copies rendered for another subnet, or
        those generated from a spec (content-hashed names in the tool cache)."""
        lay, net = self.layout(options), self.subnet(options)
        if lay not in LAYOUTS:
            spec = _resolve(lay)[1]
            return (_cached(f"config-{_slug(spec)}-{net}", ".ini", render_config_ini(spec, net)),
                    _cached(f"my-{_slug(spec)}-{net}", ".cnf", render_my_cnf(spec, net)))
        _, ini, cnf, default_net = LAYOUTS[lay]
        ini_p, cnf_p = COMPOSE_DIR / ini, COMPOSE_DIR / cnf
        if net == default_net:
            return ini_p, cnf_p
        return tuple(_cached(f"{src.stem}-{net}", src.suffix, replace_prefix(src.read_text(), default_net, net))
                     for src in (ini_p, cnf_p))

    def config(self, options: ClusterOptions) -> NdbConfig:
        if self._adopted is not None:
            return self._adopted
        ini, cnf = self.config_files(options)
        cfg = read_config(ini)
        # the SQL nodes' options the bounds derive from (ndb-wait-connected, ndb-wait-setup)
        cfg.mysqld = server_options(parse_mycnf(Path(cnf).read_text(), str(cnf)))
        return cfg

    def check_inventory(self, cluster: InventoryCluster) -> list[str]:
        """Read the running cluster's configuration on a management host (``liveconfig``), check
        the inventory against it (one-line InventoryError), fill in what the inventory left out,
        and use that configuration from now on. Returns notes for the run's journal."""
        inv = cluster.inventory
        last = "no management node of the inventory runs"
        for spec in [n for n in inv.nodes if n.role == TP.MGM]:
            h = cluster.container(spec.name)
            if h.status != "running":
                continue
            cs = inv.connectstring or f"127.0.0.1:{self.MGM_PORT_DEFAULT}"
            outs = []
            for q in live_config_queries(cs):
                code, out = docker.exec_in(h, q, timeout=30)
                if code != 0:
                    last = f"ndb_config on {spec.name} failed (exit {code}): {out.strip()[-200:]}"
                    break
                outs.append(out)
            if len(outs) < 2:
                continue
            try:
                cfg = parse_live_config(*outs)
            except ValueError as e:
                last = f"ndb_config on {spec.name}: {e}"
                continue
            problems, notes = check_live_config(inv, cfg)
            if problems:
                raise InventoryError(f"inventory {inv.path}: {problems[0]}")
            for s in inv.nodes:  # what the cluster told us, on the handles' labels too
                labels = cluster.container(s.name).labels
                labels[TP.NODEGROUP] = "" if s.nodegroup is None else str(s.nodegroup)
                if s.datadir:
                    labels[TP.LABEL_PREFIX + "datadir"] = s.datadir
            self._adopted = cfg
            return [f"configuration read from the cluster by ndb_config on {spec.name}"] + notes
        raise InventoryError(f"inventory {inv.path}: cannot read the cluster's configuration: {last}")

    def root_password(self, options: ClusterOptions) -> str:
        return options.ndb_root_password or current().ndb_root_password or DEFAULT_ROOT_PASSWORD

    def compose_files(self, options: ClusterOptions) -> list[Path]:
        lay = self.layout(options)
        if lay in LAYOUTS:
            main = COMPOSE_DIR / LAYOUTS[lay][0]
        else:
            spec, net = _resolve(lay)[1], _default_net(lay)
            ini, cnf = self.config_files(options.with_(ndb_subnet=net))
            main = _cached(f"ndb-{_slug(spec)}", ".yml", render_compose(spec, net, str(ini), str(cnf)))
        return [main] + [Path(p) for p in options.overlays]

    def compose_env(self, options: ClusterOptions) -> dict[str, str]:
        ini, cnf = self.config_files(options)
        env = {
            "NDBCHAOS_NDB_IMAGE": self.image(options),
            "NDBCHAOS_NDB_SUBNET": self.subnet(options),
            "NDBCHAOS_NDB_CONFIG": str(ini),
            "NDBCHAOS_NDB_MYCNF": str(cnf),
            "NDBCHAOS_NDB_ROOT_PASSWORD": self.root_password(options),
        }
        for k, v in options.ports.items():
            env[f"NDBCHAOS_PORT_{k.upper()}"] = str(v)
        return env

    def compose_profiles(self, options: ClusterOptions) -> list[str]:
        return []

    def services(self, options: ClusterOptions) -> dict[str, list[str]]:
        """role -> compose service names of the layout, in node id order."""
        import yaml
        doc = yaml.safe_load(self.compose_files(options)[0].read_text())
        out: dict[str, list[tuple[int, str]]] = {}
        for name, svc in (doc.get("services") or {}).items():
            labels = svc.get("labels") or {}
            role = labels.get(TP.ROLE)
            nid = int(labels.get(TP.NODEID) or 0)
            out.setdefault(role, []).append((nid, name))
        return {r: [n for _, n in sorted(v)] for r, v in out.items()}

    def overlay_services(self, options: ClusterOptions) -> list[str]:
        """Services the overlay compose files add (e.g. toxiproxy), in file order."""
        import yaml
        out: list[str] = []
        for p in self.compose_files(options)[1:]:
            doc = yaml.safe_load(Path(p).read_text()) or {}
            out += [name for name in (doc.get("services") or {}) if name not in out]
        return out

    # -- facts for the fault catalogue (ndbchaos.faults) -------------------------------------------
    #: ndb_mgmd's PortNumber default (8.4 manual; docs/facts.md NDB 1.1: the image EXPOSEs 1186)
    MGM_PORT_DEFAULT = 1186
    #: the conventional data node ServerPort (ndb.md 1.1: the image EXPOSEs 2202); used only when
    #: config.ini sets none (then the port is allocated dynamically and this one answers "refused",
    #: which a probe still counts as reachable)
    SERVER_PORT_DEFAULT = 2202

    def _config_node(self, node: TP.Node):
        """The config.ini section of ``node`` (by node id and type), searching the layout in use
        (the settings', else default) first, then the other layouts. Ports do not depend on
        the subnet, so the shipped files are read as they are. (config node, its NdbConfig)."""
        want = {TP.MGM: "MGM", TP.DATA: "NDB", TP.SQL: "API"}.get(node.role)
        if self._adopted is not None:
            cn = self._adopted.node(node.nodeid) if node.nodeid is not None else None
            return (cn if cn is not None and cn.type == want else None), self._adopted
        try:
            first = self.layout(ClusterOptions())
        except UsageError:
            first = "default"
        cache = self._shipped_cfg
        for lay in [first] + [x for x in LAYOUTS if x != first]:
            cfg = cache.get(lay)
            if cfg is None:
                cfg = cache[lay] = (read_config(COMPOSE_DIR / LAYOUTS[lay][1]) if lay in LAYOUTS
                                    else parse_config_ini(render_config_ini(_resolve(lay)[1])))
            if node.nodeid is not None:
                cn = cfg.node(node.nodeid)
                if cn is not None and cn.type == want:
                    return cn, cfg
        return None, cache[first]

    def probe_ports(self, node) -> list[int]:
        """Peer-facing port first (``faults/partition.py`` verifies a partition with a connect to ports[0]):

        * management node: its ``PortNumber`` in config.ini (default 1186): data, SQL and the other
          management node connect there;
        * data node: its ``ServerPort`` in config.ini (2202 in ours, set in [ndbd default]): the
          transporter port other data nodes and API/SQL nodes connect to;
        * SQL node: the MySQL port 3306. A mysqld opens no NDB port of its own (it connects out to
          1186 and the data nodes' ServerPort), so 3306 is the only port a peer can probe.
        Only ports the process listens on are listed: probing a port nobody listens on answers
        "refused", which the probe counts as reachable and would prove nothing about the path.
        """
        cn, cfg = self._config_node(node)
        if node.role == TP.MGM:
            v = (cn.get("PortNumber") if cn is not None else None) or cfg.defaults.get("MGM", {}).get("portnumber")
            return [int(v) if v else self.MGM_PORT_DEFAULT]
        if node.role == TP.DATA:
            v = (cn.get("ServerPort") if cn is not None else None) or cfg.data_param("ServerPort")
            return [int(v) if v else self.SERVER_PORT_DEFAULT]
        if node.role == TP.SQL:
            return [self.sql_port]
        raise UsageError(f"{node.name}: role {node.role!r} is not a node of an NDB cluster (no port to probe)")

    def options_from_topology(self, topology) -> ClusterOptions:
        """The options of the layout whose config.ini has exactly the topology's data node ids
        (default 11-14, small 2-3; management and SQL node ids must belong to it too), plus
        ``ndb_subnet`` when the nodes' addresses ("last octet = 100 + NodeId") are on another /24
        than the layout's default. Raises UsageError for a shape no layout has."""
        labelled = {(n.role, n.nodeid) for n in topology.nodes if n.role in (TP.MGM, TP.DATA, TP.SQL)}
        data_ids = {i for r, i in labelled if r == TP.DATA}
        if not data_ids or None in data_ids:
            raise UsageError(f"project {topology.project}: no data nodes with an {TP.NODEID} label; "
                             "cannot tell the NDB layout")
        kind = {"MGM": TP.MGM, "NDB": TP.DATA, "API": TP.SQL}
        found = None
        specs = {n.labels.get(SPEC_LABEL) for n in topology.nodes if n.labels.get(SPEC_LABEL)}
        if len(specs) > 1:
            raise UsageError(f"project {topology.project}: containers of more than one NDB layout: {sorted(specs)}")
        if specs:  # a generated layout: its containers carry their spec
            lay = self.layout(ClusterOptions(ndb_layout=specs.pop()))
            found = (lay, _default_net(lay))
        for lay, (_, ini, _, net) in ({} if found else LAYOUTS).items():
            cfg = read_config(COMPOSE_DIR / ini)
            ids = {(kind[c.type], c.node_id) for c in cfg.nodes}
            if {c.node_id for c in cfg.data_nodes} == data_ids and labelled <= ids:
                found = (lay, net)
                break
        if found is None:
            raise UsageError(f"project {topology.project}: node ids {sorted((r, i) for r, i in labelled)} match no "
                             f"NDB layout ({', '.join(LAYOUTS)})")
        lay, default_net = found
        opts = ClusterOptions(ndb_layout=lay)
        prefixes = {n.ip.rsplit(".", 1)[0] for n in topology.nodes
                    if n.ip and n.nodeid is not None and n.role in (TP.MGM, TP.DATA, TP.SQL)
                    and n.ip.rsplit(".", 1)[-1] == str(100 + n.nodeid)}
        if len(prefixes) == 1:
            net = prefixes.pop()
            if net != default_net:
                opts = opts.with_(ndb_subnet=normalize_subnet(net))
        return opts
