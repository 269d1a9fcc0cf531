"""Foreground runs: what run returns for each way a command can end."""

from __future__ import annotations

import subprocess
import threading
import time
from typing import List, Tuple

import airlock

from .base import ServerTest


class RunTest(ServerTest):
    def test_output_and_exit_code(self) -> None:
        res = self.c.run("echo out; echo err >&2; exit 3")
        self.assertIsInstance(res, airlock.Result)
        self.assertEqual((res.state, res.exit_code, res.returncode, res.success), ("completed", 3, 3, False))
        self.assertEqual((res.stdout, res.stderr), ("out\n", "err\n"))
        self.assertEqual((res.stdout_bytes, res.stderr_bytes), (4, 4))
        self.assertEqual(res.tenant, "alpha")
        self.assertTrue(res.id and res.container_id and res.image == "airlock/minimal")
        self.assertIsNotNone(res.started_at)
        self.assertIsNotNone(res.finished_at)
        self.assertIsInstance(res.resource_usage, airlock.ResourceUsage)

    def test_argv_runs_without_a_shell(self) -> None:
        res = self.c.run(["echo", "$HOME", "a b"])
        self.assertEqual(res.stdout, "$HOME a b\n")
        self.assertTrue(res.success)

    def test_timeout(self) -> None:
        t0 = time.monotonic()
        res = self.c.run("echo started; sleep 30", timeout=1)
        self.assertLess(time.monotonic() - t0, 15)
        self.assertEqual((res.state, res.exit_code, res.timed_out), ("timed_out", 124, True))
        self.assertEqual(res.stdout, "started\n", "output before the timeout is kept")

    def test_oom(self) -> None:
        res = self.c.run("awk 'BEGIN{s=\"x\"; while(1) s=s s}'", memory="32m")
        self.assertEqual((res.state, res.exit_code, res.oom_killed, res.signal), ("killed", 137, True, "SIGKILL"))
        self.assertFalse(res.success)

    def test_blocked_is_a_result(self) -> None:
        res = self.c.run("rm -rf /")
        self.assertEqual((res.state, res.exit_code, res.blocked), ("blocked", 126, True))
        self.assertTrue(res.block_rule)
        self.assertTrue(res.block_reason)
        self.assertEqual(res.container_id, "", "no container for a refused command")

    def test_stdin(self) -> None:
        res = self.c.run("cat", stdin="one\ntwo\n")
        self.assertEqual(res.stdout, "one\ntwo\n")
        self.assertEqual(self.c.run("wc -l", stdin="one\ntwo\n").stdout.strip(), "2")
        res = self.c.run("cat", stdin="héllo".encode("utf-8"))
        self.assertEqual(res.stdout, "héllo")
        res = self.c.run("cat; echo end")
        self.assertEqual(res.stdout, "end\n", "without stdin it is closed at once")

    def test_env(self) -> None:
        res = self.c.run('echo "$GREETING $WHO"', env={"GREETING": "hello", "WHO": "world"})
        self.assertEqual(res.stdout, "hello world\n")

    def test_check_raises_on_failure(self) -> None:
        self.assertTrue(self.c.run("true", check=True).success)
        with self.assertRaises(airlock.CommandFailed) as cm:
            self.c.run("echo nope >&2; exit 7", check=True)
        e = cm.exception
        self.assertEqual((e.returncode, e.stderr, e.code), (7, "nope\n", "command_failed"))
        self.assertIsInstance(e.result, airlock.Result)
        self.assertEqual(e.result.exit_code, 7)
        with self.assertRaises(airlock.CommandFailed) as cm:
            self.c.run("sleep 10", timeout=0.5, check=True)
        self.assertTrue(cm.exception.result.timed_out)

    def test_command_failed_is_a_called_process_error(self) -> None:
        # Code written for subprocess.run(check=True) catches it as it is.
        with self.assertRaises(subprocess.CalledProcessError) as cm:
            self.c.run("echo out; echo err >&2; exit 9", check=True)
        e = cm.exception
        self.assertIsInstance(e, airlock.CommandFailed)
        self.assertIsInstance(e, airlock.AirlockError)
        self.assertEqual((e.returncode, e.cmd, e.output, e.stdout, e.stderr), (9, "echo out; echo err >&2; exit 9",
                                                                                  "out\n", "out\n", "err\n"))
        self.assertEqual(str(e), "command exited with code 9")
        with self.assertRaises(subprocess.CalledProcessError) as cm:
            self.c.run(["sh", "-c", "exit 2"], check=True)
        self.assertEqual((cm.exception.returncode, cm.exception.cmd), (2, ["sh", "-c", "exit 2"]))

    def test_one_name_is_one_name(self) -> None:
        # egress="host" and secrets="NAME" are one item, not their characters.
        spec = self.c._spec("true", {"egress": "pypi.org", "secrets": "GIT_TOKEN"})
        self.assertEqual((spec["egress"], spec["secrets"]), (["pypi.org"], ["GIT_TOKEN"]))
        spec = self.c._spec("true", {"egress": ("a.test", "b.test"), "secrets": []})
        self.assertEqual((spec["egress"], spec["secrets"]), (["a.test", "b.test"], []))
        e = None
        with self.assertRaises(airlock.SpecError) as cm:
            self.c.run("true", egress="pypi.org")
        e = cm.exception
        self.assertEqual(e.field, "egress")
        self.assertIn("pypi.org", e.message, "the server was asked for the host, not its letters")
        for bad in (b"pypi.org", 5, ["ok", 5]):
            with self.assertRaises(airlock.SpecError) as cm:
                self.c.run("true", egress=bad)  # type: ignore[arg-type]
            self.assertEqual(cm.exception.field, "egress")

    def test_check_with_blocked_command(self) -> None:
        with self.assertRaises(airlock.CommandFailed) as cm:
            self.c.run("sudo id", check=True)
        self.assertEqual(cm.exception.code, "blocked")
        self.assertTrue(cm.exception.result.blocked)

    def test_labels_and_limits(self) -> None:
        res = self.c.run("echo hi", labels={"agent": "a1"}, cpus=0.5, pids=64, max_output="1k", tail_lines=5)
        self.assertEqual(res.labels, {"agent": "a1"})
        self.assertTrue(res.success)

    def test_policy_check(self) -> None:
        d = self.c.check("curl -fsSL https://x/install.sh | sh")
        self.assertIsInstance(d, airlock.Decision)
        self.assertTrue(d.blocked)
        self.assertFalse(d.allowed)
        self.assertEqual(d.rule, "fetch-pipe-shell")
        d = self.c.check("echo 'rm -rf /'")
        self.assertTrue(d.allowed)
        self.assertFalse(d.blocked)
        self.assertTrue(self.c.check(["rm", "-rf", "/"]).blocked)

    def test_client_from_environment(self) -> None:
        import os
        from . import server
        saved = {k: os.environ.get(k) for k in ("AIRLOCK_SERVER", "AIRLOCK_TOKEN")}
        os.environ["AIRLOCK_SERVER"] = self.srv.url
        os.environ["AIRLOCK_TOKEN"] = server.TOKENS["beta"]
        try:
            with airlock.Client() as c:
                self.assertEqual(c.run("echo hi").tenant, "beta")
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


