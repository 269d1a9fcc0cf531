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
		{503, `{"error":{"code":"queue_timeout","message":"no node had room"}}`, api.ErrQueueTimeout, ""},
		{409, `{"error":{"code":"wrong_type","message":"a directory is in the way","field":"path"}}`, api.ErrWrongType, "path"},
		{400, `{"error":{"code":"refused_path","message":"..","field":"path"}}`, api.ErrUnsafePath, "path"},
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

// A file's path is escaped once, segment by segment: the server sees the
// names the caller gave.
func TestFilePathsEscapedOnce(t *testing.T) {
	var got []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.Path, r.URL.EscapedPath())
		w.WriteHeader(http.StatusNoContent)
	}))
	defer ts.Close()
	c, err := New(ts.URL+"/base/", "tok")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PutFile(t.Context(), "ws_1", "dir with space/ü.txt", 0, strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveFile(t.Context(), "ws_1", "a%2Fb?#"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"/base/v1/workspaces/ws_1/files/dir with space/ü.txt", "/base/v1/workspaces/ws_1/files/dir%20with%20space/%C3%BC.txt",
		"/base/v1/workspaces/ws_1/files/a%2Fb?#", "/base/v1/workspaces/ws_1/files/a%252Fb%3F%23",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("the server saw\n%q\nwant\n%q", got, want)
	}
}

// A redirect is never followed: it is an error carrying its status.
func TestRedirectNotFollowed(t *testing.T) {
	followed := false
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			followed = true
			return
		}
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	}))
	defer ts.Close()
	c, err := New(ts.URL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	err = c.RemoveFile(t.Context(), "ws_1", "x")
	var e *api.Error
	if followed || !errors.As(err, &e) || e.Status != http.StatusTemporaryRedirect {
		t.Fatalf("followed %v, err %v; want a 307 error and no request to the target", followed, err)
	}
}
