package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/cluster/peer"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/enginefake"
	"github.com/airlock-sandbox/airlock/internal/pgtest"
	"github.com/airlock-sandbox/airlock/server"
)

// clusterServer is an airlock server over the fake engine that is node id of
// the cluster at dbURL, as an httptest server; tok-ops is an admin tenant's
// token, tok-dev another tenant's.
func clusterServer(t *testing.T, dbURL, id string) string {
	t.Helper()
	cfg := server.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.AuditLog = filepath.Join(cfg.DataDir, "audit.log")
	cfg.Tokens = []server.Token{{Token: "tok-ops", Tenant: "ops"}, {Token: "tok-dev", Tenant: "dev"}}
	cfg.Cluster = server.ClusterConfig{Database: dbURL, NodeID: id, Advertise: id + ".internal:8080", Slots: 4, Memory: 8 << 30, AdminTenants: []string{"ops"}}
	return fakeServer(t, cfg)
}

// fakeServer is an airlock server of cfg over the fake engine, as an httptest
// server; it returns its URL.
func fakeServer(t *testing.T, cfg server.Config) string {
	t.Helper()
	ec, err := cfg.ExecutorConfig()
	if err != nil {
		t.Fatal(err)
	}
	ec.InitPath = executor.EngineInit // the fake runs no init
	ex, err := executor.New(executor.WithConfig(ec), executor.WithEngine(enginefake.New()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ex.Close() })
	svc, err := server.NewService(ex, cfg, slog.New(slog.DiscardHandler), "test", server.WithPeers(peer.Dial))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close(context.Background(), false) })
	ts := httptest.NewServer(server.Handler(svc, t.Context()))
	t.Cleanup(ts.Close)
	return ts.URL
}

// nodes runs `airlock nodes args...` as the tenant of token and returns its
// output and error.
func nodes(t *testing.T, token string, args ...string) (string, error) {
	t.Helper()
	t.Setenv("AIRLOCK_TOKEN", token)
	var out, errOut bytes.Buffer
	err := nodesCmd(t.Context(), args, &out, &errOut)
	return out.String(), err
}

func TestNodesCommand(t *testing.T) {
	pg := pgtest.New(t)
	url := clusterServer(t, pg.URL(), "node-a")
	clusterServer(t, pg.URL(), "node-b")
	t.Setenv("AIRLOCK_SERVER", url)

	out, err := nodes(t, "tok-dev")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "ID ") ||
		!strings.HasPrefix(lines[1], "node-a *") || !strings.Contains(lines[1], "node-a.internal:8080") ||
		!strings.Contains(lines[1], " live ") || !strings.Contains(lines[1], "0/4") || !strings.Contains(lines[1], "0B/8GiB") ||
		!strings.HasPrefix(lines[2], "node-b ") {
		t.Fatalf("airlock nodes:\n%s", out)
	}

	// Drain needs an admin tenant; the refusal is the server's.
	_, err = nodes(t, "tok-dev", "drain", "node-b")
	if e := (*api.Error)(nil); !errors.As(err, &e) || e.Status != 403 {
		t.Fatalf("drain as dev: %v", err)
	}
	out, err = nodes(t, "tok-ops", "drain", "node-b")
	if err != nil || !strings.Contains(out, "node-b: draining") {
		t.Fatalf("drain as ops: %q %v", out, err)
	}
	out, err = nodes(t, "tok-dev", "--json")
	var list api.NodeList
	if err != nil || json.Unmarshal([]byte(out), &list) != nil || len(list.Nodes) != 2 || !list.Nodes[1].Draining || list.Self != "node-a" {
		t.Fatalf("airlock nodes --json: %v\n%s", err, out)
	}
	if out, _ := nodes(t, "tok-dev"); !strings.Contains(out, "draining") {
		t.Errorf("the table does not show the drain:\n%s", out)
	}
	out, err = nodes(t, "tok-ops", "undrain", "--server", url, "node-b")
	if err != nil || !strings.Contains(out, "node-b: taking placements") {
		t.Fatalf("undrain: %q %v", out, err)
	}
}

func TestNodesCommandRefusals(t *testing.T) {
	t.Setenv("AIRLOCK_SERVER", "")
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "--server"},
		{[]string{"drain"}, "want one node id"},
		{[]string{"list"}, "unexpected argument"},
	} {
		if _, err := nodes(t, "", c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("nodes %v: %v, want an error naming %q", c.args, err, c.want)
		}
	}
	// A server without --database says how to make it a node.
	cfg := server.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.AuditLog = filepath.Join(cfg.DataDir, "audit.log")
	url := fakeServer(t, cfg)
	if _, err := nodes(t, "", "--server", url); err == nil || !strings.Contains(err.Error(), "--database") {
		t.Errorf("nodes against a server without a database: %v", err)
	}
}
