package pgtest_test

import (
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/airlock-sandbox/airlock/internal/pgtest"
)

func query(t *testing.T, url, sql string) string {
	t.Helper()
	conn, err := pgconn.Connect(t.Context(), url)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	defer conn.Close(t.Context())
	res, err := conn.Exec(t.Context(), sql).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if len(res) == 0 || len(res[0].Rows) == 0 {
		return ""
	}
	return string(res[0].Rows[0][0])
}

func TestServer(t *testing.T) {
	s := pgtest.New(t, pgtest.WithTCP())
	if got := query(t, s.URL(), "select 1"); got != "1" {
		t.Fatalf("select 1 = %q", got)
	}
	if got := query(t, s.TCPURL("postgres"), "select 2"); got != "2" {
		t.Fatalf("select 2 over TCP = %q", got)
	}

	url, err := s.CreateDatabase(t.Context(), "kept")
	if err != nil {
		t.Fatal(err)
	}
	query(t, url, "create table t (v text); insert into t values ('before')")

	if err := s.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := query(t, url, "select v from t"); got != "before" {
		t.Fatalf("after Restart the row reads %q", got)
	}
	if got := query(t, s.TCPURL("kept"), "select v from t"); got != "before" {
		t.Fatalf("after Restart the row reads %q over TCP (same port)", got)
	}

	if err := s.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if conn, err := pgconn.Connect(t.Context(), s.URL()); err == nil {
		conn.Close(t.Context())
		t.Fatal("a stopped server accepted a connection")
	}
	if err := s.Stop(t.Context()); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	dir := s.Dir()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("Close left %s (%v)", dir, err)
	}
}

func TestUnixOnly(t *testing.T) {
	s := pgtest.New(t)
	if s.TCPURL("postgres") != "" || s.Addr() != "" {
		t.Fatal("a server without WithTCP has a TCP address")
	}
	if got := query(t, s.URL(), "show listen_addresses"); got != "" {
		t.Fatalf("listen_addresses = %q, want none", got)
	}
}
