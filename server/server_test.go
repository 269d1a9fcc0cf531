package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/cluster/peer"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/enginefake"
	"github.com/airlock-sandbox/airlock/policy"
)

// These tests drive the HTTP API in process, over a real executor on the real
// engine: every run below starts a real container; those of fake_test.go use the
// fake engine instead.

// harness is a server on a data dir of its own.
type harness struct {
	t      *testing.T
	url    string
	cfg    Config
	svc    *Service
	ex     *executor.Executor
	logs   *syncBuffer // the server's own log
	cancel context.CancelFunc
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var testTimeouts = Timeouts{ReadHeader: time.Second, Read: time.Second, Write: time.Second, Idle: 5 * time.Second}

const (
	tokA = "token-of-alpha-0123456789"
	tokB = "token-of-beta-9876543210"
)

func newHarness(t *testing.T, configure func(*Config)) *harness {
	t.Helper()
	return startHarness(t, configure, nil, nil)
}

// newFakeHarness is a harness over the fake engine: the Service's own logic,
// in milliseconds and without Docker.
func newFakeHarness(t *testing.T, f *enginefake.Engine, configure func(*Config)) *harness {
	t.Helper()
	return startHarness(t, configure, f, nil)
}

// startHarness starts a Service on the real engine, or on fake when it is set
// (and then with the engine's init: the fake runs no init).
// executorTweak, when set, changes the executor's side of the configuration
// beyond what a server's Config says (a resolver for the egress proxy).
func startHarness(t *testing.T, configure func(*Config), fake *enginefake.Engine, executorTweak func(*executor.Config)) *harness {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.AuditLog = filepath.Join(cfg.DataDir, "audit.log")
	cfg.Tokens = []Token{{tokA, "alpha"}, {tokB, "beta"}}
	if configure != nil {
		configure(&cfg)
	}
	if err := cfg.validate(); err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, cfg: cfg, logs: &syncBuffer{}}
	log := slog.New(slog.NewJSONHandler(h.logs, nil))
	ec, err := cfg.ExecutorConfig()
	if err != nil {
		t.Fatal(err)
	}
	ec.Logger = log
	if executorTweak != nil {
		executorTweak(&ec)
	}
	opts := []executor.Option{executor.WithConfig(ec)}
	if fake != nil {
		ec.InitPath = executor.EngineInit
		opts = []executor.Option{executor.WithConfig(ec), executor.WithEngine(fake)}
	}
	h.ex, err = executor.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.ex.Close() })
	h.svc, err = NewService(h.ex, cfg, log, "test", WithPeers(peer.Dial))
	if err != nil {
		t.Fatal(err)
	}
	// Jobs a test leaves running are killed, and their containers are gone, before
	// the executor closes.
	t.Cleanup(func() { h.svc.Close(context.Background(), true) })
	streams, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	// Short timeouts: every test below also proves that runs, waits, follows and
	// MCP calls longer than them are answered, since those lift them.
	ts := httptest.NewUnstartedServer(nil)
	ts.Config = NewHTTPServer("", Handler(h.svc, streams), log, testTimeouts)
	ts.Listener = ErrorsAsJSON(ts.Listener)
	ts.Start()
	t.Cleanup(ts.Close)
	t.Cleanup(cancel)
	h.url = ts.URL
	return h
}

