"""Background jobs: start, follow (live, and resumed after a cut), wait,
kill, list."""

from __future__ import annotations

import signal
import time
import uuid
from typing import Dict, List

import airlock

from . import server
from .base import ServerTest
from .netfaults import CuttableProxy


def _joined(chunks: List[airlock.Chunk]) -> Dict[str, bytes]:
    out = {"stdout": b"", "stderr": b""}
    for c in chunks:
        # Offsets say where each chunk belongs: a gap or an overlap would show here.
        if c.offset != len(out[c.stream]):
            raise AssertionError("%s chunk at offset %d, expected %d" % (c.stream, c.offset, len(out[c.stream])))
        out[c.stream] += c.data
    return out


class JobTest(ServerTest):
    def start(self, command: str, **kw) -> airlock.Job:
        job = self.c.start(command, **kw)
        self.addCleanup(self._kill_quietly, job)
        return job

    @staticmethod
    def _kill_quietly(job: airlock.Job) -> None:
        try:
            job.kill("SIGKILL", force_after=0)
            job.wait(30)
        except airlock.AirlockError:
            pass

    def test_start_refresh_wait(self) -> None:
        t0 = time.monotonic()
        job = self.start("sleep 1; echo done")
        self.assertLess(time.monotonic() - t0, 10)
        self.assertEqual(job.state, "running")
        self.assertEqual(len(job.id), 24)
        self.assertEqual(job.refresh().state, "running")
        res = job.wait(60)
        self.assertEqual((res.state, res.exit_code, res.stdout), ("completed", 0, "done\n"))
        self.assertEqual(job.state, "completed")
        self.assertEqual(self.c.job(job.id).result.stdout, "done\n")

    def test_wait_timeout_leaves_the_job_running(self) -> None:
        job = self.start("sleep 30")
        t0 = time.monotonic()
        with self.assertRaises(airlock.Timeout):
            job.wait(timeout=1)
        self.assertLess(time.monotonic() - t0, 5)
        self.assertEqual(job.refresh().state, "running")

    def test_follow_yields_chunks_live(self) -> None:
        job = self.start("for i in 1 2 3 4 5 6; do echo tick $i; echo tock $i >&2; sleep 0.4; done; exit 4")
        chunks = []
        first_state = None
        for c in job.logs(follow=True, timeout=60):
            if not chunks:
                first_state = self.c.job(job.id).result.state
            chunks.append(c)
        self.assertEqual(first_state, "running", "the first chunk came while the job ran")
        out = _joined(chunks)
        self.assertEqual(out["stdout"], b"".join(b"tick %d\n" % i for i in range(1, 7)))
        self.assertEqual(out["stderr"], b"".join(b"tock %d\n" % i for i in range(1, 7)))
        self.assertGreater(len(chunks), 2)
        self.assertIsNotNone(job.ended)
        self.assertEqual((job.ended.state, job.ended.exit_code, job.ended.stdout_bytes), ("completed", 4, 42))

    def test_follow_resumes_after_the_connection_is_cut(self) -> None:
        proxy = CuttableProxy(("127.0.0.1", self.srv.port))
        self.addCleanup(proxy.close)
        c = airlock.Client(proxy.url, server.TOKENS["alpha"])
        lines = 80
        job = c.start("i=0; while [ $i -lt %d ]; do i=$((i+1)); echo line $i; echo err $i >&2; sleep 0.05; done" % lines)
        self.addCleanup(self._kill_quietly, job)
        chunks = []
        cuts = 0
        stdout = b""
        for ch in job.logs(timeout=120):
            chunks.append(ch)
            if ch.stream == "stdout":
                stdout += ch.data
            # Mid-stream, twice: after the first chunk, and at line 40 of 80
            # (two seconds of output still to come).
            if cuts == 0 or (cuts == 1 and b"line 40\n" in stdout):
                proxy.cut()
                cuts += 1
        self.assertEqual(cuts, 2)
        self.assertGreaterEqual(proxy.accepted, 3, "the follow reconnected after each cut")
        out = _joined(chunks)  # no byte lost or repeated, in order
        self.assertEqual(out["stdout"], b"".join(b"line %d\n" % i for i in range(1, lines + 1)))
        self.assertEqual(out["stderr"], b"".join(b"err %d\n" % i for i in range(1, lines + 1)))
        self.assertEqual(job.ended.state, "completed")

    def test_logs_from_an_offset_and_without_follow(self) -> None:
        job = self.start("printf 0123456789; printf abc >&2")
        job.wait(60)
        got = list(job.logs(follow=True, stream="stdout", offset=4, timeout=30))
        self.assertEqual(b"".join(c.data for c in got), b"456789")
        self.assertEqual(got[0].offset, 4)
        pages = list(job.logs(follow=False))
        self.assertEqual(_joined(pages), {"stdout": b"0123456789", "stderr": b"abc"})
        self.assertEqual(b"".join(c.data for c in job.logs(follow=False, stream="stderr", offset=1)), b"bc")

    def test_kill_with_force_after(self) -> None:
        job = self.start("trap '' TERM; echo ready; while :; do sleep 0.1; done")
        for c in job.logs(timeout=30):
            if c.data == b"ready\n":
                break
        t0 = time.monotonic()
        k = job.kill("SIGTERM", force_after=1)
        self.assertEqual((k.signal, k.already_ended), ("SIGTERM", False))
        res = job.wait(30)
        took = time.monotonic() - t0
        self.assertEqual((res.state, res.signal, res.exit_code), ("killed", "SIGKILL", 137))
        self.assertGreaterEqual(took, 0.9, "SIGTERM was ignored: SIGKILL came after force_after")
        self.assertLess(took, 10)
        again = job.kill()
        self.assertTrue(again.already_ended)

    def test_list_by_state_and_labels(self) -> None:
        tag = uuid.uuid4().hex[:8]
        a = self.start("sleep 30", labels={"run": tag, "role": "a"})
        b = self.start("true", labels={"run": tag, "role": "b"})
        b.wait(30)
        running = self.c.list(state="running", labels={"run": tag})
        self.assertEqual([j.id for j in running], [a.id])
        self.assertEqual(running.total, 1)
        both = self.c.list(labels={"run": tag})
        self.assertEqual([j.id for j in both], [b.id, a.id], "most recent first")
        self.assertEqual(both[0].process.labels, {"run": tag, "role": "b"})
        done = self.c.list(state="completed", labels={"run": tag, "role": "b"})
        self.assertEqual([j.id for j in done], [b.id])
        b.remove()
        with self.assertRaises(airlock.NotFound):
            b.refresh()


