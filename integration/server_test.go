package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/testcontainers/testcontainers-go"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/tcairlock"
)

// The server suite runs `airlock serve` the way docker-compose.yml ships it: the
// image built from the repository's Dockerfile (FROM scratch, the static binary
// and busybox), the engine's socket mounted, the data dir on a volume, and drives
// it over its published port only, as an agent platform would.

const (
	serverPort = "8080/tcp"
	tokenAlpha = "tok-a"
	tokenBeta  = "tok-b"
	// labelTest marks what the suite itself creates: the server container, its
	// image and its data volume.
	labelTest = "io.airlock.test"
)

// airlockServer is a running server container and what the suite learnt from it.
type airlockServer struct {
	c   *tcairlock.Container
	url string // http://host:port of the published API port

	mu      sync.Mutex
	ids     map[string]bool // every run and job id the server answered with
	storeID string          // the data dir's store id, from a job's container labels
}

func TestServer(t *testing.T) {
	s := startServer(t)

	// The API's cases share the server and run side by side, as clients would.
	var lifecycleJobs []string // ended jobs that must outlive the restart
	t.Run("api", func(t *testing.T) {
		t.Run("sync run", func(t *testing.T) { t.Parallel(); testServerSyncRun(t, s) })
		t.Run("policy", func(t *testing.T) { t.Parallel(); testServerPolicy(t, s) })
		t.Run("bad input", func(t *testing.T) { t.Parallel(); testServerBadInput(t, s) })
		t.Run("background lifecycle", func(t *testing.T) {
			t.Parallel()
			lifecycleJobs = testServerBackground(t, s)
		})
		t.Run("tenant isolation", func(t *testing.T) { t.Parallel(); testServerIsolation(t, s) })
		t.Run("mcp", func(t *testing.T) { t.Parallel(); testServerMCP(t, s) })
		t.Run("workspace loop http", func(t *testing.T) { t.Parallel(); testServerWorkspaceLoopHTTP(t, s) })
		t.Run("workspace loop mcp", func(t *testing.T) { t.Parallel(); testServerWorkspaceLoopMCP(t, s) })
		t.Run("workspace paths", func(t *testing.T) { t.Parallel(); testServerWorkspacePaths(t, s) })
	})
	kept := testServerWorkspaceBeforeRestart(t, s)
	// The restart stops the server: nothing else may be in flight.
	t.Run("restart keeps background jobs", func(t *testing.T) { testServerRestart(t, s, lifecycleJobs) })
	t.Run("restart keeps workspaces", func(t *testing.T) { testServerWorkspaceAfterRestart(t, s, kept) })
}

// startServer starts the server as airlock's testcontainers module does (the
// image built from the repository's Dockerfile, the engine's socket mounted),
// with two tenants, the data dir on a volume of the suite's, and jobs left
// running at a stop (the restart test needs them to outlive the server). All it
// creates goes when the test ends: the jobs still running, the container, the
// volume; and it checks that no sandbox of the server is left.
func startServer(t *testing.T) *airlockServer {
	t.Helper()
	s := &airlockServer{ids: map[string]bool{}}

	// Cleanups run last registered first: jobs are killed while the server still
	// runs, then the container goes, then the leak check, then the volume.
	vol := "airlock-server-test-" + randomHex(4)
	if _, err := docker.VolumeCreate(t.Context(), volume.CreateOptions{Name: vol, Labels: map[string]string{labelTest: "server", "io.airlock.component": "server"}}); err != nil {
		t.Fatalf("create volume: %v", err)
	}
	t.Cleanup(func() {
		if err := docker.VolumeRemove(context.Background(), vol, true); err != nil {
			t.Errorf("remove volume %s: %v", vol, err)
		}
	})
	t.Cleanup(func() { s.assertNoSandboxLeft(t) })

	c, err := tcairlock.Run(t.Context(),
		tcairlock.WithTokens(tokenAlpha+":alpha", tokenBeta+":beta"),
		tcairlock.WithDataVolume(vol),
		testcontainers.WithEnv(map[string]string{"AIRLOCK_KILL_JOBS_ON_SHUTDOWN": "false"}),
		testcontainers.WithLabels(map[string]string{labelTest: "server"}),
	)
	testcontainers.CleanupContainer(t, c)
	if err != nil {
		t.Fatalf("start the server: %v", err)
	}
	s.c = c
	if s.url, err = c.URL(t.Context()); err != nil {
		t.Fatal(err)
	}
	inspect, err := c.Inspect(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if inspect.Config.Labels["io.airlock.component"] != "server" {
		t.Errorf("the server container does not carry the image's label io.airlock.component=server: %v", inspect.Config.Labels)
	}
	// The image's HEALTHCHECK works: run its command now rather than wait 30 s.
	if hc := inspect.Config.Healthcheck; hc == nil || len(hc.Test) < 2 || hc.Test[0] != "CMD" {
		t.Errorf("the image has no exec-form HEALTHCHECK: %+v", hc)
	} else if code, out, err := c.Exec(t.Context(), hc.Test[1:]); err != nil || code != 0 {
		msg, _ := io.ReadAll(out)
		t.Errorf("the image's health check %q exits %d (err %v): %s", hc.Test[1:], code, err, msg)
	}
	t.Cleanup(func() {
		if t.Failed() {
			s.dumpLogs(t)
		}
	})
	t.Cleanup(func() { s.killJobs(t) })
	return s
}

// killJobs ends every job still running, of both tenants, so that none outlives
// the server (jobs survive a server stop by design).
func (s *airlockServer) killJobs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tok := range []string{tokenAlpha, tokenBeta} {
		var list executor.ProcessList
		if status, _, body := s.call(ctx, http.MethodGet, "/v1/processes?state=running&limit=1000", tok, nil); status != http.StatusOK || json.Unmarshal(body, &list) != nil {
			t.Errorf("cleanup: list running jobs: %d %s", status, body)
			continue
		}
		for _, p := range list.Processes {
			s.call(ctx, http.MethodPost, "/v1/processes/"+p.ID+"/kill", tok, map[string]any{"signal": "SIGKILL", "force_after": 0})
		}
		for _, p := range list.Processes {
			s.call(ctx, http.MethodPost, "/v1/processes/"+p.ID+"/wait", tok, map[string]any{"timeout": 30})
		}
	}
}

