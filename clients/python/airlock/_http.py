"""The HTTP transport: one connection per call, with deadlines.

Every call has a deadline (a time.monotonic() instant): connecting takes at
most connect_timeout of it, and every later read and write of the socket is
bounded by what is left of it, each one armed afresh (_DeadlineSocket), so a
server that accepts and never answers, or trickles a byte a second into its
headers or body, fails the call at its deadline, not a socket timeout per byte
later. A connection per call
keeps the client safe to share between threads and leaves nothing half-read
behind a call that failed.
"""

from __future__ import annotations

import http.client
import io
import json
import socket
import ssl
import time
import urllib.parse
from typing import Any, Dict, Iterable, Iterator, List, Optional, Tuple, Union

from .errors import AirlockError, ConnectionFailed, ProtocolError, Timeout, error_from

Body = Union[None, bytes, Iterable[bytes]]

# The most bytes of an error answer read: enough for any error the API writes.
_MAX_ERROR_BODY = 1 << 20


def _remaining(deadline: Optional[float]) -> Optional[float]:
    if deadline is None:
        return None
    return deadline - time.monotonic()


class _DeadlineSocket:
    """_DeadlineSocket is a connection's socket whose every receive and send is
    bounded by what is left of the call's deadline (and by idle, when set), so
    no number of small reads can outlast it. http.client reads through
    makefile(), which reads through recv_into here."""

    def __init__(self, sock: socket.socket, deadline: Optional[float]):
        self._sock = sock
        self.deadline = deadline
        self.idle: Optional[float] = None
        # As socket.socket does: a reader from makefile keeps the socket open
        # past close() (http.client closes the connection's hold on it when
        # an answer is read to the close, and the answer reads on).
        self._io_refs = 0
        self._closed = False

    def _arm(self) -> None:
        t = _remaining(self.deadline)
        if t is not None and t <= 0:
            raise socket.timeout("the deadline passed")
        if self.idle is not None:
            t = self.idle if t is None else min(t, self.idle)
        self._sock.settimeout(t)

    def recv_into(self, b: Any, n: int = 0, flags: int = 0) -> int:
        self._arm()
        return self._sock.recv_into(b, n, flags)

    def recv(self, n: int, flags: int = 0) -> bytes:
        self._arm()
        return self._sock.recv(n, flags)

    def sendall(self, data: Any, flags: int = 0) -> None:
        self._arm()  # sendall's timeout bounds the whole of it (Python 3.5 on)
        self._sock.sendall(data, flags)

    def send(self, data: Any, flags: int = 0) -> int:
        self._arm()
        return self._sock.send(data, flags)

    def makefile(self, mode: str = "rb", buffering: Optional[int] = None, **kw: Any) -> Any:
        if mode != "rb":
            raise ValueError("only binary reads are supported")
        self._io_refs += 1
        return io.BufferedReader(socket.SocketIO(self, "rb"), io.DEFAULT_BUFFER_SIZE)  # type: ignore[arg-type]

    def _decref_socketios(self) -> None:
        self._io_refs -= 1
        if self._closed and self._io_refs <= 0:
            self._sock.close()

    def settimeout(self, t: Optional[float]) -> None:
        pass  # the deadline decides; http.client's own timeouts are not used

    def gettimeout(self) -> Optional[float]:
        return _remaining(self.deadline)

    def fileno(self) -> int:
        return self._sock.fileno()

    def close(self) -> None:
        self._closed = True
        if self._io_refs <= 0:
            self._sock.close()

    def shutdown(self, how: int) -> None:
        self._sock.shutdown(how)

    def setsockopt(self, *a: Any) -> None:
        self._sock.setsockopt(*a)


class _Connection(http.client.HTTPConnection):
    """_Connection is an HTTP connection whose socket keeps the call's deadline."""

    deadline: Optional[float] = None

    def connect(self) -> None:
        super().connect()
        self.sock = _DeadlineSocket(self.sock, self.deadline)  # type: ignore[assignment]


