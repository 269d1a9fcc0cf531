package integration

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/api"
)

// TestClusterOutputOfARunningJobFromAnyNode reads, through a node that does
// not run it, the output of a job while it runs: a page, and a follow that
// gets every line as it is written and then the job's end.
func TestClusterOutputOfARunningJobFromAnyNode(t *testing.T) {
	nodes := startCluster(t, 2, 4)
	ctx := t.Context()
	// A job that writes a line, then one every 300 ms, and ends.
	p, err := nodes[0].c.Start(ctx, api.Spec{Command: "echo up; for i in 1 2 3 4 5; do sleep 0.3; echo line-$i; done", QueueTimeout: 60})
	if err != nil {
		t.Fatal(err)
	}
	checkStarted(t, nodes, p)
	other := otherNode(t, nodes, p.Node)

	// A page while it runs: the first line is there.
	if !eventually(10*time.Second, func() bool {
		l, err := other.c.Logs(ctx, p.ID, api.LogsOptions{Stream: "stdout"})
		return err == nil && strings.HasPrefix(string(l.Stdout), "up\n")
	}) {
		l, err := other.c.Logs(ctx, p.ID, api.LogsOptions{Stream: "stdout"})
		t.Fatalf("logs of running job %s (node %s) via node %s: %q, %v", p.ID, p.Node, other.id, l.Stdout, err)
	}
	r, err := other.c.Get(ctx, p.ID)
	if err != nil || r.Node != p.Node {
		t.Errorf("get via node %s: node %q, %v; want %s", other.id, r.Node, err, p.Node)
	}

	// A follow from the start: every byte once, in order, then the end.
	var mu sync.Mutex
	var got strings.Builder
	var chunks int
	l, err := other.c.Logs(ctx, p.ID, api.LogsOptions{Stream: "stdout", Follow: func(c api.LogChunk) error {
		mu.Lock()
		defer mu.Unlock()
		if int64(got.Len()) != c.Offset {
			t.Errorf("chunk at offset %d after %d bytes", c.Offset, got.Len())
		}
		got.Write(c.Data)
		chunks++
		return nil
	}})
	want := "up\nline-1\nline-2\nline-3\nline-4\nline-5\n"
	if err != nil || got.String() != want || l.State != api.StateCompleted {
		t.Fatalf("follow via node %s: %q (%d chunks), state %s, %v; want %q, completed", other.id, got.String(), chunks, l.State, err, want)
	}
	if chunks < 2 {
		t.Errorf("the follow got the output in %d chunk(s): it was not live", chunks)
	}
	if got := stdoutOf(t, other, p.ID); got != want {
		t.Errorf("logs after the end via node %s: %q, want %q", other.id, got, want)
	}
}

// TestClusterRunsWaitTheirTurn runs foreground runs through a one-slot node:
// they take turns in the cluster's queue, and one that cannot get the slot
// within its queue timeout fails with queue_timeout, having run nothing.
func TestClusterRunsWaitTheirTurn(t *testing.T) {
	nodes := startCluster(t, 1, 1)
	a := nodes[0]
	ctx := t.Context()

	// Eight runs at once through one slot: every one completes, one at a time.
	var wg sync.WaitGroup
	results := make([]api.Result, 8)
	errs := make([]error, 8)
	for i := range results {
		wg.Go(func() {
			results[i], errs[i] = a.c.Run(ctx, api.Spec{Command: "echo run; sleep 0.2", QueueTimeout: 120}, nil, nil)
		})
	}
	wg.Wait()
	for i, r := range results {
		if errs[i] != nil || r.State != api.StateCompleted || r.Stdout != "run\n" {
			t.Errorf("run %d: %s %q %v", i, r.State, r.Stdout, errs[i])
		}
	}

	// The slot is taken by a job: a run with a 1 s queue timeout gives up.
	p, err := a.c.Start(ctx, api.Spec{Command: "sleep 300", QueueTimeout: 30})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	r, err := a.c.Run(ctx, api.Spec{Command: "echo should-not-run", QueueTimeout: 1}, nil, nil)
	var apiErr *api.Error
	if err == nil || !errors.As(err, &apiErr) || apiErr.Status != 503 || apiErr.Code != "queue_timeout" {
		t.Fatalf("run on a full node: %+v, %v; want 503 queue_timeout", r, err)
	}
	if d := time.Since(t0); d < time.Second || d > 10*time.Second {
		t.Errorf("the run gave up after %s; its queue timeout was 1 s", d)
	}
	if !strings.Contains(err.Error(), "queue timeout of 1s") {
		t.Errorf("the error does not name the wait: %v", err)
	}
	killJob(t, a, p.ID)
	// The slot is free again.
	if r, err := a.c.Run(ctx, api.Spec{Command: "echo after", QueueTimeout: 30}, nil, nil); err != nil || r.Stdout != "after\n" {
		t.Fatalf("run after the job ended: %+v, %v", r, err)
	}
}