// postEvents posts body as a run of alpha's that asks for Server-Sent Events
// (query, e.g. "?encoding=base64", on the path), and returns the answer; its
// body is closed when the test ends.
func (h *harness) postEvents(query string, body any) *http.Response {
	h.t.Helper()
	data, _ := json.Marshal(body)
	req, _ := http.NewRequestWithContext(h.t.Context(), "POST", h.url+"/v1/processes"+query, bytes.NewReader(data))
	req.Header.Set("Authorization", "Bearer "+tokA)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// do sends a request with token (none when empty) and a JSON body (raw when a
// string), and returns the status and body.
func (h *harness) do(method, path, token string, body any) (int, []byte, http.Header) {
	h.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			h.t.Fatal(err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(h.t.Context(), method, h.url+path, r)
	if err != nil {
		h.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp.StatusCode, data, resp.Header
}

// decode unmarshals data into a fresh T.
func decode[T any](t *testing.T, data []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	return v
}

// wantError asserts an error response of the one shape, with its status, code
// and field.
func wantError(t *testing.T, status int, data []byte, wantStatus int, code, field string) {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("status %d, want %d: %s", status, wantStatus, data)
	}
	e := decode[errorBody](t, data)
	if e.Error == nil || e.Error.Code != code || e.Error.Field != field || e.Error.Message == "" {
		t.Fatalf("error %s, want code %q field %q", data, code, field)
	}
}

func (h *harness) auditLines() []auditEvent {
	h.t.Helper()
	data, err := os.ReadFile(h.cfg.AuditLog)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []auditEvent
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		if len(line) > 0 {
			out = append(out, decode[auditEvent](h.t, line))
		}
	}
	return out
}

func TestRunForeground(t *testing.T) {
	h := newHarness(t, nil)
	status, data, _ := h.do("POST", "/v1/processes", tokA, map[string]any{
		"command": "echo hi; echo err >&2; exit 3", "labels": map[string]string{"agent": "a1"},
		"env": map[string]string{"SECRET_VALUE": "hunter2-never-logged"},
	})
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, data)
	}
	r := decode[executor.Result](t, data)
	if r.State != executor.StateCompleted || r.ExitCode != 3 || r.Success || r.Stdout != "hi\n" || r.Stderr != "err\n" ||
		r.Labels["agent"] != "a1" || r.Tenant != "alpha" {
		t.Fatalf("result %+v", r)
	}

	// A timeout and a refusal are answers, not errors.
	status, data, _ = h.do("POST", "/v1/processes", tokA, map[string]any{"command": "echo started; sleep 30", "timeout": 1})
	r = decode[executor.Result](t, data)
	if status != http.StatusOK || r.State != executor.StateTimedOut || !r.TimedOut || r.ExitCode != 124 || r.Stdout != "started\n" {
		t.Fatalf("timeout: status %d result %+v", status, r)
	}
	status, data, _ = h.do("POST", "/v1/processes", tokA, map[string]any{"command": "ls && rm -rf /"})
	r = decode[executor.Result](t, data)
	if status != http.StatusOK || r.State != executor.StateBlocked || r.ExitCode != 126 || r.BlockRule != "rm-root" || r.ContainerID != "" {
		t.Fatalf("refusal: status %d result %+v", status, r)
	}

	// The audit log has the start and finish of each run and the refusal, with
	// env names and never their values, nor a token.
	raw, _ := os.ReadFile(h.cfg.AuditLog)
	for _, secret := range []string{"hunter2", tokA, tokB} {
		if bytes.Contains(raw, []byte(secret)) || strings.Contains(h.logs.String(), secret) {
			t.Fatalf("%q leaked into the audit log or the server log", secret)
		}
	}
	var events []string
	for _, ev := range h.auditLines() {
		if ev.Tenant != "alpha" || ev.Via != "http" {
			t.Fatalf("audit line without tenant or transport: %+v", ev)
		}
		events = append(events, ev.Event+":"+string(ev.State)+ev.Rule)
	}
	want := "run.start: run.finish:completed run.start: run.finish:timed_out refused:rm-root"
	if strings.Join(events, " ") != want {
		t.Fatalf("audit events %v, want %s", events, want)
	}
	first := h.auditLines()[0]
	if len(first.EnvNames) != 1 || first.EnvNames[0] != "SECRET_VALUE" || first.ID == "" {
		t.Fatalf("run.start line %+v", first)
	}

	// Metrics count by mode, state and rule; no id appears.
	_, metrics, _ := h.do("GET", "/metrics", "", nil)
	for _, want := range []string{
		`airlock_runs_total{mode="foreground",state="completed"} 1`,
		`airlock_runs_total{mode="foreground",state="timed_out"} 1`,
		`airlock_policy_refusals_total{rule="rm-root"} 1`,
		`airlock_run_duration_seconds_count{mode="foreground"} 2`,
		`airlock_running{mode="foreground"} 0`,
		`airlock_http_requests_total{code="200",route="POST /v1/processes"} 3`,
	} {
		if !bytes.Contains(metrics, []byte(want)) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if bytes.Contains(metrics, []byte(r.ID)) {
		t.Error("a run id appears in the metrics")
	}
}

