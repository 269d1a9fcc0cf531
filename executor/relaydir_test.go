package executor

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// dialAs connects to the Unix socket at path as the host's user uid would:
// on a thread of its own whose file system user and group are uid, so that
// the kernel checks the path's permissions for that user. The thread ends
// with the call (it is never unlocked), so nothing else runs as uid.
func dialAs(uid int, path string) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		unix.Setfsgid(uid)
		unix.Setfsuid(uid)
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			errc <- err
			return
		}
		defer unix.Close(fd)
		errc <- unix.Connect(fd, &unix.SockaddrUnix{Name: path})
	}()
	return <-errc
}

// TestRelaySocketIsTheSandboxsAlone: the relays' directory is airlock's
// user's alone (0700), so another user of the host who reads a socket's
// path in /proc/*/mountinfo cannot connect to it; airlock's own user can.
func TestRelaySocketIsTheSandboxsAlone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to dial as another user")
	}
	base, err := os.MkdirTemp("", "ar")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	os.Chmod(base, 0o755)
	e := newFakeExecutor(t, newFakeEngine(), func(c *Config) { c.Egress.SocketDir = base })
	dir, ok := e.relaySockets(t.Context(), "runc")
	if !ok {
		t.Fatal("no relay directory")
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the relays' directory %s: %v, %v; want mode 0700", dir, fi.Mode(), err)
	}
	x, sandboxDir, err := e.listenRelay(t.Context(), "airlock-private", "runc")
	if err != nil {
		t.Fatal(err)
	}
	defer x.cut()
	sock := filepath.Join(sandboxDir, "egress.sock")
	if err := dialAs(4242, sock); !errors.Is(err, unix.EACCES) {
		t.Errorf("another user of the host dialled the sandbox's socket: %v; want EACCES", err)
	}
	if err := dialAs(0, sock); err != nil {
		t.Errorf("airlock's user could not dial it: %v", err)
	}
}

// TestRelayDirNotPrivateIsNotUsed: a socket directory that another user
// owns, or that sits in a directory others may write (not sticky), is not
// used: the relays go over exec streams.
func TestRelayDirNotPrivateIsNotUsed(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to make another user's directory")
	}
	for name, setup := range map[string]func(base string) string{
		"another user's": func(base string) string {
			os.Chown(base, 4242, 4242)
			return base
		},
		"in a directory all may write": func(base string) string {
			os.Chmod(base, 0o777)
			return filepath.Join(base, "relays")
		},
	} {
		base, err := os.MkdirTemp("", "ar")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(base)
		dir := setup(base)
		e := newFakeExecutor(t, newFakeEngine(), func(c *Config) { c.Egress.SocketDir = dir })
		if got, ok := e.relaySockets(t.Context(), "runc"); ok {
			t.Errorf("%s socket directory: used %s; want exec relays", name, got)
		}
	}
}
