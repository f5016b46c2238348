"""fakebook: the social-network read mix of a published MySQL Cluster load test.

Media University Stuttgart, MySQL Cluster 7.1, 2012 (docs/facts.md Field tests 2): users,
friend relations, messages, status updates ("notification") and comments; requests split 70 %
"latest 10 status updates of a user", 25 % "a message conversation between two users", 4 % "a
user's friends", 1 % "login / user data". This workload keeps that read mix and adds a
configurable write share (post a status update, send a message, comment, add a friend).

Schema (tables ``{prefix}users``, ``relations``, ``messages``, ``notification``, ``comments``),
close to the original with these changes, each for a reason:

- ``users.id`` is the PRIMARY KEY (the original had an AUTO_INCREMENT UNIQUE column and no PK;
  NDB would add a hidden key) and ``mail`` is a UNIQUE key: login looks a user up by mail.
- no FOREIGN KEYs: the original cascaded deletes from users; nothing is deleted here, and FKs
  cost extra round trips on NDB (each checked by the data nodes) without testing anything.
- no TEXT: message, status and comment contents are VARCHAR(500). On NDB a TEXT/BLOB column is
  stored in a separate hidden parts table (extra operations per row, extra locks) and only the
  first 256 bytes are inline; VARCHAR keeps every read one row.
- friend pairs are stored in both directions with PRIMARY KEY (id_1, id_2), so "a user's friends"
  is a key-prefix scan (the original had a view with GROUP_CONCAT over the pairs; the
  ``relations_2`` text-list variant is left out).
- messages carry an index (sender, receiver, date) so a conversation is two key ranges.

Data is generated at setup, deterministically from ``seed``, and loaded in multi-row INSERTs.
Defaults (small enough for a 2-core test host, a few seconds to load): 2,000 users, each with
about 20 friends (10 random picks per user, both directions stored: ~40,000 relation rows),
1-10 status updates per user (~11,000), 0-3 comments per status update (~16,500), and 1-10
messages between each user and one fixed partner (~11,000): about 80,000 rows. The original test
had 100,000 users with 100 friends each (over 10 million rows; generating it took hours).

Operations, their recorded values (lists of ints are stored packed in the history):

=================  ======================  =================================================
f                  value (next_op)         recorded when ok
=================  ======================  =================================================
status             uid                     uid
conversation       [uid, partner]          [uid, partner]
friends            uid                     uid
login              uid                     uid
post_status        uid                     [uid, notification_id]
send_message       [sender, receiver]      [sender, receiver, msg_id]
comment            [uid, notification_id]  [uid, notification_id, comment_id]
add_friend         [a, b]                  [a, b]
=================  ======================  =================================================

A user's conversation partner is a fixed function of the user (``partner(u)``), so the 25 %
conversation reads hit conversations that exist and grow with ``send_message``.
"""

from __future__ import annotations

import hashlib
import random

from ..errors import UsageError
from .base import Workload, bulk_insert
from .fastsql import FastSQL, Stmt
from .registry import register

READS = ("status", "conversation", "friends", "login")
WRITES = ("post_status", "send_message", "comment", "add_friend")

_WORDS = ("the quick brown fox jumps over lazy dog cluster node group data replica arbiter "
          "commit latency failover partition heal restart query index table row lock fast slow "
          "hello friend party weekend photo coffee music game match city trip news today").split()
_BASE_DATE = 1_704_067_200  # 2024-01-01 00:00:00 UTC: bulk rows are dated within a year after


def _text(rng: random.Random, lo: int, hi: int) -> str:
    n = rng.randint(lo, hi)
    out, size = [], 0
    while size < n:
        w = _WORDS[rng.randrange(len(_WORDS))]
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:hi]


def _date(rng: random.Random) -> str:
    import time as _t
    s = _BASE_DATE + rng.randrange(365 * 86400)
    return _t.strftime("%Y-%m-%d %H:%M:%S", _t.gmtime(s)) + ".%06d" % rng.randrange(1_000_000)


def _mix(weights: dict, names: tuple[str, ...], what: str) -> list[tuple[float, str]]:
    """Cumulative distribution over ``names`` from a {name: weight} dict."""
    unknown = set(weights) - set(names)
    if unknown:
        raise UsageError(f"workload fakebook: unknown {what} {', '.join(sorted(unknown))} (known: {', '.join(names)})")
    total = float(sum(float(w) for w in weights.values()))
    if total <= 0 or any(float(w) < 0 for w in weights.values()):
        raise UsageError(f"workload fakebook: {what} weights must be >= 0 with a positive sum")
    out, acc = [], 0.0
    for n in names:
        w = float(weights.get(n, 0))
        if w > 0:
            acc += w / total
            out.append((acc, n))
    out[-1] = (1.0, out[-1][1])  # rounding
    return out