func TestBadRequests(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxBodyBytes = 64 << 10 })
	cases := []struct {
		name   string
		method string
		path   string
		body   any
		status int
		code   string
		field  string
	}{
		{"unknown field", "POST", "/v1/processes", `{"command":"echo","memroy":5}`, 400, "invalid_request", "memroy"},
		{"wrong type", "POST", "/v1/processes", `{"command":"echo","memory":"1g"}`, 400, "invalid_request", "memory"},
		{"empty body", "POST", "/v1/processes", ``, 400, "invalid_request", "body"},
		{"not json", "POST", "/v1/processes", `command=echo`, 400, "invalid_request", "body"},
		{"cut short", "POST", "/v1/processes", `{"command":"echo"`, 400, "invalid_request", "body"},
		{"trailing data", "POST", "/v1/processes", `{"command":"echo"} {}`, 400, "invalid_request", "body"},
		{"too large", "POST", "/v1/processes", `{"command":"echo","stdin":"` + strings.Repeat("x", 70<<10) + `"}`, 413, "too_large", "body"},
		{"no command", "POST", "/v1/processes", `{}`, 400, "invalid_request", "command"},
		{"both command and argv", "POST", "/v1/processes", `{"command":"echo","argv":["echo"]}`, 400, "invalid_request", "command"},
		{"memory over ceiling", "POST", "/v1/processes", `{"command":"echo","memory":1e12}`, 400, "invalid_request", "memory"},
		{"timeout over ceiling", "POST", "/v1/processes", `{"command":"echo","timeout":99999}`, 400, "invalid_request", "timeout"},
		{"bad env name", "POST", "/v1/processes", `{"command":"echo","env":{"1X":"y"}}`, 400, "invalid_request", "env"},
		{"network not allowed", "POST", "/v1/processes", `{"command":"echo","network":"host"}`, 400, "invalid_request", "network"},
		{"reserved label", "POST", "/v1/processes", `{"command":"echo","labels":{"io.airlock.id":"x"}}`, 400, "invalid_request", "labels.io.airlock.id"},
		{"argument too long", "POST", "/v1/processes", `{"argv":["echo","` + strings.Repeat("a", 40<<10) + `"]}`, 200, "", ""},
		{"bad list state", "GET", "/v1/processes?state=sleeping", nil, 400, "invalid_request", "state"},
		{"bad list limit", "GET", "/v1/processes?limit=lots", nil, 400, "invalid_request", "limit"},
		{"list limit out of range", "GET", "/v1/processes?limit=5000", nil, 400, "invalid_request", "limit"},
		{"bad label filter", "GET", "/v1/processes?label=nokey", nil, 400, "invalid_request", "label"},
		{"unknown id", "GET", "/v1/processes/0123456789abcdef01234567", nil, 404, "not_found", ""},
		{"bad logs offset", "GET", "/v1/processes/x/logs?offset=-", nil, 400, "invalid_request", "offset"},
		{"bad encoding", "GET", "/v1/processes/x/logs?encoding=hex", nil, 400, "invalid_request", "encoding"},
		{"bad wait timeout", "POST", "/v1/processes/x/wait", `{"timeout":-1}`, 400, "invalid_request", "timeout"},
		{"check without command", "POST", "/v1/check", `{}`, 400, "invalid_request", "command"},
		{"no route", "GET", "/v2/nothing", nil, 404, "not_found", ""},
		{"wrong method", "PUT", "/v1/processes", nil, 405, "method_not_allowed", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, data, _ := h.do(c.method, c.path, tokA, c.body)
			if c.status == 200 {
				if status != 200 {
					t.Fatalf("status %d: %s", status, data)
				}
				return
			}
			wantError(t, status, data, c.status, c.code, c.field)
		})
	}
	// Nothing was started for any invalid request: the only run that reached the
	// engine is the long-argument one, and the refusals are audited.
	starts, refusals := 0, 0
	for _, ev := range h.auditLines() {
		switch ev.Event {
		case "run.start":
			starts++
		case "refused":
			refusals++
		}
	}
	if starts != 1 || refusals < 6 {
		t.Fatalf("audit: %d starts, %d refusals; want 1 start and the invalid specs refused", starts, refusals)
	}
}

