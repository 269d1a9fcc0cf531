package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/cluster"
	"github.com/airlock-sandbox/airlock/executor"
)

// errorOf maps an error to the API's error shape: the one place where failures
// become HTTP statuses.
func (a *httpAPI) errorOf(ctx context.Context, err error) *api.Error {
	var se *executor.SpecError
	var e *api.Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.As(err, &se):
		return &api.Error{Status: http.StatusBadRequest, Code: "invalid_request", Message: se.Error(), Field: se.Field}
	case errors.Is(err, executor.ErrNotFound):
		return &api.Error{Status: http.StatusNotFound, Code: "not_found", Message: err.Error()}
	case errors.Is(err, executor.ErrWorkspaceNotFound):
		return &api.Error{Status: http.StatusNotFound, Code: "workspace_not_found", Message: err.Error()}
	case errors.Is(err, executor.ErrFileNotFound):
		return &api.Error{Status: http.StatusNotFound, Code: "file_not_found", Message: err.Error()}
	case errors.Is(err, executor.ErrWorkspaceBusy):
		return &api.Error{Status: http.StatusConflict, Code: "workspace_busy", Message: err.Error()}
	case errors.Is(err, executor.ErrWorkspaceLost):
		return &api.Error{Status: http.StatusGone, Code: "workspace_lost", Message: err.Error()}
	case errors.Is(err, executor.ErrWorkspaceFull):
		return &api.Error{Status: http.StatusRequestEntityTooLarge, Code: "workspace_full", Message: err.Error()}
	case errors.Is(err, executor.ErrWorkspaceQuota):
		return &api.Error{Status: http.StatusForbidden, Code: "workspace_quota", Message: err.Error()}
	case errors.Is(err, executor.ErrUnsafePath):
		return &api.Error{Status: http.StatusBadRequest, Code: "refused_path", Field: "path", Message: err.Error()}
	case errors.Is(err, executor.ErrWrongType):
		return &api.Error{Status: http.StatusConflict, Code: "wrong_type", Field: "path", Message: err.Error()}
	case errors.Is(err, ErrBusy):
		return &api.Error{Status: http.StatusTooManyRequests, Code: "busy", Message: err.Error()}
	case errors.Is(err, executor.ErrRunning):
		return &api.Error{Status: http.StatusConflict, Code: "running", Message: err.Error()}
	case errors.Is(err, executor.ErrEngine):
		a.svc.metrics.engineErrors.Inc()
		if perr := a.svc.Ready(ctx); perr != nil {
			return &api.Error{Status: http.StatusServiceUnavailable, Code: "engine_unavailable", Message: perr.Error()}
		}
		return &api.Error{Status: http.StatusBadGateway, Code: "engine_error", Message: err.Error()}
	case errors.Is(err, ErrNotACluster):
		return &api.Error{Status: http.StatusNotFound, Code: "not_a_cluster", Message: err.Error()}
	case errors.Is(err, errNodeNotFound):
		return &api.Error{Status: http.StatusNotFound, Code: "node_not_found", Message: err.Error()}
	case errors.Is(err, ErrForbidden):
		return &api.Error{Status: http.StatusForbidden, Code: "forbidden", Message: err.Error()}
	case errors.Is(err, api.ErrQueueTimeout):
		return &api.Error{Status: http.StatusServiceUnavailable, Code: "queue_timeout", Message: err.Error()}
	case errors.Is(err, errElsewhere):
		return &api.Error{Status: http.StatusConflict, Code: "on_another_node", Message: err.Error()}
	case errors.Is(err, errLeaseLapsed):
		return &api.Error{Status: http.StatusServiceUnavailable, Code: "lease_lapsed", Message: err.Error()}
	case errors.Is(err, cluster.ErrUnavailable):
		return &api.Error{Status: http.StatusServiceUnavailable, Code: "database_unavailable", Message: err.Error()}
	case errors.Is(err, ErrNoSecretsKey):
		return &api.Error{Status: http.StatusNotImplemented, Code: "no_secrets_key", Message: err.Error()}
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return &api.Error{Status: http.StatusServiceUnavailable, Code: "cancelled", Message: err.Error()}
	}
	return &api.Error{Status: http.StatusInternalServerError, Code: "internal", Message: err.Error()}
}
