package server

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/executor"
)

// request sends a raw request with the given headers and returns the status and body.
func (h *harness) request(method, path, body string, header map[string]string) (int, []byte) {
	h.t.Helper()
	req, err := http.NewRequestWithContext(h.t.Context(), method, h.url+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, data
}

// TestNoTokenServerRefusesOtherSites: a server without tokens takes requests
// only under its own loopback names and from its own origin, so that a web page
// can neither post to it (CSRF) nor read it through DNS rebinding.
func TestNoTokenServerRefusesOtherSites(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Tokens = nil; c.AllowedHosts = []string{"airlock.internal"} })
	job := `{"command":"sleep 600","background":true}`
	plain := map[string]string{"Content-Type": "text/plain"}
	cases := []struct {
		name, method, path, body string
		header                   map[string]string
		status                   int
		code                     string
	}{
		{"cross-site form post", "POST", "/v1/processes", job,
			map[string]string{"Content-Type": "text/plain", "Origin": "https://evil.example"}, 403, "forbidden"},
		{"text/plain from anywhere", "POST", "/v1/processes", job, plain, 415, "unsupported_media_type"},
		{"form encoding", "POST", "/v1/processes", job, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, "unsupported_media_type"},
		{"no body type", "POST", "/v1/check", `{"command":"ls"}`, map[string]string{"Content-Type": ""}, 415, "unsupported_media_type"},
		{"rebound name lists", "GET", "/v1/processes", "", map[string]string{"Host": "evil.example:8080"}, 403, "forbidden"},
		{"rebound name kills", "POST", "/v1/processes/0123456789abcdef01234567/kill", "", map[string]string{"Host": "evil.example"}, 403, "forbidden"},
		{"rebound name deletes", "DELETE", "/v1/processes/0123456789abcdef01234567", "", map[string]string{"Host": "evil.example"}, 403, "forbidden"},
		{"rebound name on mcp", "POST", "/mcp", "{}", map[string]string{"Host": "evil.example", "Content-Type": "application/json"}, 403, "forbidden"},
		{"rebound name reads metrics", "GET", "/metrics", "", map[string]string{"Host": "evil.example"}, 403, "forbidden"},
		{"another local origin", "GET", "/v1/processes", "", map[string]string{"Origin": "http://localhost:3000", "Host": "localhost:8080"}, 403, "forbidden"},
		{"null origin", "GET", "/v1/processes", "", map[string]string{"Origin": "null"}, 403, "forbidden"},
		{"same origin", "GET", "/v1/processes", "", map[string]string{"Origin": "http://localhost:8080", "Host": "localhost:8080"}, 200, ""},
		{"loopback address", "GET", "/v1/processes", "", map[string]string{"Host": "127.0.0.1:8080"}, 200, ""},
		{"ipv6 loopback", "GET", "/v1/processes", "", map[string]string{"Host": "[::1]:8080"}, 200, ""},
		{"allowed name", "GET", "/v1/processes", "", map[string]string{"Host": "AIRLOCK.internal:8080"}, 200, ""},
		{"json with charset", "POST", "/v1/check", `{"command":"ls"}`, map[string]string{"Content-Type": "application/json; charset=utf-8"}, 200, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, data := h.request(c.method, c.path, c.body, c.header)
			if c.status == 200 {
				if status != 200 {
					t.Fatalf("status %d: %s", status, data)
				}
				return
			}
			field := ""
			if c.code == "unsupported_media_type" {
				field = "Content-Type"
			}
			wantError(t, status, data, c.status, c.code, field)
		})
	}
	// None of the refused requests started anything.
	if list, err := h.ex.List(t.Context(), executor.ListOptions{}); err != nil || list.Total != 0 {
		t.Fatalf("jobs after refusals: %+v, %v", list, err)
	}
	// The refusals are audited.
	forbidden := 0
	for _, ev := range h.auditLines() {
		if ev.Event == "auth.failed" && strings.Contains(ev.Reason, "evil.example") {
			forbidden++
		}
	}
	if forbidden < 5 {
		t.Fatalf("%d forbidden requests audited, want every one", forbidden)
	}
}

// TestTokenServerNeedsNoOriginCheck: with tokens, the bearer header is the
// guard (a page cannot send it across origins without a preflight, and the
// server grants none), so any Host is served; the body type is still checked.
func TestTokenServerNeedsNoOriginCheck(t *testing.T) {
	h := newHarness(t, nil)
	status, data := h.request("GET", "/v1/processes", "", map[string]string{"Host": "airlock.example.com", "Authorization": "Bearer " + tokA})
	if status != 200 {
		t.Fatalf("a token holder under another name: %d %s", status, data)
	}
	status, data = h.request("POST", "/v1/check", `{"command":"ls"}`, map[string]string{"Content-Type": "text/plain", "Authorization": "Bearer " + tokA})
	wantError(t, status, data, 415, "unsupported_media_type", "Content-Type")
	// A CORS preflight is never granted.
	req, _ := http.NewRequestWithContext(t.Context(), "OPTIONS", h.url+"/v1/processes", nil)
	req.Header.Set("Origin", "https://evil.example")
	req.Header.Set("Access-Control-Request-Method", "POST")
	req.Header.Set("Access-Control-Request-Headers", "authorization, content-type")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for k := range resp.Header {
		if strings.HasPrefix(k, "Access-Control-") {
			t.Fatalf("preflight answered with %s: %v", k, resp.Header)
		}
	}
}