func TestAuthAndTenants(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Tenants = map[string]Tenant{
			"beta": {
				MaxConcurrent: 1, MaxMemory: 64 << 20, AllowedImages: []string{"airlock/minimal"},
				Policy: &policy.Config{Allowlist: []policy.ProgramRule{{Program: "echo"}, {Program: "sleep"}, {Program: "seq"}}},
			},
		}
	})
	// No token, a wrong token, a malformed header: 401, audited without the token.
	for _, tok := range []string{"", "wrong-token-123", tokA + "x"} {
		status, data, hdr := h.do("GET", "/v1/processes", tok, nil)
		wantError(t, status, data, 401, "unauthorized", "")
		if !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
			t.Fatalf("401 without WWW-Authenticate: %v", hdr)
		}
	}
	// Health, readiness, the document and the metrics need no token.
	for _, path := range []string{"/healthz", "/readyz", "/openapi.json", "/metrics"} {
		if status, data, _ := h.do("GET", path, "", nil); status != 200 {
			t.Fatalf("%s: %d %s", path, status, data)
		}
	}
	fails := 0
	for _, ev := range h.auditLines() {
		if ev.Event == "auth.failed" {
			fails++
			if ev.Token == "wrong-token-123" {
				t.Fatal("the audit log holds a token")
			}
		}
	}
	if fails != 3 {
		t.Fatalf("%d auth.failed lines, want 3", fails)
	}

	// Alpha's job is invisible to beta: every id route answers 404, as for an
	// unknown id, and beta's list does not hold it.
	status, data, hdr := h.do("POST", "/v1/processes", tokA, map[string]any{"command": "sleep 30", "background": true})
	if status != http.StatusAccepted {
		t.Fatalf("start: %d %s", status, data)
	}
	p := decode[executor.Process](t, data)
	if hdr.Get("Location") != "/v1/processes/"+p.ID || p.State != executor.StateRunning || p.Tenant != "alpha" {
		t.Fatalf("start: %+v %v", p, hdr)
	}
	for _, rt := range []struct{ method, path string }{
		{"GET", "/v1/processes/" + p.ID}, {"GET", "/v1/processes/" + p.ID + "/logs"},
		{"GET", "/v1/processes/" + p.ID + "/logs?follow=true"}, {"POST", "/v1/processes/" + p.ID + "/kill"},
		{"POST", "/v1/processes/" + p.ID + "/wait"}, {"DELETE", "/v1/processes/" + p.ID},
	} {
		status, data, _ := h.do(rt.method, rt.path, tokB, nil)
		wantError(t, status, data, 404, "not_found", "")
	}
	_, data, _ = h.do("GET", "/v1/processes", tokB, nil)
	if l := decode[executor.ProcessList](t, data); l.Total != 0 {
		t.Fatalf("beta lists alpha's jobs: %s", data)
	}
	_, data, _ = h.do("GET", "/v1/processes?state=running", tokA, nil)
	if l := decode[executor.ProcessList](t, data); l.Total != 1 || l.Processes[0].ID != p.ID {
		t.Fatalf("alpha's list: %s", data)
	}

	// Beta's own ceilings and policy.
	status, data, _ = h.do("POST", "/v1/processes", tokB, map[string]any{"command": "echo", "memory": 128 << 20})
	wantError(t, status, data, 400, "invalid_request", "memory")
	status, data, _ = h.do("POST", "/v1/processes", tokB, map[string]any{"command": "echo", "image": "alpine"})
	wantError(t, status, data, 400, "invalid_request", "image")
	_, data, _ = h.do("POST", "/v1/check", tokB, map[string]any{"command": "ls /"})
	if d := decode[map[string]any](t, data); d["blocked"] != true {
		t.Fatalf("beta's allowlist lets ls through: %s", data)
	}
	_, data, _ = h.do("POST", "/v1/check", tokA, map[string]any{"command": "ls /"})
	if d := decode[map[string]any](t, data); d["blocked"] != false {
		t.Fatalf("alpha is judged by beta's policy: %s", data)
	}
	status, data, _ = h.do("POST", "/v1/processes", tokB, map[string]any{"command": "echo beta"})
	if r := decode[executor.Result](t, data); status != 200 || r.Stdout != "beta\n" {
		t.Fatalf("beta's run: %d %s", status, data)
	}

	// Beta may run one thing at a time: while its job runs, the next run is 429;
	// once the job is killed and has ended, runs are admitted again.
	status, data, _ = h.do("POST", "/v1/processes", tokB, map[string]any{"command": "sleep 30", "background": true})
	if status != http.StatusAccepted {
		t.Fatalf("beta start: %d %s", status, data)
	}
	job := decode[executor.Process](t, data)
	status, data, header := h.do("POST", "/v1/processes", tokB, map[string]any{"command": "echo", "queue_timeout": 0.2})
	wantError(t, status, data, 429, "busy", "")
	if header.Get("Retry-After") == "" {
		t.Fatal("429 without Retry-After")
	}
	status, data, _ = h.do("POST", "/v1/processes/"+job.ID+"/kill", tokB, map[string]any{"signal": "KILL"})
	if status != 200 {
		t.Fatalf("kill: %d %s", status, data)
	}
	_, data, _ = h.do("POST", "/v1/processes/"+job.ID+"/wait", tokB, map[string]any{"timeout": 20})
	if r := decode[executor.Result](t, data); r.State != executor.StateKilled || r.ExitCode != 137 {
		t.Fatalf("wait after kill: %s", data)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		status, data, _ = h.do("POST", "/v1/processes", tokB, map[string]any{"command": "echo again"})
		if status == 200 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // the tracker releases the slot as the job ends
	}
	if status != 200 {
		t.Fatalf("beta is still refused after its job ended: %d %s", status, data)
	}
}

