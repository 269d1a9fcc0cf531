package server

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/executor"
)

// Timeouts bound how long a client may take over a request, so that a slow
// client cannot hold the server. Routes that run commands or stream lift Read and
// Write for their own request once its body is read (see extend and
// longRequest); every other request, and every body, must arrive and leave within
// them.
type Timeouts struct {
	ReadHeader, Read, Write, Idle time.Duration
}

// DefaultTimeouts are those of `airlock serve`.
var DefaultTimeouts = Timeouts{ReadHeader: 10 * time.Second, Read: 60 * time.Second, Write: 60 * time.Second, Idle: 2 * time.Minute}

const (
	// streamSlack is added to a run's own timeout for its response to be written.
	streamSlack = time.Minute
	// heartbeat keeps an idle event stream alive through proxies.
	heartbeat = 15 * time.Second
)

// route is one endpoint of the API; the OpenAPI document must list each (tested).
type route struct {
	method, path string
	public       bool // no token needed
	handle       func(s *httpAPI, w http.ResponseWriter, r *http.Request, tenant string) error
}

var routes = []route{
	{"POST", "/v1/processes", false, (*httpAPI).run},
	{"GET", "/v1/processes", false, (*httpAPI).list},
	{"GET", "/v1/processes/{id}", false, (*httpAPI).get},
	{"DELETE", "/v1/processes/{id}", false, (*httpAPI).remove},
	{"GET", "/v1/processes/{id}/logs", false, (*httpAPI).logs},
	{"POST", "/v1/processes/{id}/kill", false, (*httpAPI).kill},
	{"POST", "/v1/processes/{id}/wait", false, (*httpAPI).wait},
	{"POST", "/v1/check", false, (*httpAPI).check},
	{"GET", "/healthz", true, (*httpAPI).healthz},
	{"GET", "/readyz", true, (*httpAPI).readyz},
	{"GET", "/openapi.json", true, (*httpAPI).openapi},
}

// httpAPI serves the HTTP routes over a Service.
type httpAPI struct {
	svc *Service
	log *slog.Logger
	// streams ends when the server shuts down: follows and waits then return, so
	// that shutdown waits only for foreground runs.
	streams context.Context
}

type tenantKey struct{}

// Handler returns the HTTP API, /metrics and /mcp over svc. Long-lived requests
// (log follows, waits) end when streams does.
func Handler(svc *Service, streams context.Context) http.Handler {
	a := &httpAPI{svc: svc, log: svc.log, streams: streams}
	mux := http.NewServeMux()
	allowed := map[string][]string{}
	for _, rt := range routes {
		mux.Handle(rt.method+" "+rt.path, a.wrap(rt))
		allowed[rt.path] = append(allowed[rt.path], rt.method)
	}
	for path, methods := range allowed {
		methods := strings.Join(methods, ", ")
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Allow", methods)
			a.fail(w, &api.Error{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed",
				Message: fmt.Sprintf("%s %s: allowed: %s", r.Method, path, methods)})
		})
	}
	mux.Handle("GET /metrics", promhttp.HandlerFor(svc.metrics.reg, promhttp.HandlerOpts{}))
	mcpHandler := svc.mcpHandler()
	mux.Handle("/mcp", a.authenticated("mcp", longRequest(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet { // the server-to-client event stream: ends at shutdown
			ctx, cancel := mergeCancel(r.Context(), a.streams)
			defer cancel()
			r = r.WithContext(ctx)
		}
		mcpHandler.ServeHTTP(w, r)
	}))))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		a.fail(w, &api.Error{Status: http.StatusNotFound, Code: "not_found", Message: fmt.Sprintf("no route %s %s", r.Method, r.URL.Path)})
	})
	return a.counted(a.sameOrigin(mux))
}

