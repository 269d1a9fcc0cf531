package server

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/cluster"
	"github.com/airlock-sandbox/airlock/cluster/member"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/enginefake"
	"github.com/airlock-sandbox/airlock/internal/pgtest"
)

// Cluster mode over a real PostgreSQL (internal/pgtest) and the fake engine:
// two servers sharing one database are two nodes of one cluster.

// testLease is short, so that a node that stops heartbeating is dead within
// a test, and long enough for a loaded machine's heartbeats (every third).
const testLease = 1500 * time.Millisecond

// newNode is a server over the fake engine that is node id of the cluster
// whose database is at dbURL.
func newNode(t *testing.T, dbURL, id string, configure func(*Config)) *harness {
	t.Helper()
	return newFakeHarness(t, enginefake.New(), func(c *Config) {
		c.Cluster = ClusterConfig{Database: dbURL, NodeID: id, Lease: testLease.Seconds(), AdminTenants: []string{"alpha"}}
		if configure != nil {
			configure(c)
		}
	})
}

// withPassword adds a password to a database URL (the test server trusts every
// connection, so any password does): messages must never show it.
func withPassword(t *testing.T, dbURL, password string) string {
	t.Helper()
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), password)
	return u.String()
}

const secret = "s3cret-pg-password"

func nodeList(t *testing.T, h *harness, token string) api.NodeList {
	t.Helper()
	status, data, _ := h.do("GET", "/v1/nodes", token, nil)
	if status != http.StatusOK {
		t.Fatalf("GET /v1/nodes: %d %s", status, data)
	}
	return decode[api.NodeList](t, data)
}

func findNode(list api.NodeList, id string) (api.Node, bool) {
	for _, n := range list.Nodes {
		if n.ID == id {
			return n, true
		}
	}
	return api.Node{}, false
}

