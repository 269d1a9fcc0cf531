package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/enginefake"
)

// exchange sends request, as written, over a connection of its own: with
// halfClose the client then closes its side, as a client that ran out of body
// does; else it goes quiet. It returns the responses, as a raw client reads them.
func (h *harness) exchange(request string, halfClose bool) []*http.Response {
	h.t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		h.t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		h.t.Fatal(err)
	}
	if halfClose {
		conn.(*net.TCPConn).CloseWrite()
	}
	var out []*http.Response
	br := bufio.NewReader(conn)
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return out
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(strings.NewReader(string(body)))
		out = append(out, resp)
	}
}

// A body shorter or longer than its Content-Length is a 400 that names the
// body, on JSON routes and on uploads alike; what the client sent is not acted
// on.
func TestBodyDisagreesWithContentLength(t *testing.T) {
	h := newHarness(t, nil)
	status, data, _ := h.do("POST", "/v1/workspaces", tokA, map[string]any{"size": 4 << 20})
	if status != http.StatusCreated {
		t.Fatalf("create workspace: %d %s", status, data)
	}
	ws := decode[struct{ ID string }](t, data).ID
	t.Cleanup(func() {
		req, _ := http.NewRequest("DELETE", h.url+"/v1/workspaces/"+ws, nil)
		req.Header.Set("Authorization", "Bearer "+tokA)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	})

	request := func(method, path, contentType string, length int, body string) string {
		return fmt.Sprintf("%s %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s",
			method, path, strings.TrimPrefix(h.url, "http://"), tokA, contentType, length, body)
	}
	const js = `{"command":"echo hi > /workspace/ran"}`
	for _, c := range []struct {
		name       string
		method     string
		path, ct   string
		length     int
		body       string
		halfClose  bool
		wantInBody string
	}{
		{"json shorter, closed", "POST", "/v1/processes", "application/json", len(js) + 20, js, true, "Content-Length"},
		{"json shorter, quiet", "POST", "/v1/processes", "application/json", len(js) + 20, js, false, "Content-Length"},
		{"json longer", "POST", "/v1/processes", "application/json", len(js) - 5, js, true, "body"},
		{"workspace json shorter", "POST", "/v1/workspaces", "application/json", 40, `{"size":4194304}`, true, "Content-Length"},
		{"file shorter", "PUT", "/v1/workspaces/" + ws + "/files/short.txt", "application/octet-stream", 100, "hello", true, "Content-Length"},
		{"file longer", "PUT", "/v1/workspaces/" + ws + "/files/long.txt", "application/octet-stream", 3, "hello world", true, "Content-Length"},
		{"file longer, quiet", "PUT", "/v1/workspaces/" + ws + "/files/long.txt", "application/octet-stream", 3, "hello world", false, "Content-Length"},
		{"archive longer", "PUT", "/v1/workspaces/" + ws + "/archive/", "application/x-tar", 1024, strings.Repeat("\x00", 1500), true, "Content-Length"},
		{"archive shorter", "PUT", "/v1/workspaces/" + ws + "/archive/", "application/x-tar", 4096, strings.Repeat("\x00", 100), true, "Content-Length"},
		// Uploads lift the server's read timeout for their whole transfer; a
		// body that stops arriving is still given up a read timeout after its
		// last byte.
		{"file shorter, quiet", "PUT", "/v1/workspaces/" + ws + "/files/short.txt", "application/octet-stream", 100, "hello", false, "within the server's read timeout"},
		{"archive shorter, quiet", "PUT", "/v1/workspaces/" + ws + "/archive/", "application/x-tar", 4096, strings.Repeat("\x00", 100), false, "within the server's read timeout"},
		// Chunked bodies (length -1 below): framing that does not parse, a
		// body the client cuts off, one that stops arriving.
		{"chunked malformed", "PUT", "/v1/workspaces/" + ws + "/files/short.txt", "application/octet-stream", -1, "5\r\nhello\r\nzz\r\n", false, "could not be read"},
		{"chunked cut off", "PUT", "/v1/workspaces/" + ws + "/files/short.txt", "application/octet-stream", -1, "5\r\nhello\r\n", true, "cut short"},
		{"chunked quiet", "PUT", "/v1/workspaces/" + ws + "/files/short.txt", "application/octet-stream", -1, "5\r\nhello\r\n", false, "stopped arriving"},
		{"chunked archive cut off", "PUT", "/v1/workspaces/" + ws + "/archive/", "application/x-tar", -1, "200\r\n" + strings.Repeat("\x00", 512) + "\r\n", true, "cut short"},
		{"chunked json malformed", "POST", "/v1/processes", "application/json", -1, "5\r\n{\"a\":\r\nzz\r\n", false, "could not be read"},
	} {
		req := request(c.method, c.path, c.ct, c.length, c.body)
		if c.length < 0 {
			req = strings.Replace(req, "Content-Length: -1", "Transfer-Encoding: chunked", 1)
		}
		start := time.Now()
		resps := h.exchange(req, c.halfClose)
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%s: answered after %s; the server's read timeout is %s", c.name, d, testTimeouts.Read)
		}
		if len(resps) == 0 {
			t.Errorf("%s: no response", c.name)
			continue
		}
		first := resps[0]
		body, _ := io.ReadAll(first.Body)
		t.Logf("%s: %d %s (%d response(s))", c.name, first.StatusCode, body, len(resps))
		if first.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), `"field":"body"`) || !strings.Contains(string(body), c.wantInBody) {
			t.Errorf("%s: %d %s; want 400 naming the body and %q", c.name, first.StatusCode, body, c.wantInBody)
		}
	}
	// Nothing the server took from a cut body landed.
	for _, p := range []string{"short.txt", "long.txt", "ran"} {
		if status, data, _ := h.do("GET", "/v1/workspaces/"+ws+"/files/"+p, tokA, nil); status != http.StatusNotFound {
			t.Errorf("%s after a refused body: %d %s", p, status, data)
		}
	}
}

