"""airlock: run untrusted shell commands in throw-away sandboxes, from Python.

A client of airlock's HTTP API (airlock serve), with the standard library
alone, named as subprocess names things:

    import airlock

    with airlock.Client() as c:              # $AIRLOCK_SERVER, $AIRLOCK_TOKEN
        res = c.run("pytest -q", image="airlock/debian", timeout=120)
        print(res.exit_code, res.stdout)

A command that fails is a Result; errors are the server's refusals and the
client's deadlines, typed by the API's error codes (see airlock.errors).
"""

from .client import Client, Job, JobList, parse_size
from .errors import (AirlockError, AuthError, BusyError, CommandFailed, Conflict, ConnectionFailed, NotFound,
                     ProtocolError, QueueTimeout, RefusedPath, ServerError, SpecError, Timeout, WorkspaceFull,
                     WorkspaceLost)
from .types import (Chunk, Decision, FileInfo, FileList, InvalidReport, KillResult, LogsEnd, Process,
                    ResourceUsage, Result, SecretInfo, TestFailure, TestReport, WorkspaceInfo, EgressEntry)
from .workspace import Workspace

__version__ = "0.1.0"

__all__ = [
    "Client", "Job", "JobList", "Workspace", "parse_size",
    "Result", "EgressEntry", "ResourceUsage", "TestReport", "TestFailure", "InvalidReport", "Process", "KillResult",
    "Decision", "Chunk", "LogsEnd", "WorkspaceInfo", "FileInfo", "FileList", "SecretInfo",
    "AirlockError", "SpecError", "RefusedPath", "AuthError", "NotFound", "Conflict", "WorkspaceFull", "WorkspaceLost",
    "BusyError", "QueueTimeout", "ServerError", "Timeout", "ConnectionFailed", "ProtocolError", "CommandFailed",
]
