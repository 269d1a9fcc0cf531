package member

import "testing"

// TestNodeIDKeptInTheDataDir: without --node-id, a server restarted on the same
// data dir is the same node; another data dir is another node.
func TestNodeIDKeptInTheDataDir(t *testing.T) {
	dir, other := t.TempDir(), t.TempDir()
	first, err := nodeID("", dir)
	if err != nil || !ValidID(first) {
		t.Fatalf("new id %q: %v", first, err)
	}
	again, err := nodeID("", dir)
	if err != nil || again != first {
		t.Errorf("restart: id %q, want %q (%v)", again, first, err)
	}
	if id, _ := nodeID("", other); id == first {
		t.Errorf("another data dir has the same id %q", id)
	}
	if id, _ := nodeID("given", dir); id != "given" {
		t.Errorf("--node-id: %q", id)
	}
}
