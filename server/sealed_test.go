package server

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/enginefake"
	"github.com/airlock-sandbox/airlock/internal/pgtest"
)

// TestQueuedJobEnvAndStdinSealed: a job started through one node and run by
// another gets its env and stdin, which the database never holds in clear.
func TestQueuedJobEnvAndStdinSealed(t *testing.T) {
	pg := pgtest.New(t)
	node := func(id string, f *enginefake.Engine) *harness {
		return newFakeHarness(t, f, func(c *Config) {
			c.Cluster = ClusterConfig{Database: pg.URL(), NodeID: id, Lease: testLease.Seconds(), AdminTenants: []string{"alpha"}}
		})
	}
	fb := enginefake.New()
	fb.Hang = true
	a, b := node("node-a", enginefake.New()), node("node-b", fb)
	if status, data, _ := a.do("POST", "/v1/nodes/node-a/drain", tokA, map[string]any{"drain": true}); status != http.StatusOK {
		t.Fatalf("drain node-a: %d %s", status, data)
	}
	status, data, _ := a.do("POST", "/v1/processes", tokA, map[string]any{"command": "cat", "background": true,
		"env": map[string]string{"API_KEY": "sk-secret-123"}, "stdin": "stdin-secret-456", "queue_timeout": 20})
	p := decode[executor.Process](t, data)
	if status/100 != 2 || p.Node != "node-b" {
		t.Fatalf("start through node-a: %d %s; want it running on node-b", status, data)
	}
	j, err := a.svc.node.Cluster().Get(t.Context(), p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(j.Spec); strings.Contains(s, "sk-secret-123") || strings.Contains(s, "stdin-secret-456") || !strings.Contains(s, `"sealed"`) {
		t.Fatalf("the database's copy of a running job's request: %s; want its env and stdin sealed", s)
	}
	plans := fb.CreatedPlans()
	if len(plans) != 1 || !slices.Contains(plans[0].Env, "API_KEY=sk-secret-123") {
		t.Fatalf("node-b's container plans: %+v; want one with API_KEY", plans)
	}
	eventually(t, 5*time.Second, "node-b feeds the job its stdin", func() bool { return fb.StdinData() == "stdin-secret-456" })

	b.do("POST", "/v1/processes/"+p.ID+"/kill", tokA, map[string]any{"signal": "SIGKILL"})
	eventually(t, 10*time.Second, "the ended job's row without its sealed part", func() bool {
		j, err := a.svc.node.Cluster().Get(t.Context(), p.ID)
		return err == nil && j.Ended() && !strings.Contains(string(j.Spec), "sealed")
	})
}