// assertNoSandboxLeft checks that the engine holds no container of any run or job
// the server answered with, nor of its store; the server removes them all. What
// is left is reported and removed, so the next test starts clean.
func (s *airlockServer) assertNoSandboxLeft(t *testing.T) {
	ctx := context.Background()
	s.mu.Lock()
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range s.ids {
			if !yield(id) {
				return
			}
		}
	})
	store := s.storeID
	s.mu.Unlock()
	var left []string
	deadline := time.Now().Add(30 * time.Second) // a job's watcher removes its container just after the end
	for {
		left = left[:0]
		for _, id := range ids {
			left = append(left, managedContainers(ctx, id)...)
		}
		if store != "" {
			list, err := docker.ContainerList(ctx, container.ListOptions{All: true,
				Filters: filters.NewArgs(filters.Arg("label", executor.LabelStore+"="+store))})
			if err != nil {
				t.Errorf("list containers of store %s: %v", store, err)
			}
			for _, c := range list {
				left = append(left, c.ID[:12]+" "+strings.Join(c.Names, ","))
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(ids) == 0 {
		t.Errorf("the suite recorded no run id: the leak check checked nothing")
	}
	t.Logf("leak check: %d run ids, store %q: %d container(s) left", len(ids), store, len(left))
	if len(left) > 0 {
		t.Errorf("containers of the server's runs left on the engine: %v", left)
		for _, c := range left {
			docker.ContainerRemove(ctx, strings.Fields(c)[0], container.RemoveOptions{Force: true})
		}
	}
}

func (s *airlockServer) dumpLogs(t *testing.T) {
	rc, err := s.c.Logs(context.Background())
	if err != nil {
		t.Logf("server logs: %v", err)
		return
	}
	defer rc.Close()
	out, _ := io.ReadAll(rc)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	t.Logf("server logs (last %d lines):\n%s", min(len(lines), 80), strings.Join(lines[max(0, len(lines)-80):], "\n"))
}

// remember notes an id the server answered with, for the leak check.
func (s *airlockServer) remember(id string) {
	if id == "" {
		return
	}
	s.mu.Lock()
	s.ids[id] = true
	s.mu.Unlock()
}

// call makes one request and returns the status, headers and body. body is sent
// as is when it is a string, as JSON otherwise. Transport errors are status 0.
func (s *airlockServer) call(ctx context.Context, method, path, token string, body any) (int, http.Header, []byte) {
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			panic(err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.url+path, r)
	if err != nil {
		return 0, nil, []byte(err.Error())
	}
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, []byte(err.Error())
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, resp.Header, []byte(err.Error())
	}
	return resp.StatusCode, resp.Header, data
}

// expect makes a request, fails the test unless the status is want, and decodes
// the JSON answer into out (when not nil). It returns the headers.
func (s *airlockServer) expect(t *testing.T, method, path, token string, body any, want int, out any) http.Header {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	status, h, data := s.call(ctx, method, path, token, body)
	if status != want {
		t.Fatalf("%s %s: status %d, want %d\n%s", method, path, status, want, data)
	}
	if out != nil {
		// Decode into a zero value: omitted fields must not keep an earlier answer's.
		reflect.ValueOf(out).Elem().SetZero()
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: answer is not the JSON expected: %v\n%s", method, path, err, data)
		}
	}
	return h
}

// apiError is the API's one error shape.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Field   string `json:"field"`
	} `json:"error"`
}

// expectError makes a request that must fail with status and code.
func (s *airlockServer) expectError(t *testing.T, method, path, token string, body any, status int, code string) apiError {
	t.Helper()
	var e apiError
	s.expect(t, method, path, token, body, status, &e)
	if e.Error.Code != code || e.Error.Message == "" {
		t.Errorf("%s %s: error %+v, want code %q and a message", method, path, e.Error, code)
	}
	return e
}

// runSync runs spec in the foreground as tenant alpha.
func (s *airlockServer) runSync(t *testing.T, spec map[string]any) executor.Result {
	t.Helper()
	var res executor.Result
	s.expect(t, http.MethodPost, "/v1/processes", tokenAlpha, spec, http.StatusOK, &res)
	s.remember(res.ID)
	return res
}

