package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"log"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/cluster"
)

// A node's life: register, keep the lease, claim work that fits, record the
// start before the container exists and the end with its output, each write
// fenced by the attempt the claim gave.
func Example() {
	ctx := context.Background()
	c, err := cluster.Open(ctx, "postgres://airlock@db.internal/airlock")
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	node := cluster.Node{ID: "node-1", Address: "10.0.0.1:8080", Slots: 16, Memory: 32 << 30, Lease: 15 * time.Second}
	if _, err := c.Register(ctx, node); err != nil {
		log.Fatal(err)
	}
	go func() {
		for range time.Tick(node.Lease / 3) {
			if l, err := c.Heartbeat(ctx, node.ID); err == nil && l.Lapsed {
				log.Print("lease lapsed: ask Owned which containers are still ours")
			}
			c.Sweep(ctx) // any node may; it is idempotent
		}
	}()

	// Any node takes a request and queues it.
	spec, _ := json.Marshal(api.Spec{Command: "make test"})
	if _, err := c.Enqueue(ctx, cluster.NewJob{Tenant: "acme", Spec: spec, Memory: 512 << 20}); err != nil {
		log.Fatal(err) // ErrQueueFull, ErrUnavailable: answer 429 or 503
	}

	// A node with room claims it.
	j, err := c.Claim(ctx, node.ID)
	if errors.Is(err, cluster.ErrNoWork) {
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	if err := c.Start(ctx, j.ID, j.Fence()); err != nil {
		return // ErrFenced: no longer ours; create nothing
	}
	// ... create and run the container, labelled with j.ID and j.Attempt ...
	end := cluster.End{State: api.StateCompleted, ExitCode: 0,
		Stdout: cluster.Stream{Data: []byte("ok\n"), Total: 3}}
	if err := c.Finish(ctx, j.ID, j.Fence(), end); err != nil {
		// ErrFenced: the cluster declared it lost meanwhile, and its word stands.
		log.Printf("job %s: %v", j.ID, err)
	}
}