// The answers net/http writes before any handler runs carry the API's error
// shape too: a path with an invalid escape, a request line past the header
// limit, a Transfer-Encoding net/http does not take.
func TestGoServerErrorsAreJSON(t *testing.T) {
	h := newFakeHarness(t, enginefake.New(), nil)
	host := strings.TrimPrefix(h.url, "http://")
	for _, c := range []struct {
		name, request string
		status        int
		code, field   string
	}{
		{"invalid escape", "PUT /v1/secrets/E%zz HTTP/1.1\r\nHost: " + host + "\r\nContent-Length: 0\r\n\r\n", 400, "invalid_request", "request"},
		{"url over 64 KiB", "GET /v1/processes/" + strings.Repeat("a", 80<<10) + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n", 431, "headers_too_large", "headers"},
		{"unknown transfer encoding", "POST /v1/check HTTP/1.1\r\nHost: " + host + "\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 400, "invalid_request", "request"},
	} {
		resps := h.exchange(c.request, false)
		if len(resps) != 1 {
			t.Errorf("%s: %d responses", c.name, len(resps))
			continue
		}
		body, _ := io.ReadAll(resps[0].Body)
		var e struct {
			Error struct{ Code, Message, Field string }
		}
		err := json.Unmarshal(body, &e)
		t.Logf("%s: %d %s", c.name, resps[0].StatusCode, body)
		if err != nil || resps[0].StatusCode != c.status || e.Error.Code != c.code || e.Error.Field != c.field || e.Error.Message == "" ||
			resps[0].Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %q %s; want %d %s naming %s", c.name, resps[0].StatusCode, resps[0].Header.Get("Content-Type"), body, c.status, c.code, c.field)
		}
	}
	// A well-formed request on the same listener is untouched.
	if status, data, _ := h.do("POST", "/v1/check", tokA, map[string]any{"command": "echo hi"}); status != 200 {
		t.Errorf("check: %d %s", status, data)
	}
}