class PopenLikeTest(JobTest):
    """A Job as Popen users expect it: send_signal's ints, poll, returncode,
    a with block that kills, a state that says how the job stands."""

    def test_kill_takes_a_signal_number(self) -> None:
        job = self.start("sleep 30")
        k = job.kill(signal.SIGKILL)
        self.assertEqual((k.signal, k.already_ended), ("SIGKILL", False))
        self.assertEqual(job.state, "killed", "kill waits for the end it caused")
        self.assertEqual((job.returncode, job.poll()), (137, 137))
        self.assertEqual(job.result.signal, "SIGKILL")
        job = self.start("sleep 30")
        self.assertEqual(job.kill(int(signal.SIGTERM), force_after=0).signal, "SIGTERM")
        self.assertEqual((job.state, job.result.signal), ("killed", "SIGTERM"))
        for bad in (99999, 2.5, None):
            with self.assertRaises(airlock.SpecError) as cm:
                job.kill(bad)  # type: ignore[arg-type]
            self.assertEqual(cm.exception.field, "signal")

    def test_state_is_true_after_kill(self) -> None:
        job = self.start("trap '' TERM; echo ready; while :; do sleep 0.1; done")
        for c in job.logs(timeout=30):
            if c.data == b"ready\n":
                break
        self.assertEqual(job.refresh().state, "running")
        k = job.kill("SIGTERM", force_after=0, settle=0.5)
        self.assertFalse(k.already_ended)
        self.assertEqual(job.state, "running", "it ignores SIGTERM: it runs on, and state says so")
        self.assertIsNone(job.poll())
        job.kill("SIGKILL")
        self.assertEqual((job.state, job.returncode), ("killed", 137), "the state of the kill, not the refresh before it")
        again = job.kill()
        self.assertTrue(again.already_ended)
        self.assertEqual(job.state, "killed")

    def test_poll(self) -> None:
        job = self.start("sleep 1; exit 3")
        self.assertIsNone(job.poll())
        self.assertIsNone(job.returncode)
        end = time.monotonic() + 30
        while job.poll() is None and time.monotonic() < end:
            time.sleep(0.2)
        self.assertEqual((job.poll(), job.returncode, job.state), (3, 3, "completed"))

    def test_with_block_kills_a_running_job(self) -> None:
        t0 = time.monotonic()
        with self.c.start("sleep 60") as job:
            self.assertIsInstance(job, airlock.Job)
            self.assertIsNone(job.poll())
        self.assertLess(time.monotonic() - t0, 20)
        self.assertEqual((job.state, job.returncode), ("killed", 137))
        self.assertEqual(self.c.job(job.id).result.state, "killed", "the server says so too")
        with self.c.start("exit 5") as done:
            done.wait(30)
        self.assertEqual((done.state, done.returncode), ("completed", 5), "a job that ended is left as it ended")
        with self.assertRaises(KeyError):
            with self.c.start("sleep 60") as failing:
                raise KeyError("the block's own error")
        self.assertEqual(failing.state, "killed", "killed on the way out of a failing block too")
