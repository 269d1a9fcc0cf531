"""The client: runs, background jobs, the policy, workspaces."""

from __future__ import annotations

import json
import os
import re
import signal as _signal
import socket
import time
import urllib.parse
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from ._http import Transport, read_events
from .errors import (AirlockError, CommandFailed, ConnectionFailed, ProtocolError, SpecError, Timeout,
                     error_from)
from .types import (Chunk, Decision, KillResult, LogsEnd, LogsPage, Process, Result, SecretInfo, WorkspaceInfo,
                    from_json)
from .workspace import Workspace

Size = Union[int, str, None]
Command = Union[str, Sequence[str]]
Names = Union[str, Sequence[str], None]
Signal = Union[str, int, _signal.Signals]
Output = Optional[Callable[[str], Any]]

# The server's defaults a client-side deadline must leave room for, in seconds:
# a foreground run's timeout and the wait for the tenant's turn (queue_timeout).
DEFAULT_RUN_TIMEOUT = 60.0
DEFAULT_QUEUE_TIMEOUT = 30.0

# A follow hears at least a keep-alive every 15 s; this long without a byte
# means the connection is dead, whatever the socket says.
FOLLOW_IDLE = 45.0

# How many times a follow reconnects after its connection broke before it
# raises, and how long it waits before each try.
FOLLOW_RESUMES = 3
_RESUME_PAUSE = 0.2

# The longest single long-poll of Job.wait.
_WAIT_POLL = 60.0

# How long kill waits for the job to end, by default, so that its state says
# how it stands; and how long leaving a Job's with block waits for its end.
KILL_SETTLE = 2.0
_EXIT_WAIT = 60.0

# The states of a job that has not ended ("" when not yet read).
_LIVE = ("", "queued", "running")

# The request fields of run and start, each to its type in the API's Spec:
# the contract test checks them against /openapi.json.
SPEC_FIELDS: Dict[str, str] = {
    "command": "string", "argv": "array", "image": "string", "timeout": "number", "workdir": "string",
    "env": "object", "stdin": "string", "user": "string", "memory": "integer", "cpus": "number",
    "pids": "integer", "tmpfs_size": "integer", "network": "string", "runtime": "string",
    "background": "boolean", "max_output": "integer", "tail_lines": "integer", "labels": "object",
    "workspace": "string", "report": "string", "queue_timeout": "number", "retry": "integer",
    "egress": "array", "secrets": "array",
}

# Every route the client calls: (method, OpenAPI path). The contract test checks each.
ROUTES: List[Tuple[str, str]] = [
    ("POST", "/v1/processes"),
    ("GET", "/v1/processes"),
    ("GET", "/v1/processes/{id}"),
    ("DELETE", "/v1/processes/{id}"),
    ("GET", "/v1/processes/{id}/logs"),
    ("POST", "/v1/processes/{id}/kill"),
    ("POST", "/v1/processes/{id}/wait"),
    ("POST", "/v1/check"),
    ("POST", "/v1/workspaces"),
    ("GET", "/v1/workspaces"),
    ("GET", "/v1/workspaces/{id}"),
    ("DELETE", "/v1/workspaces/{id}"),
    ("PUT", "/v1/workspaces/{id}/files/{path}"),
    ("GET", "/v1/workspaces/{id}/files/{path}"),
    ("DELETE", "/v1/workspaces/{id}/files/{path}"),
    ("PUT", "/v1/workspaces/{id}/archive/{path}"),
    ("GET", "/v1/workspaces/{id}/archive/{path}"),
    ("PUT", "/v1/secrets/{name}"),
    ("DELETE", "/v1/secrets/{name}"),
    ("GET", "/v1/secrets"),
]

# The query parameters the client sends, per route: the contract test checks
# each is declared there.
QUERY_PARAMS: Dict[Tuple[str, str], List[str]] = {
    ("GET", "/v1/processes"): ["state", "label", "limit"],
    ("GET", "/v1/processes/{id}/logs"): ["stream", "offset", "limit", "encoding", "follow"],
    ("PUT", "/v1/workspaces/{id}/files/{path}"): ["mode"],
}