// startJob starts spec in the background for the tenant of token.
func (s *airlockServer) startJob(t *testing.T, token string, spec map[string]any) executor.Process {
	t.Helper()
	spec["background"] = true
	var p executor.Process
	h := s.expect(t, http.MethodPost, "/v1/processes", token, spec, http.StatusAccepted, &p)
	s.remember(p.ID)
	if p.ID == "" || p.State != executor.StateRunning || p.StartedAt.IsZero() {
		t.Fatalf("start answered %+v, want an id, state running and started_at", p)
	}
	if loc := h.Get("Location"); loc != "/v1/processes/"+p.ID {
		t.Errorf("Location %q, want /v1/processes/%s", loc, p.ID)
	}
	return p
}

// waitJob long-polls until the job ends.
func (s *airlockServer) waitJob(t *testing.T, token, id string) executor.Result {
	t.Helper()
	var res executor.Result
	s.expect(t, http.MethodPost, "/v1/processes/"+id+"/wait", token, map[string]any{"timeout": 60}, http.StatusOK, &res)
	if res.State == executor.StateRunning {
		t.Fatalf("job %s still runs after a 60 s wait", id)
	}
	return res
}

// waitOutput polls a job's stdout until it holds want.
func (s *airlockServer) waitOutput(t *testing.T, token, id, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var l struct {
			Stdout string `json:"stdout"`
		}
		s.expect(t, http.MethodGet, "/v1/processes/"+id+"/logs?stream=stdout", token, nil, http.StatusOK, &l)
		if strings.Contains(l.Stdout, want) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("job %s never printed %q", id, want)
}

// list lists the tenant's jobs with a query such as "state=running&label=k=v".
func (s *airlockServer) list(t *testing.T, token, query string) executor.ProcessList {
	t.Helper()
	var l executor.ProcessList
	s.expect(t, http.MethodGet, "/v1/processes?"+query, token, nil, http.StatusOK, &l)
	return l
}

func ids(l executor.ProcessList) []string {
	var out []string
	for _, p := range l.Processes {
		out = append(out, p.ID)
	}
	return out
}

