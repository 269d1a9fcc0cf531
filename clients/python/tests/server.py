"""A real airlock server for the tests: bin/airlock serve on a free loopback
port, a temporary data dir, and tokens for three tenants (alpha and beta for
most tests, gamma with a concurrency limit of one for the busy case). One server
serves the whole run; it is stopped, its background jobs killed, at the end.

AIRLOCK_BIN names the binary (default: bin/airlock of the repository, built by
make build).
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from typing import Dict, List, Optional, Sequence, Set, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.dirname(HERE))  # the package from the source tree, not an installed one

TOKENS = {"alpha": "tok-alpha-7d1f", "beta": "tok-beta-93ab", "gamma": "tok-gamma-41c2"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def managed_containers() -> Set[str]:
    """managed_containers is every container airlock made on the engine, of
    any airlock process (other test suites may share the engine)."""
    out = subprocess.run(["docker", "ps", "-aq", "--no-trunc", "--filter", "label=io.airlock.managed=true"],
                         check=True, capture_output=True, text=True, timeout=60).stdout
    return set(out.split())


class Server:
    """Server is one airlock serve process; args are flags added to the
    tests' own, env variables added to its environment (AIRLOCK_* of the
    caller's are left out: the tests say what the server gets)."""

    def __init__(self, args: Sequence[str] = (), env: Optional[Dict[str, str]] = None,
                 pool: str = "airlock/minimal=1") -> None:
        self.bin = os.environ.get("AIRLOCK_BIN") or os.path.join(REPO, "bin", "airlock")
        if not os.access(self.bin, os.X_OK):
            raise RuntimeError("%s is missing: run make build first (or set AIRLOCK_BIN)" % self.bin)
        self.dir = tempfile.mkdtemp(prefix="airlock-pytest-")
        self.port = free_port()
        self.url = "http://127.0.0.1:%d" % self.port
        self.before = managed_containers()
        cfg = {
            "tokens": [{"token": t, "tenant": n} for n, t in TOKENS.items()],
            "tenants": {"gamma": {"max_concurrent": 1}},
        }
        with open(os.path.join(self.dir, "config.json"), "w") as f:
            json.dump(cfg, f)
        penv = {k: v for k, v in os.environ.items() if not k.startswith("AIRLOCK_")}
        penv.update(env or {})
        self.log = open(os.path.join(self.dir, "server.log"), "wb")
        self.proc = subprocess.Popen(
            [self.bin, "serve", "--config", os.path.join(self.dir, "config.json"),
             "--listen", "127.0.0.1:%d" % self.port, "--data", os.path.join(self.dir, "data"),
             "--pool", pool, "--kill-jobs-on-shutdown=true", "--max-memory", "1g", *args],
            env=penv, stdout=self.log, stderr=subprocess.STDOUT)
        self._wait_ready()

    def _wait_ready(self) -> None:
        end = time.monotonic() + 60
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                raise RuntimeError("airlock serve exited with %s:\n%s" % (self.proc.returncode, self.log_text()))
            try:
                with urllib.request.urlopen(self.url + "/readyz", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError("airlock serve was not ready within 60 s:\n" + self.log_text())

    def log_text(self) -> str:
        if not self.log.closed:
            self.log.flush()
        with open(os.path.join(self.dir, "server.log"), "rb") as f:
            return f.read()[-8000:].decode("utf-8", "replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def _ours(self) -> Tuple[Set[str], Set[str], Set[str]]:
        """_ours is what names this server's containers: the ids of its runs
        and jobs and of its workspaces (from its audit log), and its data
        dir's store id (a test-only peek into the job store's file)."""
        ids: Set[str] = set()
        workspaces: Set[str] = set()
        stores: Set[str] = set()
        try:
            with open(os.path.join(self.dir, "data", "audit.log")) as f:
                for line in f:
                    try:
                        e = json.loads(line)
                    except ValueError:
                        continue
                    if e.get("id"):
                        ids.add(e["id"])
                    if e.get("workspace"):
                        workspaces.add(e["workspace"])
        except FileNotFoundError:
            pass
        try:
            with open(os.path.join(self.dir, "data", "airlock.db"), "rb") as f:
                stores.update(m.decode() for m in re.findall(rb"store_id([0-9a-f]{16})", f.read()))
        except FileNotFoundError:
            pass
        return ids, workspaces, stores

    def leftovers(self) -> List[str]:
        """leftovers are the containers of this server still on the engine
        (call it after stop): those of its runs, jobs and workspaces, and its
        warm pool's, and its workspaces' volumes. Other airlock processes may
        share the engine; theirs are not counted."""
        ids, workspaces, stores = self._ours()
        left = []
        for cid in managed_containers() - self.before:
            out = subprocess.run(["docker", "inspect", "--format", "{{json .Config.Labels}}", cid],
                                 capture_output=True, text=True, timeout=60)
            if out.returncode != 0:
                continue  # removed meanwhile
            labels: Dict[str, str] = json.loads(out.stdout or "{}") or {}
            if (labels.get("io.airlock.id") in ids or labels.get("io.airlock.workspace") in workspaces
                    or labels.get("io.airlock.store") in stores or labels.get("io.airlock.pool.store") in stores):
                left.append("%s %s" % (cid[:12], labels))
        out = subprocess.run(["docker", "volume", "ls", "-q", "--filter", "label=io.airlock.managed=true"],
                             check=True, capture_output=True, text=True, timeout=60).stdout
        for vol in out.split():
            if vol.startswith("airlock-") and vol[len("airlock-"):] in workspaces:
                left.append("volume " + vol)
        return left

    def cleanup(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


_server: Optional[Server] = None


def get() -> Server:
    """get starts the shared server on first use; it stops when the tests end."""
    global _server
    if _server is None:
        _server = Server()
        atexit.register(_stop_quietly)
    return _server


def _stop_quietly() -> None:
    if _server is not None and _server.proc.poll() is None:
        _server.stop()
        _server.cleanup()
