"""The settings of a run: every ``NDBCHAOS_*`` environment variable, and ``CI``, read in one place
into one frozen, typed value. This module is the one reader of those variables: no other module
of the package reads one (``tests/unit/test_settings.py`` scans the source and fails on any).

    Settings.from_env(environ)   the environment's settings; every value is checked here, a bad
                                 one is a UsageError of one line naming the variable
                                 (``NDBCHAOS_DOCKER_TIMEOUT_S='x': not a number of seconds``)
    settings.with_options(...)   the command line's or pytest's options laid over them: an option
                                 given wins over its variable, an option left out (None) does not
    current()                    the process' settings: those installed with ``use()`` (the pytest
                                 plugin installs its session's, options over the environment),
                                 else the environment's, read on first use and kept
    inherited(environ)           the environment a child process is handed without our variables
                                 (``runtime.compose`` gives Compose its ``${NDBCHAOS_...}`` values
                                 explicitly, built from these settings by the engine and cluster)

``VARIABLES`` names each variable with its field, type, default and meaning; docs/inputs.md has
the same table (a unit test keeps the two alike). Values whose grammar belongs to a module above
this one are kept as text and checked where they are used: ``ndb_layout`` (a layout name, a spec
or a twin's config.ini: ``ndbchaos.engines.ndb.layout``) and ``inventory`` (a file, read by
``ndbchaos.runtimes.inventory``).
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from .errors import UsageError

ENGINE_CHOICES = ("ndb", "galera", "auto")
PUMBA_CHOICES = {"auto": "auto", "pumba": "pumba", "1": "pumba", "yes": "pumba", "on": "pumba", "true": "pumba",
                 "native": "native", "0": "native", "no": "native", "off": "native", "false": "native"}
#: the smallest and largest disk ``ndbchaos.runtimes.compose.disks`` makes (MB): NDB's redo log alone is 256 MB
MIN_MB, MAX_MB = 64, 65536
PORT_PREFIX = "NDBCHAOS_PORT_"


@dataclass(frozen=True)
class Variable:
    name: str
    field: str
    type: str
    default: str
    meaning: str


#: every variable the package reads, in the order docs/inputs.md lists them
VARIABLES = (
    Variable("NDBCHAOS_ENGINE", "engine", "ndb, galera or auto", "auto", "the engine under test (`--engine`)"),
    Variable("NDBCHAOS_INVENTORY", "inventory", "file", "none",
             "run against the cluster this inventory describes (`--inventory`)"),
    Variable("NDBCHAOS_GALERA_DATA_NODES", "galera_data_nodes", "2 or 3", "2",
             "Galera data nodes besides garbd (`--galera-data-nodes`)"),
    Variable("NDBCHAOS_DATA_DISK", "data_disk", "size (512M, 2G)", "none",
             "each data node's data directory on a disk of its own of this size (`--data-disk`)"),
    Variable("NDBCHAOS_NDB_LAYOUT", "ndb_layout", "layout (default, small, a spec)", "default",
             "the NDB layout (`--ndb-layout`; docs/ndb.md)"),
    Variable("NDBCHAOS_NDB_SUBNET", "ndb_subnet", "a /24 (10.50.1)", "the layout's",
             "the NDB cluster's addresses"),
    Variable("NDBCHAOS_NDB_IMAGE", "ndb_image", "image", "none", "exactly this NDB image, never built"),
    Variable("NDBCHAOS_NDB_DIST", "ndb_dist", "path", "none",
             "a MySQL Cluster binary distribution to build the NDB image from (and its ndb_config)"),
    Variable("NDBCHAOS_NDB_ROOT_PASSWORD", "ndb_root_password", "text", "ndbchaos-root",
             "the SQL nodes' root password"),
    Variable("NDBCHAOS_GALERA_IMAGE", "galera_image", "image", "built here", "the Galera image"),
    Variable("NDBCHAOS_TOXIPROXY_IMAGE", "toxiproxy_image", "image", "built here", "the toxiproxy image"),
    Variable("NDBCHAOS_TOOLS_IMAGE", "tools_image", "image", "built here",
             "the tools image (tc, iptables in a node's namespace)"),
    Variable("NDBCHAOS_PUMBA", "pumba", "auto, pumba (1) or native (0)", "auto",
             "container faults through pumba, ours, or pumba when present"),
    Variable("NDBCHAOS_PUMBA_BIN", "pumba_bin", "program", "pumba", "the pumba binary"),
    Variable("NDBCHAOS_DOCKER_TIMEOUT_S", "docker_timeout_s", "seconds", "60", "the bound of every Docker API call"),
    Variable("NDBCHAOS_GUARD_S", "guard_s", "whole seconds (5 at least)", "the inventory's, else 300",
             "how long an ssh guard waits before it undoes a change on its own"),
    Variable("NDBCHAOS_CACHE", "cache", "folder", "~/.cache/ndbchaos", "logs of setup, digests, rendered layouts"),
    Variable("NDBCHAOS_TOOLS", "tools", "folder", "CACHE/tools", "Compose, Allure, the native driver's builds"),
    Variable("NDBCHAOS_DISKS", "disks", "folder", "CACHE/disks", "the data nodes' bounded disks"),
    Variable("NDBCHAOS_PROJECT", "project", "project id", "none",
             "the project `ndbchaos status` and `ndbchaos fault` act on (`--project`)"),
    Variable(PORT_PREFIX + "<SERVICE>", "ports", "port", "chosen free",
             "the host port of a service's SQL port (e.g. NDBCHAOS_PORT_SQL1)"),
    Variable("CI", "ci", "1, true or yes", "false",
             "what CI provides must run: a missing engine, Docker or tool fails instead of skipping"),
)


@dataclass(frozen=True)
class Settings:
    """The run's settings (see the module docstring); ``Settings()`` is every default."""

    engine: str = "auto"
    inventory: str | None = None
    galera_data_nodes: int = 2
    data_disk: str | None = None
    ndb_layout: str | None = None
    ndb_subnet: str | None = None
    ndb_image: str | None = None
    ndb_dist: str | None = None
    ndb_root_password: str | None = None
    galera_image: str | None = None
    toxiproxy_image: str | None = None
    tools_image: str | None = None
    pumba: str = "auto"
    pumba_bin: str = "pumba"
    docker_timeout_s: float = 60.0
    guard_s: int | None = None
    cache: Path = field(default_factory=lambda: Path.home() / ".cache" / "ndbchaos")
    tools: Path | None = None
    disks: Path | None = None
    project: str | None = None
    ports: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    ci: bool = False

    @property
    def tools_dir(self) -> Path:
        """``tools``, else ``cache/tools``."""
        return self.tools or self.cache / "tools"

    @property
    def disks_dir(self) -> Path:
        """``disks``, else ``cache/disks``."""
        return self.disks or self.cache / "disks"

    @property
    def port_env(self) -> dict[str, str]:
        """The pinned ports as Compose's variables (``NDBCHAOS_PORT_SQL1``)."""
        return {PORT_PREFIX + k.upper(): str(v) for k, v in self.ports.items()}

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Settings:
        """The settings of ``environ`` (an empty value is unset); UsageError, one line, for a bad one."""
        values: dict = {}
        for var in VARIABLES:
            if var.field == "ports":
                values["ports"] = MappingProxyType({
                    k[len(PORT_PREFIX):].lower(): _check(k, v, _port)
                    for k, v in sorted(environ.items()) if k.startswith(PORT_PREFIX) and v.strip()})
            elif var.field == "ci":
                values["ci"] = environ.get("CI", "").strip().lower() in ("1", "true", "yes")
            else:
                raw = environ.get(var.name, "")
                if raw.strip():
                    values[var.field] = _check(var.name, raw, PARSERS.get(var.field, _text))
        return cls(**values)

    def with_options(self, **options) -> Settings:
        """These settings with the options given laid over them (None: not given, the variable's
        value stays). Each is checked as its variable is; UsageError names the option."""
        given = {}
        for name, value in options.items():
            if name not in FIELDS:
                raise TypeError(f"Settings has no field {name!r}")
            if value is None:
                continue
            parse = PARSERS.get(name)
            given[name] = _check("--" + name.replace("_", "-"), value, parse) if parse else value
        return dataclasses.replace(self, **given)

    def replace(self, **values) -> Settings:
        return dataclasses.replace(self, **values)