func testServerSyncRun(t *testing.T, s *airlockServer) {
	res := s.runSync(t, map[string]any{"command": "echo hi; echo err >&2; exit 3", "labels": map[string]string{"agent": "a1"}})
	if res.State != executor.StateCompleted || res.ExitCode != 3 || res.Success {
		t.Errorf("state %s exit %d success %v, want completed, 3, false (error %q)", res.State, res.ExitCode, res.Success, res.Error)
	}
	if res.Stdout != "hi\n" || res.Stderr != "err\n" || res.StdoutBytes != 3 || res.StderrBytes != 4 {
		t.Errorf("stdout %q (%d bytes), stderr %q (%d bytes); want them apart: \"hi\\n\" and \"err\\n\"", res.Stdout, res.StdoutBytes, res.Stderr, res.StderrBytes)
	}
	if res.ID == "" || res.ContainerID == "" || res.Image != "airlock/minimal" || res.Labels["agent"] != "a1" || res.FinishedAt.IsZero() {
		t.Errorf("provenance: id %q container %q image %q labels %v finished %v", res.ID, res.ContainerID, res.Image, res.Labels, res.FinishedAt)
	}
	// The sandbox is gone by the time the answer arrives.
	if left := managedContainers(t.Context(), res.ID); len(left) > 0 {
		t.Errorf("run %s left containers: %v", res.ID, left)
	}
	// argv, stdin and env travel too.
	res = s.runSync(t, map[string]any{"argv": []string{"sh", "-c", `read x; echo "$x $GREETING"`}, "stdin": "from stdin\n", "env": map[string]string{"GREETING": "hello"}})
	if res.ExitCode != 0 || res.Stdout != "from stdin hello\n" {
		t.Errorf("argv run: exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
	}
}

func testServerPolicy(t *testing.T, s *airlockServer) {
	res := s.runSync(t, map[string]any{"command": "rm -rf /"})
	if res.State != executor.StateBlocked || !res.Blocked || res.ExitCode != 126 || res.BlockRule != "rm-root" || res.BlockReason == "" {
		t.Errorf("rm -rf /: state %s blocked %v exit %d rule %q reason %q; want blocked, 126, rm-root",
			res.State, res.Blocked, res.ExitCode, res.BlockRule, res.BlockReason)
	}
	if res.ContainerID != "" {
		t.Errorf("a refused command got a container: %s", res.ContainerID)
	}
	// A refused background start runs nothing either: 200, not 202.
	var p executor.Process
	s.expect(t, http.MethodPost, "/v1/processes", tokenAlpha, map[string]any{"command": "echo ok && rm -rf /*", "background": true}, http.StatusOK, &p)
	s.remember(p.ID)
	if p.State != executor.StateBlocked || p.BlockRule != "rm-root" {
		t.Errorf("background rm -rf /*: %+v, want blocked by rm-root", p)
	}

	var d struct {
		Blocked bool   `json:"blocked"`
		Allowed bool   `json:"allowed"`
		Rule    string `json:"rule"`
		Reason  string `json:"reason"`
	}
	s.expect(t, http.MethodPost, "/v1/check", tokenAlpha, map[string]any{"command": "rm -rf /"}, http.StatusOK, &d)
	if !d.Blocked || d.Allowed || d.Rule != "rm-root" || d.Reason == "" {
		t.Errorf("check rm -rf /: %+v, want blocked by rm-root with a reason", d)
	}
	s.expect(t, http.MethodPost, "/v1/check", tokenBeta, map[string]any{"command": "grep -rn 'rm -rf /' src"}, http.StatusOK, &d)
	if d.Blocked || !d.Allowed || d.Rule != "" {
		t.Errorf("check grep of a quoted rm -rf /: %+v, want allowed", d)
	}
	s.expect(t, http.MethodPost, "/v1/check", tokenAlpha, map[string]any{"argv": []string{"sudo", "id"}}, http.StatusOK, &d)
	if !d.Blocked || d.Rule != "privilege-escalation" {
		t.Errorf("check argv sudo id: %+v, want blocked by privilege-escalation", d)
	}
}

func testServerBadInput(t *testing.T, s *airlockServer) {
	e := s.expectError(t, http.MethodPost, "/v1/processes", tokenAlpha, `{"command":"true","colour":"red"}`, http.StatusBadRequest, "invalid_request")
	if e.Error.Field != "colour" || !strings.Contains(e.Error.Message, "colour") {
		t.Errorf("unknown field: %+v, want field colour named", e.Error)
	}
	e = s.expectError(t, http.MethodPost, "/v1/processes", tokenAlpha, `{"command":"true","timeout":"soon"}`, http.StatusBadRequest, "invalid_request")
	if e.Error.Field != "timeout" {
		t.Errorf("timeout of the wrong type: %+v, want field timeout", e.Error)
	}
	e = s.expectError(t, http.MethodPost, "/v1/processes", tokenAlpha, `{"command":"true","memory":107374182400}`, http.StatusBadRequest, "invalid_request")
	if e.Error.Field != "memory" {
		t.Errorf("memory over the ceiling: %+v, want field memory", e.Error)
	}
	e = s.expectError(t, http.MethodPost, "/v1/processes", tokenAlpha, `{}`, http.StatusBadRequest, "invalid_request")
	if e.Error.Field == "" {
		t.Errorf("no command: %+v, want a field named", e.Error)
	}
	s.expectError(t, http.MethodPost, "/v1/processes", tokenAlpha, `{"command":`, http.StatusBadRequest, "invalid_request")
	s.expectError(t, http.MethodGet, "/v1/processes/no-such-id", tokenAlpha, nil, http.StatusNotFound, "not_found")

	for _, tc := range []struct{ name, token string }{{"no token", ""}, {"wrong token", "tok-x"}} {
		ctx := t.Context()
		for _, req := range []struct{ method, path string }{{"POST", "/v1/processes"}, {"GET", "/v1/processes"}, {"POST", "/v1/check"}} {
			status, h, body := s.call(ctx, req.method, req.path, tc.token, `{"command":"echo hi"}`)
			var e apiError
			json.Unmarshal(body, &e)
			if status != http.StatusUnauthorized || e.Error.Code != "unauthorized" || !strings.HasPrefix(h.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s: %s %s = %d %s (WWW-Authenticate %q), want 401 unauthorized", tc.name, req.method, req.path, status, body, h.Get("WWW-Authenticate"))
			}
		}
	}
	// The probes stay open: orchestrators call them without a token.
	var ready map[string]string
	s.expect(t, http.MethodGet, "/readyz", "", nil, http.StatusOK, &ready)
	if ready["status"] != "ready" || ready["api_version"] == "" {
		t.Errorf("/readyz: %v", ready)
	}
}

// sseEvent is one Server-Sent Event.
type sseEvent struct {
	name string
	data string
}

// follow reads the event stream of a job's logs until it ends.
func (s *airlockServer) follow(t *testing.T, token, id, query string) []sseEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.url+"/v1/processes/"+id+"/logs?follow=true&"+query, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("follow %s: %v", id, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("follow %s: %d %s %s", id, resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	var events []sseEvent
	var ev sseEvent
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.name != "" || ev.data != "" {
				events = append(events, ev)
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, ":"): // a comment: the keep-alive
		case strings.HasPrefix(line, "event: "):
			ev.name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			ev.data += strings.TrimPrefix(line, "data: ")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("follow %s: read the stream: %v (after %d events)", id, err, len(events))
	}
	return events
}

// testServerBackground drives jobs through start, monitor, follow, kill, wait and
// list, and returns the ids of the ended jobs.
func testServerBackground(t *testing.T, s *airlockServer) []string {
	suite := "bg-" + randomHex(4)
	const n = 30
	count := s.startJob(t, tokenAlpha, map[string]any{
		"command": fmt.Sprintf("for i in $(seq 1 %d); do echo $i; sleep 0.1; done", n),
		"labels":  map[string]string{"suite": suite, "kind": "count"},
	})
	var mon executor.Result
	s.expect(t, http.MethodGet, "/v1/processes/"+count.ID, tokenAlpha, nil, http.StatusOK, &mon)
	if mon.ID != count.ID || mon.State != executor.StateRunning || mon.Labels["kind"] != "count" {
		t.Errorf("monitor of a job that runs ~3 s: id %s state %s labels %v", mon.ID, mon.State, mon.Labels)
	}

	// Follow from the start: every line, in order, at contiguous offsets, then end.
	events := s.follow(t, tokenAlpha, count.ID, "stream=stdout")
	if len(events) < 3 || events[0].name != "open" || events[len(events)-1].name != "end" {
		t.Fatalf("follow events %v, want open, stdout..., end", events)
	}
	var got strings.Builder
	chunks := 0
	for _, ev := range events[1 : len(events)-1] {
		var c struct {
			Offset int64  `json:"offset"`
			Data   string `json:"data"`
		}
		if ev.name != "stdout" || json.Unmarshal([]byte(ev.data), &c) != nil {
			t.Fatalf("unexpected event %q: %s", ev.name, ev.data)
		}
		if c.Offset != int64(got.Len()) {
			t.Errorf("chunk at offset %d, want %d", c.Offset, got.Len())
		}
		got.WriteString(c.Data)
		chunks++
	}
	if got.String() != numbers(n) {
		t.Errorf("followed stdout %q, want 1..%d in order", got.String(), n)
	}
	if chunks < 3 {
		t.Errorf("the output of ~3 s came in %d event(s): a follow should stream it as it comes", chunks)
	}
	var end struct {
		ID          string         `json:"id"`
		State       executor.State `json:"state"`
		ExitCode    *int           `json:"exit_code"`
		StdoutBytes int64          `json:"stdout_bytes"`
	}
	if err := json.Unmarshal([]byte(events[len(events)-1].data), &end); err != nil || end.ID != count.ID ||
		end.State != executor.StateCompleted || end.ExitCode == nil || *end.ExitCode != 0 || end.StdoutBytes != int64(len(numbers(n))) {
		t.Errorf("end event %s, want completed with exit code 0 and %d bytes", events[len(events)-1].data, len(numbers(n)))
	}
	res := s.waitJob(t, tokenAlpha, count.ID)
	if res.State != executor.StateCompleted || res.ExitCode != 0 || res.Stdout != numbers(n) {
		t.Errorf("wait after the follow: state %s exit %d stdout %q", res.State, res.ExitCode, res.Stdout)
	}

	// Kill a job that traps SIGTERM: it gets the signal, says so and exits.
	trap := s.startJob(t, tokenAlpha, map[string]any{
		"command": `trap 'echo got TERM; exit 42' TERM; echo ready; while :; do sleep 0.1; done`,
		"labels":  map[string]string{"suite": suite, "kind": "trap"},
	})
	s.waitOutput(t, tokenAlpha, trap.ID, "ready")
	var k executor.KillResult
	s.expect(t, http.MethodPost, "/v1/processes/"+trap.ID+"/kill", tokenAlpha, map[string]any{"signal": "SIGTERM", "force_after": 20}, http.StatusOK, &k)
	if k.Signal != "SIGTERM" || k.AlreadyEnded || k.Message == "" {
		t.Errorf("kill answered %+v, want SIGTERM sent", k)
	}
	t0 := time.Now()
	res = s.waitJob(t, tokenAlpha, trap.ID)
	if res.State != executor.StateKilled || res.ExitCode != 42 || !strings.Contains(res.Stdout, "got TERM") {
		t.Errorf("after SIGTERM: state %s exit %d stdout %q, want killed, 42 (the trap's), got TERM", res.State, res.ExitCode, res.Stdout)
	}
	if d := since(t0); d > 10*time.Second {
		t.Errorf("the trapping job took %s to end: SIGTERM was not delivered, SIGKILL came", d)
	}
	s.expect(t, http.MethodPost, "/v1/processes/"+trap.ID+"/kill", tokenAlpha, nil, http.StatusOK, &k)
	if !k.AlreadyEnded || k.Signal != "" {
		t.Errorf("kill of an ended job: %+v, want already_ended", k)
	}

	// A job that goes on, for the list; SIGKILL ends it at once.
	sleeper := s.startJob(t, tokenAlpha, map[string]any{"command": "sleep 120", "labels": map[string]string{"suite": suite, "kind": "sleep"}})
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"label=suite=" + suite, []string{sleeper.ID, trap.ID, count.ID}}, // most recent first
		{"state=running&label=suite=" + suite, []string{sleeper.ID}},
		{"state=completed&label=suite=" + suite, []string{count.ID}},
		{"state=killed&label=suite=" + suite, []string{trap.ID}},
		{"label=suite=" + suite + "&label=kind=count", []string{count.ID}},
		{"label=suite=" + suite + "&limit=2", []string{sleeper.ID, trap.ID}},
		{"label=suite=none-" + suite, nil},
	} {
		l := s.list(t, tokenAlpha, tc.query)
		total := len(tc.want)
		if strings.Contains(tc.query, "limit=2") {
			total = 3
		}
		if got := ids(l); !slices.Equal(got, tc.want) || l.Total != total {
			t.Errorf("list ?%s = %v (total %d), want %v (total %d)", tc.query, got, l.Total, tc.want, total)
		}
	}
	s.expectError(t, http.MethodGet, "/v1/processes?state=asleep", tokenAlpha, nil, http.StatusBadRequest, "invalid_request")

	// A wait that times out answers the running job; then SIGKILL ends it.
	s.expect(t, http.MethodPost, "/v1/processes/"+sleeper.ID+"/wait", tokenAlpha, map[string]any{"timeout": 0.5}, http.StatusOK, &res)
	if res.State != executor.StateRunning {
		t.Errorf("a 0.5 s wait on sleep 120: state %s, want running", res.State)
	}
	s.expect(t, http.MethodPost, "/v1/processes/"+sleeper.ID+"/kill", tokenAlpha, map[string]any{"signal": "SIGKILL", "force_after": 0}, http.StatusOK, &k)
	res = s.waitJob(t, tokenAlpha, sleeper.ID)
	if res.State != executor.StateKilled || res.ExitCode != 137 || res.Signal != "SIGKILL" {
		t.Errorf("after SIGKILL: state %s exit %d signal %q, want killed, 137, SIGKILL", res.State, res.ExitCode, res.Signal)
	}
	return []string{count.ID, trap.ID, sleeper.ID}
}

