package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/enginefake"
	"github.com/airlock-sandbox/airlock/internal/pgtest"
	"github.com/airlock-sandbox/airlock/policy"
)

func TestSealedSpec(t *testing.T) {
	stdin := "stdin-secret-456"
	spec := executor.Spec{Command: "cat", Env: map[string]string{"API_KEY": "sk-secret-123"}, Stdin: &stdin}
	key := []byte("0123456789abcdef0123456789abcdef")
	raw, err := sealSpec(key, "job-1", spec, policy.Decision{Allowed: true})
	if err != nil {
		t.Fatal(err)
	}
	if s := string(raw); strings.Contains(s, "sk-secret-123") || strings.Contains(s, stdin) || !strings.Contains(s, `"sealed"`) || !strings.Contains(s, `"command":"cat"`) {
		t.Fatalf("the queue's copy shows a secret, or lacks the sealed part or the command: %s", s)
	}
	got, err := openSpec(key, "job-1", raw)
	if err != nil || !got.Decision.Allowed || got.Command != "cat" || got.Env["API_KEY"] != "sk-secret-123" || got.Stdin == nil || *got.Stdin != stdin {
		t.Fatalf("opened = %+v, %v", got, err)
	}

	other := []byte("fedcba9876543210fedcba9876543210")
	for _, c := range []struct {
		name, id string
		key      []byte
	}{{"another token's key", "job-1", other}, {"another job", "job-2", key}, {"no token", "job-1", nil}} {
		if _, err := openSpec(c.key, c.id, raw); !errors.Is(err, errSealed) {
			t.Errorf("open with %s: %v; want errSealed", c.name, err)
		}
	}

	// Without a token: as sent. Without env or stdin: nothing sealed.
	raw, _ = sealSpec(nil, "job-1", spec, policy.Decision{Allowed: true})
	if got, err := openSpec(nil, "job-1", raw); err != nil || !strings.Contains(string(raw), "sk-secret-123") || got.Env["API_KEY"] != "sk-secret-123" {
		t.Fatalf("no key: %s, %+v, %v", raw, got, err)
	}
	raw, _ = sealSpec(key, "job-1", executor.Spec{Command: "true"}, policy.Decision{Allowed: true})
	var fields map[string]any
	json.Unmarshal(raw, &fields)
	if _, ok := fields["sealed"]; ok {
		t.Fatalf("a spec without env or stdin got a sealed part: %s", raw)
	}
}

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
	j, err := a.svc.node.c.Get(t.Context(), p.ID)
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
		j, err := a.svc.node.c.Get(t.Context(), p.ID)
		return err == nil && j.Ended() && !strings.Contains(string(j.Spec), "sealed")
	})
}
