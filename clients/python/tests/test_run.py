"""Foreground runs: what run returns for each way a command can end."""

from __future__ import annotations

import time

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
