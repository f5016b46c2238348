"""Causal pasts for the weak levels' causal consistency check (weak.py): vector clocks over
chains of so | wr, and the commit-order edges the causal axiom forces beyond read atomic's."""

from __future__ import annotations

from bisect import bisect_right

import numpy as np

from .weak_history import INIT, History


def causal_edges(hist: History, order: list[int], force, stats: dict) -> None:
    """t2 in t3's causal past, t3 read x from t1, t2 writes x: t2 before t1 (beyond RA's).

    Causal pasts as vector clocks over chains of so | wr: each process's transactions, a
    process that begins after another finished continuing that one's chain when the
    finished one's last transaction is in its causal past. A clock's entry for a chain is
    how many of its transactions are in the past. Per chain of t3's past only its last
    writer of x needs an edge: the earlier ones precede that one in so | wr. Transactions
    are visited in an order of so | wr; a clock is dropped once every transaction that
    reads from or follows its owner has been visited."""
    wkeys = hist.wkeys
    txns = hist.txns
    n = len(hist.txns)
    ends = set(hist.last_of_session)
    chain_of = [-1] * n
    index_in = [0] * n
    chain_len: list[int] = []
    free: list[int] = []  # chains whose process has finished
    rows: list = [None] * n  # clocks still needed (int32 arrays, as long as the chains then)
    waiting = [0] * n  # successors in so | wr not visited yet
    preds: list = [()] * n
    for t in order:
        ps = {w for _pos, _k, w, _v, _imp in hist.ext[t] if w != INIT}
        p = hist.so_pred[t]
        if p >= 0:
            ps.add(p)
        preds[t] = ps
        for w in ps:
            waiting[w] += 1
    writers: dict = {}  # (chain, key) -> (positions in the chain of its writers of key, who)
    chains_of_key: dict = {}
    live = peak = 0
    for t3 in order:
        p = hist.so_pred[t3]
        row = np.zeros(len(chain_len) + 1, dtype=np.int32)
        for w in preds[t3]:
            other = rows[w]
            np.maximum(row[:len(other)], other, out=row[:len(other)])
        if p >= 0:
            c = chain_of[p]
        else:
            c = -1
            for i in range(len(free) - 1, -1, -1):
                if row[free[i]] == chain_len[free[i]]:  # its last transaction is in t3's past
                    c = free.pop(i)
                    break
            if c < 0:
                c = len(chain_len)
                chain_len.append(0)
        own = index_in[t3] = chain_len[c]
        chain_of[t3] = c
        chain_len[c] += 1
        # the reads of t3: per chain, the last writer of the key in t3's strict past
        ext = hist.ext[t3]
        if ext:
            bounds = row.tolist()
            bounds[c] = own
            past = None  # the chains of t3's past (for reads of initial values)
            direct = {w for _p, _k, w, _v, _i in ext}
            proc = txns[t3].process
            for _pos, k, t1, _v, _imp in ext:
                chains = chains_of_key.get(k, ())
                if t1 == INIT:
                    r1 = None
                    if past is None:
                        past = np.flatnonzero(row).tolist()
                    cands = chains if len(chains) <= len(past) else past
                else:  # only chains of which t3's past holds more than t1's can add an edge
                    r1 = rows[t1]
                    cands = np.flatnonzero(row[:len(r1)] > r1).tolist()
                    if len(row) > len(r1):
                        cands += (np.flatnonzero(row[len(r1):]) + len(r1)).tolist()
                for ch in cands:
                    bound = bounds[ch] if ch < len(bounds) else 0
                    wl = writers.get((ch, k))
                    if not bound or wl is None:
                        continue
                    idx, who = wl
                    j = bisect_right(idx, bound - 1)
                    if not j:
                        continue
                    t2 = who[j - 1]
                    if t2 == t1 or t2 in direct or txns[t2].process == proc:
                        continue  # read committed's and read atomic's edges cover these
                    if r1 is not None and ch < len(r1) and r1[ch] > idx[j - 1]:
                        continue  # t2 is in t1's causal past already: so and wr order them
                    force(t2, t1, t3, k)
        row[c] = own + 1
        for k in wkeys[t3]:
            wl = writers.get((c, k))
            if wl is None:
                wl = writers[(c, k)] = ([], [])
                chains_of_key.setdefault(k, []).append(c)
            wl[0].append(own)
            wl[1].append(t3)
        if t3 in ends:
            free.append(c)
        for w in preds[t3]:
            waiting[w] -= 1
            if not waiting[w]:
                rows[w] = None
                live -= 1
        if waiting[t3]:
            rows[t3] = row
            live += 1
            peak = max(peak, live)
    stats["chains"] = len(chain_len)
    stats["clocks_held_at_once"] = peak


__all__ = ["causal_edges"]
