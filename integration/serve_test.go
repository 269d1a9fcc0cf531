package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-sandbox/airlock/executor"
)

// serveProcess is `airlock serve` running as its own process.
type serveProcess struct {
	cmd    *exec.Cmd
	url    string
	data   string // its data dir, where its audit log is, when the test chose it
	stderr *lockedBuffer
	exited chan error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startServe starts the CLI's server on addr and data dir, and waits until it is
// ready.
func startServe(t *testing.T, addr, dataDir string, env ...string) *serveProcess {
	t.Helper()
	s := &serveProcess{url: "http://" + addr, stderr: &lockedBuffer{}, exited: make(chan error, 1)}
	s.cmd = exec.Command(airlockCLI(t), "serve", "--listen", addr, "--data", dataDir)
	s.cmd.Env = append(os.Environ(), env...)
	s.cmd.Stderr = s.stderr
	var stdout bytes.Buffer
	s.cmd.Stdout = &stdout
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := s.cmd.Wait()
		if stdout.Len() > 0 {
			err = fmt.Errorf("the server wrote to stdout: %q (exit: %v)", stdout.String(), err)
		}
		s.exited <- err
	}()
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			s.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-s.exited:
			case <-time.After(30 * time.Second):
				s.cmd.Process.Kill()
			}
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(s.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not ready: %v\n%s", err, s.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// auditEventsOf lists the audit events of run id, each with its state if any.
func auditEventsOf(t *testing.T, path, id string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var events []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev struct{ Event, ID, State string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		if ev.ID == id {
			events = append(events, strings.TrimSuffix(ev.Event+":"+ev.State, ":"))
		}
	}
	return events
}

// waitForMetric polls the server's /metrics until a line reads exactly line.
func waitForMetric(t *testing.T, url, line string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(url + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if slices.Contains(strings.Split(string(b), "\n"), line) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/metrics never showed %s", line)
		}
	}
}

func postJSON(t *testing.T, url string, body any) (int, []byte) {
	t.Helper()
	data, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(data))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out
}

