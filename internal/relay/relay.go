// Package relay carries a sandbox's outgoing connections to airlock's egress
// proxy without any engine network. Inside the sandbox, airlock's init runs
// as the relay (`airlock-init relay`, exec'd by airlock as the sandbox's
// user): it listens on Addr, on the sandbox's own loopback, and carries each
// connection it accepts as a stream over its stdin and stdout, multiplexed
// with yamux. On the host, Host reads those streams back as net.Conns, which
// the run's egress session serves (internal/egress). The sandbox's programs
// find the relay through the proxy variables (Env).
//
// The channel is, where it can be, a Unix socket: airlock listens on one per
// sandbox, in a directory the engine mounts read-only at SocketDir, and the
// init, PID 1 of the sandbox, listens on Addr from its start and dials the
// socket once per connection (Forward). Nothing is exec'd and the bytes cross
// no engine. Where the engine cannot mount airlock's directory (a remote
// engine, or airlock in a container without it), or under a gVisor that may
// not open host sockets, the channel is the exec's own stdio instead, attached
// through the engine's socket (Serve, Host). docs/DESIGN.md, "Network by
// allow-list", says why this design.
package relay

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/yamux"
	"golang.org/x/sys/unix"
)

// Addr is where the relay listens inside the sandbox.
const Addr = "127.0.0.1:3128"

// Arg is the init's argument that makes it the relay.
const Arg = "relay"

// SocketDir is where a sandbox sees its relay's directory, and Socket the
// socket airlock listens on there. PassFD, when present there, says that
// the sandbox's connections are the host kernel's (not gVisor's), to hand
// over rather than copy (Forward).
const (
	SocketDir = "/.airlock-relay"
	Socket    = SocketDir + "/egress.sock"
	PassFD    = SocketDir + "/pass-fd"
)

// ready is the line the relay writes once it listens, before the streams.
const ready = "airlock-relay-ready\n"

// Env is what a sandbox's programs need to go through the relay: the proxy
// variables, in both cases, since programs read one or the other.
func Env() []string {
	proxy := "http://" + Addr
	var env []string
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"} {
		env = append(env, k+"="+proxy)
	}
	env = append(env, "NO_PROXY=localhost,127.0.0.1,::1")
	upper := len(env)
	for _, kv := range env[:upper] {
		env = append(env, lower(kv))
	}
	return env
}

// IsProxyVar says whether name is one of the variables Env sets, in either case.
func IsProxyVar(name string) bool {
	switch name {
	case "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy":
		return true
	}
	return false
}

func lower(kv string) string {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			b := []byte(kv[:i])
			for j, c := range b {
				if c >= 'A' && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b) + kv[i:]
		}
	}
	return kv
}

func config() *yamux.Config {
	c := yamux.DefaultConfig()
	c.LogOutput = io.Discard
	c.EnableKeepAlive = false // the exec's end ends the session
	c.MaxStreamWindowSize = 1 << 20
	c.StreamOpenTimeout = 30 * time.Second
	c.StreamCloseTimeout = 30 * time.Second
	return c
}

// Sandbox is the relay's side: it listens on addr and serves there.
func Sandbox(addr string, in io.Reader, out io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("relay: listen on %s: %w", addr, err)
	}
	return Serve(ln, in, out)
}

// Serve says on out that ln listens, and carries every connection it accepts
// as a stream over in and out, until in ends.
func Serve(ln net.Listener, in io.Reader, out io.Writer) error {
	defer ln.Close()
	if _, err := io.WriteString(out, ready); err != nil {
		return err
	}
	sess, err := yamux.Client(stdio{in, out}, config())
	if err != nil {
		return err
	}
	go func() {
		<-sess.CloseChan() // the host has gone: stop accepting
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			sess.Close()
			return nil
		}
		go func() {
			defer c.Close()
			st, err := sess.OpenStream()
			if err != nil {
				return
			}
			defer st.Close()
			pipe(c, st)
		}()
	}
}

// Forward carries every connection ln accepts to airlock's Unix socket at
// socket: with passFD it hands the connection itself over (its descriptor,
// SCM_RIGHTS) and is out of its path from then on; otherwise it copies both
// ways over a connection of its own to the socket (gVisor, whose loopback
// connections are not the host kernel's to hand over). It returns when ln
// fails.
func Forward(ln net.Listener, socket string, passFD bool) error {
	defer ln.Close()
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		go func() {
			defer c.Close()
			up, err := net.Dial("unix", socket)
			if err != nil {
				return
			}
			defer up.Close()
			if passFD {
				handOver(c.(*net.TCPConn), up.(*net.UnixConn))
				return
			}
			pipe(c, up)
		}()
	}
}

// handOver sends c's descriptor over up: airlock serves c from then on.
func handOver(c *net.TCPConn, up *net.UnixConn) {
	raw, err := c.SyscallConn()
	if err != nil {
		return
	}
	raw.Control(func(fd uintptr) {
		up.WriteMsgUnix([]byte{0}, unix.UnixRights(int(fd)), nil)
	})
}

