"""my.cnf: the [mysqld] options of an SQL node, read from a file (``parse``), and what a twin keeps
of a user's (``twin_mysqld``): the options that decide what clients of an NDB cluster see (how
long mysqld waits for the cluster, connection pooling, NDB's reads and sends, timeouts, isolation,
schema distribution), with everything else named and why, never silently dropped.

MySQL reads option names with ``-`` and ``_`` alike (``ndb_wait_connected`` is ``ndb-wait-connected``);
names here are the dashed form. A bare option (``ndbcluster``) has the value ``""``.
"""

from __future__ import annotations

import re
from pathlib import Path

from ...errors import UsageError

#: [mysqld] options kept from the user's file: they decide what an SQL node's clients see
KEPT = frozenset({
    # the cluster connection: waits at start, pooling, node selection, sends
    "ndb-wait-connected", "ndb-wait-setup", "ndb-cluster-connection-pool", "ndb-cluster-connection-pool-nodeids",
    "ndb-optimized-node-selection", "ndb-data-node-neighbour", "ndb-force-send", "ndb-batch-size",
    "ndb-blob-read-batch-bytes", "ndb-blob-write-batch-bytes", "ndb-read-backup", "ndb-fully-replicated",
    "ndb-use-exact-count", "ndb-use-transactions", "ndb-autoincrement-prefetch-sz", "ndb-join-pushdown",
    "ndb-deferred-constraints", "ndb-default-column-format", "ndb-allow-copying-alter-table",
    "ndb-index-stat-enable", "ndb-table-no-logging", "ndb-table-temporary",
    # schema distribution and metadata
    "ndb-schema-dist-timeout", "ndb-schema-dist-lock-wait-timeout", "ndb-metadata-check",
    "ndb-metadata-check-interval", "ndb-extra-logging",
    # what a client's session gets
    "transaction-isolation", "autocommit", "sql-mode", "max-connections", "wait-timeout", "interactive-timeout",
    "lock-wait-timeout", "innodb-lock-wait-timeout", "net-read-timeout", "net-write-timeout", "connect-timeout",
    "max-allowed-packet", "default-storage-engine", "default-tmp-storage-engine", "character-set-server",
    "collation-server",
})
#: sized for the user's hosts: the twin's SQL nodes keep the default layout's (or mysqld's)
SCALED = frozenset({
    "innodb-buffer-pool-size", "innodb-log-file-size", "innodb-redo-log-capacity", "key-buffer-size",
    "table-open-cache", "table-definition-cache", "thread-cache-size", "max-heap-table-size", "tmp-table-size",
    "sort-buffer-size", "join-buffer-size", "read-buffer-size", "read-rnd-buffer-size", "thread-stack",
    "innodb-buffer-pool-instances", "innodb-io-capacity", "innodb-io-capacity-max", "open-files-limit",
    "back-log", "innodb-log-buffer-size", "binlog-cache-size",
})
#: where the user's hosts keep files or listen, who runs mysqld, or the cluster connection itself:
#: the containers have their own
PLACES = frozenset({
    "datadir", "basedir", "tmpdir", "socket", "port", "bind-address", "admin-address", "admin-port",
    "mysqlx-port", "mysqlx-socket", "mysqlx-bind-address", "log-error", "pid-file", "general-log-file",
    "slow-query-log-file", "log-bin", "log-bin-index", "relay-log", "relay-log-index", "plugin-dir",
    "secure-file-priv", "user", "ndb-connectstring", "ndb-mgmd-host", "ndb-nodeid", "server-id",
    "ssl-ca", "ssl-cert", "ssl-key", "ssl-capath", "ssl-cipher", "ssl-crl", "ssl-crlpath", "tls-version",
    "require-secure-transport", "skip-networking", "skip-name-resolve", "lc-messages-dir", "character-sets-dir",
})
#: sections whose options are a server's (MySQL reads [mysqld] and [server], and versioned forms)
SERVER_SECTIONS = re.compile(r"^(mysqld|server|mysqld-\d+(\.\d+)*|mariadb)$", re.I)

_SECTION = re.compile(r"^\[\s*(?P<name>[^\]]+?)\s*\]\s*$")
_OPTION = re.compile(r"^(?P<key>[A-Za-z0-9_-]+)\s*(?:=\s*(?P<value>.*?))?\s*$")