class _TLSConnection(http.client.HTTPSConnection):
    """_TLSConnection is _Connection over TLS: the deadline wraps the TLS socket."""

    deadline: Optional[float] = None

    def connect(self) -> None:
        super().connect()
        self.sock = _DeadlineSocket(self.sock, self.deadline)  # type: ignore[assignment]


class Response:
    """Response is a successful answer whose body is read within the call's
    deadline; close it when done (the helpers do)."""

    def __init__(self, conn: http.client.HTTPConnection, sock: _DeadlineSocket, resp: http.client.HTTPResponse,
                 what: str):
        self._conn = conn
        # The connection forgets its socket when the answer is read to the
        # close (no length, not chunked); the answer still reads from it.
        self._sock = sock
        self._resp = resp
        self.what = what
        self.status = resp.status
        self.headers = resp.headers

    @property
    def deadline(self) -> Optional[float]:
        """deadline bounds every read of the answer from now on (None: none)."""
        return self._sock.deadline

    @deadline.setter
    def deadline(self, d: Optional[float]) -> None:
        self._sock.deadline = d

    def read(self, n: int = -1) -> bytes:
        """read reads up to n bytes (all, when n < 0) within the deadline."""
        out = []
        want = n
        self._sock.idle = None
        try:
            while want != 0 and not self._resp.isclosed():
                # An answer read to its end closes its socket (for good, when
                # the server said Connection: close): nothing more to read.
                b = self._resp.read(65536 if want < 0 else min(want, 65536))
                if not b:
                    break
                out.append(b)
                if want > 0:
                    want -= len(b)
        except (socket.timeout, TimeoutError):
            raise Timeout("%s: the answer did not arrive within the deadline" % self.what) from None
        except (OSError, http.client.HTTPException) as e:
            raise ConnectionFailed("%s: the connection broke: %s" % (self.what, e)) from None
        return b"".join(out)

    def readline(self, idle: Optional[float] = None) -> bytes:
        """readline reads one line; socket.timeout when idle passes with no
        byte or the deadline passes (the caller tells which)."""
        self._sock.idle = idle
        return self._resp.readline()

    def json(self) -> Any:
        data = self.read()
        try:
            return json.loads(data.decode("utf-8")) if data else None
        except ValueError as e:
            raise ProtocolError("%s: the answer is not JSON: %s" % (self.what, e)) from None

    def close(self) -> None:
        try:
            self._resp.close()
        finally:
            self._conn.close()

    def __enter__(self) -> "Response":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Transport:
    """Transport sends requests to one server as one tenant."""

    def __init__(self, url: str, token: Optional[str], connect_timeout: float):
        u = urllib.parse.urlsplit(url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError("server URL %r: want http://host:port or https://host:port" % url)
        self.url = url
        self.scheme = u.scheme
        self.host = u.hostname
        self.port = u.port or (443 if u.scheme == "https" else 80)
        self.prefix = u.path.rstrip("/")
        self.netloc = u.netloc
        self.token = token
        self.connect_timeout = connect_timeout

    def _connect(self, deadline: Optional[float], what: str) -> Tuple[http.client.HTTPConnection, _DeadlineSocket]:
        left = _remaining(deadline)
        t = self.connect_timeout if left is None else max(0.001, min(self.connect_timeout, left))
        if self.scheme == "https":
            conn: Union[_Connection, _TLSConnection] = _TLSConnection(
                self.host, self.port, timeout=t, context=ssl.create_default_context())
        else:
            conn = _Connection(self.host, self.port, timeout=t)
        conn.deadline = deadline
        try:
            conn.connect()
        except (socket.timeout, TimeoutError):
            conn.close()
            raise Timeout("%s: could not connect to %s within %.3gs" % (what, self.netloc, t)) from None
        except OSError as e:
            conn.close()
            raise ConnectionFailed("%s: cannot reach the airlock server at %s: %s" % (what, self.netloc, e)) from None
        return conn, conn.sock  # type: ignore[return-value]

    def request(self, method: str, path: str, *, query: Optional[List[Tuple[str, str]]] = None,
                body: Body = None, content_type: Optional[str] = None, accept: str = "application/json",
                deadline: Optional[float]) -> Response:
        """request sends one request and returns the answer when its status is
        a success; otherwise it raises the server's error, typed. An iterable
        body is sent chunked, as it is produced. Every byte sent and read,
        headers and body, is bounded by deadline (None: no bound)."""
        url = self.prefix + path
        if query:
            url += "?" + urllib.parse.urlencode(query)
        what = "%s %s" % (method, path)
        conn, sock = self._connect(deadline, what)
        try:
            headers: Dict[str, str] = {"Accept": accept, "User-Agent": "airlock-python"}
            if content_type:
                headers["Content-Type"] = content_type
            if self.token:
                headers["Authorization"] = "Bearer " + self.token

            def arm() -> None:
                left = _remaining(deadline)
                if left is not None and left <= 0:
                    raise Timeout("%s: the request was not sent within the deadline" % what)

            try:
                if body is None or isinstance(body, (bytes, bytearray)):
                    if body is None and method in ("POST", "PUT"):
                        body = b""
                    conn.request(method, url, body=body, headers=headers)
                else:
                    def paced(chunks: Iterable[bytes]) -> Iterator[bytes]:
                        for c in chunks:
                            arm()
                            yield c
                        arm()

                    headers["Transfer-Encoding"] = "chunked"
                    conn.request(method, url, body=paced(body), headers=headers, encode_chunked=True)
            except (BrokenPipeError, ConnectionResetError):
                # A server that refuses a body (too large, a bad archive) may
                # answer and close before reading all of it: its answer says
                # why. Read it if it came; otherwise the connection broke.
                pass
            resp = conn.getresponse()
        except AirlockError:
            conn.close()
            raise
        except (socket.timeout, TimeoutError):
            conn.close()
            raise Timeout("%s: the server did not answer within the deadline" % what) from None
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise ConnectionFailed("%s: the connection to %s broke: %s" % (what, self.netloc, e)) from None
        except BaseException:
            conn.close()
            raise
        r = Response(conn, sock, resp, what)
        if resp.status < 300:
            return r
        try:
            raise self._error(r)
        finally:
            r.close()

    def _error(self, r: Response) -> AirlockError:
        data = r.read(_MAX_ERROR_BODY)
        retry_after: Optional[float] = None
        ra = r.headers.get("Retry-After")
        if ra:
            try:
                retry_after = float(ra)
            except ValueError:
                retry_after = None
        try:
            e = json.loads(data.decode("utf-8"))["error"]
            return error_from(r.status, str(e["code"]), str(e["message"]), e.get("field") or None, retry_after)
        except (ValueError, KeyError, TypeError):
            text = data.decode("utf-8", "replace").strip()
            return error_from(r.status, "http_%d" % r.status, "%s: %d %s: %s" % (r.what, r.status, r._resp.reason, text),
                              None, retry_after)


def read_events(r: Response, idle: Optional[float]) -> Iterator[Tuple[str, bytes]]:
    """read_events yields the events of a Server-Sent Events stream, (name,
    data), until it ends; comments (keep-alives) are skipped but count as life.
    socket.timeout escapes when nothing at all arrived for idle seconds, before
    the deadline; Timeout at the deadline; ConnectionFailed when it breaks."""
    event = ""
    data: List[bytes] = []
    has = False
    while True:
        try:
            line = r.readline(idle)
        except (socket.timeout, TimeoutError):
            left = _remaining(r.deadline)
            if left is not None and left <= 0.01:
                raise Timeout("%s: the deadline passed" % r.what) from None
            raise
        except AirlockError:
            raise
        except (OSError, http.client.HTTPException) as e:
            raise ConnectionFailed("%s: the connection broke: %s" % (r.what, e)) from None
        if not line:
            return  # an event not closed by a blank line is dropped, as SSE says
        line = line.rstrip(b"\r\n")
        if not line:
            if event or has:
                yield (event or "message"), b"\n".join(data)
            event, data, has = "", [], False
        elif line.startswith(b"event:"):
            event = line[6:].strip().decode("utf-8", "replace")
        elif line.startswith(b"data:"):
            d = line[5:]
            data.append(d[1:] if d.startswith(b" ") else d)
            has = True