// FDListener is airlock's side of a relay that hands connections over
// (Forward with passFD): each connection to its socket brings one TCP
// connection of the sandbox's loopback, which Accept returns. Whatever else
// comes (no descriptor, several, one that is not a TCP connection) is closed
// and dropped: the sandbox's programs can dial the socket too.
type FDListener struct {
	ln      *net.UnixListener
	conns   chan net.Conn
	done    chan struct{}
	once    sync.Once
	pending atomic.Int32 // connections whose descriptor has not come yet
}

// maxPending bounds the connections to the socket waiting for their
// descriptor; more are closed at once.
const maxPending = 64

// NewFDListener receives connections on ln until Close.
func NewFDListener(ln *net.UnixListener) *FDListener {
	l := &FDListener{ln: ln, conns: make(chan net.Conn), done: make(chan struct{})}
	go func() {
		for {
			u, err := ln.AcceptUnix()
			if err != nil {
				l.Close()
				return
			}
			if l.pending.Add(1) > maxPending {
				l.pending.Add(-1)
				u.Close() // a flood of connections that bring nothing yet
				continue
			}
			go func() {
				c, err := receiveConn(u)
				l.pending.Add(-1)
				u.Close()
				if err != nil {
					return
				}
				select {
				case l.conns <- c:
				case <-l.done:
					c.Close()
				}
			}()
		}
	}()
	return l
}

// Accept waits for the next connection handed over.
func (l *FDListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops receiving; connections already accepted are the caller's.
func (l *FDListener) Close() error {
	l.once.Do(func() {
		close(l.done)
		l.ln.Close()
	})
	return nil
}

// receiveConn reads the one descriptor u brings, within handOverTimeout,
// and returns it as a TCP connection.
func receiveConn(u *net.UnixConn) (net.Conn, error) {
	u.SetReadDeadline(time.Now().Add(handOverTimeout))
	buf, oob := make([]byte, 1), make([]byte, unix.CmsgSpace(4))
	_, oobn, flags, _, err := u.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	if msgs, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for _, m := range msgs {
			got, _ := unix.ParseUnixRights(&m)
			fds = append(fds, got...)
		}
	}
	if flags&unix.MSG_CTRUNC != 0 || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, errors.New("relay: not one descriptor")
	}
	f := os.NewFile(uintptr(fds[0]), "relayed")
	c, err := net.FileConn(f)
	f.Close()
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		c.Close()
		return nil, errors.New("relay: not a TCP connection")
	}
	return tc, nil
}

// handOverTimeout bounds how long a connection to the socket may take to
// bring its descriptor.
const handOverTimeout = 10 * time.Second

// pipe copies both ways until both ends are done, passing on half-closes.
func pipe(a, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	half := func(dst, src net.Conn) {
		defer wg.Done()
		// A plain copy through a buffer, never splice(2): gVisor's splice from
		// its loopback to a socket of the host garbles the bytes.
		io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, make([]byte, 64<<10))
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		} else {
			dst.Close()
		}
	}
	go half(a, b)
	go half(b, a)
	wg.Wait()
}

// stdio is the relay's stdin and stdout as one connection for yamux.
type stdio struct {
	io.Reader
	io.Writer
}

func (stdio) Close() error { return nil }

// Host is airlock's side of one relay: conn is the exec's stdio (its stdout
// to read, its stdin to write). It waits for the relay to listen, then yields
// each connection from the sandbox through Accept.
type Host struct {
	sess *yamux.Session
}

// NewHost waits for the relay's readiness on conn, at most timeout.
func NewHost(conn io.ReadWriteCloser, timeout time.Duration) (*Host, error) {
	br := bufio.NewReader(conn)
	got := make(chan error, 1)
	go func() {
		// Exactly the line's length, never a line without bound: the
		// sandbox's programs, as its user, may be what writes there.
		line := make([]byte, len(ready))
		_, err := io.ReadFull(br, line)
		if err == nil && string(line) != ready {
			err = fmt.Errorf("relay: said %q", line)
		}
		got <- err
	}()
	select {
	case err := <-got:
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("relay did not start: %w", err)
		}
	case <-time.After(timeout):
		conn.Close()
		return nil, errors.New("relay did not start in time")
	}
	sess, err := yamux.Server(struct {
		io.Reader
		io.Writer
		io.Closer
	}{br, conn, conn}, config())
	if err != nil {
		conn.Close()
		return nil, err
	}
	return &Host{sess: sess}, nil
}

// Accept waits for the next connection from the sandbox.
func (h *Host) Accept() (net.Conn, error) { return h.sess.AcceptStream() }

// Close ends every connection and the relay.
func (h *Host) Close() error { return h.sess.Close() }
