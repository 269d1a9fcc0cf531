package cluster_test

import (
	"errors"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/cluster"
)

// A node lives while it heartbeats within its lease, by the database's clock;
// it is dead once the lease has run out, and a late heartbeat says so.
func TestLease(t *testing.T) {
	c := fresh(t)
	ctx := t.Context()
	lease := 2 * time.Second
	l, err := c.Register(ctx, cluster.Node{ID: "a", Address: "10.0.0.1:8080", Slots: 4, Memory: 2 * GiB, Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	if l.Lapsed {
		t.Fatal("a new node's lease lapsed")
	}
	nodes, err := c.Nodes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != 1 {
		t.Fatalf("nodes = %+v", nodes)
	}
	n := nodes[0]
	if !n.Live || n.Slots != 4 || n.Memory != 2*GiB || n.Address != "10.0.0.1:8080" || n.Lease != lease || n.Draining {
		t.Fatalf("node = %+v", n)
	}
	if n.LeaseAge < 0 || n.LeaseAge > 5*time.Second {
		t.Fatalf("lease age %s", n.LeaseAge)
	}

	// A heartbeat within the lease extends it.
	time.Sleep(300 * time.Millisecond)
	l2, err := c.Heartbeat(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if l2.Lapsed || !l2.Until.After(l.Until) {
		t.Fatalf("heartbeat: %+v after %+v", l2, l)
	}

	// Silent past its lease, the node is dead: no placements, and its next
	// heartbeat learns that it lapsed.
	time.Sleep(lease + 200*time.Millisecond)
	nodes, _ = c.Nodes(ctx)
	if nodes[0].Live || nodes[0].LeaseAge < lease {
		t.Fatalf("after its lease: %+v", nodes[0])
	}
	enqueue(t, c, cluster.NewJob{Tenant: "t"})
	if _, err := c.Claim(ctx, "a"); !errors.Is(err, cluster.ErrNodeUnavailable) {
		t.Fatalf("claim on a dead node = %v, want ErrNodeUnavailable", err)
	}
	l3, err := c.Heartbeat(ctx, "a")
	if err != nil || !l3.Lapsed {
		t.Fatalf("late heartbeat = %+v, %v; want lapsed", l3, err)
	}
	claim(t, c, "a") // alive again

	if _, err := c.Heartbeat(ctx, "nobody"); !errors.Is(err, cluster.ErrNotFound) {
		t.Fatalf("heartbeat of an unknown node = %v", err)
	}
	if _, err := c.Register(ctx, cluster.Node{ID: "b", Slots: 1}); !errors.Is(err, cluster.ErrInvalid) {
		t.Fatalf("register without a lease = %v", err)
	}
}

func TestNodesLoad(t *testing.T) {
	c := fresh(t)
	register(t, c, "a", 4, 4*GiB)
	register(t, c, "b", 4, 4*GiB)
	enqueue(t, c, cluster.NewJob{Tenant: "t", Memory: 512 * MiB})
	enqueue(t, c, cluster.NewJob{Tenant: "t", Memory: GiB})
	claim(t, c, "a")
	j := claim(t, c, "a")
	if err := c.Start(t.Context(), j.ID, j.Fence()); err != nil {
		t.Fatal(err)
	}
	nodes, err := c.Nodes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if a := nodes[0]; a.ID != "a" || a.Running != 2 || a.MemoryInUse != 512*MiB+GiB {
		t.Fatalf("a = %+v", a)
	}
	if b := nodes[1]; b.ID != "b" || b.Running != 0 || b.MemoryInUse != 0 {
		t.Fatalf("b = %+v", b)
	}
}

func TestDrain(t *testing.T) {
	c := fresh(t)
	register(t, c, "a", 4, GiB)
	enqueue(t, c, cluster.NewJob{Tenant: "t"})
	if err := c.Drain(t.Context(), "a", true); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Claim(t.Context(), "a"); !errors.Is(err, cluster.ErrNodeUnavailable) {
		t.Fatalf("claim on a draining node = %v", err)
	}
	// A run is claimed by its caller's node only: through a drained one it
	// is refused, and nothing is queued; a job may still be queued there.
	if _, err := c.Enqueue(t.Context(), cluster.NewJob{Tenant: "t", Spec: []byte("{}"), CallerNode: "a"}); !errors.Is(err, api.ErrNodeDraining) {
		t.Fatalf("enqueue of a run through a draining node = %v", err)
	}
	enqueue(t, c, cluster.NewJob{Tenant: "t"})
	nodes, _ := c.Nodes(t.Context())
	if !nodes[0].Draining || !nodes[0].Live {
		t.Fatalf("node = %+v", nodes[0])
	}
	if err := c.Drain(t.Context(), "a", false); err != nil {
		t.Fatal(err)
	}
	claim(t, c, "a")
	if err := c.Drain(t.Context(), "nobody", true); !errors.Is(err, cluster.ErrNotFound) {
		t.Fatalf("drain of an unknown node = %v", err)
	}
}
