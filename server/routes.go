package server

import (
	"cmp"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/executor"
)

// The handlers of the /v1 routes and the operations routes: each decodes its
// request, calls the Service, and writes its answer.

// smallBody bounds the bodies of kill and wait, which hold a field or two.
const smallBody = 64 << 10

// checkBody bounds the body of a check: a command or argv within the
// executor's argument limit, written out as JSON.
func (a *httpAPI) checkBody() int64 {
	return min(a.svc.cfg.MaxBodyBytes, 2*int64(a.svc.ex.Config().MaxArgBytes)+smallBody)
}

// POST /v1/processes: run in the foreground (200), or start a background job (202).
func (a *httpAPI) run(w http.ResponseWriter, r *http.Request, tenant string) error {
	var spec executor.Spec
	if err := readJSON(w, r, &spec, a.svc.cfg.MaxBodyBytes, false); err != nil {
		return err
	}
	if spec.Background {
		extend(w, startTime) // a start may wait on the engine, or build the image first
		p, err := a.svc.Start(r.Context(), tenant, spec, "http", r.RemoteAddr)
		if err != nil {
			return err
		}
		status := http.StatusAccepted
		if p.State != executor.StateRunning && p.State != api.StateQueued {
			status = http.StatusOK // refused by the policy, or failed to start: nothing runs
		}
		w.Header().Set("Location", "/v1/processes/"+p.ID)
		writeJSON(w, status, p)
		return nil
	}
	// The answer lives as long as the run may: its wait for room, its timeout
	// and the grace to write it; as asked, then as admitted.
	lifetime := func(s executor.Spec) {
		extend(w, cmp.Or(s.QueueTimeout.Duration(), api.DefaultQueueTimeout)+
			cmp.Or(s.Timeout.Duration(), a.svc.ex.Config().Defaults.Timeout)+slack(r))
	}
	lifetime(spec)
	if wantsEvents(r) {
		return a.runEvents(w, r, tenant, spec, lifetime)
	}
	res, err := a.svc.Run(r.Context(), tenant, spec, "http", r.RemoteAddr, RunFollower{Admitted: lifetime})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// GET /v1/processes?state=&label=k=v&limit=
func (a *httpAPI) list(w http.ResponseWriter, r *http.Request, tenant string) error {
	q := r.URL.Query()
	opts := executor.ListOptions{State: executor.State(q.Get("state"))}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			return api.NewError("invalid_request", "limit", fmt.Sprintf("limit: %q is not an integer", v))
		}
		opts.Limit = n
	}
	for _, kv := range q["label"] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return api.NewError("invalid_request", "label", fmt.Sprintf("label: %q is not key=value", kv))
		}
		if opts.Labels == nil {
			opts.Labels = map[string]string{}
		}
		opts.Labels[k] = v
	}
	list, err := a.svc.List(r.Context(), tenant, opts)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

// GET /v1/processes/{id}: the monitor.
func (a *httpAPI) get(w http.ResponseWriter, r *http.Request, tenant string) error {
	res, err := a.svc.Get(r.Context(), tenant, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// DELETE /v1/processes/{id}: forget an ended job, its record and logs.
func (a *httpAPI) remove(w http.ResponseWriter, r *http.Request, tenant string) error {
	if err := a.svc.Remove(r.Context(), tenant, r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// POST /v1/processes/{id}/kill
func (a *httpAPI) kill(w http.ResponseWriter, r *http.Request, tenant string) error {
	var req api.KillRequest
	if err := readJSON(w, r, &req, smallBody, true); err != nil {
		return err
	}
	k, err := a.svc.Kill(r.Context(), tenant, r.PathValue("id"), req.Signal, req.ForceAfterDuration(), "http", r.RemoteAddr)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, k)
	return nil
}

// POST /v1/processes/{id}/wait: long-poll until the job ends or the timeout
// passes; either way the answer is the job's Result (state running if it goes on).
func (a *httpAPI) wait(w http.ResponseWriter, r *http.Request, tenant string) error {
	var req api.WaitRequest
	if err := readJSON(w, r, &req, smallBody, true); err != nil {
		return err
	}
	d, err := req.Duration()
	if err != nil {
		return err
	}
	extend(w, d+slack(r))
	ctx, cancel := mergeCancel(r.Context(), a.streams)
	defer cancel()
	res, err := a.svc.Wait(ctx, tenant, r.PathValue("id"), d)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// GET /v1/processes/{id}/logs?stream=&offset=&limit=&encoding=&follow=true
func (a *httpAPI) logs(w http.ResponseWriter, r *http.Request, tenant string) error {
	q := r.URL.Query()
	req := api.LogsRequest{ID: r.PathValue("id"), Stream: q.Get("stream"), Encoding: q.Get("encoding")}
	for _, p := range []struct {
		name string
		dst  *int64
	}{{"offset", &req.Offset}, {"limit", &req.Limit}} {
		if v := q.Get(p.name); v != "" {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return api.NewError("invalid_request", p.name, fmt.Sprintf("%s: %q is not an integer", p.name, v))
			}
			*p.dst = n
		}
	}
	follow := false
	if v := q.Get("follow"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return api.NewError("invalid_request", "follow", fmt.Sprintf("follow: %q is not true or false", v))
		}
		follow = b
	}
	if !follow {
		page, err := a.svc.logsPage(r.Context(), tenant, req)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, page)
		return nil
	}
	return a.followLogs(w, r, tenant, req)
}

// POST /v1/check
func (a *httpAPI) check(w http.ResponseWriter, r *http.Request, tenant string) error {
	var req api.CheckRequest
	if err := readJSON(w, r, &req, a.checkBody(), false); err != nil {
		return err
	}
	d, err := a.svc.Check(r.Context(), tenant, req, "http", r.RemoteAddr)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

func (a *httpAPI) healthz(w http.ResponseWriter, r *http.Request, _ string) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// GET /readyz: ready when the engine answers and, on a node of a cluster, the
// database answers and the node's lease holds.
func (a *httpAPI) readyz(w http.ResponseWriter, r *http.Request, _ string) error {
	if err := a.svc.Ready(r.Context()); err != nil {
		return api.NewError("engine_unavailable", "", err.Error())
	}
	if err := a.svc.ClusterReady(r.Context()); err != nil {
		return err // errorOf: database_unavailable or lease_lapsed
	}
	version, apiVersion := a.svc.ex.EngineVersion()
	answer := map[string]string{"status": "ready", "engine": version, "api_version": apiVersion}
	if id := a.svc.jobs.node(); id != "" {
		answer["node"] = id
	}
	writeJSON(w, http.StatusOK, answer)
	return nil
}

// GET /v1/nodes: the cluster's nodes, for any authenticated caller.
func (a *httpAPI) nodes(w http.ResponseWriter, r *http.Request, _ string) error {
	list, err := a.svc.Nodes(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, list)
	return nil
}

// POST /v1/nodes/{id}/drain: {"drain": true} stops new placements on the node,
// false resumes them; for the operator (admin tenants).
func (a *httpAPI) drain(w http.ResponseWriter, r *http.Request, tenant string) error {
	var req api.DrainRequest
	if err := readJSON(w, r, &req, smallBody, false); err != nil {
		return err
	}
	if req.Drain == nil {
		return badField("drain", "required: true to stop new placements on the node, false to resume them")
	}
	n, err := a.svc.Drain(r.Context(), tenant, r.PathValue("id"), *req.Drain, "http", r.RemoteAddr)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, n)
	return nil
}

func (a *httpAPI) openapi(w http.ResponseWriter, r *http.Request, _ string) error {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openAPIDocument)
	return nil
}