func testServerIsolation(t *testing.T, s *airlockServer) {
	suite := "iso-" + randomHex(4)
	p := s.startJob(t, tokenAlpha, map[string]any{"command": "echo secret-of-alpha; sleep 120", "labels": map[string]string{"suite": suite}})
	s.waitOutput(t, tokenAlpha, p.ID, "secret-of-alpha")
	base := "/v1/processes/" + p.ID
	for _, req := range []struct {
		method, path string
		body         any
	}{
		{"GET", base, nil},
		{"GET", base + "/logs", nil},
		{"GET", base + "/logs?follow=true", nil},
		{"POST", base + "/kill", map[string]any{"signal": "SIGKILL", "force_after": 0}},
		{"POST", base + "/wait", map[string]any{"timeout": 1}},
		{"DELETE", base, nil},
	} {
		e := s.expectError(t, req.method, req.path, tokenBeta, req.body, http.StatusNotFound, "not_found")
		if strings.Contains(e.Error.Message, "alpha") || strings.Contains(e.Error.Message, "secret") {
			t.Errorf("beta's %s %s reveals alpha's job: %s", req.method, req.path, e.Error.Message)
		}
		// Exactly what an unknown id gets: nothing tells that the id exists.
		unknown := s.expectError(t, req.method, strings.Replace(req.path, p.ID, "0123456789abcdef01234567", 1), tokenBeta, req.body, http.StatusNotFound, "not_found")
		if strings.ReplaceAll(e.Error.Message, p.ID, "ID") != strings.ReplaceAll(unknown.Error.Message, "0123456789abcdef01234567", "ID") {
			t.Errorf("beta's %s on alpha's id says %q, on an unknown id %q", req.method, e.Error.Message, unknown.Error.Message)
		}
	}
	if l := s.list(t, tokenBeta, "limit=1000"); slices.Contains(ids(l), p.ID) {
		t.Errorf("alpha's job %s is in beta's list", p.ID)
	}
	if l := s.list(t, tokenBeta, "label=suite="+suite); l.Total != 0 {
		t.Errorf("beta's list by alpha's label: %v", ids(l))
	}
	// Beta's kill touched nothing: alpha's job still runs, and alpha sees it.
	var res executor.Result
	s.expect(t, http.MethodGet, base, tokenAlpha, nil, http.StatusOK, &res)
	if res.State != executor.StateRunning {
		t.Errorf("alpha's job after beta's kill: %s", res.State)
	}
	if l := s.list(t, tokenAlpha, "label=suite="+suite); !slices.Equal(ids(l), []string{p.ID}) {
		t.Errorf("alpha's list by label: %v", ids(l))
	}
	var k executor.KillResult
	s.expect(t, http.MethodPost, base+"/kill", tokenAlpha, map[string]any{"signal": "SIGKILL", "force_after": 0}, http.StatusOK, &k)
	s.waitJob(t, tokenAlpha, p.ID)
}

