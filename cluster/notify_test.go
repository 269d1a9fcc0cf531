package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/cluster"
)

// TestListenNotices: a listener hears a queued job, its launch, a kill asked
// for it and its end, each when the change commits.
func TestListenNotices(t *testing.T) {
	c := fresh(t)
	register(t, c, "a", 4, GiB)
	notices := make(chan cluster.Notice, 100)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		c.Listen(ctx, func(n cluster.Notice) { notices <- n })
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	want := func(what string, match func(cluster.Notice) bool) {
		t.Helper()
		timeout := time.After(10 * time.Second)
		for {
			select {
			case n := <-notices:
				if match(n) {
					return
				}
			case <-timeout:
				t.Fatalf("no notice of %s within 10 s", what)
			}
		}
	}
	want("listening", func(n cluster.Notice) bool { return n.Queue }) // the first, for what was missed

	j := enqueue(t, c, cluster.NewJob{Tenant: "t"})
	want("the queued job's id", func(n cluster.Notice) bool { return n.Job == j.ID }) // sent first
	want("the queued job", func(n cluster.Notice) bool { return n.Queue })
	j = claim(t, c, "a")
	if err := c.Start(t.Context(), j.ID, j.Fence()); err != nil {
		t.Fatal(err)
	}
	if err := c.Launched(t.Context(), j.ID, j.Fence()); err != nil {
		t.Fatal(err)
	}
	want("the launch", func(n cluster.Notice) bool { return n.Job == j.ID })
	if _, _, err := c.RequestKill(t.Context(), j.ID, "SIGTERM", 0); err != nil {
		t.Fatal(err)
	}
	want("the kill for node a", func(n cluster.Notice) bool { return n.KillFor == "a" })
	if err := c.Finish(t.Context(), j.ID, j.Fence(), completed("out")); err != nil {
		t.Fatal(err)
	}
	want("the end", func(n cluster.Notice) bool { return n.Job == j.ID })
	want("the room the end freed", func(n cluster.Notice) bool { return n.Queue })
}
