"""The fast SQL path shared by the oltp and fakebook workloads: ``Stmt``, a statement pre-split
for it, and ``FastSQL``, which runs statements through the C extension's connection handle."""

from __future__ import annotations


class Stmt:
    """One SQL statement with DB-API ``%s`` placeholders, pre-split for the fast path."""

    __slots__ = ("text", "plain", "fmt", "qmark", "nparams")

    def __init__(self, text: str):
        self.text = text
        self.plain = text.encode()
        self.nparams = text.count("%s")
        self.fmt = text.encode().replace(b"%", b"%%").replace(b"%%s", b"%s")
        self.qmark = text.encode().replace(b"%s", b"?")  # for server-side prepared statements

    def render(self, escape, params) -> bytes:
        """The statement as bytes with literal values (ints as digits, str escaped and quoted)."""
        if not params:
            return self.plain
        return self.fmt % tuple(b"%d" % p if type(p) is int else _quote(escape, p) for p in params)

    def __repr__(self) -> str:
        return f"Stmt({self.text!r})"


def _quote(escape, v) -> bytes:
    if v is None:
        return b"NULL"
    if isinstance(v, int):  # bool and int subclasses
        return b"%d" % int(v)
    if isinstance(v, float):
        return repr(v).encode()
    if isinstance(v, str):
        v = v.encode()
    return b"'" + escape(v) + b"'"


_NO_ATTRS: list = []  # query attributes for MySQLPrepStmt.stmt_execute (omitting them crashes 9.7)


class FastSQL:
    """Run statements through the C extension's connection handle, skipping the cursor layer.

    Why: with mysql-connector's C extension, ``cursor.execute(sql, params)`` + ``fetchall()``
    costs about 100 us of client CPU per point select, of which about 60 us is the Python cursor
    and connection layer (statement splitting, parameter conversion, result bookkeeping, the
    OpenTelemetry wrapper). ``_mysql_connector.MySQL.query`` + ``fetch_row`` on the same
    connection does the same round trip (libmysqlclient, same read/write timeouts) for about
    40 us. On a 2-core host shared with the database, client CPU is throughput. Errors are
    ``_mysql_connector.MySQLInterfaceError`` with ``errno``, ``msg`` and ``sqlstate``, which
    ``sqlconn.error_fields`` and ``classify`` read like any connector error.

    ``ps=True`` uses server-side prepared statements (binary protocol), prepared once per
    connection and statement, as sysbench does by default (``--db-ps-mode=auto``): the server
    skips parsing, about 15 us of server CPU per point select here. (The connector's own
    ``cursor(prepared=True)`` sends a COM_STMT_RESET before every execution, an extra round trip,
    which made it slower than plain text queries.) A lost connection surfaces as error 2013 on
    the next execution; the runner then reconnects with a new cursor, which drops the cache.

    Anything that is not a C-extension cursor (the pure-Python connector, a test double) goes
    through ``cursor.execute(stmt.text, params)`` instead, with the same statements.
    One instance per workload instance (the runner builds one workload per connection).
    """

    __slots__ = ("ps", "_cur", "_cm", "_stmts")

    def __init__(self, ps: bool = False):
        self.ps = bool(ps)
        self._cur = None
        self._cm = None
        self._stmts: dict = {}

    def handle(self, cur):
        """The ``_mysql_connector.MySQL`` of ``cur``'s connection, or None (use the cursor)."""
        if cur is not self._cur:
            self._cur = cur
            self._stmts = {}
            cm = None
            cnx = getattr(cur, "_connection", None)
            if cnx is not None:
                try:
                    cm = getattr(cnx, "_cmysql", None)
                except ReferenceError:  # weak proxy to a closed connection
                    cm = None
            self._cm = cm if cm is not None and hasattr(cm, "fetch_row") and hasattr(cm, "stmt_prepare") else None
        return self._cm

    def prepared(self, cm, stmt: Stmt):
        """The server-side prepared statement of ``stmt`` on this connection (prepared once)."""
        st = self._stmts.get(stmt)
        if st is None:
            st = self._stmts[stmt] = cm.stmt_prepare(stmt.qmark)
        return st

    def rows(self, cur, stmt: Stmt, params=()) -> list:
        """Run a statement that returns rows; return them as a list of tuples."""
        cm = self.handle(cur)
        if cm is None:
            cur.execute(stmt.text, params) if params else cur.execute(stmt.text)
            return list(cur.fetchall())
        if self.ps:
            src = self.prepared(cm, stmt)
            src.stmt_execute(*params, query_attrs=_NO_ATTRS)
        else:
            cm.query(stmt.render(cm.escape_string, params))
            src = cm
        out = []
        if src.have_result_set:
            fetch = src.fetch_row
            r = fetch()
            while r is not None:
                out.append(r)
                r = fetch()
            src.free_result()
        return out

    def run(self, cur, stmt: Stmt, params=()) -> int:
        """Run a statement without rows; return the affected row count."""
        cm = self.handle(cur)
        if cm is None:
            cur.execute(stmt.text, params) if params else cur.execute(stmt.text)
            if getattr(cur, "with_rows", False):
                cur.fetchall()
            return getattr(cur, "rowcount", -1)
        if self.ps and stmt.nparams:
            st = self.prepared(cm, stmt)
            st.stmt_execute(*params, query_attrs=_NO_ATTRS)
            if st.have_result_set:
                while st.fetch_row() is not None:
                    pass
                st.free_result()
                return -1
            return cm.affected_rows()
        cm.query(stmt.render(cm.escape_string, params))
        if cm.have_result_set:
            cm.consume_result()
            return -1
        return cm.affected_rows()

    def insert_id(self, cur) -> int | None:
        cm = self.handle(cur)
        if cm is None:
            return getattr(cur, "lastrowid", None)
        return cm.insert_id()

    def rollback(self, cur) -> None:
        """Best-effort ROLLBACK after a failed transaction (errors ignored)."""
        try:
            cm = self.handle(cur)
            if cm is None:
                cur.execute("ROLLBACK")
            else:
                cm.query(b"ROLLBACK")
        except Exception:
            pass
