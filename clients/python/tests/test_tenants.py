"""Two tenants on one server see nothing of each other's."""

from __future__ import annotations

import base64
import os
import shutil
import tempfile
import unittest
import uuid

import airlock

from . import server
from .base import ServerTest


class TenantTest(ServerTest):
    def test_jobs_and_workspaces_are_the_tenants_own(self) -> None:
        a, b = self.client("alpha"), self.client("beta")
        tag = uuid.uuid4().hex[:8]
        job = a.start("echo secret; sleep 30", labels={"t": tag})
        try:
            self.assertEqual([j.id for j in a.list(labels={"t": tag})], [job.id])
            self.assertEqual(b.list(labels={"t": tag}), [])
            self.assertNotIn(job.id, [j.id for j in b.list()])
            other = airlock.Job(b, job.id)
            for call in (other.refresh, lambda: other.wait(1), other.kill, lambda: list(other.logs(timeout=5)),
                         lambda: list(other.logs(follow=False)), other.remove):
                with self.assertRaises(airlock.NotFound) as cm:
                    call()
                self.assertEqual(cm.exception.code, "not_found")
            self.assertEqual(job.refresh().state, "running", "beta's kill did not reach it")
        finally:
            job.kill("SIGKILL", force_after=0)
            job.wait(30)

        with a.workspace(size="1m") as ws:
            ws.put("secret.txt", "alpha's\n")
            self.assertNotIn(ws.id, [w.id for w in b.workspaces()])
            theirs = airlock.Workspace(b, None, id=ws.id, keep=True)
            for call in (theirs.refresh, lambda: theirs.read("secret.txt"), theirs.ls,
                         lambda: theirs.put("x", "y"), lambda: theirs.rm("secret.txt"), theirs.delete):
                with self.assertRaises(airlock.NotFound) as cm:
                    call()
                self.assertEqual(cm.exception.code, "workspace_not_found")
            # A run naming it is an invalid request, as for an unknown id.
            with self.assertRaises(airlock.SpecError) as cm:
                b.run("cat secret.txt", workspace=ws.id)
            self.assertEqual(cm.exception.field, "workspace")
            self.assertIn("no such workspace", cm.exception.message)
            self.assertEqual(ws.read("secret.txt"), b"alpha's\n")


class SecretTest(unittest.TestCase):
    """A tenant's secrets: stored write-only, named by its runs as a
    placeholder, invisible to another tenant."""

    def test_secrets_are_the_tenants_own(self) -> None:
        d = tempfile.mkdtemp(prefix="airlock-pysecrets-")
        self.addCleanup(shutil.rmtree, d, True)
        key = os.path.join(d, "secrets.key")
        with open(key, "w") as f:
            f.write(base64.b64encode(os.urandom(32)).decode() + "\n")
        srv = server.Server(args=["--secrets-key-file", key, "--egress-allowed", "api.test"], pool="airlock/minimal=0")
        self.addCleanup(srv.cleanup)
        self.addCleanup(srv.stop)
        a = airlock.Client(srv.url, server.TOKENS["alpha"], timeout=30)
        b = airlock.Client(srv.url, server.TOKENS["beta"], timeout=30)
        value = "tok-" + uuid.uuid4().hex
        info = a.put_secret("API_TOKEN", value, ["api.test"], header="Authorization: Bearer {value}")
        self.assertEqual((info.name, info.hosts, info.header), ("API_TOKEN", ["api.test"], "Authorization: Bearer {value}"))
        self.assertEqual([s.name for s in a.secrets()], ["API_TOKEN"])
        self.assertEqual(b.secrets(), [])
        with self.assertRaises(airlock.SpecError) as cm:
            b.run("true", secrets=["API_TOKEN"])
        self.assertEqual(cm.exception.field, "secrets")
        with self.assertRaises(airlock.SpecError) as cm:
            a.put_secret("OTHER", value, ["elsewhere.test"])
        self.assertEqual(cm.exception.field, "hosts")
        res = a.run('echo "$API_TOKEN"', secrets=["API_TOKEN"])
        self.assertTrue(res.stdout.startswith("airlock-secret-"), res.stdout)
        # One name as a str is that name, and one host as a str that host.
        res = a.run('echo "$API_TOKEN"', secrets="API_TOKEN", egress="api.test")
        self.assertTrue(res.stdout.startswith("airlock-secret-"), res.stdout)
        self.assertNotIn(value, res.stdout)
        a.remove_secret("API_TOKEN")
        self.assertEqual(a.secrets(), [])
        srv.stop()
        self.assertNotIn(value, srv.log_text())
