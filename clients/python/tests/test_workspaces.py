"""Workspaces: the agent's loop in airlock/debian, files in and out, links
that would lead out refused both ways."""

from __future__ import annotations

import os
import tempfile

import airlock

from .base import ServerTest

BROKEN = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"
TESTS = (
    "from calc import add\n\n\n"
    "def test_add():\n    assert add(2, 3) == 5\n\n\n"
    "def test_zero():\n    assert add(0, 0) == 0\n"
)


class WorkspaceTest(ServerTest):
    def tmpdir(self) -> str:
        d = tempfile.mkdtemp(prefix="airlock-pyws-")
        self.addCleanup(lambda: __import__("shutil").rmtree(d, ignore_errors=True))
        return d

    def test_agent_loop_in_debian(self) -> None:
        with self.c.workspace(size="64m", labels={"agent": "a1"}) as ws:
            ws_id = ws.id
            self.assertTrue(ws_id.startswith("ws_"))
            ws.put("calc.py", BROKEN)
            ws.put("test_calc.py", TESTS)
            cmd = "python3 -m pytest -q -p no:cacheprovider --junitxml=reports/junit.xml"
            res = self.c.run(cmd, image="airlock/debian", workspace=ws, report="junit:reports/*.xml", timeout=120)
            self.assertEqual((res.state, res.exit_code), ("completed", 1), res.stdout + res.stderr)
            self.assertEqual((res.tests.passed, res.tests.failed), (1, 1))
            self.assertEqual(res.tests.files, ["reports/junit.xml"])
            self.assertIn("test_add", res.tests.failures[0].name)
            self.assertIn("assert", res.tests.failures[0].message)

            ws.put("calc.py", FIXED)
            res = self.c.run(cmd, image="airlock/debian", workspace=ws, report="junit:reports/*.xml", timeout=120)
            self.assertEqual(res.exit_code, 0, res.stdout + res.stderr)
            self.assertEqual((res.tests.passed, res.tests.failed), (2, 0))

            report = ws.read("reports/junit.xml").decode("utf-8")
            self.assertIn("<testsuite", report)
            self.assertIn('failures="0"', report)
            self.assertEqual([f.name for f in ws.ls("reports")], ["junit.xml"])
            self.assertEqual(ws.refresh().labels, {"agent": "a1"})
        with self.assertRaises(airlock.NotFound) as cm:
            self.c.open_workspace(ws_id)
        self.assertEqual(cm.exception.code, "workspace_not_found")
        self.assertNotIn(ws_id, [w.id for w in self.c.workspaces()])

    def test_files_put_read_ls_rm(self) -> None:
        with self.c.workspace(size="8m") as ws:
            blob = bytes(range(256)) * 4
            ws.put("bin/blob", blob)
            ws.put("bin/run.sh", "#!/bin/sh\necho ran\n", mode=0o755)
            self.assertEqual(ws.read("bin/blob"), blob)
            files = {f.name: f for f in ws.ls("bin")}
            self.assertEqual(set(files), {"blob", "run.sh"})
            self.assertEqual((files["blob"].type, files["blob"].size), ("file", 1024))
            self.assertEqual(files["run.sh"].mode, "0755")
            self.assertEqual([f.name for f in ws.ls()], ["bin"])
            self.assertEqual(self.c.run("./bin/run.sh", workspace=ws).stdout, "ran\n")
            with self.assertRaises(airlock.Conflict) as cm:
                ws.read("bin")
            self.assertEqual(cm.exception.code, "wrong_type")
            ws.rm("bin/blob")
            with self.assertRaises(airlock.NotFound) as cm:
                ws.read("bin/blob")
            self.assertEqual(cm.exception.code, "file_not_found")
            job = self.c.start("echo from-job > out.txt", workspace=ws)
            job.wait(30)
            self.assertEqual(ws.read("out.txt"), b"from-job\n")

    def test_keep(self) -> None:
        with self.c.workspace(size="1m", keep=True) as ws:
            pass
        again = self.c.open_workspace(ws.id)
        self.assertEqual(again.refresh().size, 1 << 20)
        again.delete()
        with self.assertRaises(airlock.NotFound):
            ws.refresh()

    def test_upload_a_directory(self) -> None:
        src = self.tmpdir()
        os.makedirs(os.path.join(src, "pkg", "sub"))
        with open(os.path.join(src, "pkg", "mod.py"), "w") as f:
            f.write("X = 1\n")
        with open(os.path.join(src, "pkg", "sub", "data.bin"), "wb") as f:
            f.write(os.urandom(300000))
        with open(os.path.join(src, "run.sh"), "w") as f:
            f.write("#!/bin/sh\necho ok\n")
        os.chmod(os.path.join(src, "run.sh"), 0o755)
        os.symlink("pkg/mod.py", os.path.join(src, "alias.py"))  # a link inside is kept as a link
        with self.c.workspace(size="8m") as ws:
            ws.upload(src, to="proj")
            self.assertEqual(sorted(f.name for f in ws.ls("proj")), ["alias.py", "pkg", "run.sh"])
            links = [f for f in ws.ls("proj") if f.type == "symlink"]
            self.assertEqual([(f.name, f.target) for f in links], [("alias.py", "pkg/mod.py")])
            with open(os.path.join(src, "pkg", "sub", "data.bin"), "rb") as f:
                self.assertEqual(ws.read("proj/pkg/sub/data.bin"), f.read())
            res = self.c.run("./proj/run.sh && cat proj/alias.py", workspace=ws)
            self.assertEqual(res.stdout, "ok\nX = 1\n")

    def test_upload_refuses_a_link_leading_out(self) -> None:
        src = self.tmpdir()
        with open(os.path.join(src, "fine.txt"), "w") as f:
            f.write("fine\n")
        os.symlink("../../etc/passwd", os.path.join(src, "escape"))
        with self.c.workspace(size="8m") as ws:
            with self.assertRaises(airlock.RefusedPath) as cm:
                ws.upload(src)
            self.assertEqual(cm.exception.code, "refused_path")
            self.assertIn("escape", cm.exception.message)
            self.assertEqual(ws.ls(), [], "nothing of a refused archive lands")

    def test_download_refuses_links_leading_out(self) -> None:
        with self.c.workspace(size="8m") as ws:
            self.c.run("mkdir -p out/sub && echo a > out/a.txt && echo b > out/sub/b.txt && "
                       "ln -s sub/b.txt out/near && ln -s /etc/passwd out/evil", workspace=ws, check=True)
            dest = self.tmpdir()
            with self.assertRaises(airlock.RefusedPath) as cm:
                ws.download("out", dest)
            self.assertIn("evil", cm.exception.message)
            self.assertFalse(os.path.lexists(os.path.join(dest, "evil")))

            ws.rm("out/evil")
            # A link already in the local directory is replaced, never written through.
            dest = self.tmpdir()
            victim = os.path.join(self.tmpdir(), "victim")
            with open(victim, "w") as f:
                f.write("untouched\n")
            os.symlink(victim, os.path.join(dest, "a.txt"))
            self.assertEqual(ws.download("out", dest), dest)
            with open(os.path.join(dest, "a.txt")) as f:
                self.assertEqual(f.read(), "a\n")
            self.assertFalse(os.path.islink(os.path.join(dest, "a.txt")))
            with open(victim) as f:
                self.assertEqual(f.read(), "untouched\n")
            with open(os.path.join(dest, "sub", "b.txt")) as f:
                self.assertEqual(f.read(), "b\n")
            self.assertEqual(os.readlink(os.path.join(dest, "near")), "sub/b.txt")

            one = ws.download("out/a.txt", self.tmpdir())
            self.assertEqual(os.path.basename(one), "a.txt")
            with open(one) as f:
                self.assertEqual(f.read(), "a\n")


