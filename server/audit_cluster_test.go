package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/enginefake"
	"github.com/airlock-sandbox/airlock/internal/pgtest"
)

// TestClusterAuditsEveryEndOnce: across nodes on one PostgreSQL, every
// job's run.start has exactly one run.finish in the nodes' audit logs taken
// together, however it ends: ended on another node, refused there at claim
// (its runtime missing), a foreground run, expired in the queue, lost with
// its node. The claiming node refuses only for what is its own, and the
// job ends failed, naming it.
func TestClusterAuditsEveryEndOnce(t *testing.T) {
	pg := pgtest.New(t)
	fb := enginefake.New()
	a := newNode(t, pg.URL(), "node-a", nil)
	b := newFakeHarness(t, fb, func(c *Config) {
		c.Cluster = ClusterConfig{Database: pg.URL(), NodeID: "node-b", Lease: testLease.Seconds(), AdminTenants: []string{"alpha"}}
		c.Runtimes = []string{"runc"}
	})
	drain := func(h *harness, id string, on bool) {
		t.Helper()
		if status, data, _ := h.do("POST", "/v1/nodes/"+id+"/drain", tokA, map[string]any{"drain": on}); status != http.StatusOK {
			t.Fatalf("drain %s %v: %d %s", id, on, status, data)
		}
	}
	start := func(body map[string]any) (int, []byte) {
		t.Helper()
		body["background"] = true
		status, data, _ := a.do("POST", "/v1/processes", tokA, body)
		return status, data
	}
	ended := func(id string, want api.State) executor.Result {
		t.Helper()
		var r executor.Result
		eventually(t, 15*time.Second, fmt.Sprintf("job %s %s", id, want), func() bool {
			_, data, _ := a.do("GET", "/v1/processes/"+id, tokA, nil)
			r = decode[executor.Result](t, data)
			if r.State != want {
				t.Logf("job %s: %s", id, data)
			}
			return r.State == want || want == "" && r.State != api.StateRunning && r.State != api.StateQueued
		})
		return r
	}
	drain(a, "node-a", true) // node-b claims every job

	var ids []string
	status, data := start(map[string]any{"command": "echo done"})
	done := decode[executor.Process](t, data)
	if status/100 != 2 {
		t.Fatalf("start: %d %s", status, data)
	}
	ended(done.ID, "") // how the fake engine ends a job is its own business
	ids = append(ids, done.ID)

	// runsc is one of node-a's runtimes, not node-b's: node-a admits it, node-b
	// cannot run it, and says so.
	status, data = start(map[string]any{"command": "echo refused", "runtime": "runsc"})
	refused := decode[executor.Process](t, data)
	if status/100 != 2 {
		t.Fatalf("start a job node-b cannot run: %d %s", status, data)
	}
	if r := ended(refused.ID, api.StateFailed); r.ExitCode != api.ExitFailed || !strings.Contains(r.Error, "node-b") || !strings.Contains(r.Error, "runtime") {
		t.Fatalf("the job node-b cannot run: %+v; want failed, naming the node and the runtime", r)
	}
	ids = append(ids, refused.ID)

	status, data, _ = b.do("POST", "/v1/processes", tokA, map[string]any{"command": "echo run"})
	run := decode[executor.Result](t, data)
	if status != http.StatusOK || run.State == api.StateRunning {
		t.Fatalf("a run through node-b: %d %s", status, data)
	}
	ids = append(ids, run.ID)

	drain(a, "node-b", true) // no node takes work: the next job expires in the queue
	status, data = start(map[string]any{"command": "echo expired", "queue_timeout": 0.5})
	wantError(t, status, data, http.StatusServiceUnavailable, "queue_timeout", "")
	drain(a, "node-b", false)
	var expired string
	for _, ev := range a.auditLines() {
		if ev.Event == "run.start" && ev.Command == "echo expired" {
			expired = ev.ID
		}
	}
	ended(expired, api.StateExpired)
	ids = append(ids, expired)

	// node-c runs the next job and dies with it.
	fc := enginefake.New()
	fc.Hang = true
	c := newFakeHarness(t, fc, func(c *Config) {
		c.Cluster = ClusterConfig{Database: pg.URL(), NodeID: "node-c", Lease: testLease.Seconds()}
	})
	drain(a, "node-b", true)
	status, data = start(map[string]any{"command": "sleep 60"})
	lost := decode[executor.Process](t, data)
	if status/100 != 2 || lost.Node != "node-c" {
		t.Fatalf("start a job for node-c to lose: %d %s", status, data)
	}
	c.svc.node.StopLoops() // node-c stops heartbeating: another node's sweep finds it dead
	ended(lost.ID, api.StateLost)
	ids = append(ids, lost.ID)

	eventually(t, 10*time.Second, "one run.start and one run.finish for every job, across both nodes", func() bool {
		starts, finishes := map[string]int{}, map[string]int{}
		for _, ev := range append(append(a.auditLines(), b.auditLines()...), c.auditLines()...) {
			switch ev.Event {
			case "run.start":
				starts[ev.ID]++
			case "run.finish":
				finishes[ev.ID]++
			}
		}
		for _, id := range ids {
			if starts[id] != 1 || finishes[id] != 1 {
				t.Logf("job %s: %d starts, %d finishes", id, starts[id], finishes[id])
				return false
			}
		}
		return true
	})
}
