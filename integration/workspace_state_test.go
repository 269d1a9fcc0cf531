package integration

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/airlock-sandbox/airlock/executor"
)

// A removal races jobs (and a foreground run, through the warm pool) starting
// on the workspace. All or nothing: a removal refused as busy leaves every file
// there and readable; a removal that succeeds leaves no run that saw the
// workspace without its files, and a start it beat fails with an error about
// the workspace.
func TestWorkspaceDeleteRacesStarts(t *testing.T) {
	ctx := context.Background()
	caller := executor.Caller{}
	var refused, removed int
	for i := range 12 {
		w, err := ex.CreateWorkspace(ctx, executor.WorkspaceSpec{Size: 4 << 20}, caller)
		if err != nil {
			t.Fatal(err)
		}
		gone := false
		t.Cleanup(func() {
			if !gone {
				ex.RemoveWorkspace(context.Background(), w.ID, caller)
			}
		})
		if err := ex.PutFile(ctx, w.ID, "keep.txt", 0, strings.NewReader("precious"), caller); err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var jobs []string
		startErrs := map[string]error{}
		for range 3 {
			wg.Go(func() {
				p, err := ex.Start(ctx, executor.Spec{Command: "cat keep.txt", Workspace: w.ID, Timeout: 30})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					startErrs["job"] = err
					return
				}
				jobs = append(jobs, p.ID)
			})
		}
		var run executor.Result
		var runErr error
		wg.Go(func() {
			run, runErr = ex.Run(ctx, executor.Spec{Command: "cat keep.txt", Workspace: w.ID, Timeout: 30})
		})
		var delErr error
		wg.Go(func() {
			time.Sleep(time.Duration(rand.IntN(1500)) * time.Millisecond)
			delErr = ex.RemoveWorkspace(ctx, w.ID, caller)
		})
		wg.Wait()

		clear := func(what string, err error) {
			if !errors.Is(err, executor.ErrWorkspaceNotFound) && !errors.Is(err, executor.ErrWorkspaceBusy) &&
				!(errors.Is(err, executor.ErrInvalidSpec) && strings.Contains(err.Error(), "workspace")) {
				t.Errorf("iteration %d: %s failed without saying why in the workspace's terms: %v", i, what, err)
			}
		}
		for what, err := range startErrs {
			clear(what, err)
		}
		if runErr != nil {
			clear("run", runErr)
		} else if run.ExitCode != 0 || run.Stdout != "precious" {
			t.Errorf("iteration %d: a run started on the workspace but did not see its files: exit %d %q %q", i, run.ExitCode, run.Stdout, run.Stderr)
		}
		for _, id := range jobs {
			res, err := ex.Wait(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			ex.Remove(ctx, id)
			if res.ExitCode != 0 {
				t.Errorf("iteration %d: job %s started on the workspace but did not see its files: exit %d %s", i, id, res.ExitCode, res.Error)
			}
		}
		switch {
		case errors.Is(delErr, executor.ErrWorkspaceBusy):
			refused++
			got, err := ex.Workspace(ctx, w.ID, caller)
			if err != nil || got.Lost {
				t.Fatalf("iteration %d: a removal answered busy (%v), and then the workspace is %+v (%v)", i, delErr, got, err)
			}
			if s := readFile(t, w.ID, "keep.txt"); s != "precious" {
				t.Fatalf("iteration %d: a removal answered busy, and then keep.txt holds %q", i, s)
			}
			// Nothing runs on it any more: the removal goes through.
			if err := ex.RemoveWorkspace(ctx, w.ID, caller); err != nil {
				t.Fatalf("iteration %d: remove once the runs ended: %v", i, err)
			}
		case delErr != nil:
			t.Fatalf("iteration %d: remove: %v", i, delErr)
		default:
			removed++
		}
		gone = true
		if _, err := ex.Workspace(ctx, w.ID, caller); !errors.Is(err, executor.ErrWorkspaceNotFound) {
			t.Errorf("iteration %d: after its removal the workspace is still there: %v", i, err)
		}
		// A start that came after the removal leaves no volume the engine made
		// for it (plain, unbounded).
		if !eventually(10*time.Second, func() bool {
			_, err := docker.VolumeInspect(ctx, "airlock-"+w.ID)
			return err != nil
		}) {
			t.Errorf("iteration %d: a volume of the removed workspace is left", i)
		}
		// What ran on it, or was warm on it, goes with it.
		var left []container.Summary
		if !eventually(20*time.Second, func() bool {
			left, err = docker.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(
				filters.Arg("label", executor.LabelWorkspace+"="+w.ID))})
			return err == nil && len(left) == 0
		}) {
			for _, c := range left {
				t.Errorf("iteration %d: left on the removed workspace: %s %v %s", i, c.ID[:12], c.Names, c.State)
			}
		}
	}
	t.Logf("%d removals refused as busy, %d went through", refused, removed)
}

// After a run on a workspace the pool keeps a sandbox warm on it: that
// sandbox is no run, and does not hold up a removal, even from another
// process (a CLI beside the server).
func TestWorkspaceInUseIgnoresWarmSandboxes(t *testing.T) {
	if os.Getenv("AIRLOCK_TEST_POOL") == "off" {
		t.Skip("the suite runs without a warm pool")
	}
	ctx := context.Background()
	caller := executor.Caller{}
	w := newWorkspace(t, executor.WorkspaceSpec{})
	runIn(t, w.ID, "echo kept > kept.txt")
	warm := func() int {
		cs, err := docker.ContainerList(ctx, container.ListOptions{Filters: filters.NewArgs(
			filters.Arg("label", executor.LabelWorkspace+"="+w.ID), filters.Arg("label", "io.airlock.pool"))})
		if err != nil {
			t.Fatal(err)
		}
		return len(cs)
	}
	inUse := func() int {
		got, err := ex.Workspace(ctx, w.ID, caller)
		if err != nil {
			t.Fatal(err)
		}
		return got.InUse
	}
	// The sandbox the run used goes, its successor comes.
	if !eventually(30*time.Second, func() bool { return warm() == 1 && inUse() == 0 }) {
		t.Fatalf("after the run: %d warm sandbox(es) on the workspace, in_use %d; want 1 and 0", warm(), inUse())
	}
	for range 5 {
		if n := inUse(); n != 0 {
			t.Fatalf("in_use = %d with only a warm sandbox on the workspace", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	p, err := ex.Start(ctx, executor.Spec{Command: "sleep 30", Workspace: w.ID})
	if err != nil {
		t.Fatal(err)
	}
	if n := inUse(); n != 1 {
		t.Errorf("in_use = %d while a job runs, want 1", n)
	}
	ex.Kill(ctx, p.ID, "KILL", 0)
	ex.Wait(ctx, p.ID)
	ex.Remove(ctx, p.ID)

	other, err := executor.New()
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.RemoveWorkspace(ctx, w.ID, caller); err != nil {
		t.Fatalf("remove from another process while this one keeps a warm sandbox on it: %v", err)
	}
	if n := warm(); n != 0 {
		t.Errorf("%d warm sandbox(es) left on the removed workspace", n)
	}
	// The next run on it is told it is gone.
	if _, err := ex.Run(ctx, executor.Spec{Command: "true", Workspace: w.ID}); !errors.Is(err, executor.ErrInvalidSpec) {
		t.Errorf("run on the removed workspace: %v", err)
	}
}