func TestBackgroundLifecycle(t *testing.T) {
	h := newHarness(t, nil)
	status, data, _ := h.do("POST", "/v1/processes", tokA, map[string]any{
		"command":    `for i in $(seq 1 20); do echo line $i; sleep 0.05; done; printf '\377' >&2; exit 4`,
		"background": true, "labels": map[string]string{"session": "s1"},
	})
	if status != http.StatusAccepted {
		t.Fatalf("start: %d %s", status, data)
	}
	id := decode[executor.Process](t, data).ID

	// Follow from the start: every line, in order, then the end event.
	req, _ := http.NewRequestWithContext(t.Context(), "GET", h.url+"/v1/processes/"+id+"/logs?follow=true&stream=both", nil)
	req.Header.Set("Authorization", "Bearer "+tokA)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var stdout, stderr strings.Builder
	var end api.LogsEnd
	events := readEvents(t, resp.Body)
	for _, ev := range events {
		switch ev.name {
		case "stdout", "stderr":
			var c struct {
				Offset int64  `json:"offset"`
				Data   string `json:"data"`
			}
			json.Unmarshal([]byte(ev.data), &c)
			b := map[string]*strings.Builder{"stdout": &stdout, "stderr": &stderr}[ev.name]
			if c.Offset != int64(len(b.String())) {
				t.Fatalf("%s chunk at offset %d after %d bytes", ev.name, c.Offset, b.Len())
			}
			b.WriteString(c.Data)
		case "end":
			end = decode[api.LogsEnd](t, []byte(ev.data))
		case "error":
			t.Fatalf("error event: %s", ev.data)
		}
	}
	var want strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	if stdout.String() != want.String() || stderr.String() != "\uFFFD" {
		t.Fatalf("followed stdout %q stderr %q", stdout.String(), stderr.String())
	}
	if end.State != executor.StateCompleted || end.ExitCode != 4 || end.StdoutBytes != int64(want.Len()) {
		t.Fatalf("end event %+v", end)
	}

	// Pages, the exact bytes in base64, the monitor, the list, a kill of an ended
	// job, removal.
	_, data, _ = h.do("GET", "/v1/processes/"+id+"/logs?stream=stdout&offset=7&limit=7", tokA, nil)
	page := decode[api.LogsResponse](t, data)
	if page.Stdout == nil || *page.Stdout != "line 2\n" || page.Stderr != nil || page.StdoutNext != 14 || page.StdoutSize != int64(want.Len()) {
		t.Fatalf("page %s", data)
	}
	_, data, _ = h.do("GET", "/v1/processes/"+id+"/logs?stream=stderr&encoding=base64", tokA, nil)
	if page := decode[api.LogsResponse](t, data); page.Stderr == nil || *page.Stderr != "/w==" {
		t.Fatalf("base64 page %s", data)
	}
	_, data, _ = h.do("GET", "/v1/processes/"+id, tokA, nil)
	if r := decode[executor.Result](t, data); r.State != executor.StateCompleted || r.ExitCode != 4 || r.StdoutTail == "" {
		t.Fatalf("monitor %s", data)
	}
	_, data, _ = h.do("GET", "/v1/processes?label=session=s1&state=completed", tokA, nil)
	if l := decode[executor.ProcessList](t, data); l.Total != 1 || l.Processes[0].ID != id {
		t.Fatalf("list %s", data)
	}
	status, data, _ = h.do("POST", "/v1/processes/"+id+"/kill", tokA, nil)
	if k := decode[executor.KillResult](t, data); status != 200 || !k.AlreadyEnded {
		t.Fatalf("kill of an ended job: %d %s", status, data)
	}
	if status, data, _ := h.do("DELETE", "/v1/processes/"+id, tokA, nil); status != http.StatusNoContent {
		t.Fatalf("delete: %d %s", status, data)
	}
	status, data, _ = h.do("GET", "/v1/processes/"+id, tokA, nil)
	wantError(t, status, data, 404, "not_found", "")

	// A wait that times out answers with the running job; a kill with a TERM
	// trap and escalation ends it as the trap decides.
	status, data, _ = h.do("POST", "/v1/processes", tokA, map[string]any{
		"command": `trap 'echo bye; exit 3' TERM; while true; do sleep 0.1; done`, "background": true})
	id = decode[executor.Process](t, data).ID
	start := time.Now()
	_, data, _ = h.do("POST", "/v1/processes/"+id+"/wait", tokA, map[string]any{"timeout": 0.5})
	if r := decode[executor.Result](t, data); r.State != executor.StateRunning || time.Since(start) < 500*time.Millisecond {
		t.Fatalf("wait timeout: %s", data)
	}
	status, data, _ = h.do("DELETE", "/v1/processes/"+id, tokA, nil)
	wantError(t, status, data, 409, "running", "")
	_, data, _ = h.do("POST", "/v1/processes/"+id+"/kill", tokA, map[string]any{"signal": "TERM", "force_after": 5})
	if k := decode[executor.KillResult](t, data); k.Signal != "SIGTERM" || k.AlreadyEnded {
		t.Fatalf("kill %s", data)
	}
	_, data, _ = h.do("POST", "/v1/processes/"+id+"/wait", tokA, map[string]any{"timeout": 20})
	if r := decode[executor.Result](t, data); r.State != executor.StateKilled || r.ExitCode != 3 || r.Stdout != "bye\n" {
		t.Fatalf("after kill: %s", data)
	}
	status, data, _ = h.do("POST", "/v1/processes/"+id+"/kill", tokA, map[string]any{"signal": "NOPE"})
	wantError(t, status, data, 400, "invalid_request", "signal")
}

