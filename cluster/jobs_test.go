package cluster_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/cluster"
)

func TestJobLife(t *testing.T) {
	c := fresh(t)
	ctx := t.Context()
	register(t, c, "a", 2, GiB)
	spec := json.RawMessage(`{"command": "echo hi", "memory": "256m"}`)
	j := enqueue(t, c, cluster.NewJob{ID: "j1", Tenant: "t", Spec: spec, Memory: 256 * MiB, Retry: 1})
	if j.State != api.StateQueued || j.Attempt != 0 || j.Node != "" || j.QueuedAt.IsZero() ||
		!j.QueueDeadline.After(j.QueuedAt) || j.QueueTimeout != cluster.DefaultQueueTimeout || j.Retry != 1 {
		t.Fatalf("queued job = %+v", j)
	}
	var a, b map[string]any
	json.Unmarshal(spec, &a)
	json.Unmarshal(j.Spec, &b)
	if a["command"] != b["command"] {
		t.Fatalf("spec = %s", j.Spec)
	}
	if _, err := c.Enqueue(ctx, cluster.NewJob{ID: "j1", Tenant: "t", Spec: spec}); !errors.Is(err, cluster.ErrExists) {
		t.Fatalf("second enqueue of j1 = %v", err)
	}
	if _, err := c.Enqueue(ctx, cluster.NewJob{Tenant: "t", Spec: []byte("{")}); !errors.Is(err, cluster.ErrInvalid) {
		t.Fatalf("enqueue with a bad spec = %v", err)
	}

	j = claim(t, c, "a")
	if err := c.Start(ctx, j.ID, j.Fence()); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx, j.ID, j.Fence()); err != nil {
		t.Fatalf("Start again: %v", err)
	}
	if got := get(t, c, j.ID); got.State != api.StateRunning || got.StartedAt.IsZero() {
		t.Fatalf("started job = %+v", got)
	}
	result := json.RawMessage(`{"id":"j1","state":"completed","exit_code":3}`)
	end := cluster.End{State: api.StateCompleted, ExitCode: 3, Result: result,
		Stdout: cluster.Stream{Data: []byte("hello"), Total: 11}, Stderr: cluster.Stream{Data: []byte("oops\n"), Total: 5}}
	if err := c.Finish(ctx, j.ID, j.Fence(), end); err != nil {
		t.Fatal(err)
	}
	// The same Finish again (its first answer was lost): a success, nothing changes.
	if err := c.Finish(ctx, j.ID, j.Fence(), cluster.End{State: api.StateFailed}); err != nil {
		t.Fatalf("Finish again: %v", err)
	}
	got := get(t, c, j.ID)
	if got.State != api.StateCompleted || *got.ExitCode != 3 || got.EndedBy != "a" || got.EndedAt.IsZero() || !got.Ended() {
		t.Fatalf("ended job = %+v", got)
	}
	// Once ended, a Start is refused.
	if err := c.Start(ctx, j.ID, j.Fence()); !errors.Is(err, cluster.ErrFenced) {
		t.Fatalf("Start of an ended job = %v", err)
	}
	if _, err := c.Get(ctx, "nope"); !errors.Is(err, cluster.ErrNotFound) {
		t.Fatalf("get of an unknown job = %v", err)
	}
	if err := c.Start(ctx, "nope", j.Fence()); !errors.Is(err, cluster.ErrNotFound) {
		t.Fatalf("start of an unknown job = %v", err)
	}
	if err := c.Finish(ctx, j.ID, j.Fence(), cluster.End{State: api.StateQueued}); !errors.Is(err, cluster.ErrInvalid) {
		t.Fatalf("finish as queued = %v", err)
	}
}