// TestServeGracefulShutdown sends SIGTERM to a server with a foreground run in
// flight, a background job running and a log follow open: the run finishes and
// is answered, the follow ends, new connections are refused, the process exits
// 0, and the job goes on running, to be adopted by the next server, which
// finishes its output with no byte lost.
func TestServeGracefulShutdown(t *testing.T) {
	dataDir := t.TempDir()
	addr := freePort(t)
	srv := startServe(t, addr, dataDir)
	if !strings.Contains(srv.stderr.String(), "no tokens configured") {
		t.Fatalf("the server does not say it runs without tokens:\n%s", srv.stderr.String())
	}

	status, data := postJSON(t, srv.url+"/v1/processes", map[string]any{
		"command": "for i in $(seq 1 40); do echo $i; sleep 0.1; done", "background": true})
	if status != http.StatusAccepted {
		t.Fatalf("start: %d %s", status, data)
	}
	var job executor.Process
	json.Unmarshal(data, &job)

	follow, err := http.Get(srv.url + "/v1/processes/" + job.ID + "/logs?follow=true")
	if err != nil {
		t.Fatal(err)
	}
	followEnded := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(follow.Body)
		followEnded <- string(b)
	}()

	type answer struct {
		status int
		body   []byte
	}
	sync := make(chan answer, 1)
	go func() {
		s, b := postJSON(t, srv.url+"/v1/processes", map[string]any{"command": "sleep 2; echo finished", "timeout": 30})
		sync <- answer{s, b}
	}()
	waitForMetric(t, srv.url, `airlock_running{mode="foreground"} 1`) // the run is in flight
	srv.cmd.Process.Signal(syscall.SIGTERM)

	select {
	case body := <-followEnded:
		if strings.Contains(body, "event: end") {
			t.Fatalf("the follow saw the job end: %s", body)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the log follow held on after SIGTERM")
	}
	time.Sleep(200 * time.Millisecond)
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		conn.Close()
		t.Fatal("the server still accepts connections while it shuts down")
	}
	a := <-sync
	var r executor.Result
	json.Unmarshal(a.body, &r)
	if a.status != 200 || r.State != executor.StateCompleted || r.Stdout != "finished\n" {
		t.Fatalf("the run in flight at SIGTERM: %d %s", a.status, a.body)
	}
	select {
	case err := <-srv.exited:
		if err != nil {
			t.Fatalf("server exit: %v\n%s", err, srv.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the server did not exit after SIGTERM")
	}
	if left := managedContainers(t.Context(), job.ID); len(left) != 1 {
		t.Fatalf("the background job's container should run on: %v", left)
	}

	// The next server adopts the job; its output is whole.
	srv = startServe(t, addr, dataDir)
	status, data = postJSON(t, srv.url+"/v1/processes/"+job.ID+"/wait", map[string]any{"timeout": 30})
	json.Unmarshal(data, &r)
	var want strings.Builder
	for i := 1; i <= 40; i++ {
		fmt.Fprintln(&want, i)
	}
	if status != 200 || r.State != executor.StateCompleted || r.Stdout != want.String() {
		t.Fatalf("after restart: %d %s", status, data)
	}
	// The audit log has the job's start, by the first server, and its finish, by
	// the second, once each.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		events := auditEventsOf(t, filepath.Join(dataDir, "audit.log"), job.ID)
		if slices.Equal(events, []string{"run.start", "run.finish:completed"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("audit events of the job: %v", events)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(srv.stderr.String()), "\n") {
		if !json.Valid([]byte(line)) {
			t.Fatalf("a server log line is not JSON: %q", line)
		}
	}
}

// TestServeConfig shows the effective configuration with tokens redacted, and
// refuses a bad setting by name.
func TestServeConfig(t *testing.T) {
	cmd := exec.Command(airlockCLI(t), "serve", "--print-config", "--max-memory", "2g")
	cmd.Env = append(os.Environ(), "AIRLOCK_TOKENS=supersecret-token-1:alpha", "AIRLOCK_MAX_PIDS=100", "AIRLOCK_LISTEN=0.0.0.0:9999")
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(out, &cfg); err != nil {
		t.Fatalf("print-config is not JSON: %s", out)
	}
	ceilings := cfg["ceilings"].(map[string]any)
	if bytes.Contains(out, []byte("supersecret")) || !bytes.Contains(out, []byte("redacted:")) ||
		ceilings["memory"] != float64(2<<30) || ceilings["pids"] != float64(100) || cfg["listen"] != "0.0.0.0:9999" {
		t.Fatalf("print-config:\n%s", out)
	}
	_, stderr, code := airlock(t, "", "serve", "--max-memory", "lots")
	if code != executor.ExitFailed || !strings.Contains(stderr, "--max-memory") {
		t.Fatalf("bad flag: exit %d, %s", code, stderr)
	}
	cmd = exec.Command(airlockCLI(t), "serve", "--print-config")
	cmd.Env = append(os.Environ(), "AIRLOCK_TOKENS=nocolon")
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "AIRLOCK_TOKENS") {
		t.Fatalf("bad AIRLOCK_TOKENS accepted: %s", out)
	}
}

// TestMCPStdio drives `airlock mcp` as an agent would: the go-sdk client over the
// process's stdin and stdout. The protocol owns stdout; logs go to stderr.
func TestMCPStdio(t *testing.T) {
	cmd := exec.Command(airlockCLI(t), "mcp")
	cmd.Env = append(os.Environ(), "AIRLOCK_DATA="+t.TempDir())
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "airlock-test", Version: "1"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil || len(tools.Tools) != 13 {
		t.Fatalf("tools: %v %v", tools, err)
	}
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"argv": []string{"echo", "hi from mcp"}}})
	if err != nil || res.IsError {
		t.Fatalf("run: %v %+v", err, res)
	}
	data, _ := json.Marshal(res.StructuredContent)
	var r executor.Result
	json.Unmarshal(data, &r)
	if r.Stdout != "hi from mcp\n" || r.ExitCode != 0 {
		t.Fatalf("run result: %s", data)
	}
	res, err = cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "check", Arguments: map[string]any{"command": "mkfs.ext4 /dev/sda"}})
	if err != nil || !strings.Contains(fmt.Sprint(res.StructuredContent), "blocked:true") {
		t.Fatalf("check: %v %+v", err, res.StructuredContent)
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	// Everything the process printed outside the protocol is on stderr, as JSON.
	sc := bufio.NewScanner(strings.NewReader(stderr.String()))
	for sc.Scan() {
		if !json.Valid(sc.Bytes()) {
			t.Fatalf("stderr line is not a JSON log line: %q", sc.Text())
		}
	}
}