// NewHTTPServer returns an http.Server for h with the given timeouts.
func NewHTTPServer(addr string, h http.Handler, log *slog.Logger, t Timeouts) *http.Server {
	return &http.Server{
		Addr: addr, Handler: h,
		ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read, WriteTimeout: t.Write, IdleTimeout: t.Idle,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// statusRecorder keeps the status for the request counter.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush and the deadlines.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// counted counts requests by route pattern (never by path: no ids in labels).
func (a *httpAPI) counted(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		pattern := r.Pattern
		if pattern == "" || pattern == "/" {
			pattern = "unmatched"
		}
		a.svc.metrics.requests.WithLabelValues(pattern, strconv.Itoa(max(rec.status, 200))).Inc()
	})
}

// authenticated admits requests with a valid bearer token (any request when the
// server has no tokens) and puts the tenant in the request's context.
func (a *httpAPI) authenticated(via string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := bearer(r)
		tenant, valid := a.svc.Authenticate(token)
		if !valid {
			reason := "unknown token"
			if !ok {
				reason = "no bearer token"
			}
			a.svc.authFailed(token, via, r.RemoteAddr, reason)
			w.Header().Set("WWW-Authenticate", `Bearer realm="airlock"`)
			a.fail(w, &api.Error{Status: http.StatusUnauthorized, Code: "unauthorized",
				Message: reason + ": send Authorization: Bearer <token>"})
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), tenantKey{}, tenant)))
	})
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

func (a *httpAPI) wrap(rt route) http.Handler {
	h := http.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tenant, _ := r.Context().Value(tenantKey{}).(string)
		if err := rt.handle(a, w, r, tenant); err != nil {
			a.fail(w, a.svc.errorOf(r.Context(), err))
		}
	}))
	if !rt.public {
		h = a.authenticated("http", h)
	}
	return h
}

// longRequest lifts the server's read and write deadlines for a request that
// runs or streams for longer than they allow (MCP tool calls, event streams).
func longRequest(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		rc.SetReadDeadline(time.Time{})
		rc.SetWriteDeadline(time.Time{})
		next.ServeHTTP(w, r)
	})
}

// extend gives the response of the current request until d from now, and stops
// the read deadline from cancelling it once the body has been read.
func extend(w http.ResponseWriter, d time.Duration) {
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Time{})
	if d == 0 {
		rc.SetWriteDeadline(time.Time{})
	} else {
		rc.SetWriteDeadline(time.Now().Add(d))
	}
}

// errorBody is the one error shape of the API.
type errorBody struct {
	Error *api.Error `json:"error"`
}

func (a *httpAPI) fail(w http.ResponseWriter, e *api.Error) {
	if e.Status >= 500 {
		a.log.Warn("request failed", "code", e.Code, "err", e.Message)
	}
	if e.Status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1") // a run may end any moment; nothing says when
	}
	writeJSON(w, e.Status, errorBody{e})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

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
		extend(w, streamSlack) // a start may wait on the engine, or build the image first
		p, err := a.svc.Start(r.Context(), tenant, spec, "http", r.RemoteAddr)
		if err != nil {
			return err
		}
		status := http.StatusAccepted
		if p.State != executor.StateRunning {
			status = http.StatusOK // refused by the policy, or failed to start: nothing runs
		}
		w.Header().Set("Location", "/v1/processes/"+p.ID)
		writeJSON(w, status, p)
		return nil
	}
	timeout := a.svc.ex.Config().Defaults.Timeout
	if spec.Timeout > 0 {
		timeout = spec.Timeout.Duration()
	}
	extend(w, timeout+streamSlack)
	if wantsEvents(r) {
		return a.runEvents(w, r, tenant, spec)
	}
	res, err := a.svc.Run(r.Context(), tenant, spec, "http", r.RemoteAddr, nil)
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
			return &api.Error{Status: http.StatusBadRequest, Code: "invalid_request", Field: "limit", Message: fmt.Sprintf("limit: %q is not an integer", v)}
		}
		opts.Limit = n
	}
	for _, kv := range q["label"] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return &api.Error{Status: http.StatusBadRequest, Code: "invalid_request", Field: "label", Message: fmt.Sprintf("label: %q is not key=value", kv)}
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
	extend(w, d+streamSlack)
	ctx, cancel := mergeCancel(r.Context(), a.streams)
	defer cancel()
	res, err := a.svc.Wait(ctx, tenant, r.PathValue("id"), d)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, res)
	return nil
}