// A node that lost the job (paused past its lease: the cluster queued the job
// again and another node took it) writes nothing about it any more.
func TestFencing(t *testing.T) {
	url := newDB(t)
	c := open(t, url)
	ctx := t.Context()
	register(t, c, "a", 1, GiB)
	register(t, c, "b", 1, GiB)
	j := enqueue(t, c, cluster.NewJob{Tenant: "t"})
	stale := claim(t, c, "a").Fence()
	if stale != (cluster.Fence{Node: "a", Attempt: 1}) {
		t.Fatalf("fence = %+v", stale)
	}

	// a stops (SIGSTOP) before starting it; its lease runs out; a sweep puts the
	// job back; b takes it as attempt 2.
	expire(t, url, "a")
	if s, err := c.Sweep(ctx); err != nil || len(s.Requeued) != 1 {
		t.Fatalf("sweep = %+v, %v", s, err)
	}
	fresh := claim(t, c, "b")
	if fresh.ID != j.ID || fresh.Attempt != 2 {
		t.Fatalf("b claimed %+v", fresh)
	}
	if err := c.Start(ctx, j.ID, fresh.Fence()); err != nil {
		t.Fatal(err)
	}
	before := get(t, c, j.ID)

	// a wakes up and carries on as if nothing happened.
	if _, err := c.Heartbeat(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	for name, write := range map[string]func() error{
		"start":   func() error { return c.Start(ctx, j.ID, stale) },
		"finish":  func() error { return c.Finish(ctx, j.ID, stale, completed("stale")) },
		"release": func() error { return c.Release(ctx, j.ID, stale) },
		// The right node with the old attempt is as stale as the wrong node.
		"finish b@1": func() error {
			return c.Finish(ctx, j.ID, cluster.Fence{Node: "b", Attempt: 1}, completed("stale"))
		},
	} {
		err := write()
		if !errors.Is(err, cluster.ErrFenced) {
			t.Fatalf("%s with a stale fence = %v, want ErrFenced", name, err)
		}
		if !strings.Contains(err.Error(), `node "b", attempt 2`) {
			t.Errorf("%s: the error does not say whose the job is: %v", name, err)
		}
	}
	after := get(t, c, j.ID)
	if after.State != before.State || after.Node != "b" || after.Attempt != 2 || after.Ended() {
		t.Fatalf("stale writes changed the job: %+v", after)
	}
	if o, err := c.Output(ctx, j.ID, "stdout", 0, 0); err != nil || o.Size != 0 || len(o.Data) != 0 {
		t.Fatalf("stale Finish stored output: %+v, %v", o, err)
	}
	// b's own word stands.
	if err := c.Finish(ctx, j.ID, fresh.Fence(), completed("b")); err != nil {
		t.Fatal(err)
	}
	if o, _ := c.Output(ctx, j.ID, "stdout", 0, 0); string(o.Data) != "b" {
		t.Fatalf("output = %q", o.Data)
	}
}

// The output of an ended job stays readable from any node after its own node
// is gone, in pages.
func TestOutputOffTheHost(t *testing.T) {
	url := newDB(t)
	c := open(t, url)
	ctx := t.Context()
	register(t, c, "a", 1, GiB)
	j := enqueue(t, c, cluster.NewJob{Tenant: "t"})
	j = claim(t, c, "a")
	c.Start(ctx, j.ID, j.Fence())
	out := bytes.Repeat([]byte("0123456789"), 1000) // 10 000 bytes kept...
	err := c.Finish(ctx, j.ID, j.Fence(), cluster.End{State: api.StateCompleted,
		Stdout: cluster.Stream{Data: out, Total: 1 << 20}, // ...of 1 MiB written
		Stderr: cluster.Stream{Data: []byte{0xff, 0x00, 'x'}, Total: 3}})
	if err != nil {
		t.Fatal(err)
	}
	// a goes away for good; another node's handle reads the output.
	expire(t, url, "a")
	c.Sweep(ctx)
	other := open(t, url)

	o, err := other.Output(ctx, j.ID, "stdout", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(o.Data, out) || o.Size != 10000 || o.Total != 1<<20 || !o.Truncated() || o.Next != 10000 {
		t.Fatalf("whole stdout: %d bytes, %+v", len(o.Data), o)
	}
	o, err = other.Output(ctx, j.ID, "stdout", 9995, 100)
	if err != nil || string(o.Data) != "56789" || o.Next != 10000 {
		t.Fatalf("tail page = %q, %+v, %v", o.Data, o, err)
	}
	o, err = other.Output(ctx, j.ID, "stdout", 3, 4)
	if err != nil || string(o.Data) != "3456" || o.Next != 7 {
		t.Fatalf("middle page = %q, %+v, %v", o.Data, o, err)
	}
	o, err = other.Output(ctx, j.ID, "stdout", 20000, 10)
	if err != nil || len(o.Data) != 0 || o.Next != 10000 {
		t.Fatalf("past the end = %q, %+v, %v", o.Data, o, err)
	}
	o, err = other.Output(ctx, j.ID, "stderr", 0, 0)
	if err != nil || !bytes.Equal(o.Data, []byte{0xff, 0x00, 'x'}) || o.Truncated() {
		t.Fatalf("stderr (raw bytes) = %q, %+v, %v", o.Data, o, err)
	}
	if _, err := other.Output(ctx, "nope", "stdout", 0, 0); !errors.Is(err, cluster.ErrNotFound) {
		t.Fatalf("output of an unknown job = %v", err)
	}
	if _, err := other.Output(ctx, j.ID, "both", 0, 0); !errors.Is(err, cluster.ErrInvalid) {
		t.Fatalf("output of stream both = %v", err)
	}
}

// A node that comes back learns which of the containers it holds are still its
// jobs at their attempt; the rest it must remove.
func TestOwnedAfterReturn(t *testing.T) {
	url := newDB(t)
	c := open(t, url)
	ctx := t.Context()
	register(t, c, "a", 10, 10*GiB)
	register(t, c, "b", 10, 10*GiB)
	placed := enqueue(t, c, cluster.NewJob{ID: "placed", Tenant: "t"})
	started := enqueue(t, c, cluster.NewJob{ID: "started", Tenant: "t"})
	claim(t, c, "a")
	s := claim(t, c, "a")
	c.Start(ctx, s.ID, s.Fence())
	held := []cluster.Held{{Job: placed.ID, Attempt: 1}, {Job: started.ID, Attempt: 1}, {Job: "stray", Attempt: 1}}

	// While its lease holds, both are its own (a stray container is not).
	own, err := c.Owned(ctx, "a", held)
	if err != nil {
		t.Fatal(err)
	}
	if len(own) != 2 || own[0].Job != "placed" || own[1].Job != "started" {
		t.Fatalf("owned = %+v", own)
	}
	assigned, err := c.Assigned(ctx, "a")
	if err != nil || len(assigned) != 2 {
		t.Fatalf("assigned = %+v, %v", assigned, err)
	}

	// a is away past its lease; the sweep queues one and declares the other lost;
	// b takes the queued one. When a returns, nothing it holds is its own.
	expire(t, url, "a")
	c.Sweep(ctx)
	claim(t, c, "b")
	l, err := c.Heartbeat(ctx, "a")
	if err != nil || !l.Lapsed {
		t.Fatalf("heartbeat = %+v, %v", l, err)
	}
	if own, err := c.Owned(ctx, "a", held); err != nil || len(own) != 0 {
		t.Fatalf("owned after the sweep = %+v, %v", own, err)
	}
	if assigned, err := c.Assigned(ctx, "a"); err != nil || len(assigned) != 0 {
		t.Fatalf("assigned after the sweep = %+v, %v", assigned, err)
	}
	if own, err := c.Owned(ctx, "b", []cluster.Held{{Job: placed.ID, Attempt: 2}, {Job: placed.ID, Attempt: 1}}); err != nil ||
		len(own) != 1 || own[0].Attempt != 2 {
		t.Fatalf("b owns %+v, %v", own, err)
	}
}

func TestRelease(t *testing.T) {
	c := fresh(t)
	ctx := t.Context()
	register(t, c, "a", 1, GiB)
	j := enqueue(t, c, cluster.NewJob{Tenant: "t"})
	j = claim(t, c, "a")
	if err := c.Release(ctx, j.ID, j.Fence()); err != nil {
		t.Fatal(err)
	}
	if got := get(t, c, j.ID); got.State != api.StateQueued || got.Node != "" || got.Attempt != 1 {
		t.Fatalf("released job = %+v", got)
	}
	again := claim(t, c, "a")
	if again.Attempt != 2 {
		t.Fatalf("attempt %d after a release, want 2", again.Attempt)
	}
	c.Start(ctx, again.ID, again.Fence())
	if err := c.Release(ctx, again.ID, again.Fence()); !errors.Is(err, cluster.ErrFenced) {
		t.Fatalf("release of a started job = %v", err)
	}
}

// Prune deletes the jobs that ended longer ago than the age, with their output,
// and nothing else: not a recent end, not a job still running or queued,
// however old.
func TestPrune(t *testing.T) {
	url := newDB(t)
	c := open(t, url)
	ctx := t.Context()
	register(t, c, "a", 10, 10*GiB)
	for _, id := range []string{"old", "recent", "running"} {
		enqueue(t, c, cluster.NewJob{ID: id, Tenant: "t"})
		j := claim(t, c, "a")
		if err := c.Start(ctx, j.ID, j.Fence()); err != nil {
			t.Fatal(err)
		}
		if j.ID == "running" {
			continue
		}
		out := []byte("out of " + j.ID)
		end := cluster.End{State: api.StateCompleted, Stdout: cluster.Stream{Data: out, Total: int64(len(out))}}
		if err := c.Finish(ctx, j.ID, j.Fence(), end); err != nil {
			t.Fatal(err)
		}
	}
	enqueue(t, c, cluster.NewJob{ID: "queued", Tenant: "t"})
	exec(t, url, `update airlock.jobs set ended_at = now() - interval '2 hours' where id = 'old'`)
	exec(t, url, `update airlock.jobs set queued_at = now() - interval '3 hours', started_at = now() - interval '3 hours' where id in ('running', 'queued')`)

	n, err := c.Prune(ctx, time.Hour)
	if err != nil || n != 1 {
		t.Fatalf("Prune(1h) = %d, %v; want 1 (the job that ended 2 hours ago)", n, err)
	}
	if _, err := c.Get(ctx, "old"); !errors.Is(err, cluster.ErrNotFound) {
		t.Fatalf("the pruned job: %v; want not found", err)
	}
	if _, err := c.Output(ctx, "old", "stdout", 0, 100); !errors.Is(err, cluster.ErrNotFound) {
		t.Fatalf("the pruned job's output: %v; want not found", err)
	}
	for _, id := range []string{"recent", "running", "queued"} {
		if _, err := c.Get(ctx, id); err != nil {
			t.Fatalf("job %s after the prune: %v", id, err)
		}
	}
	if o, err := c.Output(ctx, "recent", "stdout", 0, 100); err != nil || string(o.Data) != "out of recent" {
		t.Fatalf("output of the recent job after the prune: %q, %v", o.Data, err)
	}
	if n, err := c.Prune(ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("Prune again = %d, %v; want 0", n, err)
	}
}
