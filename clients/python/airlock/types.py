"""The API's answers as dataclasses.

Each dataclass that mirrors a schema of the server's OpenAPI document names it
in API_SCHEMA; its fields carry the JSON names and types of that schema (the
contract test in tests/test_contract.py checks them against /openapi.json of a
real server). Fields marked client_only are the client's own. Times are
timezone-aware datetimes (None when absent); byte strings of output are bytes.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime as _dt
import re
import sys
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, Dict, List, Optional

# A field's metadata: the client's own, not a field of the API's schema.
CLIENT_ONLY = {"client_only": True}


@dataclass
class ResourceUsage:
    """ResourceUsage is what the sandbox consumed. samples is how many engine
    samples the figures come from; the init's report at the end fills them for
    runs of any length."""

    API_SCHEMA: ClassVar[str] = "ResourceUsage"
    cpu_ms: int = 0
    memory_peak_bytes: int = 0
    io_read_bytes: int = 0
    io_write_bytes: int = 0
    samples: int = 0


@dataclass
class TestFailure:
    """TestFailure is one failed or errored test case of a JUnit report."""

    API_SCHEMA: ClassVar[str] = "TestFailure"
    __test__: ClassVar[bool] = False  # not a test case for test runners
    name: str = ""
    kind: str = ""
    file: str = ""
    message: str = ""


@dataclass
class InvalidReport:
    """InvalidReport is a report file that matched but could not be read."""

    API_SCHEMA: ClassVar[str] = "InvalidReport"
    file: str = ""
    reason: str = ""


@dataclass
class TestReport:
    """TestReport summarises the JUnit XML reports a run wrote (run(report=...))."""

    API_SCHEMA: ClassVar[str] = "TestReport"
    __test__: ClassVar[bool] = False
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    errors: int = 0
    failures: List[TestFailure] = field(default_factory=list)
    truncated: bool = False
    files: List[str] = field(default_factory=list)
    invalid: List[InvalidReport] = field(default_factory=list)
    error: str = ""


@dataclass
class EgressEntry:
    """EgressEntry is what a run's proxy did for one host and port it asked for
    (run(egress=[...])): allowed or denied, why, connections and bytes."""

    API_SCHEMA: ClassVar[str] = "EgressEntry"
    host: str = ""
    port: int = 0
    decision: str = ""
    reason: str = ""
    connections: int = 0
    refused: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    secrets: List[str] = field(default_factory=list)


@dataclass
class SecretInfo:
    """SecretInfo is a secret the tenant may name (run(secrets=[...])): its
    name, hosts and how it is applied, never its value."""

    API_SCHEMA: ClassVar[str] = "SecretInfo"
    name: str = ""
    hosts: List[str] = field(default_factory=list)
    header: str = ""
    basic_user: str = ""


@dataclass
class Result:
    """Result is the outcome of one run, every field of the API's Result. A
    command that fails is a Result, not an error: look at state, exit_code,
    success, timed_out, oom_killed and blocked."""

    API_SCHEMA: ClassVar[str] = "Result"
    id: str = ""
    state: str = ""
    success: bool = False
    exit_code: int = 0
    signal: str = ""
    timed_out: bool = False
    oom_killed: bool = False
    blocked: bool = False
    block_reason: str = ""
    block_rule: str = ""
    error: str = ""
    stdout: str = ""
    stderr: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    stdout_tail: str = ""
    stderr_tail: str = ""
    started_at: Optional[_dt.datetime] = None
    finished_at: Optional[_dt.datetime] = None
    duration_ms: int = 0
    resource_usage: ResourceUsage = field(default_factory=ResourceUsage)
    container_id: str = ""
    image: str = ""
    runtime: str = ""
    labels: Dict[str, str] = field(default_factory=dict)
    tenant: str = ""
    workspace: str = ""
    tests: Optional[TestReport] = None
    egress: List[EgressEntry] = field(default_factory=list)
    node: str = ""

    @property
    def returncode(self) -> int:
        """returncode is exit_code, named as subprocess names it."""
        return self.exit_code

    def outcome(self) -> str:
        """outcome says in a few words how the run ended, or that it runs."""
        if self.state == "running":
            return "is running (%d ms so far)" % self.duration_ms
        if self.blocked:
            return "blocked by policy [%s]: %s; nothing ran (exit %d)" % (self.block_rule, self.block_reason, self.exit_code)
        if self.timed_out:
            return "timed out after %d ms and was killed (exit %d)" % (self.duration_ms, self.exit_code)
        if self.oom_killed:
            return "ran out of memory: the kernel killed it (exit %d)" % self.exit_code
        if self.state in ("failed", "lost"):
            return "%s: %s (exit %d)" % ("could not run" if self.state == "failed" else "lost", self.error, self.exit_code)
        if self.state == "killed":
            return "killed (exit %d%s)" % (self.exit_code, ", " + self.signal if self.signal else "")
        return "exited with code %d" % self.exit_code


@dataclass
class Process:
    """Process is a background job as start, list and kill report it."""

    API_SCHEMA: ClassVar[str] = "Process"
    id: str = ""
    state: str = ""
    command: str = ""
    argv: List[str] = field(default_factory=list)
    image: str = ""
    runtime: str = ""
    labels: Dict[str, str] = field(default_factory=dict)
    tenant: str = ""
    workspace: str = ""
    node: str = ""
    started_at: Optional[_dt.datetime] = None
    finished_at: Optional[_dt.datetime] = None
    duration_ms: int = 0
    exit_code: Optional[int] = None
    signal: str = ""
    timed_out: bool = False
    oom_killed: bool = False
    blocked: bool = False
    block_rule: str = ""
    block_reason: str = ""
    error: str = ""
    stdout_bytes: int = 0
    stderr_bytes: int = 0


@dataclass
class KillResult:
    """KillResult answers a kill: the signal sent, or already_ended when the
    job had ended before (not an error)."""

    API_SCHEMA: ClassVar[str] = "KillResult"
    process: Process = field(default_factory=Process)
    signal: str = ""
    already_ended: bool = False
    message: str = ""


@dataclass
class Decision:
    """Decision is the policy's judgement of a command (check); nothing ran."""

    API_SCHEMA: ClassVar[str] = "Decision"
    allowed: bool = False
    blocked: bool = False
    rule: str = ""
    reason: str = ""
    match: str = ""
    mode: str = ""


