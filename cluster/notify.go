package cluster

import (
	"context"
	"time"
)

// Notice is a wake-up from the database (LISTEN/NOTIFY), sent by a trigger on
// the jobs table when the change commits. It says only where to look again: a
// listener reads the tables, and still polls now and then, since a notice
// sent while it was not listening is lost.
type Notice struct {
	// Job is the id of a job whose state changed or whose sandbox started.
	Job string
	// Queue says a job may have become claimable: one was queued, or one
	// ended and freed room.
	Queue bool
	// KillFor names the node that has a kill to deliver.
	KillFor string
}

// Listen calls fn with every notice until ctx ends, on a connection of its
// own, and again after each reconnection. Each time it starts listening it
// calls fn with Queue set, for whatever it missed meanwhile.
func (c *Cluster) Listen(ctx context.Context, fn func(Notice)) {
	for wait := 100 * time.Millisecond; ctx.Err() == nil; wait = min(2*wait, 5*time.Second) {
		if err := c.listen(ctx, fn); err != nil && ctx.Err() == nil {
			c.log.Debug("listening for notices; reconnecting", "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

func (c *Cluster) listen(ctx context.Context, fn func(Notice)) error {
	pc, err := c.pool.Acquire(ctx)
	if err != nil {
		return c.wrap("listen", err)
	}
	// The connection leaves the pool: it listens until it fails or ctx ends,
	// and is closed then, its LISTENs with it.
	conn := pc.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "listen airlock_job; listen airlock_queue; listen airlock_kill"); err != nil {
		return c.wrap("listen", err)
	}
	fn(Notice{Queue: true})
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return c.wrap("listen", err)
		}
		switch n.Channel {
		case "airlock_job":
			fn(Notice{Job: n.Payload})
		case "airlock_queue":
			fn(Notice{Queue: true})
		case "airlock_kill":
			fn(Notice{KillFor: n.Payload})
		}
	}
}