// bearerTransport adds a bearer token to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession connects an MCP client to /mcp with token.
func (s *airlockServer) mcpSession(t *testing.T, token string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "airlock-integration", Version: "v0"}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint:   s.url + "/mcp",
		HTTPClient: &http.Client{Transport: bearerTransport{token}},
	}, nil)
	if err != nil {
		t.Fatalf("connect to /mcp: %v", err)
	}
	t.Cleanup(func() { session.Close() })
	return session
}

// callTool calls a tool and decodes its structured content into out.
func callTool(t *testing.T, session *mcp.ClientSession, name string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	if out != nil && !res.IsError {
		reflect.ValueOf(out).Elem().SetZero()
		data, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("call %s: structured content: %v\n%s", name, err, data)
		}
	}
	return res
}

func toolText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func testServerMCP(t *testing.T, s *airlockServer) {
	session := s.mcpSession(t, tokenAlpha)
	tools, err := session.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatalf("list tools: %v", err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil {
			t.Errorf("tool %s lacks a description or an input schema", tool.Name)
		}
	}
	for _, want := range []string{"run", "start", "monitor", "logs", "kill", "list", "check"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %v lack %s", names, want)
		}
	}

	var res executor.Result
	call := callTool(t, session, "run", map[string]any{"command": "echo hi; echo oops >&2; exit 2"}, &res)
	s.remember(res.ID)
	if call.IsError || res.State != executor.StateCompleted || res.ExitCode != 2 || res.Stdout != "hi\n" || res.Stderr != "oops\n" {
		t.Errorf("run: error %v state %s exit %d stdout %q stderr %q\n%s", call.IsError, res.State, res.ExitCode, res.Stdout, res.Stderr, toolText(call))
	}
	if text := toolText(call); !strings.Contains(text, "completed with exit code 2") || !strings.Contains(text, "hi") || !strings.Contains(text, "oops") {
		t.Errorf("run's text is no readable summary: %q", text)
	}
	call = callTool(t, session, "run", map[string]any{"command": "echo hi"}, &res)
	s.remember(res.ID)
	if res.ExitCode != 0 || res.Stdout != "hi\n" || !res.Success {
		t.Errorf("run echo hi: exit %d stdout %q\n%s", res.ExitCode, res.Stdout, toolText(call))
	}

	var check struct {
		Blocked bool   `json:"blocked"`
		Rule    string `json:"rule"`
		Reason  string `json:"reason"`
	}
	call = callTool(t, session, "check", map[string]any{"command": "sudo ls"}, &check)
	if !check.Blocked || check.Rule != "privilege-escalation" || check.Reason == "" || !strings.Contains(toolText(call), "blocked") {
		t.Errorf("check sudo ls: %+v, text %q", check, toolText(call))
	}
	call = callTool(t, session, "run", map[string]any{"command": "sudo ls"}, &res)
	s.remember(res.ID)
	if res.State != executor.StateBlocked || res.ExitCode != 126 || !strings.Contains(toolText(call), "blocked by policy") {
		t.Errorf("run sudo ls: state %s exit %d text %q", res.State, res.ExitCode, toolText(call))
	}

	// A job started over MCP belongs to alpha over HTTP too, and not to beta.
	var p executor.Process
	callTool(t, session, "start", map[string]any{"command": "echo started; sleep 120"}, &p)
	s.remember(p.ID)
	if p.ID == "" || p.State != executor.StateRunning {
		t.Fatalf("start: %+v", p)
	}
	s.waitOutput(t, tokenAlpha, p.ID, "started")
	beta := s.mcpSession(t, tokenBeta)
	if call := callTool(t, beta, "monitor", map[string]any{"id": p.ID}, nil); !call.IsError {
		t.Errorf("beta's monitor of alpha's job answered: %s", toolText(call))
	}
	var k executor.KillResult
	callTool(t, session, "kill", map[string]any{"id": p.ID, "signal": "SIGKILL", "force_after": 0}, &k)
	if k.Signal != "SIGKILL" {
		t.Errorf("kill: %+v", k)
	}
	if res := s.waitJob(t, tokenAlpha, p.ID); res.State != executor.StateKilled {
		t.Errorf("MCP-killed job: %s", res.State)
	}

	// /mcp is behind the same tokens as the API.
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"0"}}}`
	for _, token := range []string{"", "tok-x"} {
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/mcp", strings.NewReader(initialize))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("/mcp with token %q: %d %s, want 401", token, resp.StatusCode, body)
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "anonymous", Version: "v0"}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if session, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url + "/mcp", MaxRetries: -1}, nil); err == nil {
		session.Close()
		t.Errorf("an MCP client without a token connected")
	}
}

// testServerRestart stops the server while a job writes, starts it again on the
// same data dir, and checks that the job ends as it should with every line of
// its output, and that the jobs of before are still there.
func testServerRestart(t *testing.T, s *airlockServer, before []string) {
	const n = 60 // one line per 100 ms: ~6 s, longer than the restart
	p := s.startJob(t, tokenAlpha, map[string]any{
		"command": fmt.Sprintf("for i in $(seq 1 %d); do echo $i; sleep 0.1; done", n),
		"labels":  map[string]string{"kind": "restart"},
	})
	s.learnStore(t, p.ID)
	s.waitOutput(t, tokenAlpha, p.ID, "5\n")

	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	// A foreground run in flight when SIGTERM comes is let finish, and answered.
	marker := "fg-" + randomHex(4)
	type answer struct {
		status int
		body   []byte
	}
	inflight := make(chan answer, 1)
	go func() {
		status, _, body := s.call(ctx, http.MethodPost, "/v1/processes", tokenAlpha,
			// A tmpfs size of its own misses the warm pool: a cold sandbox carries the run's labels.
			map[string]any{"command": "sleep 2; echo done", "tmpfs_size": 32 << 20, "labels": map[string]string{"marker": marker}})
		inflight <- answer{status, body}
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		list, err := docker.ContainerList(ctx, container.ListOptions{Filters: filters.NewArgs(filters.Arg("label", "marker="+marker))})
		if err != nil {
			t.Fatal(err)
		}
		if len(list) > 0 && list[0].State == "running" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the foreground run never started")
		}
	}

	grace := 60 * time.Second
	t0 := time.Now()
	if err := s.c.Stop(ctx, &grace); err != nil {
		t.Fatalf("stop the server: %v", err)
	}
	stopped := since(t0)
	select {
	case a := <-inflight:
		var fg executor.Result
		if err := json.Unmarshal(a.body, &fg); a.status != http.StatusOK || err != nil {
			t.Errorf("the run in flight at shutdown: %d %s", a.status, a.body)
		}
		s.remember(fg.ID)
		if fg.State != executor.StateCompleted || fg.ExitCode != 0 || fg.Stdout != "done\n" {
			t.Errorf("the run in flight at shutdown: state %s exit %d stdout %q error %q, want it finished", fg.State, fg.ExitCode, fg.Stdout, fg.Error)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no answer to the run in flight at shutdown")
	}
	inspect, err := s.c.Inspect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if inspect.State.ExitCode != 0 || inspect.State.OOMKilled {
		t.Errorf("the server exited %d on SIGTERM (in %s), want 0: a graceful shutdown", inspect.State.ExitCode, stopped)
	}
	// The job does not depend on the server: its sandbox goes on meanwhile.
	if left := managedContainers(ctx, p.ID); len(left) != 1 {
		t.Errorf("while the server is down, the job's containers are %v, want its one sandbox", left)
	}
	if err := s.c.Start(ctx); err != nil { // waits for /readyz
		t.Fatalf("start the server again: %v", err)
	}
	if s.url, err = s.c.URL(ctx); err != nil { // the published port may have changed
		t.Fatal(err)
	}
	t.Logf("server stopped in %s, back after %s", stopped, since(t0))

	res := s.waitJob(t, tokenAlpha, p.ID)
	if res.State != executor.StateCompleted || res.ExitCode != 0 || res.Stdout != numbers(n) {
		t.Errorf("the job across the restart: state %s exit %d error %q stdout %q; want completed, 0, 1..%d",
			res.State, res.ExitCode, res.Error, res.Stdout, n)
	}
	var logs struct {
		State      executor.State `json:"state"`
		Stdout     string         `json:"stdout"`
		StdoutSize int64          `json:"stdout_size"`
		Truncated  bool           `json:"truncated"`
	}
	s.expect(t, http.MethodGet, "/v1/processes/"+p.ID+"/logs?stream=stdout", tokenAlpha, nil, http.StatusOK, &logs)
	if logs.Stdout != numbers(n) || logs.StdoutSize != int64(len(numbers(n))) || logs.Truncated {
		t.Errorf("logs after the restart: %q (%d bytes, truncated %v), want exactly 1..%d", logs.Stdout, logs.StdoutSize, logs.Truncated, n)
	}
	// A follow from the start replays it all and ends.
	events := s.follow(t, tokenAlpha, p.ID, "stream=stdout")
	var replay strings.Builder
	for _, ev := range events {
		if ev.name == "stdout" {
			var c struct{ Data string }
			json.Unmarshal([]byte(ev.data), &c)
			replay.WriteString(c.Data)
		}
	}
	if replay.String() != numbers(n) || events[len(events)-1].name != "end" {
		t.Errorf("follow after the restart: %q, last event %q", replay.String(), events[len(events)-1].name)
	}

	// Every job of before the restart is still listed, ended as it was, and
	// still alpha's alone.
	all := s.list(t, tokenAlpha, "limit=1000")
	for _, id := range append(before, p.ID) {
		if !slices.Contains(ids(all), id) {
			t.Errorf("job %s is no longer listed after the restart", id)
		}
	}
	for _, id := range before {
		var r executor.Result
		s.expect(t, http.MethodGet, "/v1/processes/"+id, tokenAlpha, nil, http.StatusOK, &r)
		if r.State == executor.StateRunning || r.State == executor.StateFailed {
			t.Errorf("job %s of before the restart is now %s (%s)", id, r.State, r.Error)
		}
	}
	if len(before) == 0 {
		t.Errorf("no job of before the restart to check: the background case failed early")
	}
	s.expectError(t, http.MethodGet, "/v1/processes/"+p.ID, tokenBeta, nil, http.StatusNotFound, "not_found")

	// The restarted server runs new work too.
	res = s.runSync(t, map[string]any{"command": "echo after"})
	if res.ExitCode != 0 || res.Stdout != "after\n" {
		t.Errorf("run after the restart: exit %d stdout %q error %q", res.ExitCode, res.Stdout, res.Error)
	}
}

// learnStore reads the server's store id off a job's container, so that the
// leak check can look for any container of that data dir.
func (s *airlockServer) learnStore(t *testing.T, id string) {
	t.Helper()
	list, err := docker.ContainerList(t.Context(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", executor.LabelID+"="+id))})
	if err != nil || len(list) != 1 || list[0].Labels[executor.LabelStore] == "" {
		t.Fatalf("the container of job %s: %v (err %v), want one with a store label", id, list, err)
	}
	s.mu.Lock()
	s.storeID = list[0].Labels[executor.LabelStore]
	s.mu.Unlock()
}
