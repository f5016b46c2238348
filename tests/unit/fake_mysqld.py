"""A scripted MySQL/MariaDB server for the native driver's unit tests: it speaks just enough of
the protocol for libmariadb to connect, set autocommit and prepare one statement, then answers
each COM_STMT_EXECUTE as the test's script says (a row, no row, OK, an error, nothing, a closed
socket, a reply cut off or sent a byte at a time) and keeps what it received.

``mariadb=True`` announces MariaDB's metadata cache (MARIADB_CLIENT_CACHE_METADATA), so a result
set's column count carries the flag that says whether the definitions follow."""

from __future__ import annotations

import socket
import struct
import threading
import time

CLIENT_MYSQL, CLIENT_LONG_FLAG, CLIENT_CONNECT_WITH_DB = 1, 4, 8
CLIENT_PROTOCOL_41, CLIENT_TRANSACTIONS, CLIENT_SECURE_CONNECTION = 512, 8192, 32768
CLIENT_MULTI_RESULTS, CLIENT_PS_MULTI_RESULTS, CLIENT_PLUGIN_AUTH = 1 << 17, 1 << 18, 1 << 19
MARIADB_CLIENT_CACHE_METADATA_HI = 1 << 4  # bit 36 of the capabilities: bit 4 of the extended ones
STATUS_AUTOCOMMIT = 2

COM_QUIT, COM_QUERY, COM_STMT_PREPARE, COM_STMT_EXECUTE, COM_STMT_CLOSE = 0x01, 0x03, 0x16, 0x17, 0x19

ROW_VALUE = b"x" * 120


def lenenc_int(n: int) -> bytes:
    if n < 251:
        return bytes((n,))
    if n < 1 << 16:
        return b"\xfc" + struct.pack("<H", n)
    return b"\xfd" + struct.pack("<I", n)[:3]


def lenenc_str(b: bytes) -> bytes:
    return lenenc_int(len(b)) + b


def column(name: bytes, typ: int = 0xfe) -> bytes:
    return (b"".join(lenenc_str(x) for x in (b"def", b"ndbchaos", b"t", b"t", name, name))
            + b"\x0c" + struct.pack("<HIBHB", 33, 360, typ, 0, 0) + b"\0\0")


EOF = b"\xfe\0\0" + struct.pack("<H", STATUS_AUTOCOMMIT)
OK = b"\0\0\0" + struct.pack("<HH", STATUS_AUTOCOMMIT, 0)


def err(errno: int, msg: str, state: bytes = b"42S02") -> bytes:
    return b"\xff" + struct.pack("<H", errno) + b"#" + state + msg.encode()