@dataclass
class Chunk:
    """Chunk is a piece of one stream of a job's output: data is the exact
    bytes, offset the place of its first byte in its stream."""

    API_SCHEMA: ClassVar[str] = "LogChunk"
    stream: str = field(default="", metadata=CLIENT_ONLY)  # the event's name: stdout or stderr
    offset: int = 0
    data: bytes = b""


@dataclass
class LogsEnd:
    """LogsEnd closes a follow: how the job ended, and its byte counts."""

    API_SCHEMA: ClassVar[str] = "EndEvent"
    id: str = ""
    state: str = ""
    exit_code: int = 0
    signal: str = ""
    timed_out: bool = False
    oom_killed: bool = False
    duration_ms: int = 0
    stdout_bytes: int = 0
    stderr_bytes: int = 0


@dataclass
class LogsPage:
    """LogsPage is a page of a job's output read without follow (base64 on
    the wire, exact bytes here)."""

    API_SCHEMA: ClassVar[str] = "LogsResponse"
    id: str = ""
    state: str = ""
    encoding: str = ""
    stdout: bytes = b""
    stderr: bytes = b""
    stdout_size: int = 0
    stderr_size: int = 0
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    truncated: bool = False
    stdout_next: int = 0
    stderr_next: int = 0


@dataclass
class WorkspaceInfo:
    """WorkspaceInfo is a workspace as the server reports it; used_bytes,
    used_inodes and in_use come with a refresh, not in a list."""

    API_SCHEMA: ClassVar[str] = "Workspace"
    id: str = ""
    tenant: str = ""
    labels: Dict[str, str] = field(default_factory=dict)
    size: int = 0
    inodes: int = 0
    created_at: Optional[_dt.datetime] = None
    expires_at: Optional[_dt.datetime] = None
    used_bytes: Optional[int] = None
    used_inodes: Optional[int] = None
    lost: bool = False
    in_use: int = 0


