package cluster_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/cluster"
)

// A node stops heartbeating: once its lease runs out, a sweep puts its unstarted
// job back in the queue, makes its started job lost (125, naming the node and
// when it was last seen), and queues again the started job that asked for a
// retry. Nothing runs twice without the cluster saying so.
func TestDeadNode(t *testing.T) {
	url := newDB(t)
	ctx := t.Context()
	var logs syncBuffer
	c, err := cluster.Open(ctx, url, cluster.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	const lease = 2 * time.Second // long enough for the set-up to run within it on a loaded machine
	if _, err := c.Register(ctx, cluster.Node{ID: "a", Slots: 10, Memory: 10 * GiB, Lease: lease}); err != nil {
		t.Fatal(err)
	}
	register(t, c, "b", 10, 10*GiB)
	if err := c.Drain(ctx, "b", true); err != nil { // b waits until a is dead
		t.Fatal(err)
	}
	unstarted := enqueue(t, c, cluster.NewJob{ID: "unstarted", Tenant: "t"})
	started := enqueue(t, c, cluster.NewJob{ID: "started", Tenant: "t"})
	retried := enqueue(t, c, cluster.NewJob{ID: "retried", Tenant: "t", Retry: 1})
	for range 3 {
		j := claim(t, c, "a")
		if j.ID != unstarted.ID {
			if err := c.Start(ctx, j.ID, j.Fence()); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Within the lease a sweep does nothing.
	if s, err := c.Sweep(ctx); err != nil || len(s.Requeued)+len(s.Lost)+len(s.Retried) != 0 {
		t.Fatalf("sweep of a live node = %+v, %v", s, err)
	}

	time.Sleep(lease + 300*time.Millisecond)
	s, err := c.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(s.Requeued, s.Lost, s.Retried) != "[unstarted] [started] [retried]" {
		t.Fatalf("sweep = %+v", s)
	}
	if line := logs.String(); !strings.Contains(line, `"msg":"swept"`) || !strings.Contains(line, `"lost":["started"]`) {
		t.Fatalf("the sweep logged %q", line)
	}

	lost := get(t, c, started.ID)
	if lost.State != api.StateLost || lost.ExitCode == nil || *lost.ExitCode != api.ExitFailed ||
		lost.EndedAt.IsZero() || lost.LastSeen.IsZero() || lost.EndedBy != "" || lost.Node != "a" {
		t.Fatalf("lost job = %+v", lost)
	}
	if !strings.Contains(lost.Reason, "node a") || !strings.Contains(lost.Reason, "last seen") {
		t.Fatalf("lost job's reason %q names neither the node nor when it was last seen", lost.Reason)
	}
	if d := lost.EndedAt.Sub(lost.LastSeen); d < lease || d > time.Minute {
		t.Fatalf("last seen %s before its end", d)
	}

	back := get(t, c, unstarted.ID)
	if back.State != api.StateQueued || back.Node != "" || back.Attempt != 1 || !back.QueueDeadline.After(time.Now().Add(-time.Minute)) {
		t.Fatalf("unstarted job = %+v", back)
	}
	re := get(t, c, retried.ID)
	if re.State != api.StateQueued || re.Retry != 0 || !re.StartedAt.IsZero() || !strings.Contains(re.Reason, "0 retries left") {
		t.Fatalf("retried job = %+v", re)
	}

	// A second sweep finds nothing more to do.
	if s, err := c.Sweep(ctx); err != nil || len(s.Requeued)+len(s.Lost)+len(s.Retried) != 0 {
		t.Fatalf("second sweep = %+v, %v", s, err)
	}

	// b takes the two queued jobs, as attempt 2; the lost one stays lost.
	c.Drain(ctx, "b", false)
	var got []string
	for range 2 {
		j := claim(t, c, "b")
		if j.Attempt != 2 {
			t.Fatalf("%s placed again as attempt %d", j.ID, j.Attempt)
		}
		got = append(got, j.ID)
		if err := c.Start(ctx, j.ID, j.Fence()); err != nil {
			t.Fatal(err)
		}
		if j.ID == unstarted.ID {
			if err := c.Finish(ctx, j.ID, j.Fence(), completed("done")); err != nil {
				t.Fatal(err)
			}
		}
	}
	noWork(t, c, "b")
	slices.Sort(got)
	if fmt.Sprint(got) != "[retried unstarted]" {
		t.Fatalf("b ran %v", got)
	}

	// The retried job's node dies too: its retry is spent, so it is lost.
	expire(t, url, "b")
	if s, err := c.Sweep(ctx); err != nil || fmt.Sprint(s.Lost, s.Retried) != "[retried] []" {
		t.Fatalf("sweep of b = %+v, %v", s, err)
	}
	if j := get(t, c, retried.ID); j.State != api.StateLost || !strings.Contains(j.Reason, "node b") {
		t.Fatalf("retried job after its second node died = %+v", j)
	}
}

// Sweeps on several nodes at once split the work and never act twice.
func TestConcurrentSweeps(t *testing.T) {
	url := newDB(t)
	c := open(t, url)
	ctx := t.Context()
	for _, n := range []string{"a", "b", "c"} {
		register(t, c, n, 50, 100*GiB)
	}
	register(t, c, "live", 1, GiB)
	for i := range 90 {
		enqueue(t, c, cluster.NewJob{ID: fmt.Sprintf("j%02d", i), Tenant: "t", Retry: i % 2})
	}
	for i := range 90 {
		j := claim(t, c, []string{"a", "b", "c"}[i%3])
		if i%3 != 0 {
			c.Start(ctx, j.ID, j.Fence())
		}
	}
	for _, n := range []string{"a", "b", "c"} {
		expire(t, url, n)
	}

	const sweepers = 6
	results := make([]cluster.Swept, sweepers)
	var wg sync.WaitGroup
	for i := range sweepers {
		h := open(t, url)
		wg.Go(func() {
			var err error
			if results[i], err = h.Sweep(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	seen := map[string]int{}
	var requeued, retried, lost int
	for _, s := range results {
		for _, id := range slices.Concat(s.Requeued, s.Retried, s.Lost) {
			seen[id]++
		}
		requeued, retried, lost = requeued+len(s.Requeued), retried+len(s.Retried), lost+len(s.Lost)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s swept %d times", id, n)
		}
	}
	if requeued != 30 || retried != 30 || lost != 30 {
		t.Fatalf("requeued %d, retried %d, lost %d; want 30 each", requeued, retried, lost)
	}
}

// A node that renewed its lease after it ran out, before any sweep, keeps its
// jobs: nothing was decided meanwhile.
func TestSweepSparesLiveNodes(t *testing.T) {
	url := newDB(t)
	c := open(t, url)
	ctx := t.Context()
	register(t, c, "a", 2, GiB)
	j := enqueue(t, c, cluster.NewJob{Tenant: "t"})
	j = claim(t, c, "a")
	c.Start(ctx, j.ID, j.Fence())
	expire(t, url, "a")
	// expire shortened the lease to a millisecond: a renewal of that would
	// lapse again before the sweep. The node comes back with its real lease.
	exec(t, url, `update airlock.nodes set lease = interval '1 minute' where id = $1`, "a")
	if _, err := c.Heartbeat(ctx, "a"); err != nil { // back just in time
		t.Fatal(err)
	}
	if s, err := c.Sweep(ctx); err != nil || len(s.Lost) != 0 {
		t.Fatalf("sweep after a renewal = %+v, %v", s, err)
	}
	if err := c.Finish(ctx, j.ID, j.Fence(), completed("fine")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Claim(ctx, "nobody"); !errors.Is(err, cluster.ErrNotFound) {
		t.Fatalf("claim for an unknown node = %v", err)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