// eventually polls cond every 50ms until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestNodesListedFromEitherNode(t *testing.T) {
	pg := pgtest.New(t)
	dbURL := withPassword(t, pg.URL(), secret)
	a := newNode(t, dbURL, "node-a", func(c *Config) { c.Cluster.Slots = 4; c.Cluster.Memory = 8 << 30 })
	b := newNode(t, dbURL, "node-b", func(c *Config) { c.Cluster.Advertise = "10.0.0.2:8080" })

	for _, h := range []*harness{a, b} {
		list := nodeList(t, h, tokB) // any tenant may list
		if len(list.Nodes) != 2 || list.Nodes[0].ID != "node-a" || list.Nodes[1].ID != "node-b" {
			t.Fatalf("nodes from %s: %+v", list.Self, list)
		}
		na, nb := list.Nodes[0], list.Nodes[1]
		switch {
		case !na.Live || !nb.Live || na.Draining:
			t.Errorf("both nodes live, none draining: %+v", list.Nodes)
		case na.Slots != 4 || na.Memory != 8<<30:
			t.Errorf("node-a's capacity: %+v", na)
		case nb.Slots != 16 || nb.Memory != 16*h.cfg.Ceilings.Memory:
			t.Errorf("node-b's default capacity (max_concurrent, times the memory ceiling): %+v", nb)
		case nb.Address != "10.0.0.2:8080" || na.Address == "":
			t.Errorf("addresses: %q %q", na.Address, nb.Address)
		case na.Lease != api.Seconds(testLease.Seconds()) || na.LeaseAge < 0 || na.LeaseAge > na.Lease:
			t.Errorf("lease %v, age %v", na.Lease, na.LeaseAge)
		case na.Running != 0 || na.MemoryInUse != 0:
			t.Errorf("no job placed: %+v", na)
		}
	}
	if self := nodeList(t, b, tokA).Self; self != "node-b" {
		t.Errorf("self = %q, want node-b", self)
	}
	status, data, _ := a.do("GET", "/readyz", "", nil)
	if status != 200 || !strings.Contains(string(data), `"node":"node-a"`) {
		t.Errorf("readyz: %d %s", status, data)
	}
	status, data, _ = a.do("GET", "/v1/nodes", "", nil)
	wantError(t, status, data, http.StatusUnauthorized, "unauthorized", "")

	// The per-node gauges, from either node, and the heartbeat failures at 0.
	_, metrics, _ := b.do("GET", "/metrics", "", nil)
	for _, want := range []string{`airlock_node_slots{node="node-a"} 4`, `airlock_node_live{node="node-b"} 1`,
		`airlock_node_running{node="node-a"} 0`, `airlock_node_lease_age_seconds{node="node-a"}`,
		`airlock_node_heartbeat_failures_total 0`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestDrainThroughTheAPI(t *testing.T) {
	pg := pgtest.New(t)
	a := newNode(t, pg.URL(), "node-a", nil)
	b := newNode(t, pg.URL(), "node-b", nil)

	// alpha is an admin tenant; beta is not, and is refused (and audited).
	status, data, _ := a.do("POST", "/v1/nodes/node-b/drain", tokB, map[string]any{"drain": true})
	wantError(t, status, data, http.StatusForbidden, "forbidden", "")
	if !strings.Contains(string(data), "--admin-tenants") {
		t.Errorf("the refusal does not say how to be allowed: %s", data)
	}
	status, data, _ = a.do("POST", "/v1/nodes/node-b/drain", tokA, map[string]any{"drain": true})
	if n := decode[api.Node](t, data); status != 200 || n.ID != "node-b" || !n.Draining {
		t.Fatalf("drain node-b: %d %s", status, data)
	}
	// Both nodes see it.
	for _, h := range []*harness{a, b} {
		if n, _ := findNode(nodeList(t, h, tokB), "node-b"); !n.Draining || !n.Live {
			t.Errorf("node-b after drain: %+v", n)
		}
	}
	status, data, _ = b.do("POST", "/v1/nodes/node-b/drain", tokA, map[string]any{"drain": false})
	if n := decode[api.Node](t, data); status != 200 || n.Draining {
		t.Fatalf("undrain node-b: %d %s", status, data)
	}
	status, data, _ = a.do("POST", "/v1/nodes/node-z/drain", tokA, map[string]any{"drain": true})
	wantError(t, status, data, http.StatusNotFound, "node_not_found", "")
	status, data, _ = a.do("POST", "/v1/nodes/node-b/drain", tokA, map[string]any{})
	wantError(t, status, data, http.StatusBadRequest, "invalid_request", "drain")
	status, data, _ = a.do("POST", "/v1/nodes/node-b/drain", tokA, map[string]any{"drain": "yes"})
	wantError(t, status, data, http.StatusBadRequest, "invalid_request", "drain")

	var refused, drained int
	for _, ev := range a.auditLines() {
		switch {
		case ev.Event == "node.drain" && ev.Tenant == "beta" && ev.Error != "":
			refused++
		case ev.Event == "node.drain" && ev.Tenant == "alpha" && ev.Node == "node-b" && ev.Error == "":
			drained++
		}
	}
	if refused != 1 || drained != 1 {
		t.Errorf("audit: %d refused drains, %d drains; want 1 and 1", refused, drained)
	}
}

// TestDrainWithoutTokens: a server without tokens listens on loopback only,
// and its caller is the operator.
func TestDrainWithoutTokens(t *testing.T) {
	pg := pgtest.New(t)
	a := newNode(t, pg.URL(), "node-a", func(c *Config) { c.Tokens = nil; c.Cluster.AdminTenants = nil })
	status, data, _ := a.do("POST", "/v1/nodes/node-a/drain", "", map[string]any{"drain": true})
	if n := decode[api.Node](t, data); status != 200 || !n.Draining {
		t.Fatalf("drain: %d %s", status, data)
	}
}

func TestReadyzFollowsTheDatabase(t *testing.T) {
	pg := pgtest.New(t)
	dbURL := withPassword(t, pg.URL(), secret)
	a := newNode(t, dbURL, "node-a", nil)
	if status, data, _ := a.do("GET", "/readyz", "", nil); status != 200 {
		t.Fatalf("readyz: %d %s", status, data)
	}
	if err := pg.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	status, data, _ := a.do("GET", "/readyz", "", nil)
	wantError(t, status, data, http.StatusServiceUnavailable, "database_unavailable", "")
	if msg := string(data); !strings.Contains(msg, `PostgreSQL database \"postgres\"`) || strings.Contains(msg, secret) {
		t.Errorf("the message must name the database, without its password: %s", msg)
	}
	status, data, _ = a.do("GET", "/v1/nodes", tokA, nil)
	wantError(t, status, data, http.StatusServiceUnavailable, "database_unavailable", "")
	if strings.Contains(string(data), secret) {
		t.Errorf("the password leaks: %s", data)
	}
	// Heartbeats fail meanwhile, and are counted; the log never shows the password.
	eventually(t, 5*time.Second, "a failed heartbeat counted", func() bool {
		_, m, _ := a.do("GET", "/metrics", "", nil)
		return !strings.Contains(string(m), "airlock_node_heartbeat_failures_total 0\n")
	})
	if strings.Contains(a.logs.String(), secret) {
		t.Errorf("the server's log shows the database's password")
	}

	// Longer than a lease away: once back, the node heartbeats again and is ready.
	time.Sleep(testLease)
	if err := pg.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "readyz 200 after PostgreSQL restarted", func() bool {
		status, _, _ := a.do("GET", "/readyz", "", nil)
		return status == 200
	})
}

