package api

import (
	"context"
	"errors"
	"net/http"
)

// Error is a request the service refuses or cannot serve. Status is its HTTP
// status; Code a stable word (one of ErrorKinds); Field the request field at
// fault, if one is.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// Unwrap gives the sentinel that the code stands for (ErrorKinds), so that a
// client's errors.Is(err, ErrNotFound) holds over HTTP as it does in process.
func (e *Error) Unwrap() error {
	for _, k := range ErrorKinds {
		if k.Code == e.Code {
			return k.Sentinel
		}
	}
	return nil
}

// Errors of processes and of the service, matched with errors.Is. Those of
// workspaces are in workspace.go; every one is in ErrorKinds.
var (
	// ErrInvalidSpec is matched by every validation error; nothing was started.
	ErrInvalidSpec = errors.New("invalid spec")
	// ErrEngine wraps every failure of the container engine (unreachable,
	// refused a request, missing image or runtime): the run could not happen
	// as asked.
	ErrEngine = errors.New("engine")
	// ErrNotFound is returned for a process id airlock has no record of.
	ErrNotFound = errors.New("no such process")
	// ErrRunning is returned by Remove for a job that has not ended.
	ErrRunning = errors.New("process is still running")
	// ErrBusy is the answer to a tenant with as many runs active as its limit
	// for the whole of its queue timeout, or with as many requests waiting as
	// its max_queued; nothing was started.
	ErrBusy = errors.New("busy")
	// ErrQueueTimeout is the answer, in cluster mode, to a run or job that
	// found no node with room within its queue timeout; nothing ran.
	ErrQueueTimeout = errors.New("queue_timeout")
	// ErrForbidden is the answer to a caller without the right to an operation.
	ErrForbidden = errors.New("forbidden")
	// ErrNotACluster is the answer of the node routes on a server without a
	// database.
	ErrNotACluster = errors.New("this server is not a node of a cluster: start it with --database postgres://... (AIRLOCK_DATABASE) to make it one")
	// ErrNodeNotFound: the cluster has no node of this id.
	ErrNodeNotFound = errors.New("node not found")
	// ErrOnAnotherNode answers a request that only the node holding a job or
	// workspace can serve, when that node does not answer.
	ErrOnAnotherNode = errors.New("runs on another node")
	// ErrLeaseLapsed: the answering node's lease in the cluster has run out,
	// so it takes no work until it has renewed it.
	ErrLeaseLapsed = errors.New("this node's lease has lapsed")
	// ErrNodeDraining: a foreground run came through a node that is drained;
	// a run runs on the node it came through, so it is refused at once.
	ErrNodeDraining = errors.New("node draining")
	// ErrDatabaseUnavailable: the cluster's PostgreSQL could not be reached,
	// or the connection was lost mid-operation. Retry later.
	ErrDatabaseUnavailable = errors.New("cluster database unavailable")
	// ErrNoSecretsKey: the server stores no secrets, since its operator set
	// no secrets_key_file (PUT /v1/secrets/{name}).
	ErrNoSecretsKey = errors.New("this server stores no secrets: its operator has set no secrets_key_file")
	// ErrCancelled: the server gave the request up before its end (the
	// server's own context.Canceled or context.DeadlineExceeded, say at its
	// shutdown). A client's own cancellation is its context's error, not this.
	ErrCancelled = errors.New("cancelled")
)

// ErrorKind ties an error code to its HTTP status and to the sentinel it
// stands for, with the request field it names when the error always concerns
// one.
type ErrorKind struct {
	Code     string
	Status   int
	Sentinel error // nil for the codes of the HTTP layer alone
	Field    string
}

