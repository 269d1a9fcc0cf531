package server

import (
	"context"
	"errors"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/executor"
)

// errorOf maps an error to the API's error shape by the API's one table
// (api.ErrorKinds): the one place where failures become HTTP statuses. An
// engine's failure is engine_unavailable when the engine no longer answers.
func (a *httpAPI) errorOf(ctx context.Context, err error) *api.Error {
	e := api.ErrorOf(err)
	if e.Code == "engine_error" && errors.Is(err, executor.ErrEngine) {
		a.svc.metrics.engineErrors.Inc()
		if perr := a.svc.Ready(ctx); perr != nil {
			return api.NewError("engine_unavailable", "", perr.Error())
		}
	}
	return e
}