# Request bodies other than the Spec: schema to the fields sent, with their types.
REQUEST_FIELDS: Dict[str, Dict[str, str]] = {
    "KillRequest": {"signal": "string", "force_after": "number"},
    "WaitRequest": {"timeout": "number"},
    "CheckRequest": {"command": "string", "argv": "array"},
    "WorkspaceSpec": {"size": "integer", "inodes": "integer", "ttl": "number", "labels": "object"},
}

_SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*([kmgtpKMGTP])?(?:[iI]?[bB])?$")


def parse_size(v: Size, name: str) -> Optional[int]:
    """parse_size reads a size as docker writes it (65536, "64k", "512m",
    "1.5g", "2GiB"): bytes, binary units."""
    if v is None:
        return None
    if isinstance(v, bool):
        raise SpecError("%s: %r is not a size" % (name, v), code="invalid_request", field=name)
    if isinstance(v, int):
        return v
    m = _SIZE.match(str(v).strip())
    if not m:
        raise SpecError("%s: %r is not a size (e.g. 65536, 512m, 1g)" % (name, v), code="invalid_request", field=name)
    shift = "kmgtp".index(m.group(2).lower()) + 1 if m.group(2) else 0
    return int(float(m.group(1)) * (1 << (10 * shift)))


def _id_of(ws: Any) -> Optional[str]:
    if ws is None:
        return None
    return ws if isinstance(ws, str) else ws.id


