package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/executor"
)

// testNames resolves every name to the loopback, where the test's origin is.
type testNames struct{}

func (testNames) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
}

// Egress over the API: within the server's and the tenant's bounds a run
// reaches its host and reports it; outside them the request is a 400 naming
// the host; MCP's text names the denied hosts.
func TestEgressThroughTheAPI(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "from the origin\n") }))
	defer origin.Close()
	port := origin.Listener.Addr().(*net.TCPAddr).Port
	h := startHarness(t, func(c *Config) {
		c.Egress = Egress{Allowed: []string{fmt.Sprintf("pypi.test:%d", port), fmt.Sprintf("other.test:%d", port), fmt.Sprintf("*.corp.test:%d", port)}, AllowCIDRs: []string{"127.0.0.0/8"}}
		c.Tenants = map[string]Tenant{"beta": {Egress: &TenantEgress{Allowed: []string{fmt.Sprintf("pypi.test:%d", port)}}}}
	}, nil, func(ec *executor.Config) { ec.Egress.Resolver = testNames{} })

	cmd := fmt.Sprintf("wget -q -O - http://pypi.test:%d/; wget -q -O - http://other.test:%d/ >/dev/null 2>&1 || echo refused", port, port)
	status, data, _ := h.do("POST", "/v1/processes", tokA, map[string]any{"command": cmd, "egress": []string{fmt.Sprintf("pypi.test:%d", port)}})
	r := decode[executor.Result](t, data)
	if status != 200 || r.Stdout != "from the origin\nrefused\n" || len(r.Egress) != 2 {
		t.Fatalf("a run with egress: %d %s", status, data)
	}
	for _, c := range []struct {
		token string
		host  string
	}{{tokA, "evil.test"}, {tokA, fmt.Sprintf("pypi.test:%d", port+1)}, {tokB, fmt.Sprintf("other.test:%d", port)}} {
		status, data, _ := h.do("POST", "/v1/processes", c.token, map[string]any{"command": "true", "egress": []string{c.host}})
		e := decode[struct{ Error api.Error }](t, data).Error
		if status != 400 || e.Field != "egress" || !strings.Contains(e.Message, strings.Split(c.host, ":")[0]) {
			t.Errorf("egress %s: %d %s; want a 400 naming it", c.host, status, data)
		}
	}
	cs, err := h.mcpSession(tokA)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"command": cmd, "egress": []string{fmt.Sprintf("pypi.test:%d", port)}}})
	if err != nil {
		t.Fatal(err)
	}
	if text := textOf(res); !strings.Contains(text, "egress denied: other.test:") {
		t.Errorf("MCP's text does not name the denied host:\n%s", text)
	}
}
