package executor

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestRemoveStaleRelayDirs: a relay directory goes when its container is gone
// and it is old enough; a live container's (a claimed warm sandbox's under
// its new name too), a young one's and anything not airlock's stay.
func TestRemoveStaleRelayDirs(t *testing.T) {
	base := t.TempDir()
	old := time.Now().Add(-2 * relayDirGrace)
	for name, age := range map[string]time.Time{
		"airlock-gone": old, "airlock-live": old, "airlock-claimed-warm": old, "airlock-young": time.Now(), "probe-1": old, "other": old,
	} {
		dir := filepath.Join(base, name)
		os.Mkdir(dir, 0o711)
		os.WriteFile(filepath.Join(dir, "egress.sock"), nil, 0o666)
		os.Chtimes(dir, age, age)
	}
	e := &Executor{relayDir: base}
	e.removeStaleRelayDirs(map[string]bool{"airlock-live": true, "airlock-claimed": true})
	left, _ := os.ReadDir(base)
	var names []string
	for _, en := range left {
		names = append(names, en.Name())
	}
	want := []string{"airlock-claimed-warm", "airlock-live", "airlock-young", "other", "probe-1"}
	if len(names) != len(want) {
		t.Fatalf("left %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("left %v, want %v", names, want)
		}
	}
}