def canonical(name: str) -> str:
    """An option name as MySQL reads it: lower case, ``_`` as ``-``; a loose prefix kept."""
    return name.strip().lower().replace("_", "-")


def _unquote(v: str) -> str:
    v = v.strip()
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"":
        return v[1:-1]
    return v


def parse(text: str, what: str = "my.cnf") -> dict[str, dict[str, str]]:
    """section (lower case) -> option (canonical) -> value, later values winning as in MySQL;
    UsageError (one line) for a line that is none of a section, an option, a comment, or an
    ``!include``/``!includedir`` (which a twin cannot follow: refused)."""
    out: dict[str, dict[str, str]] = {}
    section = None
    for i, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("!include"):
            raise UsageError(f"{what} line {i}: {line.split()[0]} is not followed (give one file with every option)")
        m = _SECTION.match(line)
        if m:
            section = m.group("name").lower()
            out.setdefault(section, {})
            continue
        m = _OPTION.match(re.sub(r"\s+#.*$", "", line))
        if not m or section is None:
            raise UsageError(f"{what} line {i}: {line[:60]!r} is neither a [section] nor an option in one")
        out[section][canonical(m.group("key"))] = _unquote(m.group("value") or "")
    return out


def decode(data: bytes) -> str:
    """An option file's text: UTF-8, else latin-1 (MySQL reads option files as bytes; a latin-1
    comment is not an error to it)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data.decode("latin-1")


def read_text(path: str | Path, flag: str = "--ndb-mycnf") -> str:
    """The text of the my.cnf ``path`` (``decode``); UsageError (one line) naming it when it
    cannot be read (missing, a directory, no permission)."""
    p = Path(path).expanduser()
    try:
        return decode(p.read_bytes())
    except IsADirectoryError:
        raise UsageError(f"{flag} {path}: is a directory, not a file") from None
    except OSError as e:
        raise UsageError(f"{flag} {path}: {e.strerror or e}") from None


def read(path: str | Path) -> dict[str, dict[str, str]]:
    p = Path(path).expanduser()
    return parse(read_text(p), f"--ndb-mycnf {p}")


def server_options(sections: dict[str, dict[str, str]]) -> dict[str, str]:
    """The options a server reads, merged in file order of its sections."""
    out: dict[str, str] = {}
    for name, opts in sections.items():
        if SERVER_SECTIONS.match(name):
            out.update(opts)
    return out


def twin_mysqld(sections: dict[str, dict[str, str]]) -> tuple[dict[str, str], list[str]]:
    """(the [mysqld] options a twin's SQL nodes get from the user's file, what differs and why)."""
    kept: dict[str, str] = {}
    changes: list[str] = []
    server = server_options(sections)
    if not any(SERVER_SECTIONS.match(s) for s in sections):
        raise UsageError("--ndb-mycnf: no [mysqld] section (the SQL nodes' options are read from it)")
    for key, value in sorted(server.items()):
        shown = f"{key}={value}" if value != "" else key
        if key in ("ndbcluster", "ndb-cluster"):
            continue
        if key in KEPT:
            kept[key] = value
        elif key in SCALED:
            changes.append(f"[mysqld] {shown} -> the default layout's or mysqld's (sized for your hosts; the twin's "
                           "SQL nodes share one 2-core, 24 GB machine)")
        elif key in PLACES:
            changes.append(f"[mysqld] {shown} not reproduced (where your hosts keep files or listen, or the cluster "
                           "connection: the containers have their own)")
        else:
            changes.append(f"[mysqld] {shown} not reproduced (mysqld's default applies)")
    if "ndbcluster" not in server and "ndb-cluster" not in server:
        changes.append("[mysqld] has no ndbcluster: the twin's SQL nodes enable it (they are SQL nodes of the cluster)")
    for name in sorted(s for s in sections if not SERVER_SECTIONS.match(s)):
        if sections[name]:
            changes.append(f"[{name}] not reproduced (options of other programs; the twin's clients are ours and its "
                           "management connection is its own)")
    return kept, changes


def seconds(mysqld: dict[str, str], key: str, default: float) -> float:
    """A whole-seconds option of mysqld's (``ndb-wait-connected``), or ``default`` when unset or not a
    number."""
    try:
        return float(mysqld[key])
    except (KeyError, ValueError):
        return default


__all__ = ["KEPT", "PLACES", "SCALED", "canonical", "decode", "parse", "read", "read_text", "server_options", "seconds",
           "twin_mysqld"]
