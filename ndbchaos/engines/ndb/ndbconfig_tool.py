"""The engine's own reading of a config.ini: ``ndb_config`` of the MySQL Cluster distribution
(``NDBCHAOS_NDB_DIST``, as ``image.py`` finds it), run on the user's file.

    tool = ndb_config()                       # Path, or None without a distribution
    ans = read(tool, data)                    # Answer: nodes and parameters, or ndb_config's refusal

``ndb_config --config-file=FILE`` applies ndb_mgmd's parser and rules (InitConfigFileParser.cpp,
ConfigInfo.cpp) and either prints what it read or refuses with ``at line N: <reason>``. One thing
it checks is the user's network, not the file: every HostName must resolve on this machine. The
user's hosts do not (their twin's nodes are containers), so the file ndb_config reads has each
host name that is not an address or ``localhost`` replaced by an address of the benchmark range
198.18.0.0/15, one per name, mapped back in the answer; everything else is the user's, byte for
byte.

``configinfo`` turns ``ndb_config --configinfo --xml`` into the parameter table the framework's
own parser (``iniread.load_config_ini``) reads, ``ndbchaos/data/ndb/configinfo-<version>.json``:
``python -m ndbchaos.engines.ndb.ndbconfig_tool configinfo`` writes it again.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import NdbChaosError
from ...resources import DATA_DIR, cache_dir
from .image import DIST_ENV, dist_path
from .iniread import trim_line, trim_value

#: the distribution the parameter table was taken from
VERSION = "9.7.2"
TABLE = DATA_DIR / "ndb" / f"configinfo-{VERSION}.json"
#: configinfo's section names -> the parser's (ndb_config's messages name DB, API, MGM)
SECTIONS = {"NDBD": "DB", "MYSQLD": "API", "NDB_MGMD": "MGM", "SYSTEM": "SYSTEM", "TCP": "TCP", "SHM": "SHM"}
_ERROR = re.compile(r"\[ndb_config\] ERROR\s+-- (?:at line (?P<line>-?\d+): )?(?P<msg>.*)$")
_ADDRESS = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")
#: parameters asked of every data node (the failure detection, arbitration and checkpoint settings)
DATA_QUERY = ("NoOfReplicas", "HeartbeatIntervalDbDb", "HeartbeatIntervalDbApi", "ArbitrationTimeout",
              "Arbitration", "TimeBetweenGlobalCheckpoints", "TimeBetweenGlobalCheckpointsTimeout",
              "TimeBetweenEpochs", "TimeBetweenEpochsTimeout", "TimeBetweenLocalCheckpoints", "StopOnError",
              "StartPartialTimeout", "StartPartitionedTimeout", "TransactionDeadlockDetectionTimeout")
#: ndb_config prints Arbitration as its index in the allowed values
ARBITRATION = ("Disabled", "Default", "WaitExternal")


@dataclass
class Answer:
    """What ndb_config read: ``error`` (``line N: reason``, one line) when it refused the file, else
    ``nodes`` (node id -> (type, node group or None, host name)), ``ranks`` (node id ->
    ArbitrationRank, management and API nodes) and ``data`` (data node id -> parameter -> value)."""
    error: str | None = None
    nodes: dict = field(default_factory=dict)
    ranks: dict = field(default_factory=dict)
    data: dict = field(default_factory=dict)


# -- the tool -----------------------------------------------------------------------------
def ndb_config() -> Path | None:
    """``bin/ndb_config`` of ``NDBCHAOS_NDB_DIST`` (extracted once into the cache from a tarball),
    None when the variable is unset; NdbChaosError (one line) when it names no usable
    distribution."""
    dist = dist_path()
    if not dist:
        return None
    try:
        st = os.stat(dist)
    except OSError as e:
        raise NdbChaosError(f"{DIST_ENV}={dist}: {e.strerror or e}") from None
    return _extract(dist, (st.st_size, st.st_mtime_ns))


@functools.lru_cache(maxsize=4)
def _extract(dist: str, stamp: tuple) -> Path:
    p = Path(dist)
    if p.is_dir():
        tool = p / "bin" / "ndb_config"
        if not os.access(tool, os.X_OK):
            raise NdbChaosError(f"{DIST_ENV}={dist}: no bin/ndb_config in it")
        return tool
    key = hashlib.sha256(f"{p.resolve()}:{stamp}".encode()).hexdigest()[:12]
    dst = cache_dir() / "ndb" / f"ndb_config-{key}"
    if dst.exists():
        return dst
    try:
        with tarfile.open(p) as tf:
            member = next((m for m in tf.getmembers() if m.name.endswith("/bin/ndb_config") and m.isfile()), None)
            if member is None:
                raise NdbChaosError(f"{DIST_ENV}={dist}: no bin/ndb_config in it")
            src = tf.extractfile(member)
            dst.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=dst.parent, delete=False) as tmp:
                tmp.write(src.read())
    except (OSError, tarfile.TarError, EOFError) as e:
        why = " ".join(str(e).split())  # tarfile's reasons span lines
        raise NdbChaosError(f"{DIST_ENV}={dist}: not a readable MySQL Cluster distribution ({why})") from None
    os.chmod(tmp.name, 0o755)
    os.replace(tmp.name, dst)
    return dst


def _run(tool: Path, path: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(tool), "--no-defaults", f"--config-file={path}", *args], capture_output=True,
                          text=True, encoding="latin-1", timeout=30)


def refusal(output: str) -> str | None:
    """ndb_config's first error, one line: ``line N: reason`` (a reason printed over two lines,
    as the range of a value is, joined)."""
    lines = output.splitlines()
    for i, ln in enumerate(lines):
        m = _ERROR.search(ln)
        if m:
            msg = m.group("msg").rstrip()
            if i + 1 < len(lines) and lines[i + 1].startswith("Legal values"):
                msg += " " + lines[i + 1].strip()
            return f"line {m.group('line')}: {msg}" if m.group("line") is not None else msg
    return None


def _hosts_replaced(data: bytes) -> tuple[bytes, dict[str, str]]:
    """``data`` with each HostName value (as ndb_mgmd reads the line: ``iniread``) that is neither
    an IPv4 address nor localhost replaced by an address of 198.18.0.0/15 (same name, same
    address); the address -> name map."""
    names: dict[str, str] = {}
    out = []
    for line in data.split(b"\n"):
        text = line.split(b"\0", 1)[0].decode("latin-1")
        m = re.match(r"(?i)hostname\s*[=:]", trim_line(text))
        host = trim_value(trim_line(text)[m.end():].split("#", 1)[0]) if m else ""
        if host and not _ADDRESS.match(host) and host != "localhost":
            at = text.find(host, text.lower().find("hostname") + len("hostname"))
            if host not in names:
                n = len(names) + 1
                names[host] = f"198.18.{n // 250}.{n % 250 + 1}"
            line = (text[:at] + names[host] + text[at + len(host):]).encode("latin-1") + line[len(text):]
        out.append(line)
    return b"\n".join(out), {v: k for k, v in names.items()}


def read(tool: Path, data: bytes) -> Answer:
    """What ndb_config reads in ``data`` (a config.ini's bytes)."""
    return _read(str(tool), data)


@functools.lru_cache(maxsize=64)
def _read(tool: str, data: bytes) -> Answer:
    text, back = _hosts_replaced(data)
    with tempfile.NamedTemporaryFile(suffix=".ini") as f:
        f.write(text)
        f.flush()
        r = _run(Path(tool), f.name, "--nodes", "--rows=\n",
                 "--query=" + ",".join(("nodeid", "type", "nodegroup", "hostname", "ArbitrationRank") + DATA_QUERY))
    if r.returncode != 0:
        why = refusal(r.stdout + "\n" + r.stderr)
        if why and back:  # the user's host names, not the addresses they stood in for
            why = re.sub(r"198\.1[89]\.\d+\.\d+(?![\d.])", lambda m: back.get(m.group(0), m.group(0)), why)
        return Answer(error=why or f"ndb_config exited {r.returncode}: "
                      + (r.stderr.strip().splitlines() or ["no message"])[-1])
    ans = Answer()
    for row in r.stdout.split("\n"):
        if not row.strip():
            continue
        nid, typ, ng, host, rank, *vals = row.split(",")
        nid = int(nid)
        ans.nodes[nid] = (typ, int(ng) if ng else None, back.get(host, host))
        if rank != "":
            ans.ranks[nid] = int(rank)
        if typ == "ndbd":
            d = dict(zip(DATA_QUERY, vals))
            if d.get("Arbitration", "").isdigit() and int(d["Arbitration"]) < len(ARBITRATION):
                d["Arbitration"] = ARBITRATION[int(d["Arbitration"])]
            ans.data[nid] = d
    return ans


# -- the parameter table ------------------------------------------------------------------
def configinfo(tool: Path) -> dict:
    """ndb_config's parameter table: section (DB, API, MGM, SYSTEM, TCP, SHM, and ``<name> DEFAULT``)
    -> lower-cased parameter -> {name, type (int, bool, string, enum), min, max, default, allowed,
    mandatory, deprecated}."""
    r = subprocess.run([str(tool), "--no-defaults", "--configinfo", "--xml"], capture_output=True, text=True,
                       timeout=30)
    if r.returncode != 0:
        raise NdbChaosError(f"{tool} --configinfo --xml: exit {r.returncode}")
    root = ET.fromstring(r.stdout)
    out: dict = {"version": root.get("ndbversionstring"), "sections": {}}
    for sec in root.iter("section"):
        name, _, default = sec.get("name").partition(" ")
        key = SECTIONS[name] + (" DEFAULT" if default else "")
        params = out["sections"].setdefault(key, {})
        for p in sec.iter("param"):
            typ = p.get("type")
            entry = {"name": p.get("name"), "type": {"unsigned": "int"}.get(typ, typ)}
            if p.get("allowed_values"):
                entry["type"] = "enum"
                entry["allowed"] = p.get("allowed_values").split()
            for k in ("min", "max"):
                if p.get(k) is not None:
                    entry[k] = int(p.get(k))
            if p.get("default") is not None:
                entry["default"] = p.get("default")
            if p.get("mandatory") == "true":
                entry["mandatory"] = True
            if p.get("deprecated") == "true":
                entry["deprecated"] = True
            params[p.get("name").lower()] = entry
    return out


def write_table(tool: Path, dst: Path = TABLE) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_text(json.dumps(configinfo(tool), indent=1, sort_keys=True) + "\n")
    return dst


def main(argv: list[str]) -> int:  # pragma: no cover - a maintainer's command
    if argv[:1] != ["configinfo"]:
        print("usage: python -m ndbchaos.engines.ndb.ndbconfig_tool configinfo", file=sys.stderr)
        return 2
    tool = ndb_config()
    if tool is None:
        print(f"set {DIST_ENV} to a MySQL Cluster {VERSION} distribution", file=sys.stderr)
        return 2
    print(write_table(tool))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