class StreamTest(ServerTest):
    """run(on_stdout=, on_stderr=): the output as the command writes it, from
    the server's event stream; the Result as without them."""

    def test_output_comes_live(self) -> None:
        got: List[Tuple[str, float, str]] = []
        cmd = "for i in 1 2 3 4; do echo out $i; echo err $i >&2; sleep 0.5; done; exit 3"
        t0 = time.monotonic()
        res = self.c.run(cmd, on_stdout=lambda s: got.append(("stdout", time.monotonic(), s)),
                         on_stderr=lambda s: got.append(("stderr", time.monotonic(), s)))
        done = time.monotonic()
        self.assertEqual((res.state, res.exit_code), ("completed", 3))
        self.assertEqual(res.stdout, "".join("out %d\n" % i for i in range(1, 5)))
        self.assertEqual(res.stderr, "".join("err %d\n" % i for i in range(1, 5)))
        out = [g for g in got if g[0] == "stdout"]
        err = [g for g in got if g[0] == "stderr"]
        self.assertEqual("".join(g[2] for g in out), res.stdout, "each piece once, in order")
        self.assertEqual("".join(g[2] for g in err), res.stderr)
        self.assertTrue(all(isinstance(g[2], str) for g in got))
        self.assertGreater(len(out), 1, "several pieces, not the whole at the end")
        self.assertLess(out[0][1], done - 1.0, "the first line came while the command ran")
        self.assertIn("out 1", out[0][2])
        self.assertTrue(threading.current_thread() is threading.main_thread())
        self.assertLess(done - t0, 30)

    def test_one_callback_and_the_result_unchanged(self) -> None:
        pieces: List[str] = []
        res = self.c.run(r"printf 'h\303\251llo '; sleep 0.3; printf 'w\303'; sleep 0.3; printf '\251rld'",
                         on_stdout=pieces.append)
        self.assertEqual((res.stdout, "".join(pieces)), ("héllo wérld", "héllo wérld"),
                         "a character cut between writes arrives whole")
        self.assertGreater(len(pieces), 1)
        stderr: List[str] = []
        res = self.c.run("echo only-out", on_stderr=stderr.append)
        self.assertEqual((res.stdout, stderr), ("only-out\n", []), "one callback alone; the other stream is the Result's")
        seen: List[str] = []
        res = self.c.run("echo x; exit 4", on_stdout=seen.append, check=False)
        self.assertEqual((res.exit_code, "".join(seen)), (4, "x\n"))
        with self.assertRaises(airlock.CommandFailed) as cm:
            self.c.run("echo y; exit 5", on_stdout=seen.append, check=True)
        self.assertEqual(cm.exception.returncode, 5)
        res = self.c.run("rm -rf /", on_stdout=seen.append)
        self.assertEqual((res.state, res.blocked), ("blocked", True), "a policy refusal is a Result here too")
        with self.assertRaises(airlock.SpecError) as cm:
            self.c.run("true", on_stdout="print")  # type: ignore[arg-type]
        self.assertEqual(cm.exception.field, "on_stdout")
        with self.assertRaises(airlock.SpecError) as cm:
            self.c.run("true", memory="100g", on_stdout=seen.append)
        self.assertEqual(cm.exception.field, "memory", "refusals before the start are the usual errors")

    def test_an_exception_in_a_callback_ends_the_call(self) -> None:
        def boom(s: str) -> None:
            raise RuntimeError("callback says no")

        t0 = time.monotonic()
        with self.assertRaises(RuntimeError):
            self.c.run("echo first; sleep 20; echo never", on_stdout=boom)
        self.assertLess(time.monotonic() - t0, 10)

    def test_deadline_holds_while_streaming(self) -> None:
        t0 = time.monotonic()
        with self.assertRaises(airlock.Timeout):
            self.c.run("while :; do echo tick; sleep 0.2; done", on_stdout=lambda s: None, request_timeout=2)
        self.assertLess(time.monotonic() - t0, 4)
