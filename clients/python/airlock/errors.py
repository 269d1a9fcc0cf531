"""The errors of the airlock client.

Every error the server answers is an AirlockError carrying the API's code, its
message, the field at fault (when one is) and the HTTP status. The subclasses
are what a caller branches on; the code says exactly which case it was. A
command that fails, times out, is killed or is refused by the policy is not an
error: it is a Result (see CommandFailed for run(check=True)).
"""

from __future__ import annotations

import subprocess
from typing import Any, Dict, Optional, Sequence, Type, Union


class AirlockError(Exception):
    """AirlockError is every error of the client: code is a stable word (the
    API's error code, or one of the client's own: "timeout", "connection",
    "protocol"), message says what went wrong, field names the request field
    at fault, status is the HTTP status (0 when no answer came)."""

    def __init__(self, message: str, *, code: str = "error", field: Optional[str] = None, status: int = 0):
        Exception.__init__(self, message)  # not super(): CommandFailed's next base takes other arguments
        self.code = code
        self.message = message
        self.field = field
        self.status = status

    def __repr__(self) -> str:
        return "%s(code=%r, message=%r, field=%r, status=%r)" % (
            type(self).__name__, self.code, self.message, self.field, self.status)


class SpecError(AirlockError, ValueError):
    """SpecError is a request the server refused as invalid (400
    invalid_request): field names the field, e.g. "memory" or "env.PATH".
    Nothing was started."""


class RefusedPath(SpecError):
    """RefusedPath is a workspace path or archive entry the server refuses
    (400 refused_path): absolute, with "..", a link leading out, through a link,
    a device; the message names the entry."""


class AuthError(AirlockError, PermissionError):
    """AuthError is a missing or unknown token (401 unauthorized), or a request
    the server forbids (403 forbidden)."""


class NotFound(AirlockError, LookupError):
    """NotFound is an id the tenant has no such thing under (404): not_found
    for a job, workspace_not_found, file_not_found. Another tenant's ids answer
    exactly as unknown ones."""


class Conflict(AirlockError):
    """Conflict is a request the current state refuses (409): running (a job
    not yet ended), workspace_busy (a run uses it), wrong_type (a directory
    where a file is needed, or the reverse)."""


class WorkspaceLost(AirlockError):
    """WorkspaceLost is a workspace whose files are gone (410 workspace_lost):
    the engine restarted and its holder with it, or an older airlock made it.
    It cannot be mended: delete it and create another. Runs on it are refused
    as a SpecError (field workspace) saying it is lost."""


class WorkspaceFull(AirlockError):
    """WorkspaceFull is an upload past the workspace's size or inode limit (413
    workspace_full), or past the tenant's workspace count or bytes (403
    workspace_quota)."""


class BusyError(AirlockError):
    """BusyError is the tenant's concurrency limit reached for the whole of the
    request's queue_timeout (429 busy); retry_after is the seconds the server
    suggests waiting (from Retry-After), None when it said none. Nothing ran."""

    def __init__(self, message: str, *, retry_after: Optional[float] = None, **kw: Any):
        super().__init__(message, **kw)
        self.retry_after = retry_after


class QueueTimeout(AirlockError):
    """QueueTimeout is, in cluster mode, a run or job that found no node with
    room within its queue_timeout (503 queue_timeout). Nothing ran."""


class ServerError(AirlockError):
    """ServerError is a failure of the server or its engine: internal (500),
    engine_error (502), engine_unavailable, cancelled (the server shuts down),
    database_unavailable (503), or any other 5xx."""


class Timeout(AirlockError, TimeoutError):
    """Timeout is a client-side deadline that passed: the server did not answer
    (connect or whole call) in time, a wait or follow outlasted its timeout.
    Code "timeout"."""

    def __init__(self, message: str, **kw: Any):
        kw.setdefault("code", "timeout")
        super().__init__(message, **kw)


class ConnectionFailed(AirlockError, ConnectionError):
    """ConnectionFailed is a server that cannot be reached, or a connection
    that broke (after a follow's resumes were spent). Code "connection"."""

    def __init__(self, message: str, **kw: Any):
        kw.setdefault("code", "connection")
        super().__init__(message, **kw)


class ProtocolError(AirlockError):
    """ProtocolError is an answer the client cannot read as the API says it
    should be (not JSON, a stream ended early). Code "protocol"."""

    def __init__(self, message: str, **kw: Any):
        kw.setdefault("code", "protocol")
        super().__init__(message, **kw)


class CommandFailed(AirlockError, subprocess.CalledProcessError):
    """CommandFailed is raised by run(..., check=True) when the command did not
    succeed (a non-zero exit, a timeout, a kill, an OOM, a failure to run). It
    is a subprocess.CalledProcessError too, so code written for
    subprocess.run(check=True) catches it: returncode, cmd (the command as
    given to run), output and stdout, stderr (text); result carries the whole
    Result. A command blocked by the policy is a Result with blocked=True,
    never this error, unless check=True: then it is this error too, with code
    "blocked"."""

    def __init__(self, result: Any, cmd: Union[str, Sequence[str], None] = None):
        code = "blocked" if result.blocked else "command_failed"
        AirlockError.__init__(self, "command %s" % result.outcome(), code=code)
        subprocess.CalledProcessError.__init__(self, result.exit_code, cmd, result.stdout, result.stderr)
        self.args = (self.message,)
        self.result = result

    def __str__(self) -> str:
        return self.message

    def __reduce__(self) -> Any:
        return (type(self), (self.result, self.cmd))


# The API's codes, each to the class a caller catches.
_BY_CODE: Dict[str, Type[AirlockError]] = {
    "invalid_request": SpecError,
    "too_large": SpecError,
    "unsupported_media_type": SpecError,
    "refused_path": RefusedPath,
    "unauthorized": AuthError,
    "forbidden": AuthError,
    "not_found": NotFound,
    "workspace_not_found": NotFound,
    "file_not_found": NotFound,
    "node_not_found": NotFound,
    "not_a_cluster": NotFound,
    "running": Conflict,
    "workspace_busy": Conflict,
    "wrong_type": Conflict,
    "workspace_lost": WorkspaceLost,
    "on_another_node": Conflict,
    "workspace_full": WorkspaceFull,
    "workspace_quota": WorkspaceFull,
    "busy": BusyError,
    "queue_timeout": QueueTimeout,
    "internal": ServerError,
    "engine_error": ServerError,
    "engine_unavailable": ServerError,
    "cancelled": ServerError,
    "database_unavailable": ServerError,
    "lease_lapsed": ServerError,
    "node_draining": ServerError,
    "no_secrets_key": ServerError,
    "method_not_allowed": SpecError,
    "headers_too_large": SpecError,
}

# The classes for codes the client does not know, by HTTP status.
_BY_STATUS: Dict[int, Type[AirlockError]] = {
    400: SpecError,
    401: AuthError,
    403: AuthError,
    404: NotFound,
    409: Conflict,
    405: SpecError,
    413: SpecError,
    431: SpecError,
    429: BusyError,
}


def error_from(status: int, code: str, message: str, field: Optional[str] = None,
               retry_after: Optional[float] = None) -> AirlockError:
    """error_from makes the error of an answer the server gave."""
    cls = _BY_CODE.get(code) or _BY_STATUS.get(status) or (ServerError if status >= 500 else AirlockError)
    if cls is BusyError:
        return BusyError(message, code=code, field=field, status=status, retry_after=retry_after)
    return cls(message, code=code, field=field, status=status)
