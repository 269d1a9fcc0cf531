package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/inittest"
)

// ex is the executor every test shares, as a server would.
var ex *executor.Executor

// unchecked runs with no policy: for workloads the policy would refuse (a fork
// bomb), to prove the container contains them on its own.
var unchecked *executor.Executor

// docker is a plain engine client, for checks made from outside airlock.
var docker *client.Client

// afterAll are cleanups of what tests share (an image built once), run when
// every test has ended.
var afterAll []func()

func TestMain(m *testing.M) {
	// Background jobs of the suite, and of the CLI it runs, live in a data dir of
	// their own, not the user's.
	dataDir, err := os.MkdirTemp("", "airlock-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(dataDir)
	os.Setenv("AIRLOCK_DATA", dataDir)
	// airlock's init, built as `make build` builds it: PID 1 of every
	// foreground run of the suite and of the CLI it runs.
	if err := inittest.Setenv(dataDir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if docker, err = client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// The suite's runs go through a warm pool (a miss starts cold), under both
	// runtimes when the engine has gVisor: every test of a run, and the hostile
	// battery, hold with the pool on; unchecked stays without one.
	// AIRLOCK_TEST_POOL=off runs it without: `make test` runs the tests of runs
	// and jobs both ways, so that the pool changes no answer.
	pool := map[string]int{"airlock/minimal": 4}
	if info, err := docker.Info(context.Background()); err == nil {
		if _, ok := info.Runtimes["runsc"]; ok {
			pool["airlock/minimal@runsc"] = 2
		}
	}
	if os.Getenv("AIRLOCK_TEST_POOL") == "off" {
		pool = nil
	}
	if ex, err = executor.New(executor.WithPool(pool)); err != nil {
		fmt.Fprintln(os.Stderr, "integration tests need a Docker engine:", err)
		os.Exit(1)
	}
	cfg := executor.DefaultConfig()
	cfg.Policy = nil
	if unchecked, err = executor.New(executor.WithConfig(cfg)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	for _, f := range afterAll {
		f()
	}
	ex.Close() // removes the warm sandboxes before the leak check
	unchecked.Close()
	if left := managedContainers(context.Background(), ""); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d airlock container(s) left on the engine: %s\n", len(left), strings.Join(left, ", "))
		for _, id := range left {
			docker.ContainerRemove(context.Background(), id, container.RemoveOptions{Force: true})
		}
		code = 1
	}
	if left := managedVolumes(context.Background()); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d airlock volume(s) left on the engine: %s\n", len(left), strings.Join(left, ", "))
		code = 1
	}
	os.RemoveAll(dataDir)
	if cliPath != "" { // the CLI the tests built
		os.RemoveAll(filepath.Dir(cliPath))
	}
	os.Exit(code)
}

// managedVolumes lists the volumes labelled as airlock's (workspaces).
func managedVolumes(ctx context.Context) []string {
	vols, err := docker.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", executor.LabelManaged+"=true"))})
	if err != nil {
		return []string{err.Error()}
	}
	var names []string
	for _, v := range vols.Volumes {
		names = append(names, v.Name)
	}
	return names
}

// managedContainers lists the containers labelled as airlock's, all of them or
// those of one run id.
func managedContainers(ctx context.Context, id string) []string {
	f := filters.NewArgs(filters.Arg("label", executor.LabelManaged+"=true"))
	if id != "" {
		f.Add("label", executor.LabelID+"="+id)
	}
	list, err := docker.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		panic(err)
	}
	var ids []string
	for _, c := range list {
		ids = append(ids, c.ID[:12]+" "+strings.Join(c.Names, ","))
	}
	return ids
}

// run executes spec, fails the test on an error, and checks that the run left no
// container behind.
func run(t *testing.T, spec executor.Spec) executor.Result {
	t.Helper()
	return runWith(t, ex, spec)
}

// runWith is run on a given executor.
func runWith(t *testing.T, e *executor.Executor, spec executor.Spec) executor.Result {
	t.Helper()
	res, err := e.Run(t.Context(), spec)
	if err != nil {
		t.Fatalf("Run(%q %q): %v", spec.Command, spec.Argv, err)
	}
	assertGone(t, res)
	return res
}

// assertGone checks that no container of the run is left.
func assertGone(t *testing.T, res executor.Result) {
	t.Helper()
	if res.ID == "" {
		return
	}
	if left := managedContainers(context.Background(), res.ID); len(left) > 0 {
		t.Errorf("run %s left containers: %v", res.ID, left)
	}
	// A warm sandbox carries the pool's id, and goes a moment after its run:
	// within the minute the executor gives a removal (executor/run.go, discard),
	// which a loaded engine takes tens of seconds of.
	if res.ContainerID == "" {
		return
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := docker.ContainerInspect(context.Background(), res.ContainerID); err != nil {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("run %s left its container %.12s", res.ID, res.ContainerID)
			return
		}
	}
}

// sh is a Spec for a shell command with a short timeout, so that a hang fails fast.
func sh(command string) executor.Spec {
	return executor.Spec{Command: command, Timeout: 30}
}

func assertState(t *testing.T, res executor.Result, state executor.State, code int) {
	t.Helper()
	if res.State != state || res.ExitCode != code {
		t.Fatalf("state %s exit %d, want %s exit %d\nstdout: %.500s\nstderr: %.500s\nerror: %s",
			res.State, res.ExitCode, state, code, res.Stdout, res.Stderr, res.Error)
	}
}

// since returns how long ago t0 was, for bounds on how long a run took to end.
func since(t0 time.Time) time.Duration { return time.Since(t0).Round(time.Millisecond) }

// cancelOnWrite is a live-output writer that cancels after the first output.
func cancelOnWrite(cancel context.CancelFunc, after time.Duration) *onWrite {
	return &onWrite{fn: func() { time.AfterFunc(after, cancel) }}
}

type onWrite struct {
	once sync.Once
	fn   func()
}

func (w *onWrite) Write(p []byte) (int, error) {
	w.once.Do(w.fn)
	return len(p), nil
}

// balloon doubles a string until the memory limit kills it. It starts after a
// pause: the engine arms its OOM monitor just after the process starts, and on a
// loaded engine an OOM kill in the first milliseconds can go unflagged (README,
// "Not there yet"). The tests check airlock's reporting of an OOM, not that race.
const balloon = `sleep 1; awk 'BEGIN{s="x"; while(1) s=s s}'`
