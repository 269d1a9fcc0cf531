"""Network faults for the tests: a TCP proxy whose connections can be cut,
and a server that accepts connections and never answers."""

from __future__ import annotations

import socket
import threading
from typing import List, Optional, Tuple, Union


class CuttableProxy:
    """CuttableProxy forwards every connection it accepts on a loopback port
    (or, with unix_path, on that unix socket) to target, a (host, port) or a
    unix socket's path; cut() closes every connection open now (new ones
    still work), as a dropped network or a restarted load balancer would;
    close() stops it taking new ones too."""

    def __init__(self, target: Union[Tuple[str, int], str], unix_path: Optional[str] = None):
        self.target = target
        if unix_path:
            self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.listener.bind(unix_path)
            self.listener.listen(64)
            self.url = "unix://" + unix_path
        else:
            self.listener = socket.create_server(("127.0.0.1", 0))
            self.url = "http://127.0.0.1:%d" % self.listener.getsockname()[1]
        self.accepted = 0
        self._lock = threading.Lock()
        self._open: List[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                down, _ = self.listener.accept()
            except OSError:
                return
            try:
                if isinstance(self.target, str):
                    up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                    up.connect(self.target)
                else:
                    up = socket.create_connection(self.target, timeout=10)
                up.settimeout(None)
            except OSError:
                down.close()
                continue
            with self._lock:
                self.accepted += 1
                self._open += [down, up]
            threading.Thread(target=self._pipe, args=(down, up), daemon=True).start()
            threading.Thread(target=self._pipe, args=(up, down), daemon=True).start()

    @staticmethod
    def _pipe(src: socket.socket, dst: socket.socket) -> None:
        try:
            while True:
                b = src.recv(65536)
                if not b:
                    break
                dst.sendall(b)
        except OSError:
            pass
        try:  # pass the half-close on: the other way may still carry bytes
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def cut(self) -> None:
        """cut drops every connection open now, both ways."""
        with self._lock:
            conns, self._open = self._open, []
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self) -> None:
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
        self.cut()


class StalledServer:
    """StalledServer accepts connections on a loopback port and never
    answers; with answer_headers, it reads the request's headers, sends those
    bytes (a status line, headers, perhaps some body) and then nothing more,
    holding the connection open."""

    def __init__(self, answer_headers: Optional[bytes] = None):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = "http://127.0.0.1:%d" % self.listener.getsockname()[1]
        self.answer_headers = answer_headers
        self._held: List[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self._held.append(conn)
            if self.answer_headers:
                threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        try:
            buf = b""
            while b"\r\n\r\n" not in buf:
                b = conn.recv(65536)
                if not b:
                    return
                buf += b
            conn.sendall(self.answer_headers or b"")
        except OSError:
            pass

    def close(self) -> None:
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
        for c in self._held:
            c.close()


class FullBacklog:
    """FullBacklog is a port whose listener never accepts and whose queue of
    connections is full: the kernel drops the next one's SYN, so connecting
    hangs, as to a host that has gone away."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(0)
        self.url = "http://127.0.0.1:%d" % self.listener.getsockname()[1]
        self._fill: List[socket.socket] = []
        for _ in range(3):
            s = socket.socket()
            s.setblocking(False)
            try:
                s.connect(self.listener.getsockname())
            except BlockingIOError:
                pass
            self._fill.append(s)

    def close(self) -> None:
        for s in self._fill:
            s.close()
        self.listener.close()


class TricklingServer:
    """TricklingServer answers every request on a loopback port with prefix
    at once, then answer a byte at a time, one every interval seconds: a
    server (or a middlebox) that is alive, never silent for long, and far too
    slow. Each byte keeps a per-read socket timeout from passing; only a
    deadline on the whole call ends it."""

    def __init__(self, answer: bytes, interval: float = 0.1, prefix: bytes = b""):
        self.prefix = prefix
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = "http://127.0.0.1:%d" % self.listener.getsockname()[1]
        self.answer = answer
        self.interval = interval
        self._closed = threading.Event()
        self._conns: List[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self._conns.append(conn)
            threading.Thread(target=self._trickle, args=(conn,), daemon=True).start()

    def _trickle(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(5)
            buf = b""
            while b"\r\n\r\n" not in buf:
                b = conn.recv(65536)
                if not b:
                    return
                buf += b
            conn.sendall(self.prefix)
            for i in range(len(self.answer)):
                if self._closed.wait(self.interval):
                    return
                conn.sendall(self.answer[i:i + 1])
        except OSError:
            pass

    def close(self) -> None:
        self._closed.set()
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
        for c in self._conns:
            c.close()