// encoder returns the function that writes output bytes into a JSON string in
// the named encoding.
func encoder(name string) (func([]byte) string, error) {
	switch name {
	case "", "utf8":
		return utf8Text, nil
	case "base64":
		return base64.StdEncoding.EncodeToString, nil
	}
	return nil, &api.Error{Status: http.StatusBadRequest, Code: "invalid_request", Field: "encoding",
		Message: fmt.Sprintf("encoding: %q is not utf8 or base64", name)}
}

func logsResponse(l executor.Logs, enc func([]byte) string, encoding string, streams string) api.LogsResponse {
	out := api.LogsResponse{ID: l.ID, State: l.State, Encoding: encoding, StdoutSize: l.StdoutSize, StderrSize: l.StderrSize,
		StdoutBytes: l.StdoutBytes, StderrBytes: l.StderrBytes, Truncated: l.Truncated, StdoutNext: l.StdoutNext, StderrNext: l.StderrNext}
	if streams != "stderr" {
		s := enc(l.Stdout)
		out.Stdout = &s
	}
	if streams != "stdout" {
		s := enc(l.Stderr)
		out.Stderr = &s
	}
	return out
}

// utf8Text is b as text: each byte that is not part of valid UTF-8 becomes one
// U+FFFD, exactly as encoding/json writes a Result's output, so that a result, a
// log page and a stream of chunks read the same.
func utf8Text(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r == utf8.RuneError && n == 1 {
			sb.WriteString("\uFFFD")
		} else {
			sb.Write(b[:n])
		}
		b = b[n:]
	}
	return sb.String()
}

// logsPage answers a api.LogsRequest with a page in the chosen encoding; HTTP and MCP share it.
func (s *Service) logsPage(ctx context.Context, tenant string, req api.LogsRequest) (api.LogsResponse, error) {
	enc, err := encoder(req.Encoding)
	if err != nil {
		return api.LogsResponse{}, err
	}
	l, err := s.Logs(ctx, tenant, req.ID, executor.LogsOptions{Stream: req.Stream, Offset: req.Offset, Limit: req.Limit})
	if err != nil {
		return api.LogsResponse{}, err
	}
	return logsResponse(l, enc, cmp.Or(req.Encoding, "utf8"), req.Stream), nil
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
				return &api.Error{Status: http.StatusBadRequest, Code: "invalid_request", Field: p.name, Message: fmt.Sprintf("%s: %q is not an integer", p.name, v)}
			}
			*p.dst = n
		}
	}
	follow := false
	if v := q.Get("follow"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return &api.Error{Status: http.StatusBadRequest, Code: "invalid_request", Field: "follow", Message: fmt.Sprintf("follow: %q is not true or false", v)}
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

// GET /readyz: ready when the engine answers.
func (a *httpAPI) readyz(w http.ResponseWriter, r *http.Request, _ string) error {
	if err := a.svc.Ready(r.Context()); err != nil {
		return &api.Error{Status: http.StatusServiceUnavailable, Code: "engine_unavailable", Message: err.Error()}
	}
	version, apiVersion := a.svc.ex.EngineVersion()
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready", "engine": version, "api_version": apiVersion})
	return nil
}

func (a *httpAPI) openapi(w http.ResponseWriter, r *http.Request, _ string) error {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openAPIDocument)
	return nil
}

// mergeCancel returns a context that ends when either parent does.
func mergeCancel(a, b context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(a)
	stop := context.AfterFunc(b, func() { cancel(context.Cause(b)) })
	return ctx, func() { stop(); cancel(context.Canceled) }
}