FIELDS = {f.name for f in dataclasses.fields(Settings)}


def _check(name: str, raw, parse: Callable):
    try:
        return parse(raw.strip() if isinstance(raw, str) else raw)
    except (ValueError, UsageError) as e:
        raise UsageError(f"{name}={raw!r}: {e}") from None


def _text(v: str) -> str:
    return v


def _engine(v: str) -> str:
    if str(v).lower() not in ENGINE_CHOICES:
        raise ValueError(f"not an engine ({', '.join(ENGINE_CHOICES)})")
    return str(v).lower()


def _galera_data_nodes(v) -> int:
    try:
        n = int(v)
    except ValueError:
        raise ValueError("not a whole number (2 or 3)") from None
    if n not in (2, 3):
        raise ValueError("2 or 3 Galera data nodes")
    return n


def _seconds(v: str) -> float:
    try:
        s = float(v)
    except ValueError:
        raise ValueError("not a number of seconds") from None
    if not 0 < s < float("inf"):
        raise ValueError("not a positive number of seconds")
    return s


def _whole_seconds(v: str) -> int:
    try:
        return int(v)
    except ValueError:
        raise ValueError("not a whole number of seconds") from None


def _port(v: str) -> int:
    try:
        p = int(v)
    except ValueError:
        raise ValueError("not a port number") from None
    if not 1 <= p <= 65535:
        raise ValueError("not a port number (1-65535)")
    return p


