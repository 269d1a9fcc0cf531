package relay

import (
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// duplex joins the two ends of two pipes: the exec's stdio as airlock sees it.
type duplex struct {
	io.Reader
	io.Writer
	close func()
}

func (d duplex) Close() error { d.close(); return nil }

func TestRelayCarriesConnections(t *testing.T) {
	toSandbox, fromHost := io.Pipe()
	toHost, fromSandbox := io.Pipe()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Serve(ln, toSandbox, fromSandbox) }()
	host, err := NewHost(duplex{toHost, fromHost, func() { fromHost.Close(); toHost.Close() }}, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// The host's side echoes each connection, upper-cased.
	go func() {
		for {
			c, err := host.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				b, _ := io.ReadAll(c)
				c.Write([]byte(strings.ToUpper(string(b))))
			}()
		}
	}()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			msg := strings.Repeat(string(rune('a'+i)), 100000)
			c.Write([]byte(msg))
			c.(*net.TCPConn).CloseWrite()
			got, _ := io.ReadAll(c)
			if string(got) != strings.ToUpper(msg) {
				t.Errorf("connection %d: %d bytes back", i, len(got))
			}
		}()
	}
	wg.Wait()
	// The host's end ends the relay and its listener.
	host.Close()
	fromHost.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the relay outlived the host's end")
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("the relay still listens")
	}
}

func TestEnv(t *testing.T) {
	env := strings.Join(Env(), " ")
	for _, want := range []string{"HTTP_PROXY=http://127.0.0.1:3128", "https_proxy=http://127.0.0.1:3128", "no_proxy=localhost"} {
		if !strings.Contains(env, want) {
			t.Errorf("env %q lacks %s", env, want)
		}
	}
}

// TestHostReadsABoundedReadyLine: an exec that never ends its first line
// is refused after reading the ready line's length, not read without
// bound.
func TestHostReadsABoundedReadyLine(t *testing.T) {
	r, w := io.Pipe()
	var sent atomic.Int64
	go func() {
		buf := []byte(strings.Repeat("x", 64<<10))
		for sent.Load() < 64<<20 {
			n, err := w.Write(buf)
			sent.Add(int64(n))
			if err != nil {
				return
			}
		}
		w.Close()
	}()
	_, err := NewHost(duplex{r, io.Discard, func() { r.Close() }}, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "said") {
		t.Fatalf("NewHost: %v; want it refused for what the relay said", err)
	}
	if n := sent.Load(); n > 1<<20 {
		t.Errorf("NewHost read %d MiB of a ready line; want at most the buffer's", n>>20)
	}
}
