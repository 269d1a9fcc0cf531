package cluster_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/cluster"
	"github.com/airlock-sandbox/airlock/internal/pgtest"
)

// server is the PostgreSQL every test shares; each test has a database of its own.
var server *pgtest.Server

func TestMain(m *testing.M) {
	s, err := pgtest.Start(context.Background())
	if err != nil {
		// A test that needs PostgreSQL fails without it; it never skips.
		fmt.Fprintf(os.Stderr, "cluster tests need PostgreSQL: %v\n", err)
		if s != nil {
			s.Close()
		}
		os.Exit(1)
	}
	server = s
	code := m.Run()
	if err := s.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "stop PostgreSQL: %v\n", err)
		code = 1
	}
	os.Exit(code)
}

var dbCount atomic.Int64

// newDB creates an empty database for t and returns its URL.
func newDB(t testing.TB) string {
	t.Helper()
	name := strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "_"))
	name = fmt.Sprintf("t%d_%.40s", dbCount.Add(1), name)
	url, err := server.CreateDatabase(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return url
}

// open opens a handle on url for t.
func open(t testing.TB, url string) *cluster.Cluster {
	t.Helper()
	c, err := cluster.Open(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// fresh is a handle on a new database.
func fresh(t testing.TB) *cluster.Cluster { return open(t, newDB(t)) }

const (
	MiB = int64(1) << 20
	GiB = int64(1) << 30
)

// register adds a node with a lease long enough not to expire during a test
// unless the test expires it.
func register(t testing.TB, c *cluster.Cluster, id string, slots int, memory int64) {
	t.Helper()
	if _, err := c.Register(t.Context(), cluster.Node{ID: id, Address: id + ":8080", Slots: slots, Memory: memory, Lease: time.Minute}); err != nil {
		t.Fatal(err)
	}
}

// expire ends the node's lease now, as if it were a node with a lease of a
// millisecond that stopped heartbeating.
func expire(t testing.TB, url, node string) {
	t.Helper()
	exec(t, url, `update airlock.nodes set lease = interval '1 millisecond',
		lease_until = now() - interval '1 millisecond' where id = $1`, node)
}

func exec(t testing.TB, url, sql string, args ...any) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func enqueue(t testing.TB, c *cluster.Cluster, nj cluster.NewJob) cluster.Job {
	t.Helper()
	if nj.Spec == nil {
		nj.Spec = json.RawMessage(`{"command":"true"}`)
	}
	j, err := c.Enqueue(t.Context(), nj)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func claim(t testing.TB, c *cluster.Cluster, node string) cluster.Job {
	t.Helper()
	j, err := c.Claim(t.Context(), node)
	if err != nil {
		t.Fatalf("claim for %s: %v", node, err)
	}
	return j
}

func noWork(t testing.TB, c *cluster.Cluster, node string) {
	t.Helper()
	if j, err := c.Claim(t.Context(), node); !errors.Is(err, cluster.ErrNoWork) {
		t.Fatalf("claim for %s = %s, %v; want ErrNoWork", node, j.ID, err)
	}
}

func get(t testing.TB, c *cluster.Cluster, id string) cluster.Job {
	t.Helper()
	j, err := c.Get(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func completed(out string) cluster.End {
	return cluster.End{State: api.StateCompleted, Stdout: cluster.Stream{Data: []byte(out), Total: int64(len(out))}}
}

// run starts and finishes a claimed job.
func run(t testing.TB, c *cluster.Cluster, j cluster.Job) {
	t.Helper()
	if err := c.Start(t.Context(), j.ID, j.Fence()); err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(t.Context(), j.ID, j.Fence(), completed("ok")); err != nil {
		t.Fatal(err)
	}
}
