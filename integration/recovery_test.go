package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/store"
)

// TestBackgroundCrashRecovery starts jobs from airlock CLI processes, then
// SIGKILLs one airlock process after another while they copy the jobs' output,
// lets a job finish and removes another's container while no airlock process
// runs, and finally opens a new executor on the same data dir: every job must
// have its true state, exit code and complete output, byte for byte, and no
// container may be left.
func TestBackgroundCrashRecovery(t *testing.T) {
	dir := t.TempDir()
	s, err := store.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ours := filters.NewArgs(filters.Arg("label", executor.LabelStore+"="+s.ID()))
	t.Cleanup(func() { // whatever failed, leave nothing behind
		list, _ := docker.ContainerList(context.Background(), container.ListOptions{All: true, Filters: ours})
		for _, c := range list {
			docker.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true})
		}
	})
	cli := func(args ...string) *exec.Cmd {
		cmd := exec.Command(airlockCLI(t), args...)
		cmd.Env = append(os.Environ(), "AIRLOCK_DATA="+dir)
		return cmd
	}
	startJob := func(command string) string {
		out, err := cli("start", "--", command).Output()
		if err != nil {
			t.Fatalf("airlock start %q: %v", command, err)
		}
		return strings.TrimSpace(string(out))
	}

	var longLines strings.Builder
	for i := 1; i <= 6; i++ {
		longLines.WriteString(strings.Repeat(fmt.Sprint(i), 40000) + "\n")
	}
	longLines.WriteString("end\n")
	jobs := map[string]string{
		// runs through every crash and past the recovery
		"counter": startJob(`for i in $(seq 1 200); do echo $i; sleep 0.04; done`),
		// ends while no airlock process runs, after the crashes
		"finisher": startJob(`echo begin; sleep 5; echo end >&2; exit 7`),
		// lines the engine splits into pieces, interleaved with stderr, across crashes
		// (a stream that ends with such a line loses its last newline: see logCursor)
		"long-lines": startJob(`for i in 1 2 3 4 5 6; do head -c 40000 /dev/zero | tr '\0' $i; echo; echo err$i >&2; sleep 0.5; done; echo end`),
		// its container is removed behind airlock's back
		"vanishing": startJob(`sleep 1000`),
	}

	// Crash after crash: each `airlock wait` adopts the running jobs and copies
	// their output until it is killed at a random moment.
	for range 6 {
		cmd := cli("wait", jobs["counter"])
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(200+rand.IntN(400)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}

	// Nothing of airlock runs now.
	ctx := t.Context()
	if err := docker.ContainerRemove(ctx, "airlock-"+jobs["vanishing"], container.RemoveOptions{Force: true}); err != nil {
		t.Fatalf("remove the vanishing job's container: %v", err)
	}
	stray, err := docker.ContainerCreate(ctx, &container.Config{Image: "airlock/minimal", Cmd: []string{"sleep", "1000"}, Labels: map[string]string{
		executor.LabelManaged: "true", executor.LabelID: "000000000000000000000bad", executor.LabelStore: s.ID(),
	}}, nil, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	waitExited(t, "airlock-"+jobs["finisher"])

	cfg := executor.DefaultConfig()
	cfg.DataDir = dir
	e, err := executor.New(executor.WithConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}

	r := waitJob(t, e, jobs["counter"])
	assertState(t, r, executor.StateCompleted, 0)
	if r.Stdout != numbers(200) {
		t.Errorf("counter: stdout is not 1..200 exactly:\n%s", diffLines(r.Stdout, numbers(200)))
	}

	r = waitJob(t, e, jobs["finisher"])
	assertState(t, r, executor.StateCompleted, 7)
	if r.Stdout != "begin\n" || r.Stderr != "end\n" {
		t.Errorf("finisher: stdout %q stderr %q", r.Stdout, r.Stderr)
	}

	r = waitJob(t, e, jobs["long-lines"])
	assertState(t, r, executor.StateCompleted, 0)
	if r.Stdout != longLines.String() || r.Stderr != "err1\nerr2\nerr3\nerr4\nerr5\nerr6\n" {
		t.Errorf("long-lines: stdout %d bytes (want %d, equal %v), stderr %q", len(r.Stdout), longLines.Len(), r.Stdout == longLines.String(), r.Stderr)
	}
	if l, _ := e.Logs(ctx, jobs["long-lines"], executor.LogsOptions{}); l.StdoutBytes != int64(longLines.Len()) {
		t.Errorf("long-lines: stdout_bytes %d, want %d", l.StdoutBytes, longLines.Len())
	}

	r, err = e.Get(ctx, jobs["vanishing"])
	if err != nil {
		t.Fatal(err)
	}
	assertState(t, r, executor.StateFailed, 125)
	if !strings.Contains(r.Error, "removed outside airlock") {
		t.Errorf("vanishing: error %q, want the reason", r.Error)
	}

	if _, err := docker.ContainerInspect(ctx, stray.ID); err == nil {
		t.Errorf("a container labelled with the store but with no job record was not removed")
		docker.ContainerRemove(ctx, stray.ID, container.RemoveOptions{Force: true})
	}
	left, _ := docker.ContainerList(ctx, container.ListOptions{All: true, Filters: ours})
	if len(left) > 0 {
		t.Errorf("%d containers of the data dir left after recovery", len(left))
	}
}

// waitExited waits for a container to stop, without removing it.
func waitExited(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for ctx.Err() == nil {
		in, err := docker.ContainerInspect(ctx, name)
		if err != nil {
			t.Fatalf("inspect %s: %v", name, err)
		}
		if !in.State.Running {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s still running", name)
}

// diffLines shows where two line lists first differ.
func diffLines(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return fmt.Sprintf("line %d: got %q, want %q (got %d lines, want %d)", i+1, g[i], w[i], len(g), len(w))
		}
	}
	return fmt.Sprintf("got %d lines, want %d", len(g), len(w))
}

// TestAbandonedSandboxesAreRemoved: a foreground sandbox whose airlock process
// died stays on the engine; the next executor removes it once the deadline on its
// label has passed, and leaves alone one whose owner may still be running it.
// New alone changes nothing: removal is Reconcile's.
func TestAbandonedSandboxesAreRemoved(t *testing.T) {
	ctx := t.Context()
	create := func(deadline time.Time) string {
		c, err := docker.ContainerCreate(ctx, &container.Config{Image: "airlock/minimal", Cmd: []string{"sleep", "1000"}, Labels: map[string]string{
			executor.LabelManaged:  "true",
			executor.LabelID:       "abandoned-" + fmt.Sprint(deadline.Unix()),
			executor.LabelDeadline: deadline.UTC().Format(time.RFC3339),
		}}, nil, nil, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { docker.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true}) })
		return c.ID
	}
	past, future := create(time.Now().Add(-time.Minute)), create(time.Now().Add(time.Hour))
	cfg := executor.DefaultConfig()
	cfg.DataDir = t.TempDir()
	e, err := executor.New(executor.WithConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := docker.ContainerInspect(ctx, past); err != nil {
		t.Fatal("New removed a container: it should only connect")
	}
	if err := e.Reconcile(ctx); err != nil {
		t.Fatal(err)
	}
	e.Close()
	if _, err := docker.ContainerInspect(ctx, past); err == nil {
		t.Error("a sandbox past its deadline was not removed")
	}
	if _, err := docker.ContainerInspect(ctx, future); err != nil {
		t.Errorf("a sandbox within its deadline was removed: %v", err)
	}
}
