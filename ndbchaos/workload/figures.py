"""The load's figures while it runs, for the metrics endpoint (``ndbchaos.metrics``): per
connection (slot) and SQL node, the successful operations' latency in buckets and their latency
sum, and the failed operations by type and error class.

They live in shared arrays without a lock, like the runner's ``live`` array: each connection
writes only its own row (slot x node), with a ``+=`` on its own cells, and the parent reads them
when it is scraped (a read in the middle of an update is at most that one operation behind). The
index of a (slot, node) cell is the same as in ``live``: ``slot * n_nodes + node``; a latency
bucket's is that times ``N_BUCKETS`` plus the bucket, a failure's that times ``N_TYPES *
N_CLASSES`` plus ``type * N_CLASSES + class``.

The Python loop (``runner._connection_loop``) counts each operation as it ends; the native one
(``native.connection_loop``) each batch of successes as the C loop hands it back (at most
``native.BATCH`` operations) and each failure as it ends.
"""

from __future__ import annotations

from bisect import bisect_left

#: the latency buckets' upper bounds, in seconds (Prometheus ``le``; +Inf after the last)
BOUNDS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
N_BUCKETS = len(BOUNDS) + 1
#: the history's types of a failed operation (``ndbchaos.classify.outcome``)
TYPES = ("fail", "info")
#: the error classes of ``ndbchaos.classify`` (a class of None is ``unclassified``), and the
#: workload's own refusals (errno 0: ``application``), as ``ndbchaos.checks.errors`` counts them
CLASSES = ("temporary", "unknown", "permanent", "unclassified", "application")
N_TYPES, N_CLASSES = len(TYPES), len(CLASSES)
_CLASS_INDEX = {c: i for i, c in enumerate(CLASSES)}


def bucket(seconds: float) -> int:
    """The bucket of a latency: the first bound it does not exceed (``le``), else +Inf."""
    return bisect_left(BOUNDS, seconds)


def failure_cell(cell: int, typ: str, cls: str | None, errno: int | None) -> int:
    """The index in ``errors`` of a failure of (slot, node) ``cell``."""
    name = "application" if errno == 0 else (cls or "unclassified")
    return (cell * N_TYPES + (1 if typ == "info" else 0)) * N_CLASSES + _CLASS_INDEX.get(name, 2)


class ClientFigures:
    """The shared arrays of a runner (``ctx``: its multiprocessing context) for ``n_slots``
    connections over ``nodes`` (the SQL nodes, in the order of the runner's endpoints)."""

    def __init__(self, ctx, n_slots: int, nodes: list[str]):
        self.nodes = list(nodes)
        self.n_slots = n_slots
        cells = n_slots * len(self.nodes)
        array = (lambda code, n: [0] * n) if ctx is None else (lambda code, n: ctx.Array(code, n, lock=False))
        self.buckets = array("Q", cells * N_BUCKETS)
        self.latency_sum = array("d", cells)
        self.errors = array("Q", cells * N_TYPES * N_CLASSES)

    @classmethod
    def local(cls, n_slots: int, n_nodes: int) -> ClientFigures:
        """Plain lists, for a connection loop run on its own (a test, a tool): nobody reads them."""
        return cls(None, n_slots, [str(i) for i in range(n_nodes)])

    def snapshot(self) -> dict[str, dict]:
        """Per SQL node: ``ok`` (count), ``buckets`` (cumulative counts, one per bound then +Inf),
        ``sum`` (seconds), ``errors`` {(type, class): count}; every connection's rows summed."""
        buckets, sums, errors = self.buckets[:], self.latency_sum[:], self.errors[:]
        n = len(self.nodes)
        per_err = N_TYPES * N_CLASSES
        out = {}
        for i, node in enumerate(self.nodes):
            counts = [0] * N_BUCKETS
            total, errs = 0.0, [0] * per_err
            for slot in range(self.n_slots):
                cell = slot * n + i
                row = buckets[cell * N_BUCKETS:(cell + 1) * N_BUCKETS]
                counts = [a + b for a, b in zip(counts, row)]
                total += sums[cell]
                errs = [a + b for a, b in zip(errs, errors[cell * per_err:(cell + 1) * per_err])]
            cumulative, acc = [], 0
            for c in counts:
                acc += c
                cumulative.append(acc)
            out[node] = {"ok": acc, "buckets": cumulative, "sum": total,
                         "errors": {(t, c): errs[ti * N_CLASSES + ci]
                                    for ti, t in enumerate(TYPES) for ci, c in enumerate(CLASSES)}}
        return out


__all__ = ["BOUNDS", "CLASSES", "ClientFigures", "N_BUCKETS", "TYPES", "bucket", "failure_cell"]