func TestNodeWithoutHeartbeatsIsNotLive(t *testing.T) {
	pg := pgtest.New(t)
	a := newNode(t, pg.URL(), "node-a", nil)
	b := newNode(t, pg.URL(), "node-b", nil)
	if n, _ := findNode(nodeList(t, a, tokA), "node-b"); !n.Live {
		t.Fatalf("node-b before: %+v", n)
	}
	start := time.Now()
	b.svc.node.StopLoops() // node-b hangs: no more heartbeats
	eventually(t, 3*testLease, "node-b not live", func() bool {
		n, _ := findNode(nodeList(t, a, tokA), "node-b")
		return !n.Live
	})
	if since := time.Since(start); since < testLease/2 {
		t.Errorf("node-b dead after %s, before its lease of %s could run out", since, testLease)
	}
	n, _ := findNode(nodeList(t, a, tokA), "node-b")
	if n.LeaseAge < n.Lease {
		t.Errorf("a dead node's lease age %v is under its lease %v", n.LeaseAge, n.Lease)
	}
	if n, _ := findNode(nodeList(t, a, tokA), "node-a"); !n.Live {
		t.Errorf("node-a, which heartbeats, died too: %+v", n)
	}
	// node-b's own readiness says why.
	status, data, _ := b.do("GET", "/readyz", "", nil)
	wantError(t, status, data, http.StatusServiceUnavailable, "lease_lapsed", "")
	_, metrics, _ := a.do("GET", "/metrics", "", nil)
	if !strings.Contains(string(metrics), `airlock_node_live{node="node-b"} 0`) {
		t.Error("metrics: node-b still live")
	}
}

func TestNotAClusterWithoutDatabase(t *testing.T) {
	h := newFakeHarness(t, enginefake.New(), nil)
	for _, c := range []struct {
		method, path string
		body         any
	}{{"GET", "/v1/nodes", nil}, {"POST", "/v1/nodes/x/drain", map[string]any{"drain": true}}} {
		status, data, _ := h.do(c.method, c.path, tokA, c.body)
		wantError(t, status, data, http.StatusNotFound, "not_a_cluster", "")
		if !strings.Contains(string(data), "--database") {
			t.Errorf("%s %s: the error does not say how to enable cluster mode: %s", c.method, c.path, data)
		}
	}
	status, data, _ := h.do("GET", "/readyz", "", nil)
	if status != 200 || strings.Contains(string(data), "node") {
		t.Errorf("readyz without a database: %d %s", status, data)
	}
	_, metrics, _ := h.do("GET", "/metrics", "", nil)
	if strings.Contains(string(metrics), "airlock_node_") {
		t.Error("a server without a database reports node metrics")
	}
}