@dataclass
class FileInfo:
    """FileInfo is one entry of a workspace directory: type is file, dir,
    symlink or other; mode the permission bits in octal ("0644"); target where
    a symlink points (never followed)."""

    API_SCHEMA: ClassVar[str] = "FileInfo"
    name: str = ""
    type: str = ""
    size: int = 0
    mode: str = ""
    mtime: Optional[_dt.datetime] = None
    target: str = ""


@dataclass
class FileList:
    """FileList is a directory's listing."""

    API_SCHEMA: ClassVar[str] = "FileList"
    path: str = ""
    files: List[FileInfo] = field(default_factory=list)
    truncated: bool = False


# The dataclasses that mirror a schema of the API, for the contract test.
API_TYPES = (ResourceUsage, TestFailure, InvalidReport, TestReport, EgressEntry, Result, Process, KillResult,
             Decision, Chunk, LogsEnd, LogsPage, WorkspaceInfo, FileInfo, FileList, SecretInfo)

_TIME = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?(Z|[+-]\d\d:\d\d)$")


def parse_time(s: Any) -> Optional[_dt.datetime]:
    """parse_time reads an RFC 3339 time as the server writes it (up to
    nanoseconds, which Python 3.9's fromisoformat does not take); Go's zero
    time and absent values are None."""
    if not isinstance(s, str) or not s:
        return None
    m = _TIME.match(s)
    if not m:
        return None
    base, frac, zone = m.groups()
    micro = (frac or "")[:6].ljust(6, "0")
    zone = "+00:00" if zone == "Z" else zone
    t = _dt.datetime.fromisoformat("%s.%s%s" % (base, micro, zone))
    if t.year == 1:
        return None
    return t


def _hints(cls: type) -> Dict[str, Any]:
    hints = _HINTS.get(cls)
    if hints is None:
        hints = typing.get_type_hints(cls, vars(sys.modules[cls.__module__]))
        _HINTS[cls] = hints
    return hints


_HINTS: Dict[type, Dict[str, Any]] = {}


def _convert(tp: Any, v: Any) -> Any:
    if v is None:
        return None
    origin = typing.get_origin(tp)
    if origin is typing.Union:  # Optional[X]
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _convert(args[0], v)
    if origin in (list, List):
        (item,) = typing.get_args(tp)
        return [_convert(item, x) for x in v] if isinstance(v, list) else []
    if origin in (dict, Dict):
        return dict(v) if isinstance(v, dict) else {}
    if dataclasses.is_dataclass(tp):
        return from_json(tp, v)
    if tp is _dt.datetime:
        return parse_time(v)
    if tp is bytes:
        return base64.b64decode(v) if isinstance(v, str) else b""
    if tp is int and isinstance(v, float):
        return int(v)
    return v


T = typing.TypeVar("T")


def from_json(cls: typing.Type[T], d: Any) -> T:
    """from_json builds a dataclass from the JSON object of its schema: keys it
    does not know are left out (a newer server may add fields), absent ones
    take their defaults, base64 strings become bytes."""
    if not isinstance(d, dict):
        d = {}
    hints = _hints(cls)
    kw = {}
    for f in dataclasses.fields(cls):
        if f.name in d:
            kw[f.name] = _convert(hints[f.name], d[f.name])
            if kw[f.name] is None and f.default is not dataclasses.MISSING and f.default is not None:
                kw[f.name] = f.default
            elif kw[f.name] is None and f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
                kw[f.name] = f.default_factory()  # type: ignore[misc]
    return cls(**kw)  # type: ignore[call-arg]
