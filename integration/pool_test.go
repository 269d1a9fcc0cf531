package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/airlock-sandbox/airlock/executor"
)

// waitWarm waits until e's pool for image has n idle sandboxes.
func waitWarm(t *testing.T, e *executor.Executor, image string, n int) {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, st := range e.PoolStats() {
			if st.Key.Image == image && st.Key.Workspace == "" && st.Idle >= n {
				return
			}
		}
	}
	t.Fatalf("the pool of %s never had %d warm sandboxes: %+v", image, n, e.PoolStats())
}

// pooledExecutor is an executor of its own with a warm pool, closed (its warm
// sandboxes removed) when the test ends.
func pooledExecutor(t *testing.T, size int, policyOff bool) *executor.Executor {
	t.Helper()
	cfg := executor.DefaultConfig()
	cfg.DataDir = t.TempDir()
	if policyOff {
		cfg.Policy = nil
	}
	e, err := executor.New(executor.WithConfig(cfg), executor.WithPool(map[string]int{"airlock/minimal": size}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	waitWarm(t, e, "airlock/minimal", size)
	return e
}

// One sandbox, one run: 200 pooled runs get 200 containers, and nothing one
// run leaves is seen by the next.
func TestPoolEachSandboxServesOneRun(t *testing.T) {
	e := pooledExecutor(t, 4, false)
	seen := map[string]bool{}
	for i := range 200 {
		res, err := e.Run(t.Context(), executor.Spec{Command: `ls -A /tmp; ls -A /workspace; ls -A /dev/shm; echo mark > /tmp/left; echo mark > /workspace/left; echo mark > /dev/shm/left`})
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode != 0 || res.Stdout != "" {
			t.Fatalf("run %d saw what an earlier one left: exit %d\n%s%s", i, res.ExitCode, res.Stdout, res.Stderr)
		}
		if seen[res.ContainerID] {
			t.Fatalf("run %d reused container %.12s", i, res.ContainerID)
		}
		seen[res.ContainerID] = true
	}
	var hits int64
	for _, st := range e.PoolStats() {
		hits += st.Hits
	}
	if hits == 0 {
		t.Errorf("no run found a warm sandbox: %+v", e.PoolStats())
	}
	t.Logf("200 runs, %d warm", hits)
}

// The limits of a run are set on the warm sandbox when it is claimed.
func TestPoolLimitsSetAtClaim(t *testing.T) {
	e := pooledExecutor(t, 2, true)
	res, err := e.Run(t.Context(), executor.Spec{Command: `awk 'BEGIN{s="x"; while(1) s=s s}'`, Memory: 32 << 20})
	if err != nil || !res.OOMKilled || res.ExitCode != 137 {
		t.Errorf("balloon over a claimed 32 MiB: %v state %s exit %d oom %v", err, res.State, res.ExitCode, res.OOMKilled)
	}
	waitWarm(t, e, "airlock/minimal", 1)
	res, err = e.Run(t.Context(), executor.Spec{Command: `n=0; while [ $n -lt 100 ]; do sleep 30 & n=$((n+1)); done; wait`, Pids: 16, Timeout: 10})
	if err != nil || res.State != executor.StateCompleted || !strings.Contains(res.Stderr, "can't fork") {
		t.Errorf("100 children under a claimed pids limit of 16: %v state %s exit %d stderr %.200q", err, res.State, res.ExitCode, res.Stderr)
	}
	waitWarm(t, e, "airlock/minimal", 1)
	res, err = e.Run(t.Context(), executor.Spec{Command: `cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null || cut -d' ' -f1 /sys/fs/cgroup/cpu.max`, CPUs: 0.5})
	if err != nil || strings.TrimSpace(res.Stdout) != "50000" {
		t.Errorf("a claimed 0.5 CPU: %v %q", err, res.Stdout)
	}
}

// A pooled run that times out or is cancelled leaves no process and no
// container behind.
func TestPoolTimeoutAndCancelLeaveNothing(t *testing.T) {
	e := pooledExecutor(t, 2, false)
	res, err := e.Run(t.Context(), executor.Spec{Command: `sleep 1000 & sleep 1000`, Timeout: 1})
	if err != nil || res.State != executor.StateTimedOut {
		t.Fatalf("timeout: %v %+v", err, res)
	}
	assertGone(t, res)
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	res, err = e.Run(ctx, executor.Spec{Command: `sleep 1000`})
	if err == nil || res.State != executor.StateKilled {
		t.Fatalf("cancel: %v %+v", err, res)
	}
	assertGone(t, res)
	assertNoHostProcess(t, "runc", "sleep 1000")
}

// A server killed with SIGKILL leaves no warm sandbox: each init reads the end
// of its stdin and exits, and the engine removes the container (AutoRemove);
// whatever is left, the next process on the data dir removes when it reconciles.
func TestPoolSandboxesOfAKilledServerAreRemoved(t *testing.T) {
	data := t.TempDir()
	waitWarm(t, ex, "airlock/minimal", 1) // the suite's own pool is among the stores before
	before := poolStores(t)
	cmd := exec.Command(airlockCLI(t), "serve", "--listen", "127.0.0.1:0", "--data", data, "--pool", "airlock/minimal=3")
	cmd.Env = append(os.Environ(), "AIRLOCK_TOKENS=")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var store string
	for deadline := time.Now().Add(60 * time.Second); store == "" || len(poolStores(t)[store]) < 3; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatalf("the server's pool never filled: %v", poolStores(t))
		}
		for s := range poolStores(t) {
			if _, old := before[s]; !old {
				store = s
			}
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	// The engine finishes a create the dead server had sent; then the inits of
	// the started ones read the end of their stdin, exit, and go (AutoRemove).
	time.Sleep(3 * time.Second)
	cfg := executor.DefaultConfig()
	cfg.DataDir = data
	next, err := executor.New(executor.WithConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	// The engine may still finish a start the dead server had asked for: the
	// next reconciles (a server's periodic sweep) remove what comes late.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
		if err := next.Reconcile(t.Context()); err != nil {
			t.Fatal(err)
		}
		left := poolStores(t)[store]
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("warm sandboxes of the killed server left: %v", left)
		}
	}
}

// poolStores lists the warm sandboxes on the engine by the data dir of their pool.
func poolStores(t *testing.T) map[string][]string {
	cs, err := docker.ContainerList(context.Background(), container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", "io.airlock.pool"))})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, c := range cs {
		s := c.Labels["io.airlock.pool.store"]
		out[s] = append(out[s], c.ID[:12])
	}
	return out
}

// After a run on a workspace, the next run on it finds a warm sandbox.
func TestPoolWarmsTheWorkspace(t *testing.T) {
	e := pooledExecutor(t, 1, false)
	w, err := e.CreateWorkspace(t.Context(), executor.WorkspaceSpec{}, executor.Caller{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.RemoveWorkspace(context.Background(), w.ID, executor.Caller{})
	var mu sync.Mutex
	var outs []string
	for i := range 5 {
		res, err := e.Run(t.Context(), executor.Spec{Command: fmt.Sprintf("echo %d >> log; cat log | tr '\\n' ' '", i), Workspace: w.ID})
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("run %d: %v %+v", i, err, res)
		}
		mu.Lock()
		outs = append(outs, res.Stdout)
		mu.Unlock()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if slices.ContainsFunc(e.PoolStats(), func(st executor.PoolStat) bool { return st.Key.Workspace == w.ID && st.Idle == 1 }) {
				break
			}
		}
	}
	if outs[4] != "0 1 2 3 4 " {
		t.Errorf("the workspace's log: %q", outs)
	}
	for _, st := range e.PoolStats() {
		if st.Key.Workspace == w.ID && st.Hits < 4 {
			t.Errorf("runs on the workspace found %d warm sandboxes of 4", st.Hits)
		}
	}
	// Its warm sandbox does not keep the workspace from being deleted.
	if err := e.RemoveWorkspace(t.Context(), w.ID, executor.Caller{}); err != nil {
		t.Errorf("remove the workspace: %v", err)
	}
}
