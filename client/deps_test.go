package client

import (
	"os/exec"
	"strings"
	"testing"
)

// TestClientLinksOnlyTheWireTypes: a program that only wants the HTTP client
// links neither the Docker SDK, nor Prometheus, nor the MCP SDK, nor the
// executor and server behind the API.
func TestClientLinksOnlyTheWireTypes(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, banned := range []string{"github.com/docker/", "github.com/moby/", "github.com/prometheus/",
			"github.com/modelcontextprotocol/", "airlock/executor", "airlock/server", "airlock/policy", "go.etcd.io/bbolt"} {
			if strings.Contains(dep, banned) {
				t.Errorf("the client links %s", dep)
			}
		}
	}
}
