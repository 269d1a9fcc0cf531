package client

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/api"
)

// The client against the real server is tested in integration/ (the CLI's
// --server); these are its parsing and error mapping alone.

func TestReadEvents(t *testing.T) {
	stream := ": keep-alive\n\nevent: stdout\ndata: {\"a\":1}\n\nevent: x\r\ndata: one\r\ndata: two\r\n\r\ndata: bare\n\nevent: cut"
	var got []string
	err := readEvents(strings.NewReader(stream), func(event string, data []byte) error {
		got = append(got, event+"="+string(data))
		return nil
	})
	want := []string{`stdout={"a":1}`, "x=one\ntwo", "message=bare"}
	if err != nil || strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("events %q, err %v; want %q (the unterminated last event dropped)", got, err, want)
	}
}

func TestErrorsMatchTheExecutors(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   error
		field  string
	}{
		{404, `{"error":{"code":"not_found","message":"process \"x\": no such process"}}`, api.ErrNotFound, ""},
		{400, `{"error":{"code":"invalid_request","message":"memory: too big","field":"memory"}}`, api.ErrInvalidSpec, "memory"},
		{503, `{"error":{"code":"engine_unavailable","message":"engine down"}}`, api.ErrEngine, ""},
		{409, `{"error":{"code":"running","message":"still running"}}`, api.ErrRunning, ""},
		{502, `<html>bad gateway</html>`, nil, ""}, // a proxy's page: the status and body are kept
	} {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(tc.status)
			w.Write([]byte(tc.body))
		}))
		c, err := New(ts.URL, "tok")
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Get(t.Context(), "x")
		ts.Close()
		var e *api.Error
		if !errors.As(err, &e) || e.Status != tc.status || e.Field != tc.field {
			t.Errorf("%d: err %#v", tc.status, err)
			continue
		}
		if tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%d: %v is not %v", tc.status, err, tc.want)
		}
		if tc.want == nil && !strings.Contains(err.Error(), "bad gateway") {
			t.Errorf("%d: %v does not keep the body", tc.status, err)
		}
	}
}

func TestNewRefusesAURLWithoutScheme(t *testing.T) {
	for _, u := range []string{"localhost:8080", "ftp://host", "http://", ""} {
		if _, err := New(u, ""); err == nil || !strings.Contains(err.Error(), "server URL") {
			t.Errorf("New(%q): err %v", u, err)
		}
	}
}