@register
class Fakebook(Workload):
    name = "fakebook"
    defaults = {
        "users": 2000,
        "friends": 20,  # average friends per user (friends // 2 random picks per user, stored both ways)
        "status_max": 10,  # 1..status_max status updates per user
        "comments_max": 3,  # 0..comments_max comments per status update
        "messages_max": 10,  # 1..messages_max messages between a user and its partner
        "write_share": 0.1,  # share of operations that write
        "read_mix": {"status": 70, "conversation": 25, "friends": 4, "login": 1},
        "write_mix": {"post_status": 50, "send_message": 35, "comment": 10, "add_friend": 5},
        "status_limit": 10,  # "the latest 10 status updates"
        "status_comments": True,  # status read also counts each update's comments (one statement)
        "conversation_limit": 20,
        "prefix": "fb_",
        "ps": False,  # server-side prepared statements (the original ran JMeter/JDBC text statements)
        "seed": 1,
    }

    def __init__(self, **params):
        super().__init__(**params)
        p = self.params
        self.U = int(p["users"])
        if self.U < 2:
            raise UsageError("workload fakebook: users must be at least 2")
        if not 0.0 <= float(p["write_share"]) <= 1.0:
            raise UsageError("workload fakebook: write_share must be between 0 and 1")
        if int(p["status_max"]) < 1 or int(p["messages_max"]) < 1:
            raise UsageError("workload fakebook: status_max and messages_max must be at least 1")
        self.write_share = float(p["write_share"])
        self.read_cdf = _mix(p["read_mix"], READS, "read_mix")
        self.write_cdf = _mix(p["write_mix"], WRITES, "write_mix") if self.write_share > 0 else []
        self.t = {k: p["prefix"] + k for k in ("users", "relations", "messages", "notification", "comments")}
        self.sql = FastSQL(ps=p["ps"])
        t = self.t
        comments = (f", (SELECT COUNT(*) FROM {t['comments']} c WHERE c.notification_id = n.notification_id)"
                    if p["status_comments"] else "")
        self.S = {
            "status": Stmt(f"SELECT n.notification_id, n.date, n.content{comments} FROM {t['notification']} n "
                           f"WHERE n.uid = %s ORDER BY n.date DESC LIMIT {int(p['status_limit'])}"),
            "conversation": Stmt(f"SELECT msg_id, sender, receiver, header, date, content FROM {t['messages']} "
                                 f"WHERE (sender = %s AND receiver = %s) OR (sender = %s AND receiver = %s) "
                                 f"ORDER BY date DESC LIMIT {int(p['conversation_limit'])}"),
            "friends": Stmt(f"SELECT u.id, u.name, u.name_first FROM {t['relations']} r "
                            f"JOIN {t['users']} u ON u.id = r.id_2 WHERE r.id_1 = %s"),
            "login": Stmt(f"SELECT id, name, name_first, pass FROM {t['users']} WHERE mail = %s"),
            "post_status": Stmt(f"INSERT INTO {t['notification']} (uid, date, content) VALUES (%s, NOW(6), %s)"),
            "send_message": Stmt(f"INSERT INTO {t['messages']} (sender, receiver, header, date, content) "
                                 f"VALUES (%s, %s, %s, NOW(6), %s)"),
            "comment": Stmt(f"INSERT INTO {t['comments']} (notification_id, uid, date, content) "
                            f"VALUES (%s, %s, NOW(6), %s)"),
            "add_friend": Stmt(f"INSERT IGNORE INTO {t['relations']} (id_1, id_2) VALUES (%s, %s), (%s, %s)"),
        }
        self._text_rng = random.Random(int(p["seed"]) * 31 + 7)

    # -- deterministic structure ---------------------------------------------------------------
    def partner(self, u: int) -> int:
        """The user ``u`` has its bulk-loaded conversation with (never ``u`` itself)."""
        off = 1 + (u * 2654435761 + int(self.params["seed"]) * 40503) % (self.U - 1)
        return (u - 1 + off) % self.U + 1

    def first_status_id(self, u: int) -> int:
        """notification_id of user ``u``'s first bulk status update (every user has one)."""
        return (u - 1) * int(self.params["status_max"]) + 1

    @staticmethod
    def mail(u: int) -> str:
        return f"user{u}@fakebook.example"

    # -- schema and data -----------------------------------------------------------------------
    def schema(self, table_engine):
        t = self.t
        e = f"ENGINE={table_engine}"
        return [
            *(f"DROP TABLE IF EXISTS {t[k]}" for k in ("comments", "notification", "messages", "relations", "users")),
            f"CREATE TABLE {t['users']} (id BIGINT UNSIGNED NOT NULL PRIMARY KEY, name VARCHAR(50) NOT NULL, "
            f"name_first VARCHAR(50) NOT NULL, pass VARCHAR(40) NOT NULL, mail VARCHAR(100) NOT NULL, "
            f"UNIQUE KEY mail (mail)) {e}",
            f"CREATE TABLE {t['relations']} (id_1 BIGINT UNSIGNED NOT NULL, id_2 BIGINT UNSIGNED NOT NULL, "
            f"PRIMARY KEY (id_1, id_2)) {e}",
            f"CREATE TABLE {t['messages']} (msg_id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, "
            f"sender BIGINT UNSIGNED NOT NULL, receiver BIGINT UNSIGNED NOT NULL, header VARCHAR(100) NOT NULL, "
            f"date DATETIME(6) NOT NULL, content VARCHAR(500) NOT NULL, KEY conv (sender, receiver, date)) {e}",
            f"CREATE TABLE {t['notification']} (notification_id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, "
            f"uid BIGINT UNSIGNED NOT NULL, date DATETIME(6) NOT NULL, content VARCHAR(500) NOT NULL, "
            f"KEY uid_date (uid, date)) {e}",
            f"CREATE TABLE {t['comments']} (comment_id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY, "
            f"notification_id BIGINT UNSIGNED NOT NULL, uid BIGINT UNSIGNED NOT NULL, date DATETIME(6) NOT NULL, "
            f"content VARCHAR(500) NOT NULL, KEY notification (notification_id)) {e}",
        ]

    def generate(self):
        """The bulk data: {table key: (columns, rows)}; deterministic from ``seed``."""
        p = self.params
        rng = random.Random(int(p["seed"]))
        U, smax = self.U, int(p["status_max"])
        users = []
        for u in range(1, U + 1):
            users.append((u, f"Last{u}", f"First{rng.randrange(10_000)}",
                          hashlib.sha1(f"pw{u}".encode()).hexdigest(), self.mail(u)))
        pairs = set()
        picks = max(0, int(p["friends"]) // 2)
        for u in range(1, U + 1):
            for _ in range(min(picks, U - 1)):
                v = rng.randint(1, U - 1)
                v = v + 1 if v >= u else v
                pairs.add((u, v))
                pairs.add((v, u))
        relations = sorted(pairs)
        notes, comments = [], []
        cid = 0
        for u in range(1, U + 1):
            for k in range(rng.randint(1, smax)):
                nid = (u - 1) * smax + k + 1
                notes.append((nid, u, _date(rng), _text(rng, 20, 200)))
                for _ in range(rng.randint(0, int(p["comments_max"]))):
                    cid += 1
                    comments.append((cid, nid, rng.randint(1, U), _date(rng), _text(rng, 10, 120)))
        messages = []
        mid = 0
        for u in range(1, U + 1):
            v = self.partner(u)
            for _ in range(rng.randint(1, int(p["messages_max"]))):
                mid += 1
                s, r = (u, v) if rng.random() < 0.5 else (v, u)
                messages.append((mid, s, r, _text(rng, 5, 60), _date(rng), _text(rng, 20, 300)))
        return {
            "users": (("id", "name", "name_first", "pass", "mail"), users),
            "relations": (("id_1", "id_2"), relations),
            "notification": (("notification_id", "uid", "date", "content"), notes),
            "comments": (("comment_id", "notification_id", "uid", "date", "content"), comments),
            "messages": (("msg_id", "sender", "receiver", "header", "date", "content"), messages),
        }

    def load(self, conn, table_engine):
        super().load(conn, table_engine)
        cur = conn.cursor()
        self.loaded = {}
        for key, (cols, rows) in self.generate().items():
            bulk_insert(cur, self.t[key], cols, rows, batch=1000)
            self.loaded[key] = len(rows)
        if not conn.autocommit:
            conn.commit()
        cur.close()

    def header_params(self):
        p = dict(self.params)
        p["tables"] = dict(self.t)
        return p

    # -- operations -----------------------------------------------------------------------------
    def next_op(self, rng, slot):
        U = self.U
        if self.write_share and rng.random() < self.write_share:
            x = rng.random()
            for acc, f in self.write_cdf:
                if x < acc:
                    break
            u = rng.randint(1, U)
            if f == "post_status":
                return f, u, True
            if f == "send_message":
                v = self.partner(u)
                return f, ([u, v] if rng.random() < 0.5 else [v, u]), True
            if f == "comment":
                return f, [u, self.first_status_id(rng.randint(1, U))], True
            v = rng.randint(1, U - 1)
            return f, [u, v + 1 if v >= u else v], True  # add_friend
        x = rng.random()
        for acc, f in self.read_cdf:
            if x < acc:
                break
        u = rng.randint(1, U)
        if f == "conversation":
            return f, [u, self.partner(u)], False
        return f, u, False

    def execute(self, cur, f, value):
        sql, S = self.sql, self.S
        if f == "status" or f == "friends":
            sql.rows(cur, S[f], (value,))
            return value
        if f == "conversation":
            a, b = value
            sql.rows(cur, S[f], (a, b, b, a))
            return value
        if f == "login":
            sql.rows(cur, S[f], (self.mail(value),))
            return value
        tr = self._text_rng
        if f == "post_status":
            sql.run(cur, S[f], (value, _text(tr, 20, 200)))
            return [value, sql.insert_id(cur)]
        if f == "send_message":
            a, b = value
            sql.run(cur, S[f], (a, b, _text(tr, 5, 60), _text(tr, 20, 300)))
            return [a, b, sql.insert_id(cur)]
        if f == "comment":
            u, nid = value
            sql.run(cur, S[f], (nid, u, _text(tr, 10, 120)))
            return [u, nid, sql.insert_id(cur)]
        if f == "add_friend":
            a, b = value
            sql.run(cur, S[f], (a, b, b, a))
            return value
        raise ValueError(f)