// ErrorKinds is the one table of the API's error codes. A server maps an
// error to the first kind whose sentinel it matches (ErrorOf), a client maps
// a code back to its sentinel (Error.Unwrap), and the MCP tools say the same
// words.
var ErrorKinds = []ErrorKind{
	{Code: "invalid_request", Status: http.StatusBadRequest, Sentinel: ErrInvalidSpec},
	{Code: "not_found", Status: http.StatusNotFound, Sentinel: ErrNotFound},
	{Code: "workspace_not_found", Status: http.StatusNotFound, Sentinel: ErrWorkspaceNotFound},
	{Code: "file_not_found", Status: http.StatusNotFound, Sentinel: ErrFileNotFound},
	{Code: "workspace_busy", Status: http.StatusConflict, Sentinel: ErrWorkspaceBusy},
	{Code: "workspace_lost", Status: http.StatusGone, Sentinel: ErrWorkspaceLost},
	{Code: "workspace_full", Status: http.StatusRequestEntityTooLarge, Sentinel: ErrWorkspaceFull},
	{Code: "workspace_quota", Status: http.StatusForbidden, Sentinel: ErrWorkspaceQuota},
	{Code: "refused_path", Status: http.StatusBadRequest, Sentinel: ErrUnsafePath, Field: "path"},
	{Code: "wrong_type", Status: http.StatusConflict, Sentinel: ErrWrongType, Field: "path"},
	{Code: "busy", Status: http.StatusTooManyRequests, Sentinel: ErrBusy},
	{Code: "running", Status: http.StatusConflict, Sentinel: ErrRunning},
	// engine_unavailable is engine_error when the engine no longer answers
	// at all: the server tells them apart (it pings the engine).
	{Code: "engine_error", Status: http.StatusBadGateway, Sentinel: ErrEngine},
	{Code: "engine_unavailable", Status: http.StatusServiceUnavailable, Sentinel: ErrEngine},
	{Code: "not_a_cluster", Status: http.StatusNotFound, Sentinel: ErrNotACluster},
	{Code: "node_not_found", Status: http.StatusNotFound, Sentinel: ErrNodeNotFound},
	{Code: "forbidden", Status: http.StatusForbidden, Sentinel: ErrForbidden},
	{Code: "queue_timeout", Status: http.StatusServiceUnavailable, Sentinel: ErrQueueTimeout},
	{Code: "on_another_node", Status: http.StatusConflict, Sentinel: ErrOnAnotherNode},
	{Code: "lease_lapsed", Status: http.StatusServiceUnavailable, Sentinel: ErrLeaseLapsed},
	{Code: "database_unavailable", Status: http.StatusServiceUnavailable, Sentinel: ErrDatabaseUnavailable},
	{Code: "node_draining", Status: http.StatusServiceUnavailable, Sentinel: ErrNodeDraining},
	{Code: "no_secrets_key", Status: http.StatusNotImplemented, Sentinel: ErrNoSecretsKey},
	{Code: "cancelled", Status: http.StatusServiceUnavailable, Sentinel: ErrCancelled},
	{Code: "unauthorized", Status: http.StatusUnauthorized},
	{Code: "method_not_allowed", Status: http.StatusMethodNotAllowed},
	{Code: "unsupported_media_type", Status: http.StatusUnsupportedMediaType},
	{Code: "too_large", Status: http.StatusRequestEntityTooLarge},
	{Code: "headers_too_large", Status: http.StatusRequestHeaderFieldsTooLarge},
	{Code: "internal", Status: http.StatusInternalServerError},
}

// NewError is the Error of code (one of ErrorKinds, whose status it takes)
// about field, saying message.
func NewError(code, field, message string) *Error {
	e := &Error{Status: http.StatusInternalServerError, Code: code, Field: field, Message: message}
	for _, k := range ErrorKinds {
		if k.Code == code {
			e.Status = k.Status
			break
		}
	}
	return e
}

// ErrorOf is err as the API answers it: err itself when it is an *Error, else
// the first of ErrorKinds whose sentinel err matches (a *SpecError names its
// field), else internal. The server's context ending is ErrCancelled.
func ErrorOf(err error) *Error {
	var e *Error
	var se *SpecError
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &se):
		return NewError("invalid_request", se.Field, se.Error())
	}
	for _, k := range ErrorKinds {
		if k.Sentinel != nil && errors.Is(err, k.Sentinel) {
			return NewError(k.Code, k.Field, err.Error())
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return NewError("cancelled", "", err.Error())
	}
	return NewError("internal", "", err.Error())
}