def _json_body(obj: Dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode("utf-8")


class Client:
    """Client talks to one airlock server (airlock serve) as the tenant of
    its token. url defaults to $AIRLOCK_SERVER (else http://127.0.0.1:8080),
    token to $AIRLOCK_TOKEN. timeout bounds every call, in seconds; a run, a
    wait and a follow get their own durations on top of it. connect_timeout
    bounds the connection alone. A Client holds no connection between calls:
    it may be shared between threads, and closing it is optional."""

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, timeout: float = 60.0, *,
                 connect_timeout: float = 10.0):
        url = url or os.environ.get("AIRLOCK_SERVER") or "http://127.0.0.1:8080"
        if token is None:
            token = os.environ.get("AIRLOCK_TOKEN") or None
        self.url = url
        self.timeout = float(timeout)
        self._t = Transport(url, token, float(connect_timeout))

    def __repr__(self) -> str:
        return "airlock.Client(%r)" % self.url

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """close releases the client; it holds no connection between calls."""

    # --- the plumbing every call goes through ---

    def _deadline(self, extra: float = 0.0, timeout: Optional[float] = None) -> float:
        return time.monotonic() + (self.timeout if timeout is None else timeout) + extra

    def _call(self, method: str, path: str, body: Optional[Dict[str, Any]] = None, *,
              query: Optional[List[Tuple[str, str]]] = None, deadline: Optional[float] = None) -> Any:
        r = self._t.request(method, path, query=query,
                            body=None if body is None else _json_body(body),
                            content_type=None if body is None else "application/json",
                            deadline=deadline or self._deadline())
        with r:
            return r.json()

    # --- runs and jobs ---

    def _spec(self, command: Command, kw: Dict[str, Any]) -> Dict[str, Any]:
        spec: Dict[str, Any] = {}
        if isinstance(command, str):
            spec["command"] = command
        elif isinstance(command, (list, tuple)) and command and all(isinstance(a, str) for a in command):
            spec["argv"] = list(command)
        else:
            raise SpecError("command: want a shell command (str) or a program and its arguments (list of str)",
                            code="invalid_request", field="command")
        stdin = kw.pop("stdin", None)
        if isinstance(stdin, (bytes, bytearray)):
            try:
                stdin = bytes(stdin).decode("utf-8")
            except UnicodeDecodeError:
                raise SpecError("stdin: the API takes text; these bytes are not UTF-8", code="invalid_request",
                                field="stdin") from None
        if stdin is not None:
            spec["stdin"] = stdin
        for name in ("memory", "tmpfs_size", "max_output"):
            if kw.get(name) is not None:
                kw[name] = parse_size(kw[name], name)
        if kw.get("workspace") is not None:
            kw["workspace"] = _id_of(kw["workspace"])
        for name in ("egress", "secrets"):
            v = kw.get(name)
            if v is None:
                continue
            if isinstance(v, str):
                kw[name] = [v]  # one name, not its characters
                continue
            try:
                items = list(v)
            except TypeError:
                items = [None]
            if not all(isinstance(x, str) for x in items):
                raise SpecError("%s: want a name (str) or a list of names (str), not %r" % (name, v),
                                code="invalid_request", field=name)
            kw[name] = items
        for k, v in kw.items():
            if v is not None:
                spec[k] = v
        return spec

    def run(self, command: Command, *, image: Optional[str] = None, timeout: Optional[float] = None,
            memory: Size = None, cpus: Optional[float] = None, pids: Optional[int] = None,
            env: Optional[Dict[str, str]] = None, stdin: Union[str, bytes, None] = None,
            workdir: Optional[str] = None, user: Optional[str] = None, network: Optional[str] = None,
            runtime: Optional[str] = None, tmpfs_size: Size = None, workspace: Any = None,
            egress: Names = None, secrets: Names = None,
            labels: Optional[Dict[str, str]] = None,
            max_output: Size = None, tail_lines: Optional[int] = None, report: Optional[str] = None,
            queue_timeout: Optional[float] = None, check: bool = False,
            request_timeout: Optional[float] = None, on_stdout: Output = None, on_stderr: Output = None) -> Result:
        """run runs command in a fresh sandbox and returns its Result: a shell
        command (str, run as sh -c) or a program and its arguments (a list,
        no shell). A command that fails is a Result, not an exception, unless
        check=True: then anything but success raises CommandFailed carrying
        the Result. A command the policy refuses is a Result with blocked=True
        (exit 126) and nothing ran. timeout is the run's, in seconds; sizes
        take bytes or docker's units ("512m"). egress names the hosts the run
        may reach ("pypi.org", "*.pythonhosted.org", "github.com:443"); one
        outside the server's bounds is a SpecError naming it. secrets names
        secrets the server stores for the tenant ("GIT_TOKEN"): the command
        sees a placeholder in $GIT_TOKEN, and the server's proxy puts the
        value into requests to the secret's hosts. egress and secrets take a
        list of names, or one name as a str.
        on_stdout and on_stderr, when given, are called with the output as
        the command writes it (text, str), fed live from the server's event
        stream: each piece once, in order, each stream's pieces joined equal
        to the Result's stdout and stderr (unless truncated by max_output).
        They run on the calling thread, and an exception from one ends the
        call with it (the connection closes, and the server stops the run).
        The Result is the same either way.
        request_timeout overrides the client-side deadline, which is otherwise
        the client's timeout plus the run's timeout and queue_timeout (the
        server's defaults, 60 s and 30 s, when not given)."""
        spec = self._spec(command, dict(
            image=image, timeout=timeout, memory=memory, cpus=cpus, pids=pids, env=env, stdin=stdin,
            workdir=workdir, user=user, network=network, runtime=runtime, tmpfs_size=tmpfs_size,
            workspace=workspace, egress=egress, secrets=secrets, labels=labels, max_output=max_output,
            tail_lines=tail_lines, report=report, queue_timeout=queue_timeout))
        if request_timeout is not None:
            deadline = self._deadline(timeout=request_timeout)
        else:
            deadline = self._deadline(extra=(timeout or DEFAULT_RUN_TIMEOUT) + (queue_timeout or DEFAULT_QUEUE_TIMEOUT))
        if on_stdout is None and on_stderr is None:
            res = from_json(Result, self._call("POST", "/v1/processes", spec, deadline=deadline))
        else:
            for name, cb in (("on_stdout", on_stdout), ("on_stderr", on_stderr)):
                if cb is not None and not callable(cb):
                    raise SpecError("%s: want a callable taking a str, not %r" % (name, cb), code="invalid_request",
                                    field=name)
            res = self._run_events(spec, deadline, on_stdout, on_stderr)
        if check and not res.success:
            raise CommandFailed(res, command)
        return res

    def _run_events(self, spec: Dict[str, Any], deadline: float, on_stdout: Output, on_stderr: Output) -> Result:
        """_run_events runs spec in the foreground as Server-Sent Events
        (docs/server.md, POST /v1/processes): "queued" and "open" with the
        run's id, "stdout" and "stderr" chunks {offset, data} as the command
        writes them, then "result" with the whole Result; an "error" event is
        a failure after the stream began. Keep-alives come every 15 s, so
        FOLLOW_IDLE without a byte is a dead connection. A foreground run
        cannot be resumed: a broken stream is ConnectionFailed."""
        r = self._t.request("POST", "/v1/processes", body=_json_body(spec), content_type="application/json",
                            accept="text/event-stream", deadline=deadline)
        with r:
            if not (r.headers.get("Content-Type") or "").startswith("text/event-stream"):
                return from_json(Result, r.json())  # a server that answers in one piece
            callbacks = {"stdout": on_stdout, "stderr": on_stderr}
            for event, data in _live_events(r):
                if event in callbacks:
                    try:
                        text = json.loads(data)["data"]
                    except (ValueError, KeyError, TypeError):
                        raise ProtocolError("run: a %s event is not a chunk {offset, data}" % event) from None
                    cb = callbacks[event]
                    if cb is not None and text:
                        cb(text)
                elif event == "result":
                    try:
                        return from_json(Result, json.loads(data))
                    except ValueError:
                        raise ProtocolError("run: the result event is not JSON") from None
                elif event == "error":
                    raise _error_event(data)
        raise ProtocolError("run: the server ended the run's event stream without a result")

    def start(self, command: Command, *, image: Optional[str] = None, timeout: Optional[float] = None,
              memory: Size = None, cpus: Optional[float] = None, pids: Optional[int] = None,
              env: Optional[Dict[str, str]] = None, stdin: Union[str, bytes, None] = None,
              workdir: Optional[str] = None, user: Optional[str] = None, network: Optional[str] = None,
              runtime: Optional[str] = None, tmpfs_size: Size = None, workspace: Any = None,
              egress: Names = None, secrets: Names = None,
              labels: Optional[Dict[str, str]] = None,
              max_output: Size = None, tail_lines: Optional[int] = None,
              queue_timeout: Optional[float] = None, retry: Optional[int] = None) -> "Job":
        """start starts command as a background job and returns its Job at
        once (timeout: none unless given). A job the policy refuses, or that
        could not start, is a Job whose state says so (blocked, failed). As
        a context manager (with c.start(...) as job:) the job is killed when
        the block ends if it still runs, as Popen's is waited for."""
        spec = self._spec(command, dict(
            image=image, timeout=timeout, memory=memory, cpus=cpus, pids=pids, env=env, stdin=stdin,
            workdir=workdir, user=user, network=network, runtime=runtime, tmpfs_size=tmpfs_size,
            workspace=workspace, egress=egress, secrets=secrets, labels=labels, max_output=max_output,
            tail_lines=tail_lines, queue_timeout=queue_timeout, retry=retry))
        spec["background"] = True
        p = from_json(Process, self._call("POST", "/v1/processes", spec,
                                          deadline=self._deadline(extra=queue_timeout or DEFAULT_QUEUE_TIMEOUT)))
        return Job(self, p.id, p)

    def job(self, id: str) -> "Job":
        """job is the Job of an id (from start, list, or another process);
        NotFound if the tenant has no such job."""
        j = Job(self, id)
        j.refresh()
        return j

    def list(self, state: Optional[str] = None, labels: Optional[Dict[str, str]] = None,
             limit: Optional[int] = None) -> "JobList":
        """list lists the tenant's background jobs, most recent first: those
        in state (all when None) carrying every one of labels; at most limit
        (the server's default 50). The list's total counts every match."""
        q: List[Tuple[str, str]] = []
        if state:
            q.append(("state", state))
        for k, v in (labels or {}).items():
            q.append(("label", "%s=%s" % (k, v)))
        if limit:
            q.append(("limit", str(int(limit))))
        d = self._call("GET", "/v1/processes", query=q) or {}
        jobs = JobList(Job(self, p.id, p) for p in (from_json(Process, x) for x in d.get("processes") or []))
        jobs.total = int(d.get("total") or 0)
        return jobs

    def check(self, command: Command) -> Decision:
        """check judges command with the tenant's policy, running nothing."""
        body = {"command": command} if isinstance(command, str) else {"argv": list(command)}
        return from_json(Decision, self._call("POST", "/v1/check", body))

    # --- workspaces ---

    def workspace(self, size: Size = None, *, inodes: Optional[int] = None, ttl: Optional[float] = None,
                  labels: Optional[Dict[str, str]] = None, keep: bool = False) -> Workspace:
        """workspace creates a workspace: files kept across runs, mounted at
        /workspace by run(workspace=ws) and start(workspace=ws). As a context
        manager it is deleted when the block ends, unless keep=True."""
        body: Dict[str, Any] = {}
        if size is not None:
            body["size"] = parse_size(size, "size")
        if inodes is not None:
            body["inodes"] = inodes
        if ttl is not None:
            body["ttl"] = ttl
        if labels:
            body["labels"] = labels
        info = from_json(WorkspaceInfo, self._call("POST", "/v1/workspaces", body))
        return Workspace(self, info, keep=keep)

    def open_workspace(self, id: str, *, keep: bool = True) -> Workspace:
        """open_workspace is the Workspace of an existing id; as a context
        manager it is kept unless keep=False."""
        ws = Workspace(self, None, keep=keep, id=id)
        ws.refresh()
        return ws

    def workspaces(self) -> List[Workspace]:
        """workspaces lists the tenant's workspaces, oldest first (kept when
        used as context managers)."""
        d = self._call("GET", "/v1/workspaces") or {}
        return [Workspace(self, from_json(WorkspaceInfo, w), keep=True) for w in d.get("workspaces") or []]


    def put_secret(self, name: str, value: str, hosts: Sequence[str], *, header: Optional[str] = None,
                   basic_user: Optional[str] = None) -> SecretInfo:
        """put_secret stores the tenant's secret name, write-only: a run that
        names it (run(secrets=[name])) sees a placeholder in $name, and the
        server's proxy puts value into its requests to hosts (patterns as in
        egress). header ("Authorization: Bearer {value}") or basic_user (git's
        user) set a header on every such request; without them the
        placeholder is replaced wherever it appears in a header."""
        body: Dict[str, Any] = {"value": value, "hosts": list(hosts)}
        if header is not None:
            body["header"] = header
        if basic_user is not None:
            body["basic_user"] = basic_user
        return from_json(SecretInfo, self._call("PUT", "/v1/secrets/" + urllib.parse.quote(name, safe=""), body))

    def remove_secret(self, name: str) -> None:
        """remove_secret deletes the tenant's stored secret name."""
        self._call("DELETE", "/v1/secrets/" + urllib.parse.quote(name, safe=""))

    def secrets(self) -> List[SecretInfo]:
        """secrets lists the secrets the tenant may name, without values."""
        d = self._call("GET", "/v1/secrets") or {}
        return [from_json(SecretInfo, s) for s in d.get("secrets") or []]


