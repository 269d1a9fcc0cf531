package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/airlock-sandbox/airlock/executor"
)

// requirePatchedRunc fails when the engine lacks airlock's patched runc:
// `make test` and .ci/run register it (.ci/install-runc).
func requirePatchedRunc(t *testing.T) {
	t.Helper()
	if rt, v := ex.RuncRuntime(); rt != executor.PatchedRunc {
		t.Fatalf("runc sandboxes run under the engine's own runc %q (version %q): the engine does not offer %s (it offers %v); run make runc",
			rt, v, executor.PatchedRunc, ex.EngineRuntimes())
	}
}

// engineRuntime is the runtime the engine created a container under.
func engineRuntime(t *testing.T, id string) string {
	t.Helper()
	in, err := docker.ContainerInspect(context.Background(), id)
	if err != nil {
		t.Fatalf("inspect %s: %v", id, err)
	}
	return in.HostConfig.Runtime
}

// TestPatchedRunc: a run asking runc, or no runtime, a background job and
// the warm pool's runc sandboxes are all made under the patched runc, as the
// engine records them; their Results still say runc. gVisor's stay runsc.
func TestPatchedRunc(t *testing.T) {
	requirePatchedRunc(t)
	if _, v := ex.RuncRuntime(); v == "" || strings.HasPrefix(v, "1.1.") {
		t.Errorf("the patched runc's version is %q, want the one .ci/install-runc builds", v)
	}

	t.Run("foreground", func(t *testing.T) {
		for _, asked := range []string{"", "runc"} {
			// unchecked has no pool: its sandbox is created for the run, and
			// found by the run's label while it sleeps.
			mark := executor.NewID()
			done := make(chan executor.Result, 1)
			go func() {
				res, _ := unchecked.Run(context.Background(), executor.Spec{Command: "sleep 3", Runtime: asked, Timeout: 30,
					Labels: map[string]string{"test.runc": mark}})
				done <- res
			}()
			var id string
			for deadline := time.Now().Add(20 * time.Second); id == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				list, err := docker.ContainerList(t.Context(), container.ListOptions{All: true,
					Filters: filters.NewArgs(filters.Arg("label", "test.runc="+mark))})
				if err != nil {
					t.Fatal(err)
				}
				if len(list) > 0 {
					id = list[0].ID
				}
			}
			if id == "" {
				t.Fatalf("runtime %q: no container with the run's label appeared", asked)
			}
			if got := engineRuntime(t, id); got != executor.PatchedRunc {
				t.Errorf("runtime %q: the engine made the run's container under %q, want %s", asked, got, executor.PatchedRunc)
			}
			res := <-done
			assertState(t, res, executor.StateCompleted, 0)
			if res.Runtime != "runc" {
				t.Errorf("runtime %q: Result.runtime = %q, want runc", asked, res.Runtime)
			}
			assertGone(t, res)
		}
	})

	t.Run("background", func(t *testing.T) {
		p, err := ex.Start(t.Context(), executor.Spec{Command: "sleep 30"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ex.Kill(context.Background(), p.ID, "SIGKILL", 0) })
		if got := engineRuntime(t, "airlock-"+p.ID); got != executor.PatchedRunc {
			t.Errorf("the job's container is under %q, want %s", got, executor.PatchedRunc)
		}
		if p.Runtime != "runc" {
			t.Errorf("the job's runtime = %q, want runc", p.Runtime)
		}
		if _, err := ex.Kill(t.Context(), p.ID, "SIGKILL", 0); err != nil {
			t.Fatal(err)
		}
		waitJob(t, ex, p.ID)
	})

	t.Run("warm pool", func(t *testing.T) {
		if len(ex.PoolStats()) == 0 {
			t.Skip("AIRLOCK_TEST_POOL=off: no warm sandbox")
		}
		// A run claims a warm sandbox; the pool refills behind it.
		res := run(t, sh("true"))
		assertState(t, res, executor.StateCompleted, 0)
		seen := map[string]int{}
		for deadline := time.Now().Add(60 * time.Second); seen[executor.PatchedRunc] == 0 && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			list, err := docker.ContainerList(t.Context(), container.ListOptions{
				Filters: filters.NewArgs(filters.Arg("label", "io.airlock.pool"), filters.Arg("label", executor.LabelManaged+"=true"))})
			if err != nil {
				t.Fatal(err)
			}
			clear(seen)
			for _, c := range list {
				in, err := docker.ContainerInspect(t.Context(), c.ID)
				if err != nil {
					continue // claimed and gone since the list
				}
				rt := in.HostConfig.Runtime
				seen[rt]++
				if rt == "runc" {
					t.Fatalf("warm sandbox %.12s is under the engine's own runc", c.ID)
				}
			}
		}
		if seen[executor.PatchedRunc] == 0 {
			t.Errorf("no warm sandbox under %s; the pool's are under %v", executor.PatchedRunc, seen)
		}
	})
}
