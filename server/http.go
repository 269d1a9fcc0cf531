package server

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/airlock-sandbox/airlock/api"
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
	{"POST", "/v1/workspaces", false, (*httpAPI).createWorkspace},
	{"GET", "/v1/workspaces", false, (*httpAPI).listWorkspaces},
	{"GET", "/v1/workspaces/{id}", false, (*httpAPI).getWorkspace},
	{"DELETE", "/v1/workspaces/{id}", false, (*httpAPI).removeWorkspace},
	{"PUT", "/v1/workspaces/{id}/files/{path...}", false, (*httpAPI).putFile},
	{"GET", "/v1/workspaces/{id}/files/{path...}", false, (*httpAPI).getFile},
	{"DELETE", "/v1/workspaces/{id}/files/{path...}", false, (*httpAPI).removeFile},
	{"PUT", "/v1/workspaces/{id}/archive/{path...}", false, (*httpAPI).putArchive},
	{"GET", "/v1/workspaces/{id}/archive/{path...}", false, (*httpAPI).getArchive},
	{"PUT", "/v1/secrets/{name}", false, (*httpAPI).putSecret},
	{"DELETE", "/v1/secrets/{name}", false, (*httpAPI).removeSecret},
	{"GET", "/v1/secrets", false, (*httpAPI).listSecrets},
	{"GET", "/v1/nodes", false, (*httpAPI).nodes},
	{"POST", "/v1/nodes/{id}/drain", false, (*httpAPI).drain},
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
			a.fail(w, api.NewError("method_not_allowed", "", fmt.Sprintf("%s %s: allowed: %s", r.Method, path, methods)))
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
		a.fail(w, api.NewError("not_found", "", fmt.Sprintf("no route %s %s", r.Method, r.URL.Path)))
	})
	return a.counted(a.sameOrigin(a.canonical(mux)))
}

// canonical refuses, with refused_path, a request whose path is not in
// canonical form ("." or ".." segments, empty segments, control characters),
// whether sent plain or escaped. ServeMux would redirect it to the cleaned
// path, and a client that followed would act on another resource:
// /v1/workspaces/A/files/../../B/files/x is B's file. No answer under it is a
// redirect either: the mux's own (a subtree without its slash) becomes a 404.
func (a *httpAPI) canonical(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reason := pathFault(r.URL.Path); reason != "" {
			a.fail(w, api.NewError("refused_path", "path", fmt.Sprintf("path %q %s; airlock takes paths in canonical form only", r.URL.EscapedPath(), reason)))
			return
		}
		next.ServeHTTP(&noRedirect{ResponseWriter: w, a: a, r: r}, r)
	})
}

// pathFault says what is not canonical in an URL's (unescaped) path, or "".
func pathFault(p string) string {
	for i := 0; i < len(p); i++ {
		if p[i] < 0x20 || p[i] == 0x7f {
			return fmt.Sprintf("contains the control character %U", rune(p[i]))
		}
	}
	segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, seg := range segs {
		switch {
		case seg == "." || seg == "..":
			return fmt.Sprintf("has a %q segment", seg)
		case seg == "" && i < len(segs)-1:
			return "has an empty segment (//)"
		}
	}
	return ""
}

// noRedirect turns a redirect written under it into a 404 not_found.
type noRedirect struct {
	http.ResponseWriter
	a       *httpAPI
	r       *http.Request
	swallow bool
}

func (n *noRedirect) WriteHeader(code int) {
	if code >= 300 && code < 400 {
		n.Header().Del("Location")
		n.swallow = true
		n.a.fail(n.ResponseWriter, api.NewError("not_found", "", fmt.Sprintf("no route %s %s", n.r.Method, n.r.URL.Path)))
		return
	}
	n.ResponseWriter.WriteHeader(code)
}

func (n *noRedirect) Write(b []byte) (int, error) {
	if n.swallow {
		return len(b), nil
	}
	return n.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach Flush and the deadlines.
func (n *noRedirect) Unwrap() http.ResponseWriter { return n.ResponseWriter }

// maxHeaderBytes bounds a request's line and headers (431 headers_too_large).
const maxHeaderBytes = 64 << 10

// NewHTTPServer returns an http.Server for h with the given timeouts.
func NewHTTPServer(addr string, h http.Handler, log *slog.Logger, t Timeouts) *http.Server {
	return &http.Server{
		Addr: addr, Handler: h,
		ReadHeaderTimeout: t.ReadHeader, ReadTimeout: t.Read, WriteTimeout: t.Write, IdleTimeout: t.Idle,
		MaxHeaderBytes: maxHeaderBytes,
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
			a.fail(w, api.NewError("unauthorized", "", reason+": send Authorization: Bearer <token>"))
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
			a.fail(w, a.errorOf(r.Context(), err))
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

// startTime bounds the answer to a background start or a workspace's
// creation: the engine may be slow, or the image built first.
const startTime = time.Minute

// slack is added to a run's own time (and a wait's) for its answer to be
// written: the server's write timeout, which plain answers get whole (a minute
// when the server has none).
func slack(r *http.Request) time.Duration {
	if srv, ok := r.Context().Value(http.ServerContextKey).(*http.Server); ok && srv.WriteTimeout > 0 {
		return srv.WriteTimeout
	}
	return time.Minute
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

// mergeCancel returns a context that ends when either parent does.
func mergeCancel(a, b context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(a)
	stop := context.AfterFunc(b, func() { cancel(context.Cause(b)) })
	return ctx, func() { stop(); cancel(context.Canceled) }
}
