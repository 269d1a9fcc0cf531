package integration

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
)

// TestEgressWarmRelay: every warm sandbox of the pool has its relay from its
// start; a run with Egress that claims one reaches its host through it, and a
// run without Egress that claims one reaches nothing through it.
func TestEgressWarmRelay(t *testing.T) {
	o := startOrigins(t)
	hp := o.port(o.http)
	cfg := executor.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Egress.Resolver = names{"pypi.test": netip.MustParseAddr("127.0.0.1")}
	cfg.Egress.AllowCIDRs = []string{"127.0.0.0/8"}
	e, err := executor.New(executor.WithConfig(cfg), executor.WithPool(map[string]int{"airlock/minimal": 2}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	waitWarm := func() {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
			for _, st := range e.PoolStats() {
				if st.Key.Image == "airlock/minimal" && st.Key.Workspace == "" && st.Idle >= 2 {
					return
				}
			}
			if time.Now().After(deadline) {
				t.Fatal("the pool never filled")
			}
		}
	}
	hits := func() int64 {
		for _, st := range e.PoolStats() {
			if st.Key.Image == "airlock/minimal" && st.Key.Workspace == "" {
				return st.Hits
			}
		}
		return 0
	}
	ctx := t.Context()

	waitWarm()
	res, err := e.Run(ctx, executor.Spec{Egress: []string{fmt.Sprintf("pypi.test:%d", hp)}, Timeout: 30,
		Command: fmt.Sprintf("wget -q -O - http://pypi.test:%d/simple/", hp)})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || !strings.HasPrefix(res.Stdout, "hello from pypi.test") || hits() != 1 {
		t.Errorf("allowed through a warm relay: exit %d, stdout %q, stderr %q, pool hits %d", res.ExitCode, res.Stdout, res.Stderr, hits())
	}

	waitWarm()
	o.mu.Lock()
	before := o.hits
	o.mu.Unlock()
	res, err = e.Run(ctx, executor.Spec{Timeout: 30, Env: map[string]string{"http_proxy": "http://127.0.0.1:3128"},
		Command: fmt.Sprintf("wget -q -T 3 -O - http://pypi.test:%d/simple/; echo \"exit $?\"", hp)})
	if err != nil {
		t.Fatal(err)
	}
	o.mu.Lock()
	after := o.hits
	o.mu.Unlock()
	if strings.Contains(res.Stdout, "hello") || strings.Contains(res.Stdout, "exit 0") || after != before || hits() != 2 || len(res.Egress) != 0 {
		t.Errorf("no egress, warm relay cut: stdout %q, stderr %q, origin hits %d -> %d, pool hits %d, egress %+v", res.Stdout, res.Stderr, before, after, hits(), res.Egress)
	}
}