def _pumba(v: str) -> str:
    try:
        return PUMBA_CHOICES[str(v).lower()]
    except KeyError:
        raise ValueError("expected auto, pumba (1, yes, on, true) or native (0, no, off, false)") from None


def _path(v: str) -> Path:
    return Path(v).expanduser()


def size_mb(value) -> int:
    """``512``, ``"512M"``, ``"2G"`` -> MB; ValueError (what is wrong) for anything else or a size
    outside MIN_MB..MAX_MB."""
    m = re.fullmatch(r"\s*(\d+)\s*([MmGg]?)[Bb]?\s*", str(value))
    if not m:
        raise ValueError("expected a number of MB, e.g. 512M or 2G")
    mb = int(m.group(1)) * (1024 if m.group(2).lower() == "g" else 1)
    if not MIN_MB <= mb <= MAX_MB:
        raise ValueError(f"between {MIN_MB} MB and {MAX_MB // 1024} GB")
    return mb


def _data_disk(v) -> str:
    size_mb(v)
    return str(v)


def normalize_subnet(value: str) -> str:
    """``10.1.2`` / ``10.1.2.0`` / ``10.1.2.0/24`` -> ``10.1.2`` (the first three octets of a /24);
    UsageError naming NDBCHAOS_NDB_SUBNET otherwise."""
    return _check("NDBCHAOS_NDB_SUBNET", value, _subnet)


def _subnet(v: str) -> str:
    m = re.fullmatch(r"(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?:\.0)?(?:/(\d+))?", str(v).strip())
    if not m or any(int(x) > 255 for x in m.groups()[:3]):
        raise ValueError("expected the first three octets of a /24, e.g. 10.213.77")
    if m.group(4) not in (None, "24"):
        raise ValueError("only a /24 is supported")
    return ".".join(m.groups()[:3])


PARSERS: dict[str, Callable] = {
    "engine": _engine, "galera_data_nodes": _galera_data_nodes, "data_disk": _data_disk, "ndb_subnet": _subnet,
    "pumba": _pumba, "docker_timeout_s": _seconds, "guard_s": _whole_seconds, "cache": _path, "tools": _path,
    "disks": _path,
}


def inherited(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` without the package's variables: what a child process (Compose) inherits, the
    values it needs from these settings being handed to it explicitly."""
    return {k: v for k, v in environ.items() if not k.startswith("NDBCHAOS_")}


_current: Settings | None = None


def current() -> Settings:
    """The process' settings: those installed with ``use()``, else the environment's, read on
    first use and kept. For call sites too deep for the settings to be handed down (see the
    modules that call it); a bad variable is a UsageError here, on first use, not at import."""
    global _current
    if _current is None:
        _current = Settings.from_env(os.environ)
    return _current


def use(settings: Settings | None) -> None:
    """Install ``settings`` as the process' (None: forget them, so the next ``current()`` reads the
    environment again)."""
    global _current
    _current = settings