class JobList(list):
    """JobList is a page of Jobs; total counts every job that matched."""

    total = 0


class Job:
    """Job is a background job: id is its airlock id, process what start or
    list reported, result the last Result refresh or wait read (None before).
    A follow that ended leaves its LogsEnd in ended. state and returncode are
    as of the newest of these. As a context manager it kills the job when the
    block ends, if it still runs (as Popen's waits for its process)."""

    def __init__(self, client: Client, id: str, process: Optional[Process] = None):
        self.client = client
        self.id = id
        self.process = process
        self.result: Optional[Result] = None
        self.ended: Optional[LogsEnd] = None
        self._last: Union[Process, Result, LogsEnd, None] = process

    def __repr__(self) -> str:
        return "airlock.Job(%r, state=%r)" % (self.id, self.state)

    def __enter__(self) -> "Job":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            if self.poll() is None:
                self.kill(_signal.SIGKILL, force_after=0)
                if self.returncode is None:
                    self.wait(_EXIT_WAIT)
        except AirlockError:
            if exc_type is None:  # never hide the error that ended the block
                raise

    @property
    def _path(self) -> str:
        return "/v1/processes/" + urllib.parse.quote(self.id, safe="")

    @property
    def state(self) -> str:
        """state is the job's state as last read (by start, list, refresh,
        poll, wait, kill or a follow's end)."""
        return self._last.state if self._last is not None else ""

    @property
    def returncode(self) -> Optional[int]:
        """returncode is the job's exit code once it is known to have ended,
        else None (as Popen's; poll reads it anew)."""
        if self._last is None or self.state in _LIVE:
            return None
        return self._last.exit_code

    def refresh(self) -> Result:
        """refresh reads the job's Result as it stands: state, runtime so far,
        resource usage, output so far (the monitor)."""
        self.result = from_json(Result, self.client._call("GET", self._path))
        self._last = self.result
        return self.result

    def poll(self) -> Optional[int]:
        """poll returns the job's exit code if it has ended, else None, as
        Popen.poll does: one request, unless its end is already known."""
        if self.returncode is None:
            self.refresh()
        return self.returncode

    def wait(self, timeout: Optional[float] = None) -> Result:
        """wait blocks until the job has ended and returns its Result; when
        timeout (seconds) passes first it raises Timeout, and the job goes on.
        None waits as long as the job runs, in long-polls of at most a minute,
        each with its own deadline."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            poll = _WAIT_POLL if end is None else min(_WAIT_POLL, end - time.monotonic())
            if poll <= 0:
                raise Timeout("wait %s: still running after %gs" % (self.id, timeout))
            d = self.client._call("POST", self._path + "/wait", {"timeout": max(poll, 0.001)},
                                  deadline=self.client._deadline(extra=poll))
            self.result = from_json(Result, d)
            self._last = self.result
            if self.result.state not in _LIVE:
                return self.result

    def kill(self, signal: Signal = "SIGTERM", force_after: Optional[float] = 10.0, *,
             settle: float = KILL_SETTLE) -> KillResult:
        """kill sends signal to every process of the job and, unless
        force_after is 0 (or None), SIGKILL force_after seconds later if it
        still runs. signal is a name ("SIGTERM", "TERM"), or an int or a
        signal.Signals as Popen.send_signal takes (signal.SIGKILL), sent by
        its name. Then it waits up to settle seconds (returning as soon as
        the job ends) so that state and result say how the job stands: killed
        once it has ended, running while it outlives the signal (0: return
        at once, with the state the kill answered). Killing a job that has
        ended is not an error: already_ended says so."""
        name = _signal_name(signal)
        k = from_json(KillResult, self.client._call("POST", self._path + "/kill",
                                                    {"signal": name, "force_after": float(force_after or 0)}))
        self.process = k.process
        self._last = k.process
        if not k.already_ended and settle > 0:
            try:
                self.wait(settle)
            except Timeout:
                pass  # it outlives the signal for now: state says running, as it is
        return k

    def remove(self) -> None:
        """remove forgets an ended job: its record and logs (Conflict while it runs)."""
        self.client._call("DELETE", self._path)

    def logs(self, follow: bool = True, *, stream: str = "both", offset: int = 0,
             timeout: Optional[float] = None) -> Iterator[Chunk]:
        """logs yields the job's output as Chunks (stream, offset, exact
        bytes) from offset on, each stream in order. With follow (the
        default) chunks come as the job writes them, until it has ended and
        its last byte is delivered (ended then holds how it ended), or until
        timeout seconds pass (Timeout). A connection that breaks or goes
        silent (no keep-alive for 45 s) is resumed from the last byte
        delivered, up to 3 times in a row, with no byte lost or repeated;
        then ConnectionFailed. Without follow, it yields what there is now."""
        if stream not in ("stdout", "stderr", "both"):
            raise SpecError("stream: want stdout, stderr or both", code="invalid_request", field="stream")
        if not follow:
            return self._pages(stream, offset)
        return self._follow(stream, offset, timeout)

    def _pages(self, stream: str, offset: int) -> Iterator[Chunk]:
        streams = ["stdout", "stderr"] if stream == "both" else [stream]
        for s in streams:
            at = offset
            while True:
                q = [("stream", s), ("offset", str(at)), ("encoding", "base64")]
                page = from_json(LogsPage, self.client._call("GET", self._path + "/logs", query=q))
                data: bytes = getattr(page, s)
                nxt: int = getattr(page, s + "_next")
                if data:
                    yield Chunk(stream=s, offset=at, data=data)
                if not data or nxt <= at or nxt >= getattr(page, s + "_size"):
                    break
                at = nxt

    def _follow(self, stream: str, offset: int, timeout: Optional[float]) -> Iterator[Chunk]:
        deadline = None if timeout is None else time.monotonic() + timeout
        # The next byte owed of each stream: a resumed follow starts at the
        # smaller and drops what was already delivered of the other.
        want = {"stdout": offset, "stderr": offset}
        if stream != "both":
            want = {stream: offset}
        failures = 0
        self.ended = None
        while True:
            start = min(want.values())
            q = [("follow", "true"), ("encoding", "base64"), ("offset", str(start))]
            if stream != "both":
                q.append(("stream", stream))
            try:
                r = self.client._t.request("GET", self._path + "/logs", query=q, accept="text/event-stream",
                                           deadline=deadline if deadline is not None else self.client._deadline())
            except (ConnectionFailed, Timeout) as e:
                if deadline is not None and time.monotonic() >= deadline:
                    raise Timeout("follow %s: the deadline passed" % self.id) from None
                failures += 1
                if failures > FOLLOW_RESUMES:
                    raise ConnectionFailed("follow %s: %s (after %d resumes)" % (self.id, e.message, FOLLOW_RESUMES)) from None
                time.sleep(_RESUME_PAUSE)
                continue
            # The request's deadline covered connecting and the headers; the
            # stream itself lasts until the follow's own deadline.
            r.deadline = deadline
            try:
                for event, data in read_events(r, FOLLOW_IDLE):
                    if event in ("stdout", "stderr"):
                        if event not in want:
                            continue
                        try:
                            c = from_json(Chunk, json.loads(data))
                        except ValueError:
                            raise ProtocolError("follow %s: a %s event is not JSON" % (self.id, event)) from None
                        c.stream = event
                        skip = want[event] - c.offset
                        if skip >= len(c.data):
                            continue
                        if skip > 0:
                            c = Chunk(stream=event, offset=c.offset + skip, data=c.data[skip:])
                        elif skip < 0:
                            raise ProtocolError("follow %s: %s jumped from byte %d to %d" % (
                                self.id, event, want[event], c.offset))
                        want[event] = c.offset + len(c.data)
                        failures = 0
                        yield c
                    elif event == "end":
                        self.ended = from_json(LogsEnd, json.loads(data))
                        self._last = self.ended
                        return
                    elif event == "error":
                        raise _error_event(data)
                # The stream ended without its end event: the connection was
                # closed (a proxy, a server shutting down). Resume.
                err = "the stream ended before the job did"
            except (ConnectionFailed, socket.timeout, TimeoutError) as e:
                if isinstance(e, Timeout):
                    raise
                err = str(e) or "no byte for %gs" % FOLLOW_IDLE
            finally:
                r.close()
            if deadline is not None and time.monotonic() >= deadline:
                raise Timeout("follow %s: the deadline passed" % self.id)
            failures += 1
            if failures > FOLLOW_RESUMES:
                raise ConnectionFailed("follow %s: %s (after %d resumes)" % (self.id, err, FOLLOW_RESUMES))
            time.sleep(_RESUME_PAUSE)


def _live_events(r: Any) -> Iterator[Tuple[str, bytes]]:
    """_live_events is read_events of a stream that cannot be resumed: a
    stream silent for FOLLOW_IDLE is ConnectionFailed."""
    it = read_events(r, FOLLOW_IDLE)
    while True:
        try:
            ev = next(it)
        except StopIteration:
            return
        except (socket.timeout, TimeoutError) as e:
            if isinstance(e, Timeout):
                raise
            raise ConnectionFailed("%s: no byte, not even a keep-alive, for %gs" % (r.what, FOLLOW_IDLE)) from None
        yield ev


def _signal_name(sig: Any) -> str:
    """_signal_name is the name the API takes for sig: a name as given
    ("SIGTERM", "TERM", "15"), or an int or signal.Signals as
    Popen.send_signal takes, sent by its name (numbers differ between
    platforms; names do not)."""
    if isinstance(sig, str):
        return sig
    if isinstance(sig, int) and not isinstance(sig, bool):
        try:
            return _signal.Signals(sig).name
        except ValueError:
            raise SpecError("signal: %d is not a signal number of this platform" % sig, code="invalid_request",
                            field="signal") from None
    raise SpecError("signal: want a name (\"SIGTERM\"), a number or a signal.Signals, not %r" % (sig,),
                    code="invalid_request", field="signal")


def _error_event(data: bytes) -> AirlockError:
    try:
        e = json.loads(data)["error"]
        return error_from(0, str(e["code"]), str(e["message"]), e.get("field") or None)
    except (ValueError, KeyError, TypeError):
        return ProtocolError("the server failed mid-stream: %r" % data[:200])



