package executor

import (
	"os"
	"path/filepath"
	"strings"
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

// TestRelaySocketDirTooLong: a socket directory whose sockets could not fit
// a Unix socket's path is not used (the relays go over exec streams, and the
// log says why) rather than failing each run at its bind; one that fits is.
func TestRelaySocketDirTooLong(t *testing.T) {
	for _, tc := range []struct {
		extra int
		want  bool
	}{{relayPathRoom, false}, {0, true}} {
		base, err := os.MkdirTemp("", "ar")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(base)
		dir := base
		if n := tc.extra - len(base); n > 0 {
			dir = filepath.Join(base, strings.Repeat("d", n)) // longer than relayPathRoom
		}
		e := newFakeExecutor(t, newFakeEngine(), func(c *Config) { c.Egress.SocketDir = dir })
		if _, ok := e.relaySockets(t.Context(), "runc"); ok != tc.want {
			t.Errorf("socket dir of %d bytes (room %d): used %v, want %v", len(e.relayBase()), relayPathRoom, ok, tc.want)
		}
	}
}
