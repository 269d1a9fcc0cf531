package integration

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/client"
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

// TestClusterRunWaitsLongInTheQueue: a foreground run that waits 30 s in the
// cluster's queue (twice its timeout and the grace past it that its HTTP
// answer once had, the node's write timeout of 5 s) still gets its Result, and its stream says it is queued while it
// waits. A background start into the full node is answered at once, queued,
// with its id, and runs once room frees.
func TestClusterRunWaitsLongInTheQueue(t *testing.T) {
	t.Parallel() // it mostly waits
	nodes := startCluster(t, 1, 1, "--write-timeout", "5")
	a := nodes[0]
	ctx := t.Context()
	p, err := a.c.Start(ctx, api.Spec{Command: "sleep 300", QueueTimeout: 30})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, a, p.ID, api.StateRunning, 30*time.Second)

	type answer struct {
		res api.Result
		err error
	}
	queued := make(chan string, 1)
	got := make(chan answer, 1)
	t0 := time.Now()
	go func() {
		res, err := a.c.Run(ctx, api.Spec{Command: "echo waited", Timeout: 10, QueueTimeout: 90}, io.Discard, nil,
			client.Queued(func(id string) { queued <- id }))
		got <- answer{res, err}
	}()
	var runID string
	select {
	case runID = <-queued:
	case ans := <-got:
		t.Fatalf("the run answered while the node's one slot was taken: %+v, %v", ans.res, ans.err)
	case <-time.After(30 * time.Second):
		t.Fatal("the run's stream did not say it was queued within 30 s")
	}
	t1 := time.Now()
	q, err := a.c.Start(ctx, api.Spec{Command: "echo later", QueueTimeout: 300})
	if d := since(t1); err != nil || q.ID == "" || q.State != api.StateQueued || d > 10*time.Second {
		t.Fatalf("a start into the full node, answered after %s: %+v, %v; want it queued, with its id, at once", d, q, err)
	}

	time.Sleep(30*time.Second - since(t0))
	select {
	case ans := <-got:
		t.Fatalf("the run answered before its place freed: %+v, %v", ans.res, ans.err)
	default:
	}
	killJob(t, a, p.ID)
	select {
	case ans := <-got:
		if ans.err != nil || ans.res.State != api.StateCompleted || ans.res.Stdout != "waited\n" || ans.res.ID != runID {
			t.Fatalf("the run that waited %s: %+v, %v; want it completed, id %s", since(t0), ans.res, ans.err, runID)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the run got no answer within 60 s of its place freeing")
	}
	t.Logf("the run waited %s in the queue and completed", since(t0))
	if r := waitEnd(t, a, q.ID); r.State != api.StateCompleted || r.Stdout != "later\n" {
		t.Fatalf("the queued job: %s, stdout %q; want it completed", r.State, r.Stdout)
	}
}

