package server

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/internal/enginefake"
)

// raw sends a request as written, follows no redirect, and returns the status,
// the error's code and the Location header.
func (h *harness) raw(method, path string) (int, string, string) {
	h.t.Helper()
	req, err := http.NewRequestWithContext(h.t.Context(), method, h.url+path, strings.NewReader("x"))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tokA)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Error api.Error }
	json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body.Error.Code, resp.Header.Get("Location")
}

// A path not in canonical form is refused with refused_path, plain or escaped,
// on every route and method: ServeMux used to redirect it to the cleaned path,
// which a client followed into another workspace.
func TestNonCanonicalPathsRefused(t *testing.T) {
	h := newFakeHarness(t, enginefake.New(), nil)
	for _, p := range []string{
		"/v1/workspaces/ws_a/files/../../ws_b/files/x",
		"/v1/workspaces/ws_a/files/a/./b",
		"/v1/workspaces/ws_a/files/a//b",
		"/v1/workspaces/ws_a/files/./b",
		"/v1/workspaces/ws_a/files/%2e%2e/x",
		"/v1/workspaces/ws_a/files/a/%2E/b",
		"/v1/workspaces/ws_a/files/a%2F%2Fb",
		"/v1/workspaces/ws_a/files/a%0Ab",
		"/v1/workspaces/ws_a/files/a%7Fb",
		"/v1/processes/x/../y",
		"//v1/processes",
	} {
		for _, m := range []string{"GET", "PUT", "DELETE", "POST"} {
			status, code, loc := h.raw(m, p)
			if status != http.StatusBadRequest || code != "refused_path" || loc != "" {
				t.Errorf("%s %s: %d %q Location %q; want 400 refused_path and no redirect", m, p, status, code, loc)
			}
		}
	}
}

// No route answers with a redirect, not even ServeMux's own for a subtree
// named without its slash.
func TestNoRedirects(t *testing.T) {
	h := newFakeHarness(t, enginefake.New(), nil)
	for _, p := range []string{"/v1/workspaces/ws_a/files", "/v1/workspaces/ws_a/archive", "/v1/processes/"} {
		status, _, loc := h.raw("GET", p)
		if status >= 300 && status < 400 || loc != "" {
			t.Errorf("GET %s: %d Location %q; want no redirect", p, status, loc)
		}
	}
}

// The 413 names the route once: "for POST /v1/check", not "POST POST".
func TestTooLargeNamesTheRoute(t *testing.T) {
	h := newFakeHarness(t, enginefake.New(), func(c *Config) { c.MaxBodyBytes = 1 << 10 })
	status, data, _ := h.do("POST", "/v1/check", tokA, `{"command":"`+strings.Repeat("x", 4<<10)+`"}`)
	e := decode[struct{ Error api.Error }](t, data).Error
	if status != http.StatusRequestEntityTooLarge || !strings.HasSuffix(e.Message, "for POST /v1/check") {
		t.Fatalf("%d %+v; want 413 naming POST /v1/check once", status, e)
	}
}

// The OpenAPI document's description of /mcp names every tool the server has.
func TestMCPToolsDocumented(t *testing.T) {
	h := newFakeHarness(t, enginefake.New(), nil)
	cs, err := h.mcpSession(tokA)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	desc := loadOpenAPI(t).Paths.Find("/mcp").Description
	n := 0
	for tool, err := range cs.Tools(t.Context(), &mcp.ListToolsParams{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if !strings.Contains(desc, tool.Name) {
			t.Errorf("the /mcp description does not name the tool %s", tool.Name)
		}
	}
	if n < 13 {
		t.Errorf("%d tools; want at least 13", n)
	}
}