// TestRunAsEvents runs in the foreground with Accept: text/event-stream: the
// output arrives as the command writes it, byte for byte under base64, then the
// Result; a refusal before the start is an ordinary error response.
func TestRunAsEvents(t *testing.T) {
	h := newHarness(t, nil)
	post := h.postEvents
	// 1.5 s between the two lines: longer than the harness's 1 s write timeout too.
	resp := post("?encoding=base64", map[string]any{"command": "echo one; printf '\\377' >&2; sleep 1.5; echo two; exit 3"})
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := readEvents(t, resp.Body)
	open := decode[map[string]string](t, []byte(events[0].data))
	if events[0].name != "open" || len(open["id"]) != 24 || open["encoding"] != "base64" {
		t.Fatalf("first event %s %s, want open with the run's id", events[0].name, events[0].data)
	}
	var stdout, stderr []byte
	var firstOut time.Time
	for _, ev := range events[1 : len(events)-1] {
		c := decode[api.StreamChunk](t, []byte(ev.data))
		b, err := base64.StdEncoding.DecodeString(c.Data)
		if err != nil {
			t.Fatal(err)
		}
		switch ev.name {
		case "stdout":
			if c.Offset != int64(len(stdout)) {
				t.Fatalf("stdout chunk at %d after %d bytes", c.Offset, len(stdout))
			}
			stdout = append(stdout, b...)
			if firstOut.IsZero() {
				firstOut = ev.at
			}
		case "stderr":
			stderr = append(stderr, b...)
		default:
			t.Fatalf("event %q before the result", ev.name)
		}
	}
	last := events[len(events)-1]
	res := decode[executor.Result](t, []byte(last.data))
	if last.name != "result" || res.ID != open["id"] || res.State != executor.StateCompleted || res.ExitCode != 3 || res.Stdout != "one\ntwo\n" || res.Tenant != "alpha" {
		t.Fatalf("last event %s: %s", last.name, last.data)
	}
	if string(stdout) != "one\ntwo\n" || string(stderr) != "\xff" {
		t.Fatalf("streamed stdout %q stderr %q", stdout, stderr)
	}
	if gap := last.at.Sub(firstOut); gap < time.Second {
		t.Fatalf("the first line arrived %s before the result: not as it was written", gap)
	}

	// Refused before the start: the usual JSON error, naming the field.
	for query, body := range map[string]map[string]any{
		"":                 {"command": "true", "memory": 1},
		"?encoding=latin1": {"command": "true"},
	} {
		resp := post(query, body)
		data, _ := io.ReadAll(resp.Body)
		field := "memory"
		if query != "" {
			field = "encoding"
		}
		wantError(t, resp.StatusCode, data, http.StatusBadRequest, "invalid_request", field)
	}
	// A policy refusal is a Result, as without events.
	events = readEvents(t, post("", map[string]any{"command": "rm -rf /"}).Body)
	if len(events) != 1 || events[0].name != "result" || !strings.Contains(events[0].data, `"state":"blocked"`) {
		t.Fatalf("refusal: %+v", events)
	}
}

