package cluster_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/airlock-sandbox/airlock/cluster"
)

// Five nodes starting at once against an empty database: one migrates, the
// others wait for it and find the schema current.
func TestOpenConcurrently(t *testing.T) {
	url := newDB(t)
	const n = 5
	handles := make([]*cluster.Cluster, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			handles[i], errs[i] = cluster.Open(t.Context(), url)
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		t.Cleanup(handles[i].Close)
	}
	for i, c := range handles {
		v, err := c.SchemaVersion(t.Context())
		if err != nil || v != 3 {
			t.Fatalf("handle %d: schema version %d, %v; want 3 (the migrations in cluster/migrations)", i, v, err)
		}
	}
	// Every handle works on the one schema.
	register(t, handles[0], "a", 1, GiB)
	j := enqueue(t, handles[1], cluster.NewJob{Tenant: "t"})
	if got := claim(t, handles[4], "a"); got.ID != j.ID {
		t.Fatalf("claimed %s, want %s", got.ID, j.ID)
	}
	// And opening again migrates nothing.
	open(t, url)
}

// An older airlock refuses a schema from a newer one rather than roll it back.
func TestOpenRefusesNewerSchema(t *testing.T) {
	url := newDB(t)
	open(t, url)
	exec(t, url, `update airlock.schema_version set version = 99`)
	c, err := cluster.Open(t.Context(), url)
	if err == nil {
		c.Close()
	}
	if !errors.Is(err, cluster.ErrSchemaNewer) {
		t.Fatalf("open = %v, want ErrSchemaNewer", err)
	}
}

func TestOpenUnreachable(t *testing.T) {
	_, err := cluster.Open(t.Context(), "postgres://postgres@/postgres?host=/nonexistent&sslmode=disable")
	if !errors.Is(err, cluster.ErrUnavailable) {
		t.Fatalf("open = %v, want ErrUnavailable", err)
	}
}
