package egress

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// endless is how much each peer of TestEveryHeadIsBounded tries to send
// without ending its head, and headAllocs the most the proxy may allocate
// meanwhile.
const (
	endless    = 64 << 20
	headAllocs = 16 << 20
)

// stream writes head, then filler until endless bytes in all or the other
// end stops taking them, and returns how many it wrote.
func stream(c net.Conn, head string, filler byte) int64 {
	c.SetWriteDeadline(time.Now().Add(20 * time.Second))
	n, err := io.WriteString(c, head)
	total := int64(n)
	buf := bytes.Repeat([]byte{filler}, 64<<10)
	for err == nil && total < endless {
		n, err = c.Write(buf)
		total += int64(n)
	}
	return total
}

// allocated returns the bytes the process has allocated so far.
func allocated() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.TotalAlloc
}

// endlessPeer listens on loopback and, on each connection, reads what comes
// for a moment, then streams head and filler (see stream); it returns its
// address and a channel of what each connection wrote.
func endlessPeer(t *testing.T, head string) (string, chan int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	sent := make(chan int64, 4)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				go io.Copy(io.Discard, c)
				sent <- stream(c, head, 'a')
			}()
		}
	}()
	return ln.Addr().String(), sent
}

// TestEveryHeadIsBounded: a client, an origin or an upstream proxy that
// never ends its request or answer head (an endless request line, an
// endless header, an endless CONNECT target, over the connection cap and
// within it) is refused or closed after a bounded read, and the proxy's
// allocations stay bounded while it tries to send 64 MiB.
func TestEveryHeadIsBounded(t *testing.T) {
	port := echoOrigin(t)
	type answer struct {
		status int
		err    error
	}
	client := func(t *testing.T, s *Session, proxy *url.URL, head string) (int64, answer) {
		c, err := net.Dial("tcp", proxy.Host)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		got := make(chan answer, 1)
		go func() {
			c.SetReadDeadline(time.Now().Add(20 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				got <- answer{err: err}
				return
			}
			got <- answer{status: resp.StatusCode}
		}()
		return stream(c, head, 'a'), <-got
	}
	holdAll := func(t *testing.T, s *Session, proxy *url.URL) {
		// Every slot taken by an idle client, as with a run's 64 open.
		for i := 0; i < s.p.MaxConns; i++ {
			c, err := net.Dial("tcp", proxy.Host)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			s.mu.Lock()
			open := s.open
			s.mu.Unlock()
			if open == s.p.MaxConns {
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the idle clients were never served")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	for _, tc := range []struct {
		name    string
		overCap bool
		head    string
		status  int // the refusal's, when the client reads one
	}{
		{"over the cap, an endless request line", true, "GET http://echo.test:" + port + "/", 429},
		{"over the cap, an endless header", true, "GET http://echo.test:" + port + "/ HTTP/1.1\r\nX-Junk: ", 429},
		{"over the cap, an endless CONNECT target", true, "CONNECT echo", 429},
		{"an endless request line", false, "GET http://echo.test:" + port + "/", 431},
		{"an endless header", false, "GET http://echo.test:" + port + "/ HTTP/1.1\r\nHost: echo.test:" + port + "\r\nX-Junk: ", 431},
		{"an endless CONNECT target", false, "CONNECT echo", 431},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := loopbackPolicy(t, newResolver("echo.test", "127.0.0.1"), "echo.test:"+port)
			p.MaxConns = 4
			s := NewSession(t.Context(), p)
			proxy := serve(t, s)
			if tc.overCap {
				holdAll(t, s, proxy)
			}
			before := allocated()
			sent, got := client(t, s, proxy, tc.head)
			grew := allocated() - before
			if grew > headAllocs {
				t.Errorf("the proxy allocated %d MiB while the client sent %d MiB of one head; want at most %d MiB", grew>>20, sent>>20, headAllocs>>20)
			}
			if sent >= endless {
				t.Errorf("the client sent all %d MiB of its head: the proxy never refused nor closed it", sent>>20)
			}
			if got.err == nil && got.status != tc.status {
				t.Errorf("answered %d; want %d or the connection closed", got.status, tc.status)
			}
		})
	}

	t.Run("an origin's endless header", func(t *testing.T) {
		addr, sent := endlessPeer(t, "HTTP/1.1 200 OK\r\nX-Junk: ")
		_, oport, _ := net.SplitHostPort(addr)
		p := loopbackPolicy(t, newResolver("endless.test", "127.0.0.1"), "endless.test:"+oport)
		s := NewSession(t.Context(), p)
		proxy := serve(t, s)
		before := allocated()
		resp, body := rawRequest(t, proxy, "GET http://endless.test:"+oport+"/ HTTP/1.1\r\nHost: endless.test:"+oport+"\r\n\r\n")
		n := <-sent
		if grew := allocated() - before; grew > headAllocs {
			t.Errorf("the proxy allocated %d MiB while the origin sent %d MiB of one head", grew>>20, n>>20)
		}
		if resp.StatusCode != 502 || !strings.Contains(body, "over 64 KiB") || n >= endless {
			t.Errorf("answered %d %q after the origin sent %d bytes; want 502 naming the bound, early", resp.StatusCode, body, n)
		}
	})

	t.Run("an upstream proxy's endless answer to CONNECT", func(t *testing.T) {
		addr, sent := endlessPeer(t, "HTTP/1.1 200 OK\r\nX-Junk: ")
		p := loopbackPolicy(t, newResolver(), "far.test:443")
		p.UpstreamProxy = &url.URL{Scheme: "http", Host: addr}
		s := NewSession(t.Context(), p)
		proxy := serve(t, s)
		before := allocated()
		resp, body := rawRequest(t, proxy, "CONNECT far.test:443 HTTP/1.1\r\nHost: far.test:443\r\n\r\n")
		n := <-sent
		if grew := allocated() - before; grew > headAllocs {
			t.Errorf("the proxy allocated %d MiB while the upstream proxy sent %d MiB of one head", grew>>20, n>>20)
		}
		if resp.StatusCode != 502 || n >= endless {
			t.Errorf("answered %d %q after the upstream sent %d bytes; want 502, early", resp.StatusCode, body, n)
		}
	})
}

// TestHeadEnd: a head ends at its first empty line, CRLF or LF alone, as
// textproto reads it, wherever the search resumes.
func TestHeadEnd(t *testing.T) {
	for _, tc := range []struct {
		in   string
		from int
		want int
	}{
		{"GET / HTTP/1.1\r\nHost: a\r\n\r\nbody", 0, 27},
		{"GET / HTTP/1.1\nHost: a\n\nbody", 0, 24},
		{"GET / HTTP/1.1\nA: b\n\n\r\n\r\n", 0, 21},
		{"GET / HTTP/1.1\r\nHost: a\r\n", 0, 0},
		{"GET / HTTP/1.1\r\nHost: a\r\n\r\n", 24, 27},
	} {
		if got := headEnd([]byte(tc.in), tc.from); got != tc.want {
			t.Errorf("headEnd(%q, %d) = %d; want %d", tc.in, tc.from, got, tc.want)
		}
	}
}

// lineCounter counts the lines a logger writes, and their bytes.
type lineCounter struct {
	mu           sync.Mutex
	lines, bytes int
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines += bytes.Count(p, []byte("\n"))
	c.bytes += len(p)
	return len(p), nil
}

// TestReportIsBounded: 300 refused CONNECTs naming different 60 KB junk
// hosts make a report of MaxEntries entries and one for the others, each
// host named in at most a few hundred bytes; and the log says a burst of
// them, then how many it left out.
func TestReportIsBounded(t *testing.T) {
	logs := &lineCounter{}
	p := loopbackPolicy(t, newResolver(), "allowed.test")
	p.Logger = slog.New(slog.NewTextHandler(logs, nil))
	s := NewSession(t.Context(), p)
	proxy := serve(t, s)
	const n = 300
	for i := 0; i < n; i++ {
		host := fmt.Sprintf("%03d%s", i, strings.Repeat("x", 60<<10))
		resp, _ := rawRequest(t, proxy, "CONNECT "+host+":443 HTTP/1.1\r\n\r\n")
		if resp.StatusCode != 403 {
			t.Fatalf("CONNECT to a junk host: %d; want 403", resp.StatusCode)
		}
	}
	report := s.Report()
	if len(report) != MaxEntries+1 {
		t.Fatalf("%d entries; want %d and one for the others", len(report), MaxEntries)
	}
	for _, e := range report[:MaxEntries] {
		if len(e.Host) > 300 || e.Decision != Denied || e.Refused != 1 || !strings.Contains(e.Reason, "longer than 253") {
			t.Fatalf("entry of %d bytes of host: %.300v; want a short name, denied, why", len(e.Host), e)
		}
	}
	last := report[MaxEntries]
	if last.Host != OthersHost || last.Refused != n-MaxEntries || last.Decision != Denied ||
		!strings.Contains(last.Reason, fmt.Sprintf("%d more attempts refused", n-MaxEntries)) {
		t.Errorf("the last entry %+v; want the %d others counted", last, n-MaxEntries)
	}
	b, _ := json.Marshal(report)
	if len(b) > 256<<10 {
		t.Errorf("the report is %d KiB as JSON; want it bounded", len(b)>>10)
	}
	s.Close()
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if logs.lines > logBurst+10 || logs.bytes > 64<<10 {
		t.Errorf("the log took %d lines, %d KiB, for %d refusals; want about a burst of %d", logs.lines, logs.bytes>>10, n, logBurst)
	}
}

// TestLogLimitRefills: past its burst the log takes one line a second,
// and the line written says how many were left out.
func TestLogLimitRefills(t *testing.T) {
	var l logLimit
	for i := 0; i < logBurst; i++ {
		if _, ok := l.take(); !ok {
			t.Fatalf("line %d of the burst left out", i)
		}
	}
	if _, ok := l.take(); ok {
		t.Fatal("a line past the burst written")
	}
	l.mu.Lock()
	l.last = l.last.Add(-time.Second)
	l.mu.Unlock()
	if n, ok := l.take(); !ok || n != 1 {
		t.Errorf("a second later: written %v, saying %d left out; want written, 1", ok, n)
	}
	if l.leftOut() != 1 {
		t.Errorf("left out in all %d; want 1", l.leftOut())
	}
}
