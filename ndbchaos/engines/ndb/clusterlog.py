"""Follow the ndb_mgmd cluster log inside its container.

The management node writes ``ndb_<nodeid>_cluster.log`` into its DataDir (``/var/lib/mysql`` in
the image and in our config.ini). ``ClusterLogFollower.poll()`` reads what was appended since the
last call (by byte offset, through ``docker exec``), keeps an incomplete last line for the next
call, starts over when the file was replaced (rotation: another inode) or shrank, and returns the
parsed events stamped with ``t``, the run clock time of the log's wall-clock stamp (``None`` when
the line has none).
"""

from __future__ import annotations

from ...runtimes import docker
from ...events import time_to_epoch
from .logs import NdbLogParser

DATADIR = "/var/lib/mysql"


def cluster_log_path(mgm_nodeid: int, datadir: str = DATADIR) -> str:
    return f"{datadir}/ndb_{int(mgm_nodeid)}_cluster.log"


class ClusterLogFollower:
    def __init__(self, cluster, node=None, path: str | None = None, keep_other: bool = False):
        """``node``: the management Node (default: the one with the lowest node id)."""
        self.cluster = cluster
        if node is None:
            mgms = sorted(cluster.topology.role("mgm"), key=lambda n: n.nodeid or 0)
            if not mgms:
                raise ValueError("no management node in the topology")
            node = mgms[0]
        self.node = node
        # an inventory's management node says where its DataDir is (the label, from the cluster)
        self.path = path or cluster_log_path(node.nodeid or 1, (node.labels or {}).get("ndbchaos.datadir") or DATADIR)
        self.offset = 0
        self._inode: int | None = None
        self._partial = ""
        self._parser = NdbLogParser(keep_other=keep_other)
        self.errors: list[str] = []

    def seek_end(self, timeout: float = 10) -> None:
        """Skip what the log holds now: the next ``poll`` returns only what is appended later."""
        try:
            c = self.cluster.container(self.node)
        except Exception as e:
            self.errors.append(str(e))
            return
        code, out = docker.exec_in(c, ["sh", "-c", 'stat -c "%i %s" "$0"', self.path], timeout=timeout)
        try:
            inode, size = (int(x) for x in out.split())
        except ValueError:
            if code == 0:
                self.errors.append(f"unexpected output: {out[:100]!r}")
            return  # no file yet: read it from its start
        self._inode, self.offset, self._partial = inode, size, ""

    def poll(self, timeout: float = 10) -> list[dict]:
        try:
            c = self.cluster.container(self.node)
        except Exception as e:
            self.errors.append(str(e))
            return []
        if docker.container_state(c) != "running":
            return []
        # Size first, then the bytes from the offset (tail -c +N is 1-based).
        code, out = docker.exec_in(
            c, ["sh", "-c", 'f="$0"; [ -f "$f" ] || exit 3; i=$(stat -c %i "$f" 2>/dev/null || echo 0); '
                            'echo "$i $(wc -c < "$f")"; tail -c +"$1" "$f"',
                self.path, str(self.offset + 1)], timeout=timeout)
        if code == 3:
            return []
        if code != 0:
            self.errors.append(out.strip()[-200:])
            return []
        head, _, body = out.partition("\n")
        try:
            inode, size = (int(x) for x in head.split())
        except ValueError:
            self.errors.append(f"unexpected output: {head[:100]!r}")
            return []
        if size < self.offset or (self._inode not in (None, inode)):
            # rotated (a new file) or truncated: read the new file from its start
            self._inode, self.offset, self._partial = inode, 0, ""
            return self.poll(timeout)
        self._inode = inode
        self.offset += len(body.encode("utf-8", "replace"))
        text = self._partial + body
        lines = text.split("\n")
        self._partial = lines.pop()  # "" when the text ended with a newline
        events = []
        for ln in lines:
            events.extend(self._parser.feed(ln))
        for ev in events:
            ev["t"] = self._run_time(ev.get("time"))
            ev["log"] = self.node.name
        return events

    def _run_time(self, iso: str | None) -> float | None:
        epoch = time_to_epoch(iso)
        if epoch is None:
            return None
        return round(self.cluster.clock.from_wall(epoch), 3)