class PathTest(ServerTest):
    """Workspace paths: relative to /workspace, or absolute under it; any
    other absolute path and any ".." refused on the client, naming the
    argument, for every call alike."""

    def test_absolute_under_workspace_is_that_path(self) -> None:
        with self.c.workspace(size="1m") as ws:
            ws.put("/workspace/x.txt", "abs\n")
            ws.put("/workspace/sub/y.txt", "deep\n")
            self.assertEqual([f.name for f in ws.ls()], ["sub", "x.txt"], "not /workspace/workspace/x.txt")
            self.assertEqual(self.c.run("cat /workspace/x.txt /workspace/sub/y.txt", workspace=ws).stdout, "abs\ndeep\n")
            self.assertEqual(ws.read("/workspace/x.txt"), b"abs\n")
            self.assertEqual([f.name for f in ws.ls("/workspace/sub")], ["y.txt"])
            self.assertEqual([f.name for f in ws.ls("/workspace")], ["sub", "x.txt"])
            self.assertEqual(ws.read("./sub//y.txt"), b"deep\n")
            ws.rm("/workspace/sub")
            self.assertEqual([f.name for f in ws.ls()], ["x.txt"])

    def test_climbing_and_outside_paths_are_refused_on_the_client(self) -> None:
        src = tempfile.mkdtemp(prefix="airlock-pyws-")
        self.addCleanup(lambda: __import__("shutil").rmtree(src, ignore_errors=True))
        with open(os.path.join(src, "f"), "w") as f:
            f.write("f\n")
        with self.c.workspace(size="1m") as ws:
            ws.put("keep.txt", "k\n")
            calls = [
                ("path", lambda p: ws.put(p, "x")),
                ("to", lambda p: ws.upload(src, to=p)),
                ("path", lambda p: ws.listing(p)),
                ("path", lambda p: ws.ls(p)),
                ("path", lambda p: ws.read(p)),
                ("path", lambda p: ws.rm(p)),
                ("path", lambda p: ws.download(p, src)),
            ]
            for arg, call in calls:
                for bad, says in (("../x", ".."), ("a/../../x", ".."), ("sub/..", ".."), ("..", ".."),
                                  ("/etc/passwd", "outside /workspace"), ("/workspacex/y", "outside /workspace"),
                                  ("/workspace/../etc", "..")):
                    with self.assertRaises(airlock.RefusedPath, msg="%s %r" % (arg, bad)) as cm:
                        call(bad)
                    e = cm.exception
                    self.assertIsInstance(e, ValueError)
                    self.assertEqual((e.field, e.code), (arg, "refused_path"))
                    self.assertTrue(e.message.startswith(arg + ": "), e.message)
                    self.assertIn(says, e.message)
                    self.assertIn(repr(bad), e.message)
            with self.assertRaises(airlock.RefusedPath) as cm:
                ws.put("/workspace", "x")
            self.assertIn("root", cm.exception.message)
            self.assertEqual([f.name for f in ws.ls()], ["keep.txt"], "nothing landed anywhere")
            ws.upload(src, to="/workspace/up")
            self.assertEqual(ws.read("up/f"), b"f\n")
