package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/cluster"
	"github.com/airlock-sandbox/airlock/internal/pgtest"
)

// PostgreSQL restarts while two nodes work through the queue: calls made while
// it is away fail with ErrUnavailable, the handle reconnects by itself, and
// every job ends exactly once, at its first attempt, with its output.
func TestPostgresRestart(t *testing.T) {
	srv := pgtest.New(t) // a server of its own, not to disturb the other tests'
	ctx := t.Context()
	url, err := srv.CreateDatabase(ctx, "restart")
	if err != nil {
		t.Fatal(err)
	}
	c := open(t, url)
	const jobs = 200
	nodes := []string{"a", "b"}
	for _, n := range nodes {
		register(t, c, n, 4, 64*GiB)
	}
	for i := range jobs {
		enqueue(t, c, cluster.NewJob{ID: fmt.Sprintf("job%03d", i), Tenant: "t"})
	}

	var finished, unavailable atomic.Int64
	stop := make(chan struct{})
	// retry calls f until it succeeds, or fails for a reason other than the
	// database being away.
	retry := func(f func() error) error {
		for {
			err := f()
			if err == nil || !errors.Is(err, cluster.ErrUnavailable) {
				return err
			}
			unavailable.Add(1)
			select {
			case <-stop:
				return err
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	// inHand is what each node knows it is working on, as a real node would.
	var inHand sync.Map
	work := func(node string, j cluster.Job) {
		if _, busy := inHand.LoadOrStore(j.ID, node); busy {
			return
		}
		err := retry(func() error { return c.Start(ctx, j.ID, j.Fence()) })
		if err == nil {
			err = retry(func() error { return c.Finish(ctx, j.ID, j.Fence(), completed(j.ID)) })
		}
		if err != nil {
			t.Errorf("%s on %s: %v", j.ID, node, err)
			return
		}
		finished.Add(1)
	}
	var wg sync.WaitGroup
	for _, n := range nodes {
		for range 2 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					var j cluster.Job
					err := retry(func() (err error) { j, err = c.Claim(ctx, n); return err })
					switch {
					case errors.Is(err, cluster.ErrNoWork):
						// A claim that committed as the connection broke left a
						// job placed here that no worker knows of: adopt it.
						var mine []cluster.Job
						if retry(func() (err error) { mine, err = c.Assigned(ctx, n); return err }) == nil {
							for _, j := range mine {
								work(n, j)
							}
						}
						time.Sleep(10 * time.Millisecond)
					case err != nil:
						t.Errorf("claim on %s: %v", n, err)
						return
					default:
						work(n, j)
					}
				}
			})
		}
	}

	for finished.Load() < jobs/4 {
		time.Sleep(5 * time.Millisecond)
	}
	if err := srv.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("restarted PostgreSQL after %d jobs had ended", finished.Load())

	deadline := time.Now().Add(time.Minute)
	for {
		var n int
		err := retry(func() error {
			var err error
			n, err = countEnded(ctx, c, jobs)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if n == jobs {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d jobs ended a minute after the restart", n, jobs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d calls met an unavailable database and were tried again", unavailable.Load())

	for i := range jobs {
		id := fmt.Sprintf("job%03d", i)
		j := get(t, c, id)
		if j.State != api.StateCompleted || j.Attempt != 1 {
			t.Fatalf("%s = %s at attempt %d on %s", id, j.State, j.Attempt, j.Node)
		}
		if o, err := c.Output(ctx, id, "stdout", 0, 0); err != nil || string(o.Data) != id {
			t.Fatalf("%s output = %q, %v", id, o.Data, err)
		}
	}
}

func countEnded(ctx context.Context, c *cluster.Cluster, jobs int) (int, error) {
	n := 0
	for i := range jobs {
		j, err := c.Get(ctx, fmt.Sprintf("job%03d", i))
		if err != nil {
			return 0, err
		}
		if j.Ended() {
			n++
		}
	}
	return n, nil
}

// PostgreSQL is away for longer than the nodes' leases: when it is back, no
// sweep declares their jobs lost before they had a lease's time to heartbeat.
// A node that does not come back within that time is dead as usual.
func TestSweepAfterOutage(t *testing.T) {
	srv := pgtest.New(t)
	ctx := t.Context()
	url, err := srv.CreateDatabase(ctx, "outage")
	if err != nil {
		t.Fatal(err)
	}
	c := open(t, url)
	// Two seconds: the checks just after the restart must run within a lease of
	// it, even on a loaded machine.
	const lease = 2 * time.Second
	for _, n := range []string{"back", "gone"} {
		if _, err := c.Register(ctx, cluster.Node{ID: n, Slots: 1, Memory: GiB, Lease: lease}); err != nil {
			t.Fatal(err)
		}
	}
	var held []cluster.Job
	for _, n := range []string{"back", "gone"} {
		enqueue(t, c, cluster.NewJob{ID: "on-" + n, Tenant: "t"})
		j := claim(t, c, n)
		if err := c.Start(ctx, j.ID, j.Fence()); err != nil {
			t.Fatal(err)
		}
		held = append(held, j)
	}

	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Sweep(ctx); !errors.Is(err, cluster.ErrUnavailable) {
		t.Fatalf("sweep while PostgreSQL is down = %v, want ErrUnavailable", err)
	}
	time.Sleep(lease + 200*time.Millisecond) // every lease runs out meanwhile
	if err := srv.Start(ctx); err != nil {
		t.Fatal(err)
	}
	back := time.Now()

	// Neither this handle, which saw the outage, nor a new one, sweeps yet.
	other := open(t, url)
	for _, h := range []*cluster.Cluster{c, other} {
		var s cluster.Swept
		err := retryUnavailable(func() (err error) { s, err = h.Sweep(ctx); return err })
		if err != nil || len(s.Lost) != 0 {
			t.Fatalf("sweep just after the outage = %+v, %v", s, err)
		}
	}
	// "back" heartbeats: its lease lapsed, but its job is still its own.
	l, err := c.Heartbeat(ctx, "back")
	if err != nil || !l.Lapsed {
		t.Fatalf("heartbeat after the outage = %+v, %v", l, err)
	}
	if own, err := c.Owned(ctx, "back", []cluster.Held{{Job: held[0].ID, Attempt: 1}}); err != nil || len(own) != 1 {
		t.Fatalf("owned after the outage = %+v, %v", own, err)
	}

	// A lease later, "gone" has not come back: a sweep finds it dead.
	time.Sleep(lease - time.Since(back) + 300*time.Millisecond)
	c.Heartbeat(ctx, "back")
	s, err := other.Sweep(ctx)
	if err != nil || fmt.Sprint(s.Lost) != "[on-gone]" {
		t.Fatalf("sweep a lease after the outage = %+v, %v", s, err)
	}
	if err := c.Finish(ctx, held[0].ID, held[0].Fence(), completed("fine")); err != nil {
		t.Fatal(err)
	}
}

// retryUnavailable calls f until the database answers it, for a few seconds.
func retryUnavailable(f func() error) error {
	var err error
	for range 100 {
		if err = f(); !errors.Is(err, cluster.ErrUnavailable) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}