class FakeMysqld:
    """``script``: what each execution gets, in order (then ``default``):
    row | empty | ok | err | silent | close | cut | bytewise | progress."""

    def __init__(self, script=(), default="row", mariadb=False, params=1, columns=1):
        self.script, self.default, self.mariadb = list(script), default, mariadb
        self.params, self.columns = params, columns
        self.executes: list[tuple[int, bytes]] = []  # (connection number, payload)
        self.connections = 0
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self.closed = True
        self.sock.close()

    # -- plumbing ----------------------------------------------------------------------------

    def _accept(self):
        while not self.closed:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
                n = self.connections
            threading.Thread(target=self._serve, args=(c, n), daemon=True).start()

    @staticmethod
    def _frame(seq: int, payload: bytes) -> bytes:
        return struct.pack("<I", len(payload))[:3] + bytes((seq & 0xff,)) + payload

    def _send(self, c, seq: int, payload: bytes) -> int:
        c.sendall(self._frame(seq, payload))
        return seq + 1

    @staticmethod
    def _recv(c) -> bytes | None:
        head = b""
        while len(head) < 4:
            b = c.recv(4 - len(head))
            if not b:
                return None
            head += b
        n = int.from_bytes(head[:3], "little")
        body = b""
        while len(body) < n:
            b = c.recv(n - len(body))
            if not b:
                return None
            body += b
        return body

    def _next(self) -> str:
        with self.lock:
            return self.script.pop(0) if self.script else self.default

    def _handshake(self, c):
        caps = (CLIENT_LONG_FLAG | CLIENT_CONNECT_WITH_DB | CLIENT_PROTOCOL_41 | CLIENT_TRANSACTIONS
                | CLIENT_SECURE_CONNECTION | CLIENT_MULTI_RESULTS | CLIENT_PS_MULTI_RESULTS | CLIENT_PLUGIN_AUTH)
        if not self.mariadb:
            caps |= CLIENT_MYSQL
        ext = MARIADB_CLIENT_CACHE_METADATA_HI if self.mariadb else 0
        version = b"5.5.5-10.11.0-MariaDB-fake" if self.mariadb else b"8.0.40-fake"
        hello = (b"\x0a" + version + b"\0" + struct.pack("<I", 7) + b"abcdefgh" + b"\0"
                 + struct.pack("<H", caps & 0xffff) + b"\x21" + struct.pack("<H", STATUS_AUTOCOMMIT)
                 + struct.pack("<H", caps >> 16) + bytes((21,)) + b"\0" * 6 + struct.pack("<I", ext)
                 + b"ijklmnopqrst\0" + b"mysql_native_password\0")
        self._send(c, 0, hello)
        if self._recv(c) is None:
            return False
        self._send(c, 2, OK)
        return True

    def _serve(self, c, conn_no):
        try:
            if not self._handshake(c):
                return
            while True:
                pkt = self._recv(c)
                if pkt is None or pkt[0] == COM_QUIT:
                    return
                if pkt[0] == COM_QUERY:
                    self._send(c, 1, OK)
                elif pkt[0] == COM_STMT_PREPARE:
                    seq = self._send(c, 1, b"\0" + struct.pack("<IHHBH", 5, self.columns, self.params, 0, 0))
                    for _ in range(self.params):
                        seq = self._send(c, seq, column(b"?", 0xfd))
                    seq = self._send(c, seq, EOF)
                    for i in range(self.columns):
                        seq = self._send(c, seq, column(b"c"))
                    if self.columns:
                        self._send(c, seq, EOF)
                elif pkt[0] == COM_STMT_EXECUTE:
                    with self.lock:
                        self.executes.append((conn_no, pkt))
                    if not self._execute(c, self._next()):
                        return
                elif pkt[0] == COM_STMT_CLOSE:
                    pass
                else:
                    self._send(c, 1, err(1047, "Unknown command", b"08S01"))
        except OSError:
            pass
        finally:
            c.close()

    def _result(self, rows: int, with_meta: bool) -> list[bytes]:
        count = lenenc_int(self.columns)
        if self.mariadb:
            count += b"\x01" if with_meta else b"\x00"
        out = [count]
        if with_meta:
            out += [column(b"c")] * self.columns
        out.append(EOF)
        out += [b"\0\0" + lenenc_str(ROW_VALUE) * self.columns] * rows
        out.append(EOF)
        return out

    def _execute(self, c, what: str) -> bool:
        with_meta = not self.mariadb  # MariaDB: the definitions were sent with the prepare
        if what == "silent":
            while self._recv(c) is not None:  # until the client gives up and closes
                pass
            return False
        if what == "close":
            return False
        if what == "ok":
            packets = [OK]
        elif what == "err":
            packets = [err(1146, "Table 'ndbchaos.sbtest1' doesn't exist")]
        elif what == "cut":
            packets = self._result(1, with_meta)[:-1] + [err(1927, "Connection was killed", b"70100")]
        elif what == "progress":
            report = b"\xff\xff\xff" + b"\x01\x01\x01" + b"\0\0\0" + lenenc_str(b"stage")  # errno 0xffff
            packets = [report] + self._result(1, with_meta)
        elif what == "meta":  # MariaDB sending the definitions again (they changed)
            packets = self._result(1, True)
        elif what == "empty":
            packets = self._result(0, with_meta)
        else:
            packets = self._result(1, with_meta)
        data = b"".join(self._frame(seq, p) for seq, p in enumerate(packets, start=1))
        if what == "bytewise":
            for i in range(len(data)):
                c.sendall(data[i:i + 1])
                time.sleep(0.001)
        else:
            c.sendall(data)
        return True
