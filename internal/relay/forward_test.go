package relay

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// forwarder is a relay that listens on the loopback and forwards to a socket
// of a temporary directory, where an FDListener (passFD) or a plain listener
// takes the connections.
func forwarder(t *testing.T, passFD bool) (addr string, sock string, accept func() (net.Conn, error)) {
	t.Helper()
	sock = filepath.Join(t.TempDir(), "egress.sock")
	uln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	var conns interface {
		Accept() (net.Conn, error)
		Close() error
	} = uln
	if passFD {
		conns = NewFDListener(uln)
	}
	t.Cleanup(func() { conns.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go Forward(ln, sock, passFD)
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String(), sock, conns.Accept
}

// exchange dials addr, has the accepted side answer, and checks both ways
// and the half-close.
func exchange(t *testing.T, addr string, accept func() (net.Conn, error)) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "ping")
	c.(*net.TCPConn).CloseWrite()
	s, err := accept()
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(s)
	io.WriteString(s, "pong")
	s.Close()
	back, _ := io.ReadAll(c)
	if string(got) != "ping" || string(back) != "pong" {
		t.Errorf("airlock got %q, the sandbox got back %q", got, back)
	}
}

func TestForwardCopies(t *testing.T) {
	addr, _, accept := forwarder(t, false)
	exchange(t, addr, accept)
}

// TestForwardHandsOver: with passFD airlock gets the sandbox's own TCP
// connection, which it serves directly.
func TestForwardHandsOver(t *testing.T) {
	addr, _, accept := forwarder(t, true)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := s.(*net.TCPConn); !ok || s.RemoteAddr().String() != c.LocalAddr().String() {
		t.Errorf("accepted %T from %v; want the sandbox's TCP connection from %v", s, s.RemoteAddr(), c.LocalAddr())
	}
	s.Close()
	exchange(t, addr, accept)
}

// TestFDListenerDropsTheRest: the socket is the sandbox's to dial too; a
// connection that brings no descriptor, several, one that is not a TCP
// connection, or nothing at all is dropped (its descriptors closed) and
// holds up no other.
func TestFDListenerDropsTheRest(t *testing.T) {
	addr, sock, accept := forwarder(t, true)
	send := func(rights []byte) {
		u, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		defer u.Close()
		u.WriteMsgUnix([]byte{0}, rights, nil)
		u.Read(make([]byte, 1)) // until airlock closes it
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	silent, err := net.Dial("unix", sock) // says nothing, for now
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	time.Sleep(100 * time.Millisecond) // airlock has accepted it
	before := openFDs(t)
	send(nil)                                             // no descriptor
	send(unix.UnixRights(int(r.Fd())))                    // a pipe
	send(unix.UnixRights(int(r.Fd()), int(w.Fd())))       // two
	send(unix.UnixRights(int(r.Fd()), int(w.Fd()), 0, 1)) // more than fit
	got := make(chan error, 1)
	go func() {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			var s net.Conn
			if s, err = accept(); err == nil {
				s.Close()
			}
			c.Close()
		}
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a silent connection held up a good one")
	}
	// The good connection's descriptors are closed by goroutines of their
	// own; a leaked one never is.
	after := openFDs(t)
	for deadline := time.Now().Add(2 * time.Second); after > before && time.Now().Before(deadline); after = openFDs(t) {
		time.Sleep(20 * time.Millisecond)
	}
	if after > before {
		t.Errorf("%d descriptors open before, %d after: the dropped ones leaked", before, after)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// TestFDListenerBoundsSilentConnections: a flood of connections that bring
// nothing holds at most maxPending of airlock's descriptors; once it ends, a
// good connection gets through. (While it lasts, the sandbox that floods its
// own socket starves only its own relay.)
func TestFDListenerBoundsSilentConnections(t *testing.T) {
	addr, sock, accept := forwarder(t, true)
	before := openFDs(t)
	var flood []net.Conn
	for range 4 * maxPending {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		flood = append(flood, c)
	}
	time.Sleep(200 * time.Millisecond)
	// Ours: the flood's client ends, and at most maxPending server ends.
	if held := openFDs(t) - before - len(flood); held > maxPending {
		t.Errorf("airlock holds %d descriptors for the flood; at most %d", held, maxPending)
	}
	for _, c := range flood {
		c.Close()
	}
	time.Sleep(200 * time.Millisecond)
	exchange(t, addr, accept)
}
