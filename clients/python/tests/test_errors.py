"""Every error class, raised by the case that produces it; deadlines against
a server that never answers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest
import urllib.request
from typing import Callable

import airlock
import airlock.client

from . import pg, server
from .base import ServerTest
from .netfaults import CuttableProxy, FullBacklog, StalledServer, TricklingServer
from .server import free_port


class ErrorsTest(ServerTest):
    def assertRaisesCode(self, cls: type, code: str, fn: Callable[[], object]) -> airlock.AirlockError:
        with self.assertRaises(cls) as cm:
            fn()
        e = cm.exception
        self.assertIsInstance(e, airlock.AirlockError)
        self.assertEqual(e.code, code, repr(e))
        self.assertTrue(e.message, "every error carries a message")
        self.assertEqual(str(e), e.message)
        return e

    def test_spec_error_names_the_field(self) -> None:
        e = self.assertRaisesCode(airlock.SpecError, "invalid_request", lambda: self.c.run("true", memory="100g"))
        self.assertEqual((e.field, e.status), ("memory", 400))
        self.assertIn("limit", e.message)
        e = self.assertRaisesCode(airlock.SpecError, "invalid_request",
                                  lambda: self.c.run("true", env={"BAD NAME": "x"}))
        self.assertTrue(e.field.startswith("env"), e.field)
        e = self.assertRaisesCode(airlock.SpecError, "invalid_request", lambda: self.c.run(42))  # type: ignore[arg-type]
        self.assertEqual(e.field, "command")
        e = self.assertRaisesCode(airlock.SpecError, "invalid_request", lambda: self.c.run("true", memory="lots"))
        self.assertEqual(e.field, "memory")

    def test_egress_outside_the_servers_bounds(self) -> None:
        # The test server allows no host (egress.allowed is empty by default):
        # a run that names one is refused by name, before anything runs; an
        # empty list is no network, as without it.
        e = self.assertRaisesCode(airlock.SpecError, "invalid_request",
                                  lambda: self.c.run("true", egress=["pypi.org"]))
        self.assertEqual(e.field, "egress")
        self.assertIn("pypi.org", e.message)
        self.assertTrue(self.c.run("true", egress=[]).success)
        self.assertTrue(self.c.run("true", egress=None).success)

    def test_auth_error(self) -> None:
        bad = airlock.Client(self.srv.url, "not-a-token")
        e = self.assertRaisesCode(airlock.AuthError, "unauthorized", lambda: bad.run("true"))
        self.assertEqual(e.status, 401)
        none = airlock.Client(self.srv.url, "")
        self.assertRaisesCode(airlock.AuthError, "unauthorized", lambda: none.list())

    def test_not_found(self) -> None:
        e = self.assertRaisesCode(airlock.NotFound, "not_found", lambda: self.c.job("0" * 24))
        self.assertEqual(e.status, 404)
        self.assertRaisesCode(airlock.NotFound, "workspace_not_found", lambda: self.c.open_workspace("ws_" + "0" * 24))

    def test_conflict(self) -> None:
        with self.c.workspace(size="1m") as ws:
            job = self.c.start("sleep 30", workspace=ws)
            try:
                self.assertRaisesCode(airlock.Conflict, "running", job.remove)
                self.assertRaisesCode(airlock.Conflict, "workspace_busy", ws.delete)
            finally:
                job.kill("SIGKILL", force_after=0)
                job.wait(30)

    def test_workspace_full(self) -> None:
        with self.c.workspace(size="1m") as ws:
            e = self.assertRaisesCode(airlock.WorkspaceFull, "workspace_full", lambda: ws.put("big", b"x" * (2 << 20)))
            self.assertEqual(e.status, 413)
            src = tempfile.mkdtemp()
            self.addCleanup(shutil.rmtree, src, True)
            with open(os.path.join(src, "big"), "wb") as f:
                f.write(b"y" * (3 << 20))
            self.assertRaisesCode(airlock.WorkspaceFull, "workspace_full", lambda: ws.upload(src))

    def test_workspace_lost(self) -> None:
        # The holder of a workspace's files stopped, as an engine restart
        # stops it: its files are gone, 410 workspace_lost.
        ws = self.c.workspace(size="1m")
        self.addCleanup(self._delete_quietly, ws)
        ws.put("a.txt", "a\n")
        subprocess.run(["docker", "stop", "-t", "0", "airlock-%s-holder" % ws.id], check=True, capture_output=True,
                       timeout=60)
        e = self.assertRaisesCode(airlock.WorkspaceLost, "workspace_lost", lambda: ws.put("b.txt", "b\n"))
        self.assertEqual(e.status, 410)
        self.assertIn(ws.id, e.message)
        self.assertRaisesCode(airlock.WorkspaceLost, "workspace_lost", lambda: ws.read("a.txt"))
        self.assertTrue(ws.refresh().lost)
        ws.delete()

    @staticmethod
    def _delete_quietly(ws: airlock.Workspace) -> None:
        try:
            ws.delete()
        except airlock.NotFound:
            pass

    def test_busy_error(self) -> None:
        # gamma may have one run active at a time.
        g = self.client("gamma")
        job = g.start("sleep 30")
        try:
            t0 = time.monotonic()
            e = self.assertRaisesCode(airlock.BusyError, "busy", lambda: g.run("true", queue_timeout=0.5))
            self.assertGreaterEqual(time.monotonic() - t0, 0.4, "it waited its queue_timeout first")
            self.assertEqual(e.status, 429)
            self.assertEqual(e.retry_after, 1.0)
        finally:
            job.kill("SIGKILL", force_after=0)
            job.wait(30)
        self.assertTrue(g.run("true").success, "room again once the job ended")

    def test_server_error_when_the_engine_is_gone(self) -> None:
        # A server of its own, whose engine is reached through a proxy the test
        # then closes: the engine is unreachable.
        d = tempfile.mkdtemp(prefix="airlock-pyengine-")
        self.addCleanup(shutil.rmtree, d, True)
        host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        if not host.startswith("unix://"):
            self.skipTest("the engine is not on a unix socket: %s" % host)
        px = CuttableProxy(host[len("unix://"):], unix_path=os.path.join(d, "docker.sock"))
        self.addCleanup(px.close)
        srv = server.Server(env={"DOCKER_HOST": px.url}, pool="airlock/minimal=0")
        self.addCleanup(srv.cleanup)
        self.addCleanup(srv.stop)
        c = airlock.Client(srv.url, server.TOKENS["alpha"], timeout=30)
        self.assertEqual(c.run("echo up").stdout, "up\n")
        px.close()
        e = self.assertRaisesCode(airlock.ServerError, "engine_unavailable", lambda: c.run("echo down"))
        self.assertEqual(e.status, 503)
        self.assertRaisesCode(airlock.ServerError, "engine_unavailable", lambda: c.workspace())
        srv.stop()
        self.assertEqual(srv.leftovers(), [])

    def test_connection_refused(self) -> None:
        c = airlock.Client("http://127.0.0.1:%d" % free_port(), "t", timeout=5)
        t0 = time.monotonic()
        self.assertRaisesCode(airlock.ConnectionFailed, "connection", lambda: c.check("true"))
        self.assertLess(time.monotonic() - t0, 3)


class DeadlineTest(ServerTest):
    """A server that accepts and never answers fails every call at its deadline."""

    def stalled(self, headers: bytes = b"") -> StalledServer:
        s = StalledServer(headers or None)
        self.addCleanup(s.close)
        return s

    def assertTimesOut(self, fn: Callable[[], object], at: float) -> None:
        t0 = time.monotonic()
        with self.assertRaises(airlock.Timeout) as cm:
            fn()
        took = time.monotonic() - t0
        self.assertEqual(cm.exception.code, "timeout")
        self.assertIsInstance(cm.exception, TimeoutError)
        self.assertGreaterEqual(took, at - 0.1)
        self.assertLess(took, at + 2.0, "failed at its deadline, not later")

    def test_calls_fail_at_their_deadline(self) -> None:
        s = self.stalled()
        c = airlock.Client(s.url, "t", timeout=1)
        self.assertTimesOut(lambda: c.check("true"), 1)
        self.assertTimesOut(lambda: c.run("true", request_timeout=1.5), 1.5)
        self.assertTimesOut(lambda: c.run("true", timeout=1, queue_timeout=0.5), 2.5)
        self.assertTimesOut(lambda: c.workspace(), 1)
        self.assertTimesOut(lambda: airlock.Job(c, "x").wait(timeout=1), 1)
        self.assertTimesOut(lambda: list(airlock.Job(c, "x").logs(timeout=1.5)), 1.5)

    def test_connect_deadline(self) -> None:
        fb = FullBacklog()
        self.addCleanup(fb.close)
        c = airlock.Client(fb.url, "t", timeout=30, connect_timeout=1)
        self.assertTimesOut(lambda: c.check("true"), 1)
        self.assertTimesOut(lambda: list(airlock.Job(c, "x").logs(timeout=2)), 2)

    def test_body_that_never_comes(self) -> None:
        s = self.stalled(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
        c = airlock.Client(s.url, "t", timeout=1)
        self.assertTimesOut(lambda: c.check("true"), 1)

    def test_answers_that_are_not_the_api(self) -> None:
        s = self.stalled(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 8\r\n\r\nnot json")
        c = airlock.Client(s.url, "t", timeout=5)
        with self.assertRaises(airlock.ProtocolError) as cm:
            c.check("true")
        self.assertEqual(cm.exception.code, "protocol")
        # A proxy's error page in front of the server: its status decides the class.
        s = self.stalled(b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/html\r\nContent-Length: 12\r\n\r\n<h1>502</h1>")
        c = airlock.Client(s.url, "t", timeout=5)
        with self.assertRaises(airlock.ServerError) as cm:
            c.check("true")
        self.assertEqual((cm.exception.code, cm.exception.status), ("http_502", 502))
        self.assertIn("<h1>502</h1>", cm.exception.message)

    def test_silent_follow_resumes_then_fails(self) -> None:
        # Event-stream headers, then silence: no keep-alive, the connection is
        # taken for dead and resumed, a few times, then given up.
        s = self.stalled(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
        c = airlock.Client(s.url, "t", timeout=5)
        idle, airlock.client.FOLLOW_IDLE = airlock.client.FOLLOW_IDLE, 0.3
        self.addCleanup(setattr, airlock.client, "FOLLOW_IDLE", idle)
        t0 = time.monotonic()
        with self.assertRaises(airlock.ConnectionFailed) as cm:
            list(airlock.Job(c, "x").logs())
        self.assertIn("after 3 resumes", cm.exception.message)
        self.assertLess(time.monotonic() - t0, 5)
        self.assertEqual(len(s._held), 4, "the first try and three resumes")


class TrickleTest(unittest.TestCase):
    """A server that trickles its answer, a byte every 0.1 s, never silent
    long enough for a socket timeout: the call's deadline still ends it, in
    the headers, in a body of known length, in a chunked body, in a follow."""

    JSON = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"

    def trickling(self, answer: bytes, prefix: bytes = b"") -> TricklingServer:
        s = TricklingServer(answer, interval=0.1, prefix=prefix)
        self.addCleanup(s.close)
        return s

    def assertTimesOut(self, fn: Callable[[], object], at: float) -> None:
        t0 = time.monotonic()
        with self.assertRaises(airlock.Timeout) as cm:
            fn()
        took = time.monotonic() - t0
        self.assertEqual(cm.exception.code, "timeout")
        self.assertGreaterEqual(took, at - 0.1)
        self.assertLess(took, at + 1.0, "failed at its deadline, not a byte's timeout later")

    def test_trickled_headers(self) -> None:
        s = self.trickling(self.JSON + b"X-Pad: " + b"a" * 300 + b"\r\nContent-Length: 2\r\n\r\n{}")
        c = airlock.Client(s.url, "t", timeout=2)
        self.assertTimesOut(lambda: c.check("true"), 2)
        self.assertTimesOut(lambda: c.run("true", request_timeout=1.5), 1.5)

    def test_trickled_body_of_known_length(self) -> None:
        body = b'{"allowed": true, "reason": "' + b"x" * 500 + b'"}'
        s = self.trickling(body, prefix=self.JSON + b"Content-Length: %d\r\n\r\n" % len(body))
        c = airlock.Client(s.url, "t", timeout=2)
        self.assertTimesOut(lambda: c.check("true"), 2)

    def test_trickled_chunked_body(self) -> None:
        body = b'{"allowed": true, "reason": "' + b"x" * 500 + b'"}'
        chunked = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 8]), body[i:i + 8]) for i in range(0, len(body), 8))
        s = self.trickling(chunked + b"0\r\n\r\n", prefix=self.JSON + b"Transfer-Encoding: chunked\r\n\r\n")
        c = airlock.Client(s.url, "t", timeout=2)
        self.assertTimesOut(lambda: c.check("true"), 2)

    def test_trickled_follow(self) -> None:
        # A keep-alive comment of 400 bytes, a byte at a time: life, every 0.1 s.
        s = self.trickling(b": " + b"k" * 400 + b"\n\n",
                           prefix=b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n")
        c = airlock.Client(s.url, "t", timeout=30)
        self.assertTimesOut(lambda: list(airlock.Job(c, "x").logs(timeout=2)), 2)

    def test_a_fast_answer_still_reads_whole(self) -> None:
        body = b'{"allowed": true, "reason": "fine"}'
        s = TricklingServer(b"", prefix=self.JSON + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.addCleanup(s.close)
        d = airlock.Client(s.url, "t", timeout=2).check("true")
        self.assertEqual((d.allowed, d.reason), (True, "fine"))


class QueueTimeoutTest(unittest.TestCase):
    """In cluster mode a run that finds no node with room within its
    queue_timeout is a QueueTimeout: a node of one slot, already taken."""

    def test_queue_timeout(self) -> None:
        if pg.bin_dir() is None:
            self.skipTest("PostgreSQL's initdb and postgres are missing: run .ci/install-postgresql (make test does)")
        db = pg.Postgres()
        self.addCleanup(db.stop)
        srv = server.Server(args=["--database", db.url, "--node-id", "py-node-1", "--node-slots", "1"],
                            pool="airlock/minimal=0")
        self.addCleanup(srv.cleanup)
        self.addCleanup(srv.stop)
        c = airlock.Client(srv.url, server.TOKENS["alpha"], timeout=30)
        job = c.start("sleep 60")
        try:
            self.assertEqual(job.state, "running")
            t0 = time.monotonic()
            with self.assertRaises(airlock.QueueTimeout) as cm:
                c.run("echo never", queue_timeout=1)
            self.assertGreaterEqual(time.monotonic() - t0, 0.9, "it waited its queue_timeout first")
            e = cm.exception
            self.assertEqual((e.code, e.status), ("queue_timeout", 503))
            self.assertTrue(e.message)
        finally:
            job.kill("SIGKILL", force_after=0)
            job.wait(60)
        srv.stop()
        self.assertEqual(srv.leftovers(), [])
