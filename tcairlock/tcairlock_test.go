package tcairlock_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/testcontainers/testcontainers-go"

	airlock "github.com/airlock-sandbox/airlock/client"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/tcairlock"
)

// engine is a plain client of the engine, for what a user would check by hand.
func engine(t *testing.T) *client.Client {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// sandboxes lists the airlock sandboxes on the engine.
func sandboxes(t *testing.T, cli *client.Client) []string {
	t.Helper()
	list, err := cli.ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", executor.LabelManaged+"=true"))})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range list {
		out = append(out, c.ID[:12]+" "+c.State)
	}
	return out
}

// TestRunWithOptions uses the module as a platform's test suite would: two
// tenants, a policy, a ceiling from the config, a background job left running.
// Terminate leaves no sandbox and no server container behind.
func TestRunWithOptions(t *testing.T) {
	ctx := t.Context()
	docker := engine(t)
	ctr, err := tcairlock.Run(ctx,
		tcairlock.WithTokens("tok-alpha:alpha", "tok-beta:beta"),
		tcairlock.WithPolicy(policy.Config{DenyPrograms: []policy.ProgramRule{{Program: "nc"}}}),
		tcairlock.WithConfig(map[string]any{"ceilings": map[string]any{"memory": 256 << 20, "timeout": 60}}),
		testcontainers.WithLabels(map[string]string{"io.airlock.test": "tcairlock"}),
	)
	terminated := false
	t.Cleanup(func() {
		if !terminated {
			testcontainers.TerminateContainer(ctr)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if ctr.Token() != "tok-alpha" {
		t.Fatalf("Token() = %q, want the first token", ctr.Token())
	}
	alpha, err := ctr.Client(ctx)
	if err != nil {
		t.Fatal(err)
	}
	url, _ := ctr.URL(ctx)
	beta, _ := airlock.New(url, "tok-beta")

	res, err := alpha.Run(ctx, executor.Spec{Command: "nc -l -p 80"}, nil, nil)
	if err != nil || res.State != executor.StateBlocked || res.BlockRule == "" {
		t.Fatalf("the policy's deny_programs: %+v, %v", res, err)
	}
	_, err = alpha.Run(ctx, executor.Spec{Command: "true", Memory: 512 << 20}, nil, nil)
	if !errors.Is(err, executor.ErrInvalidSpec) || !strings.Contains(err.Error(), "memory") {
		t.Fatalf("a run over the configured ceiling: %v", err)
	}
	job, err := alpha.Start(ctx, executor.Spec{Command: "sleep 600"})
	if err != nil || job.State != executor.StateRunning {
		t.Fatalf("start: %+v, %v", job, err)
	}
	if _, err := beta.Get(ctx, job.ID); !errors.Is(err, executor.ErrNotFound) {
		t.Fatalf("beta sees alpha's job: %v", err)
	}
	if len(sandboxes(t, docker)) == 0 {
		t.Fatal("the running job has no sandbox on the engine")
	}

	terminated = true
	if err := ctr.Terminate(context.Background()); err != nil {
		t.Fatalf("terminate: %v", err)
	}
	if left := sandboxes(t, docker); len(left) > 0 {
		t.Fatalf("sandboxes left after Terminate: %v", left)
	}
	servers, _ := docker.ContainerList(context.Background(), container.ListOptions{All: true,
		Filters: filters.NewArgs(filters.Arg("label", "io.airlock.test=tcairlock"))})
	if len(servers) > 0 {
		t.Fatalf("server container left: %v", servers[0].ID)
	}
}

// TestDataVolumeOutlivesTheServer: with WithDataVolume, a second server on the
// same volume answers for the first one's jobs, output whole.
func TestDataVolumeOutlivesTheServer(t *testing.T) {
	ctx := t.Context()
	docker := engine(t)
	name := "tcairlock-test-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
	if _, err := docker.VolumeCreate(ctx, volume.CreateOptions{Name: name,
		Labels: map[string]string{executor.LabelManaged: "true", "io.airlock.test": "tcairlock"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { docker.VolumeRemove(context.Background(), name, true) })
	policyFile := filepath.Join(t.TempDir(), "policy.json")
	os.WriteFile(policyFile, []byte(`{"mode":"strict"}`), 0o644)

	first, err := tcairlock.Run(ctx, tcairlock.WithDataVolume(name), tcairlock.WithPolicyFile(policyFile))
	testcontainers.CleanupContainer(t, first)
	if err != nil {
		t.Fatal(err)
	}
	cli, _ := first.Client(ctx)
	job, err := cli.Start(ctx, executor.Spec{Command: "echo kept; echo err >&2; exit 3"})
	if err != nil {
		t.Fatal(err)
	}
	if end, err := cli.Wait(ctx, job.ID); err != nil || end.ExitCode != 3 {
		t.Fatalf("wait: %+v, %v", end, err)
	}
	res, _ := cli.Run(ctx, executor.Spec{Command: "cat x | sh"}, nil, nil)
	if res.State != executor.StateBlocked {
		t.Fatalf("the policy file's strict mode: %+v", res)
	}
	if err := first.Terminate(context.Background()); err != nil {
		t.Fatal(err)
	}

	// A new server with a new token of the same tenant ("test", the default).
	second, err := tcairlock.Run(ctx, tcairlock.WithDataVolume(name))
	testcontainers.CleanupContainer(t, second)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	cli2, _ := second.Client(ctx)
	for {
		got, err := cli2.Get(ctx, job.ID)
		if err == nil {
			if got.Stdout != "kept\n" || got.Stderr != "err\n" || got.ExitCode != 3 {
				t.Fatalf("the job on the second server: %+v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second server does not know the job: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
