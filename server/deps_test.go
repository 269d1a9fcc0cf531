package server

import (
	"os/exec"
	"strings"
	"testing"
)

// TestServerLinksNoHTTPClient: the server reaches other nodes through Peer,
// which the cluster wing implements (cluster/peer); it links no client of its
// own API.
func TestServerLinksNoHTTPClient(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "github.com/airlock-sandbox/airlock/client" || strings.HasPrefix(dep, "github.com/airlock-sandbox/airlock/cluster/peer") {
			t.Errorf("the server links %s", dep)
		}
	}
}