// TestAuditOwesTheFinishOfJobsNobodyWatched stops a server while two of its jobs
// run: one ends, the other ends and its record is removed. The next server writes
// both finishes, once each, and owes nothing more.
func TestAuditOwesTheFinishOfJobsNobodyWatched(t *testing.T) {
	h := newHarness(t, nil)
	var ids []string
	for _, cmd := range []string{"echo done; exit 5", "true"} {
		status, data, _ := h.do("POST", "/v1/processes", tokA, map[string]any{"command": "sleep 2; " + cmd, "background": true}) // ends after Close, even on a loaded machine
		if status != http.StatusAccepted {
			t.Fatalf("start: %d %s", status, data)
		}
		ids = append(ids, decode[executor.Process](t, data).ID)
	}
	if err := h.svc.Close(t.Context(), false); err != nil { // the jobs go on, unwatched
		t.Fatal(err)
	}
	for _, id := range ids {
		if _, err := h.ex.Wait(t.Context(), id); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.ex.Remove(t.Context(), ids[1]); err != nil {
		t.Fatal(err)
	}
	finishes := func() []auditEvent {
		var out []auditEvent
		for _, ev := range h.auditLines() {
			if ev.Event == "run.finish" {
				out = append(out, ev)
			}
		}
		return out
	}
	if f := finishes(); len(f) != 0 {
		t.Fatalf("finishes written while no server watched: %+v", f)
	}

	for start := range 2 { // the second start owes nothing: no line is written twice
		svc, err := NewService(h.ex, h.cfg, slog.New(slog.NewJSONHandler(h.logs, nil)), "test")
		if err != nil {
			t.Fatal(err)
		}
		h.svc = svc // the harness's cleanup closes the last one
		f := finishes()
		if len(f) != 2 {
			t.Fatalf("start %d: finish lines %+v, want one per job", start, f)
		}
		byID := map[string]auditEvent{f[0].ID: f[0], f[1].ID: f[1]}
		done, gone := byID[ids[0]], byID[ids[1]]
		if done.Tenant != "alpha" || done.State != executor.StateCompleted || done.ExitCode == nil || *done.ExitCode != 5 ||
			!done.Background || done.FinishedAt == nil || !done.FinishedAt.Before(done.Time) {
			t.Errorf("finish of the ended job: %+v", done)
		}
		if gone.Tenant != "alpha" || !strings.Contains(gone.Error, "record was removed") {
			t.Errorf("finish of the removed job: %+v", gone)
		}
		if owed, _ := os.ReadDir(h.cfg.AuditLog + ".pending"); len(owed) != 0 {
			t.Errorf("still owed: %v", owed)
		}
		if start == 0 {
			svc.Close(t.Context(), false)
		}
	}
}

type sseEvent struct {
	name, data string
	at         time.Time // when the event arrived
}

// readEvents reads a Server-Sent Events stream to its end.
func readEvents(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var ev sseEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.name != "" {
				ev.at = time.Now()
				out = append(out, ev)
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data += strings.TrimPrefix(line, "data: ")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEngineUnreachable puts a proxy between the server and the engine, then cuts
// it: readiness and runs answer 503, and nothing else breaks.
func TestEngineUnreachable(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "docker.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("unix", "/var/run/docker.sock")
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, c, up)
			mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
	t.Setenv("DOCKER_HOST", "unix://"+sock)
	h := newHarness(t, nil)
	if status, data, _ := h.do("GET", "/readyz", "", nil); status != 200 {
		t.Fatalf("readyz through the proxy: %d %s", status, data)
	}
	ln.Close()
	mu.Lock()
	for _, c := range conns {
		c.Close()
	}
	mu.Unlock()

	status, data, _ := h.do("GET", "/readyz", "", nil)
	wantError(t, status, data, 503, "engine_unavailable", "")
	status, data, _ = h.do("POST", "/v1/processes", tokA, map[string]any{"command": "echo hi"})
	wantError(t, status, data, 503, "engine_unavailable", "")
	status, data, _ = h.do("POST", "/v1/processes", tokA, map[string]any{"command": "echo hi", "background": true})
	wantError(t, status, data, 503, "engine_unavailable", "")
	// What needs no engine still answers.
	if status, _, _ := h.do("GET", "/healthz", "", nil); status != 200 {
		t.Fatalf("healthz: %d", status)
	}
	if status, _, _ := h.do("POST", "/v1/check", tokA, map[string]any{"command": "echo"}); status != 200 {
		t.Fatalf("check: %d", status)
	}
	_, metrics, _ := h.do("GET", "/metrics", "", nil)
	if !bytes.Contains(metrics, []byte("airlock_engine_errors_total 2")) {
		t.Fatalf("engine errors not counted:\n%s", metrics)
	}
}

// TestSlowClients: a client that trickles its headers or its body is cut off
// after the timeouts, while a run, a wait and a follow longer than them are
// answered in full.
func TestSlowClients(t *testing.T) {
	h := newHarness(t, nil)
	addr := strings.TrimPrefix(h.url, "http://")
	cutOff := func(name, partial string) {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		start := time.Now()
		if _, err := io.WriteString(conn, partial); err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		reply, _ := io.ReadAll(conn) // until the server closes the connection
		if took := time.Since(start); took > 4*time.Second {
			t.Fatalf("%s: held the connection for %s", name, took)
		}
		if len(reply) > 0 && !bytes.Contains(reply, []byte(" 408 ")) && !bytes.Contains(reply, []byte(" 400 ")) {
			t.Fatalf("%s: answered %q", name, reply)
		}
	}
	cutOff("headers", "POST /v1/processes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+tokA+"\r\n")
	cutOff("body", "POST /v1/processes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+tokA+
		"\r\nContent-Length: 100\r\n\r\n{\"command\":")

	status, data, _ := h.do("POST", "/v1/processes", tokA, map[string]any{"command": "sleep 2.5; echo late"})
	if r := decode[executor.Result](t, data); status != 200 || r.Stdout != "late\n" {
		t.Fatalf("a run longer than the write timeout: %d %s", status, data)
	}
	_, data, _ = h.do("POST", "/v1/processes", tokA, map[string]any{"command": "sleep 2.5; echo job", "background": true})
	id := decode[executor.Process](t, data).ID
	status, data, _ = h.do("GET", "/v1/processes/"+id+"/logs?follow=true", tokA, nil)
	if status != 200 || !bytes.Contains(data, []byte("event: end")) || !bytes.Contains(data, []byte(`"job\n"`)) {
		t.Fatalf("a follow longer than the write timeout: %d %s", status, data)
	}
	_, data, _ = h.do("POST", "/v1/processes", tokA, map[string]any{"command": "sleep 2.5", "background": true})
	id = decode[executor.Process](t, data).ID
	status, data, _ = h.do("POST", "/v1/processes/"+id+"/wait", tokA, map[string]any{"timeout": 10})
	if r := decode[executor.Result](t, data); status != 200 || r.State != executor.StateCompleted {
		t.Fatalf("a wait longer than the write timeout: %d %s", status, data)
	}
}

// TestTenantLimitAboveTheServers: with a server ceiling of 256 MiB and a tenant
// whose max_memory is 384 MiB, a run that asks for no memory runs with 256 MiB;
// and the audit's run.start says what ran, the default image included.
func TestTenantLimitAboveTheServers(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.Ceilings.Memory = 256 << 20
		c.Tenants = map[string]Tenant{"alpha": {MaxMemory: 384 << 20}}
	})
	status, data, _ := h.do("POST", "/v1/processes", tokA, map[string]any{"command": "cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes"})
	r := decode[executor.Result](t, data)
	if status != 200 || r.State != executor.StateCompleted || strings.TrimSpace(r.Stdout) != fmt.Sprint(256<<20) {
		t.Fatalf("a run with no memory asked: %d %s", status, data)
	}
	for _, ev := range h.auditLines() {
		if ev.Event == "run.start" && ev.ID == r.ID && ev.Image != "airlock/minimal" {
			t.Fatalf("run.start does not say the image that ran: %+v", ev)
		}
	}
}