func TestLoadClusterSettings(t *testing.T) {
	env := map[string]string{"AIRLOCK_DATABASE": "postgres://airlock:pw@db/airlock", "AIRLOCK_LEASE": "30s"}
	cfg, _, err := Load("serve", []string{"--node-id", "n1", "--node-slots", "8", "--node-memory", "16g",
		"--advertise", "10.0.0.1:8080", "--admin-tenants", "ops, root"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := ClusterConfig{Database: "postgres://airlock:pw@db/airlock", NodeID: "n1", Advertise: "10.0.0.1:8080",
		Slots: 8, Memory: 16 << 30, Lease: 30, AdminTenants: []string{"ops", "root"}}
	if got := cfg.Cluster; got.Database != want.Database || got.NodeID != want.NodeID || got.Advertise != want.Advertise ||
		got.Slots != want.Slots || got.Memory != want.Memory || got.Lease != want.Lease || strings.Join(got.AdminTenants, ",") != "ops,root" {
		t.Errorf("cluster config %+v, want %+v", got, want)
	}
	if r := cfg.Redacted().Cluster.Database; strings.Contains(r, "pw") || !strings.Contains(r, "db/airlock") {
		t.Errorf("redacted database URL %q", r)
	}
	if r := member.RedactURL("postgres://db/airlock?password=pw&sslmode=disable"); strings.Contains(r, "=pw") {
		t.Errorf("redacted query password %q", r)
	}
}

func TestLoadRefusesBadClusterSettings(t *testing.T) {
	db := map[string]string{"AIRLOCK_DATABASE": "postgres://db/airlock"}
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--database", "mysql://db/airlock"}, nil, "--database"},
		{[]string{"--database", "db:5432"}, nil, "--database"},
		{nil, map[string]string{"AIRLOCK_DATABASE": "http://db"}, "AIRLOCK_DATABASE"},
		{[]string{"--node-memory", "lots"}, db, "--node-memory"},
		{[]string{"--node-memory", "-1g"}, db, "--node-memory"},
		{[]string{"--node-slots", "0"}, db, "--node-slots"},
		{[]string{"--node-slots", "many"}, db, "--node-slots"},
		{[]string{"--lease", "soon"}, db, "--lease"},
		{[]string{"--lease", "0"}, db, "--lease"},
		{[]string{"--lease", "500ms"}, db, "cluster.lease"},
		{[]string{"--lease", "11m"}, db, "cluster.lease"},
		{[]string{"--node-id", "a b"}, db, "cluster.node_id"},
		{[]string{"--node-id", strings.Repeat("n", 64)}, db, "cluster.node_id"},
		{[]string{"--advertise", "nohost"}, db, "cluster.advertise"},
	}
	for _, c := range cases {
		_, _, err := Load("serve", c.args, func(k string) string { return c.env[k] }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %v: error %v, want one naming %q", c.args, c.env, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "mysql://") {
			t.Errorf("the error repeats the URL (it may hold a password): %v", err)
		}
	}
	// Without a database, nothing of cluster mode is checked or started.
	if _, _, err := Load("serve", []string{"--node-id", "a b"}, func(string) string { return "" }, io.Discard); err != nil {
		t.Errorf("node settings without a database: %v", err)
	}
}

// TestClusterDoesNotStartWithoutItsDatabase: a node whose database cannot be
// reached refuses to start, naming it, without its password.
func TestClusterDoesNotStartWithoutItsDatabase(t *testing.T) {
	cfg := DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Cluster = ClusterConfig{Database: "postgres://airlock:" + secret + "@127.0.0.1:1/airlock?connect_timeout=2", NodeID: "n1"}
	ctxDone := make(chan struct{})
	var err error
	go func() {
		defer close(ctxDone)
		var n *member.Node
		n, err = member.Join(cfg.memberConfig(), slog.New(slog.DiscardHandler), newMetrics().heartbeatFailures, func([]cluster.Job) {})
		if n != nil {
			n.Close()
		}
	}()
	select {
	case <-ctxDone:
	case <-time.After(30 * time.Second):
		t.Fatal("member.Join did not give up on an unreachable database")
	}
	if err == nil || !strings.Contains(err.Error(), `PostgreSQL database "airlock" at 127.0.0.1:1`) || strings.Contains(err.Error(), secret) {
		t.Errorf("error %v: want one naming the database, without the password", err)
	}
}

// TestSweepPrunesTheClustersEndedJobs: with keep_jobs, the periodic sweep
// deletes from the database the jobs that ended longer ago, with their output,
// not only this node's own records.
func TestSweepPrunesTheClustersEndedJobs(t *testing.T) {
	pg := pgtest.New(t)
	a := newNode(t, pg.URL(), "node-a", func(c *Config) { c.KeepJobs = 0.5 })
	_, data, _ := a.do("POST", "/v1/processes", tokA, map[string]any{"command": "echo old", "background": true})
	old := decode[executor.Process](t, data)
	if status, data, _ := a.do("POST", "/v1/processes/"+old.ID+"/wait", tokA, map[string]any{"timeout": 10}); status != http.StatusOK {
		t.Fatalf("wait: %d %s", status, data)
	}
	eventually(t, 10*time.Second, "the job's end recorded in the cluster", func() bool {
		j, err := a.svc.node.Cluster().Get(t.Context(), old.ID)
		return err == nil && j.Ended()
	})
	time.Sleep(time.Second)
	a.svc.sweepOnce()
	if _, err := a.svc.node.Cluster().Get(t.Context(), old.ID); !errors.Is(err, cluster.ErrNotFound) {
		t.Fatalf("the cluster's row of a job that ended past keep_jobs: %v; want not found", err)
	}
	if status, _, _ := a.do("GET", "/v1/processes/"+old.ID, tokA, nil); status != http.StatusNotFound {
		t.Fatalf("the job through the API after the prune: %d, want 404", status)
	}
}

// TestClusterQueueIsBounded: with every slot taken, a start answers at once
// with the job queued, by its id (202); the tenant's requests wait in the
// cluster's queue up to its max_queued, the next is refused at once with 429,
// naming the limit; a queued job starts when room frees, and one that waits
// past its queue timeout ends expired.
func TestClusterQueueIsBounded(t *testing.T) {
	pg := pgtest.New(t)
	f := enginefake.New()
	f.Hang = true
	a := newFakeHarness(t, f, func(c *Config) {
		c.Cluster = ClusterConfig{Database: pg.URL(), NodeID: "node-a", Lease: testLease.Seconds(), Slots: 1}
		c.TenantDefaults.MaxQueued = 1
	})
	job := map[string]any{"command": "sleep 60", "background": true, "queue_timeout": 20}
	status, data, _ := a.do("POST", "/v1/processes", tokA, job)
	first := decode[executor.Process](t, data)
	if status != http.StatusAccepted || first.State != api.StateRunning {
		t.Fatalf("the first job: %d %s", status, data)
	}
	const startWait = 2 * time.Second // docs/cluster.md, "Jobs across nodes": the answer comes within 2 s at most
	t0 := time.Now()
	status, data, _ = a.do("POST", "/v1/processes", tokA, job)
	queued := decode[executor.Process](t, data)
	if status != http.StatusAccepted || queued.State != api.StateQueued || queued.ID == "" || time.Since(t0) > startWait+time.Second {
		t.Fatalf("a start into a full cluster, answered after %s: %d %s; want 202 queued with its id within %s", time.Since(t0), status, data, startWait)
	}
	t0 = time.Now()
	status, data, _ = a.do("POST", "/v1/processes", tokA, job)
	wantError(t, status, data, http.StatusTooManyRequests, "busy", "")
	if !strings.Contains(string(data), "max_queued") || time.Since(t0) > 2*time.Second {
		t.Fatalf("the refusal past max_queued, after %s: %s; want it at once, naming max_queued", time.Since(t0), data)
	}
	// Another tenant has its own bound; its job waits past its queue timeout.
	status, data, _ = a.do("POST", "/v1/processes", tokB, map[string]any{"command": "sleep 60", "background": true, "queue_timeout": 2.5})
	beta := decode[executor.Process](t, data)
	if status != http.StatusAccepted || beta.State != api.StateQueued {
		t.Fatalf("beta's job: %d %s; want it queued", status, data)
	}
	eventually(t, 15*time.Second, "beta's job expired in the queue", func() bool {
		_, data, _ := a.do("GET", "/v1/processes/"+beta.ID, tokB, nil)
		return decode[executor.Result](t, data).State == api.StateExpired
	})
	// Room frees: the queued job starts.
	if status, data, _ := a.do("POST", "/v1/processes/"+first.ID+"/kill", tokA, map[string]any{"signal": "SIGKILL"}); status != http.StatusOK {
		t.Fatalf("kill the first job: %d %s", status, data)
	}
	eventually(t, 15*time.Second, "the queued job running once room freed", func() bool {
		_, data, _ := a.do("GET", "/v1/processes/"+queued.ID, tokA, nil)
		return decode[executor.Result](t, data).State == api.StateRunning
	})
}
