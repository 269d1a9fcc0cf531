"""A throw-away PostgreSQL for the cluster-mode test: initdb into a temporary
directory, a postmaster on a unix socket there, everything stopped and removed
at the end. initdb and postgres refuse to run as root: as root they run as the
postgres system user. .ci/install-postgresql installs the binaries (make test
runs it)."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.parse
from typing import Optional

from .server import free_port


def bin_dir() -> Optional[str]:
    """bin_dir is where initdb and postgres are, or None."""
    cands = []
    try:
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, timeout=10)
        if out.returncode == 0:
            cands.append(out.stdout.strip())
    except OSError:
        pass
    cands += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for d in cands:
        if os.access(os.path.join(d, "initdb"), os.X_OK) and os.access(os.path.join(d, "postgres"), os.X_OK):
            return d
    return None


class Postgres:
    """Postgres is one throw-away PostgreSQL server; url names its database
    "postgres" over the unix socket."""

    def __init__(self) -> None:
        b = bin_dir()
        if b is None:
            raise RuntimeError("PostgreSQL's initdb and postgres are missing: run .ci/install-postgresql")
        self.dir = tempfile.mkdtemp(prefix="pgpy-")  # short: a socket's path must fit 107 bytes
        self.port = free_port()
        user = None
        if os.geteuid() == 0:
            pw = pwd.getpwnam("postgres")
            os.chown(self.dir, pw.pw_uid, pw.pw_gid)
            user = pw.pw_uid
        data = os.path.join(self.dir, "data")
        env = dict(os.environ, LC_ALL="C")
        subprocess.run([os.path.join(b, "initdb"), "--pgdata", data, "--username", "postgres", "--auth", "trust",
                        "--encoding", "UTF8", "--locale", "C", "--no-sync"],
                       check=True, capture_output=True, timeout=120, user=user, env=env, cwd=self.dir)
        self.log = open(os.path.join(self.dir, "postgres.log"), "ab")
        self.proc = subprocess.Popen(
            [os.path.join(b, "postgres"), "-D", data, "-k", self.dir, "-p", str(self.port),
             "-c", "listen_addresses=", "-c", "fsync=off", "-c", "synchronous_commit=off",
             "-c", "full_page_writes=off", "-c", "logging_collector=off"],
            stdout=self.log, stderr=subprocess.STDOUT, user=user, env=env, cwd=self.dir, start_new_session=True)
        q = urllib.parse.urlencode({"host": self.dir, "port": str(self.port), "sslmode": "disable"})
        self.url = "postgres://postgres@/postgres?" + q
        sock = os.path.join(self.dir, ".s.PGSQL.%d" % self.port)
        end = time.monotonic() + 60
        while not os.path.exists(sock):
            if self.proc.poll() is not None or time.monotonic() > end:
                self.stop()
                raise RuntimeError("postgres did not start")
            time.sleep(0.05)
        time.sleep(0.2)  # the socket is there a moment before connections are taken

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)  # a fast shutdown
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.send_signal(signal.SIGQUIT)
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)
