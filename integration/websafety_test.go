package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/executor"
)

// TestServeNoTokensRefusesWebPages: a real server without tokens, as `make run`
// starts it, refuses what a web page on the same machine could send: a
// cross-origin text/plain POST that would start a 24-hour job (CSRF), and
// requests under a foreign Host (DNS rebinding) to list, kill or delete jobs,
// or to reach /mcp. Nothing is started, and a same-origin client still works.
func TestServeNoTokensRefusesWebPages(t *testing.T) {
	addr := freePort(t)
	dataDir := t.TempDir()
	s := startServe(t, addr, dataDir)
	send := func(method, path, body string, header map[string]string) (int, string) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, s.url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
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
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(data)
	}
	job := `{"command":"sleep 86400","background":true}`
	for _, c := range []struct {
		name, method, path, body string
		header                   map[string]string
		status                   int
	}{
		{"cross-site form post", "POST", "/v1/processes", job,
			map[string]string{"Content-Type": "text/plain", "Origin": "http://attacker.example"}, 403},
		{"simple request without an origin", "POST", "/v1/processes", job, map[string]string{"Content-Type": "text/plain"}, 415},
		{"rebound list", "GET", "/v1/processes", "", map[string]string{"Host": "attacker.example:" + portOf(addr)}, 403},
		{"rebound kill", "POST", "/v1/processes/0123456789abcdef01234567/kill", "", map[string]string{"Host": "attacker.example"}, 403},
		{"rebound delete", "DELETE", "/v1/processes/0123456789abcdef01234567", "", map[string]string{"Host": "attacker.example"}, 403},
		{"rebound mcp", "POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
			map[string]string{"Host": "attacker.example", "Content-Type": "application/json"}, 403},
		{"another local origin", "GET", "/v1/processes", "", map[string]string{"Origin": "http://localhost:3000"}, 403},
	} {
		if status, body := send(c.method, c.path, c.body, c.header); status != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, status, body, c.status)
		}
	}
	// The server's own clients are served: same origin, loopback names.
	status, body := send("GET", "/v1/processes", "", map[string]string{"Origin": s.url})
	if status != 200 {
		t.Fatalf("same-origin list: %d %s", status, body)
	}
	var list executor.ProcessList
	if err := json.Unmarshal([]byte(body), &list); err != nil || list.Total != 0 {
		t.Fatalf("jobs after the refusals: %s (%v)", body, err)
	}
	status, body = send("POST", "/v1/processes", `{"command":"echo hi"}`,
		map[string]string{"Content-Type": "application/json", "Host": "localhost:" + portOf(addr)})
	if status != 200 || !strings.Contains(body, `"stdout":"hi\n"`) {
		t.Fatalf("a run from curl: %d %s", status, body)
	}
}

func portOf(addr string) string {
	return addr[strings.LastIndex(addr, ":")+1:]
}