// TestClusterWorkspaceFromAnyNode makes a workspace through one node and uses
// it through the other: its files are written and read there, a job on it is
// placed on the node that holds it, and a run on it sent to the wrong node is
// told where to go.
func TestClusterWorkspaceFromAnyNode(t *testing.T) {
	nodes := startCluster(t, 2, 4)
	a, b := nodes[0], nodes[1]
	ctx := t.Context()
	w, err := a.c.CreateWorkspace(ctx, api.WorkspaceSpec{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.c.RemoveWorkspace(context.Background(), w.ID) }) // when the test fails before it does

	if err := b.c.PutFile(ctx, w.ID, "in/hello.txt", 0o644, strings.NewReader("hello from b\n")); err != nil {
		t.Fatalf("put a file through node %s: %v", b.id, err)
	}
	list, err := b.c.ListFiles(ctx, w.ID, "in")
	if err != nil || len(list.Files) != 1 || list.Files[0].Name != "hello.txt" {
		t.Fatalf("list through node %s: %+v, %v", b.id, list, err)
	}
	all, err := b.c.Workspaces(ctx)
	seen := 0
	for _, x := range all {
		if x.ID == w.ID {
			seen++
		}
	}
	if err != nil || seen != 1 {
		t.Fatalf("workspaces through node %s: %+v, %v; want %s once", b.id, all, err, w.ID)
	}

	// A job on it, started through b, runs on a, where the files are.
	p, err := b.c.Start(ctx, api.Spec{Command: "cat in/hello.txt; echo made > out.txt", Workspace: w.ID, QueueTimeout: 60})
	if err != nil {
		t.Fatal(err)
	}
	if p.Node != a.id {
		t.Fatalf("a job on a workspace of node %s ran on %q", a.id, p.Node)
	}
	if r := waitEnd(t, b, p.ID); r.State != api.StateCompleted || r.Stdout != "hello from b\n" {
		t.Fatalf("job on the workspace: %s %q %s", r.State, r.Stdout, r.Error)
	}
	f, _, err := b.c.OpenFile(ctx, w.ID, "out.txt")
	if err != nil {
		t.Fatalf("read the job's file through node %s: %v", b.id, err)
	}
	data, _ := io.ReadAll(f)
	f.Close()
	if string(data) != "made\n" {
		t.Fatalf("out.txt through node %s: %q", b.id, data)
	}

	// A run on it, sent to b, runs on a, where the files are; its caller
	// follows it through b: the id as it opens, the output as it is written,
	// the Result.
	var opened string
	var live strings.Builder
	r, err := b.c.Run(ctx, api.Spec{Command: "cat out.txt; echo oops >&2; exit 3", Workspace: w.ID}, &live, io.Discard,
		client.Opened(func(id string) { opened = id }))
	if err != nil || r.ExitCode != 3 || r.Stdout != "made\n" || r.Stderr != "oops\n" || live.String() != "made\n" {
		t.Fatalf("a run on node %s's workspace through node %s: exit %d stdout %q stderr %q live %q, %v", a.id, b.id, r.ExitCode, r.Stdout, r.Stderr, live.String(), err)
	}
	if r.Node != a.id || opened == "" || opened != r.ID {
		t.Fatalf("the run through node %s: node %q, id %q, opened as %q; want node %s and one id", b.id, r.Node, r.ID, opened, a.id)
	}
	if r, err := b.c.Run(ctx, api.Spec{Command: "echo more >> out.txt; cat out.txt", Workspace: w.ID}, nil, nil); err != nil || r.Stdout != "made\nmore\n" {
		t.Fatalf("a run on the workspace through node %s, in one answer: %+v, %v", b.id, r, err)
	}

	// A caller that leaves ends the run it sent through b.
	leave, cancel := context.WithCancel(ctx)
	began := make(chan struct{})
	go func() {
		<-began
		time.Sleep(time.Second)
		cancel()
	}()
	_, err = b.c.Run(leave, api.Spec{Command: "echo started > started.txt; sleep 3; echo late > late.txt", Workspace: w.ID}, io.Discard, io.Discard,
		client.Opened(func(string) { close(began) }))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a run whose caller left: %v", err)
	}
	time.Sleep(4 * time.Second) // past the run's end, had it gone on
	if r, err := a.c.Run(ctx, api.Spec{Command: "ls", Workspace: w.ID}, nil, nil); err != nil || !strings.Contains(r.Stdout, "started.txt") || strings.Contains(r.Stdout, "late.txt") {
		t.Fatalf("the workspace after the caller left: %q, %v; want started.txt and no late.txt", r.Stdout, err)
	}

	if err := b.c.RemoveWorkspace(ctx, w.ID); err != nil {
		t.Fatalf("remove through node %s: %v", b.id, err)
	}
	if _, err := a.c.Workspace(ctx, w.ID); !errors.Is(err, api.ErrWorkspaceNotFound) {
		t.Fatalf("the workspace after its removal through node %s: %v", b.id, err)
	}
}
