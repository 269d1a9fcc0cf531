package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeResolver answers from a table and counts lookups. When answer is set, it
// decides instead, given the name and how many times it was asked before.
type fakeResolver struct {
	mu     sync.Mutex
	names  map[string][]netip.Addr
	calls  map[string]int
	answer func(host string, n int) []netip.Addr
}

func newResolver(pairs ...string) *fakeResolver {
	r := &fakeResolver{names: map[string][]netip.Addr{}, calls: map[string]int{}}
	for i := 0; i < len(pairs); i += 2 {
		r.names[pairs[i]] = append(r.names[pairs[i]], netip.MustParseAddr(pairs[i+1]))
	}
	return r
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.calls[host]
	r.calls[host]++
	if r.answer != nil {
		return r.answer(host, n), nil
	}
	if a, ok := r.names[host]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (r *fakeResolver) lookups(host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[host]
}

var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}

// loopbackPolicy allows rules, resolves names with res, and opens 127.0.0.0/8
// so the test's origins can be reached.
func loopbackPolicy(t testing.TB, res Resolver, rules ...string) Policy {
	return Policy{
		Rules:      mustRules(t, rules...),
		AllowCIDRs: loopback,
		Resolver:   res,
		LocalAddrs: func() ([]netip.Addr, error) { return nil, nil },
	}
}

// serve runs the session behind a listener on loopback, as the relay will,
// and returns the proxy's URL.
func serve(t testing.TB, s *Session) *url.URL {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	t.Cleanup(func() {
		if ln != nil {
			ln.Close()
		}
		s.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.Serve(c)
		}
	}()
	return &url.URL{Scheme: "http", Host: ln.Addr().String()}
}

func portOf(t testing.TB, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return u.Port()
}

// proxyClient is a client that goes through proxy for every scheme, and
// trusts the TLS origin's certificate when ts is one.
func proxyClient(proxy *url.URL, ts *httptest.Server) *http.Client {
	tr := &http.Transport{Proxy: http.ProxyURL(proxy)}
	if ts != nil && ts.TLS != nil {
		tr.TLSClientConfig = ts.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	}
	return &http.Client{Transport: tr, Timeout: 10 * time.Second}
}

func entry(t testing.TB, s *Session, host string, port string) Entry {
	t.Helper()
	for _, e := range s.Report() {
		if e.Host == host && fmt.Sprint(e.Port) == port {
			return e
		}
	}
	t.Fatalf("no report entry for %s:%s in %+v", host, port, s.Report())
	return Entry{}
}

// rawRequest sends text on a fresh connection to the proxy and returns the
// first response.
func rawRequest(t testing.TB, proxy *url.URL, text string) (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, text); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func TestConnectTLS(t *testing.T) {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello over TLS")
	}))
	defer ts.Close()
	port := portOf(t, ts.URL)
	// The test certificate names example.com.
	res := newResolver("example.com", "127.0.0.1")
	s := NewSession(t.Context(), loopbackPolicy(t, res, "example.com:"+port))
	c := proxyClient(serve(t, s), ts)

	for range 2 {
		resp, err := c.Get("https://example.com:" + port + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "hello over TLS" {
			t.Fatalf("body %q", body)
		}
	}
	c.CloseIdleConnections()
	e := entry(t, s, "example.com", port)
	if e.Decision != Allowed || e.Connections != 1 || e.BytesIn < 100 || e.BytesOut < 100 || e.Reason != "rule example.com:"+port {
		t.Errorf("entry %+v: want allowed, one kept-alive tunnel, bytes both ways, its rule", e)
	}
}

func TestPlainHTTPKeepAliveAcrossHosts(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host == "" || r.URL.IsAbs() {
			t.Errorf("origin got Host %q, URI %q: want origin form with a Host", r.Host, r.RequestURI)
		}
		if r.Header.Get("Proxy-Connection") != "" || r.Header.Get("Proxy-Authorization") != "" {
			t.Errorf("hop-by-hop headers reached the origin: %v", r.Header)
		}
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "posted %d bytes", len(b))
			return
		}
		if r.URL.Path == "/chunked" {
			w.(http.Flusher).Flush()
		}
		fmt.Fprintf(w, "%s%s", r.Host, r.URL.Path)
	}))
	defer origin.Close()
	port := portOf(t, origin.URL)
	res := newResolver("a.test", "127.0.0.1", "b.test", "127.0.0.2")
	s := NewSession(t.Context(), loopbackPolicy(t, res, "a.test:"+port, "b.test:"+port))
	s.p.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		// The origin listens on 127.0.0.1 only; b.test's 127.0.0.2 is vetted
		// as itself and reaches the same server.
		addr = strings.Replace(addr, "127.0.0.2", "127.0.0.1", 1)
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}
	proxy := serve(t, s)

	c, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for i, target := range []string{"a.test", "a.test", "b.test", "a.test"} {
		path := fmt.Sprintf("/%d", i)
		if i == 1 {
			path = "/chunked"
		}
		fmt.Fprintf(c, "GET http://%s:%s%s HTTP/1.1\r\nHost: %s:%s\r\nProxy-Connection: keep-alive\r\n\r\n", target, port, path, target, port)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := target + ":" + port + path; string(body) != want {
			t.Errorf("request %d: body %q, want %q", i, body, want)
		}
	}
	// A POST with a body, through a standard client.
	resp, err := proxyClient(proxy, nil).Post("http://a.test:"+port+"/up", "text/plain", strings.NewReader(strings.Repeat("x", 5000)))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "posted 5000 bytes" {
		t.Errorf("POST: %q", body)
	}
	a, b := entry(t, s, "a.test", port), entry(t, s, "b.test", port)
	// a.test: the first connection, a new one after b.test, and the client's.
	if a.Decision != Allowed || a.Connections != 3 || b.Connections != 1 || a.BytesOut < 5000 {
		t.Errorf("a %+v, b %+v", a, b)
	}
}

func TestServeOverPipe(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "piped")
	}))
	defer origin.Close()
	port := portOf(t, origin.URL)
	s := NewSession(t.Context(), loopbackPolicy(t, newResolver("a.test", "127.0.0.1"), "a.test:"+port))
	defer s.Close()
	client, server := net.Pipe()
	go s.Serve(server)
	defer client.Close()
	fmt.Fprintf(client, "GET http://a.test:%s/ HTTP/1.1\r\nHost: a.test:%s\r\n\r\n", port, port)
	resp, err := http.ReadResponse(bufio.NewReader(client), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if string(body) != "piped" {
		t.Errorf("body %q", body)
	}
}

func TestRefusals(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("a refused request reached the origin: %s %s", r.Method, r.URL)
	}))
	defer origin.Close()
	port := portOf(t, origin.URL)
	res := newResolver(
		"a.test", "127.0.0.1",
		"loop.test", "127.0.0.1",
		"ten.test", "10.1.2.3",
		"meta.test", "169.254.169.254",
		"mapped.test", "::ffff:10.0.0.1",
		"self.test", "198.51.99.1",
	)
	var dials atomic.Int32
	p := Policy{
		Rules:      mustRules(t, "a.test:"+port, "loop.test:"+port, "ten.test", "meta.test", "mapped.test", "self.test", "nowhere.test"),
		Resolver:   res,
		LocalAddrs: func() ([]netip.Addr, error) { return []netip.Addr{netip.MustParseAddr("198.51.99.1")}, nil },
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return nil, errors.New("dial must not be called")
		},
	}
	s := NewSession(t.Context(), p)
	proxy := serve(t, s)

	tests := []struct {
		name, req      string
		status         int
		host, port     string
		reason         string
		wantNoHostSeen bool
	}{
		{"unlisted name", "GET http://evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n", 403, "evil.test", "80", "no egress rule", false},
		{"unlisted name over CONNECT", "CONNECT evil.test:443 HTTP/1.1\r\nHost: evil.test:443\r\n\r\n", 403, "evil.test", "443", "no egress rule", false},
		{"port not allowed", "CONNECT ten.test:22 HTTP/1.1\r\n\r\n", 403, "ten.test", "22", "no egress rule", false},
		{"IP literal", "CONNECT 127.0.0.1:" + port + " HTTP/1.1\r\n\r\n", 403, "127.0.0.1", port, "allow_cidrs", false},
		{"IPv6 literal", "GET http://[::1]:" + port + "/ HTTP/1.1\r\nHost: [::1]:" + port + "\r\n\r\n", 403, "::1", port, "allow_cidrs", false},
		{"metadata literal", "GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\nHost: 169.254.169.254\r\n\r\n", 403, "169.254.169.254", "80", "allow_cidrs", false},
		{"resolves to loopback", "CONNECT loop.test:" + port + " HTTP/1.1\r\n\r\n", 403, "loop.test", port, "resolves to 127.0.0.1, loopback", false},
		{"resolves to 10/8", "CONNECT ten.test:443 HTTP/1.1\r\n\r\n", 403, "ten.test", "443", "resolves to 10.1.2.3, private", false},
		{"resolves to metadata", "GET http://meta.test/ HTTP/1.1\r\nHost: meta.test\r\n\r\n", 403, "meta.test", "80", "metadata", false},
		{"resolves to mapped 10/8", "CONNECT mapped.test:443 HTTP/1.1\r\n\r\n", 403, "mapped.test", "443", "private", false},
		{"resolves to the host's own", "CONNECT self.test:443 HTTP/1.1\r\n\r\n", 403, "self.test", "443", "host's own", false},
		{"does not resolve", "CONNECT nowhere.test:443 HTTP/1.1\r\n\r\n", 502, "nowhere.test", "443", "no such host", false},
		{"Host header differs", "GET http://a.test:" + port + "/ HTTP/1.1\r\nHost: evil.test\r\n\r\n", 400, "a.test", port, "Host header", false},
		{"Host header differs in port", "GET http://a.test:" + port + "/ HTTP/1.1\r\nHost: a.test\r\n\r\n", 400, "a.test", port, "Host header", false},
		{"origin form", "GET / HTTP/1.1\r\nHost: a.test:" + port + "\r\n\r\n", 400, "", "", "absolute-URI", true},
		{"https URI", "GET https://a.test:" + port + "/ HTTP/1.1\r\nHost: a.test:" + port + "\r\n\r\n", 400, "", "", "CONNECT", true},
		{"CONNECT without port", "CONNECT a.test HTTP/1.1\r\n\r\n", 400, "", "", "host:port", true},
		{"not HTTP", "HELLO\r\n\r\n", 400, "", "", "not an HTTP/1 request", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := rawRequest(t, proxy, tt.req)
			if resp.StatusCode != tt.status || !strings.Contains(body, tt.reason) {
				t.Errorf("%d %q; want %d saying %q", resp.StatusCode, body, tt.status, tt.reason)
			}
			if tt.host != "" && resp.StatusCode == 403 && !strings.Contains(body, tt.host) {
				t.Errorf("body %q does not name the host %s", body, tt.host)
			}
			if tt.host == "" {
				return
			}
			e := entry(t, s, tt.host, tt.port)
			if e.Decision != Denied || e.Refused == 0 || e.Connections != 0 || !strings.Contains(e.Reason, tt.reason) {
				t.Errorf("entry %+v; want denied, saying %q", e, tt.reason)
			}
		})
	}
	if n := dials.Load(); n != 0 {
		t.Errorf("the proxy dialed %d times; every request here is refused before a dial", n)
	}
}

func TestDialsWhatItVetted(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "public")
	}))
	defer origin.Close()
	port := portOf(t, origin.URL)
	// A rebinding name: public to the first lookup, loopback after.
	res := newResolver()
	res.answer = func(host string, n int) []netip.Addr {
		if n == 0 {
			return []netip.Addr{netip.MustParseAddr("93.184.215.14")}
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	}
	var dialed []string
	var mu sync.Mutex
	p := Policy{
		Rules:      mustRules(t, "rebind.test:"+port),
		Resolver:   res,
		LocalAddrs: func() ([]netip.Addr, error) { return nil, nil },
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			mu.Lock()
			dialed = append(dialed, addr)
			mu.Unlock()
			// Stand in for the public host: the origin on loopback.
			return (&net.Dialer{}).DialContext(ctx, network, origin.Listener.Addr().String())
		},
	}
	s := NewSession(t.Context(), p)
	proxy := serve(t, s)
	resp, body := rawRequest(t, proxy, "GET http://rebind.test:"+port+"/ HTTP/1.1\r\nHost: rebind.test:"+port+"\r\n\r\n")
	if resp.StatusCode != 200 || body != "public" {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	if n := res.lookups("rebind.test"); n != 1 {
		t.Errorf("%d lookups for one request; want 1", n)
	}
	if len(dialed) != 1 || dialed[0] != "93.184.215.14:"+port {
		t.Errorf("dialed %v; want the vetted 93.184.215.14:%s only", dialed, port)
	}
	// The second request's lookup answers loopback: refused, nothing dialed.
	resp, body = rawRequest(t, proxy, "GET http://rebind.test:"+port+"/ HTTP/1.1\r\nHost: rebind.test:"+port+"\r\n\r\n")
	if resp.StatusCode != 403 || !strings.Contains(body, "loopback") || len(dialed) != 1 {
		t.Errorf("after rebinding: %d %q, dialed %v", resp.StatusCode, body, dialed)
	}
}

func TestMixedAnswersDialOnlyTheGoodOnes(t *testing.T) {
	res := newResolver("mixed.test", "10.0.0.1", "mixed.test", "93.184.215.14")
	var dialed []string
	p := Policy{
		Rules:      mustRules(t, "mixed.test"),
		Resolver:   res,
		LocalAddrs: func() ([]netip.Addr, error) { return nil, nil },
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dialed = append(dialed, addr)
			return nil, errors.New("unreachable in this test")
		},
	}
	s := NewSession(t.Context(), p)
	resp, body := rawRequest(t, serve(t, s), "CONNECT mixed.test:443 HTTP/1.1\r\n\r\n")
	if resp.StatusCode != 502 || !strings.Contains(body, "cannot be reached") {
		t.Errorf("%d %q", resp.StatusCode, body)
	}
	if len(dialed) != 1 || dialed[0] != "93.184.215.14:443" {
		t.Errorf("dialed %v; want only the public address", dialed)
	}
	if e := entry(t, s, "mixed.test", "443"); e.Decision != Denied || e.Connections != 0 {
		t.Errorf("entry %+v", e)
	}
}

// bigOrigin serves n bytes of zeros at every path.
func bigOrigin(n int64) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", fmt.Sprint(n))
		buf := make([]byte, 64<<10)
		for left := n; left > 0; {
			k := min(left, int64(len(buf)))
			if _, err := w.Write(buf[:k]); err != nil {
				return
			}
			left -= k
		}
	}))
}

func TestByteCapCutsADownload(t *testing.T) {
	origin := bigOrigin(4 << 20)
	defer origin.Close()
	port := portOf(t, origin.URL)
	p := loopbackPolicy(t, newResolver("big.test", "127.0.0.1"), "big.test:"+port)
	p.MaxBytesIn = 256 << 10
	s := NewSession(t.Context(), p)
	proxy := serve(t, s)
	resp, err := proxyClient(proxy, nil).Get("http://big.test:" + port + "/")
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil || n >= 256<<10 {
		t.Errorf("read %d bytes, err %v; want the download cut before 256 KiB", n, err)
	}
	e := entry(t, s, "big.test", port)
	if e.BytesIn != 256<<10 || !strings.Contains(e.Reason, "download cap of 262144 bytes") {
		t.Errorf("entry %+v; want exactly the cap in and the reason", e)
	}
	// The cap is the run's: the next connection is refused at once.
	resp2, body := rawRequest(t, proxy, "GET http://big.test:"+port+"/ HTTP/1.1\r\nHost: big.test:"+port+"\r\n\r\n")
	if resp2.StatusCode != 429 || !strings.Contains(body, "download cap") {
		t.Errorf("after the cap: %d %q", resp2.StatusCode, body)
	}
}

func TestByteCapCutsAnUpload(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
	}))
	defer origin.Close()
	port := portOf(t, origin.URL)
	p := loopbackPolicy(t, newResolver("up.test", "127.0.0.1"), "up.test:"+port)
	p.MaxBytesOut = 100 << 10
	s := NewSession(t.Context(), p)
	resp, err := proxyClient(serve(t, s), nil).Post("http://up.test:"+port+"/", "application/octet-stream", strings.NewReader(strings.Repeat("x", 1<<20)))
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 429 || !strings.Contains(string(answer), "upload cap of 102400 bytes reached") {
		t.Errorf("a 1 MiB upload over a 100 KiB cap: %d %q", resp.StatusCode, answer)
	}
	e := entry(t, s, "up.test", port)
	if e.BytesOut != 100<<10 || !strings.Contains(e.Reason, "upload cap") {
		t.Errorf("entry %+v", e)
	}
}

// openTunnel sends CONNECT and returns the connection once the proxy
// answered 200.
func openTunnel(t testing.TB, proxy *url.URL, target string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("CONNECT %s: %s %q", target, resp.Status, body)
	}
	return c, br
}

// echoOrigin echoes every connection back.
func echoOrigin(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// waitClosed fails unless c is closed by the other end within d.
func waitClosed(t testing.TB, c net.Conn, br *bufio.Reader, d time.Duration) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(d))
	if _, err := io.Copy(io.Discard, br); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the tunnel is still open after %s", d)
		}
	}
}

func TestTunnelEchoAndHalfClose(t *testing.T) {
	port := echoOrigin(t)
	s := NewSession(t.Context(), loopbackPolicy(t, newResolver("echo.test", "127.0.0.1"), "echo.test:"+port))
	c, br := openTunnel(t, serve(t, s), "echo.test:"+port)
	io.WriteString(c, "ping")
	c.(*net.TCPConn).CloseWrite()
	got, err := io.ReadAll(br)
	if err != nil || string(got) != "ping" {
		t.Errorf("echo %q, %v", got, err)
	}
	s.Close()
	if e := entry(t, s, "echo.test", port); e.BytesIn != 4 || e.BytesOut != 4 || e.Reason != "rule echo.test:"+port {
		t.Errorf("entry %+v", e)
	}
}

func TestConnectionCap(t *testing.T) {
	port := echoOrigin(t)
	p := loopbackPolicy(t, newResolver("echo.test", "127.0.0.1"), "echo.test:"+port)
	p.MaxConns = 2
	s := NewSession(t.Context(), p)
	proxy := serve(t, s)
	c1, _ := openTunnel(t, proxy, "echo.test:"+port)
	openTunnel(t, proxy, "echo.test:"+port)
	resp, body := rawRequest(t, proxy, "CONNECT echo.test:"+port+" HTTP/1.1\r\n\r\n")
	if resp.StatusCode != 429 || !strings.Contains(body, "connection cap of 2") {
		t.Errorf("third connection: %d %q", resp.StatusCode, body)
	}
	e := entry(t, s, "echo.test", port)
	if e.Connections != 2 || e.Refused != 1 || e.Decision != Allowed {
		t.Errorf("entry %+v", e)
	}
	// A slot frees when a tunnel ends.
	c1.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("tcp", proxy.Host)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "CONNECT echo.test:%s HTTP/1.1\r\n\r\n", port)
		resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
		c.Close()
		if err == nil && resp.StatusCode == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no slot freed after a tunnel closed")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestConnectionCapCountsIdleClients(t *testing.T) {
	port := echoOrigin(t)
	p := loopbackPolicy(t, newResolver("echo.test", "127.0.0.1"), "echo.test:"+port)
	p.MaxConns = 1
	s := NewSession(t.Context(), p)
	proxy := serve(t, s)
	idle, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	// Wait until the idle connection holds the one slot.
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.Lock()
		open := s.open
		s.mu.Unlock()
		if open == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the idle connection was never served")
		}
		time.Sleep(5 * time.Millisecond)
	}
	resp, body := rawRequest(t, proxy, "GET http://echo.test:"+port+"/ HTTP/1.1\r\nHost: echo.test:"+port+"\r\n\r\n")
	if resp.StatusCode != 429 || !strings.Contains(body, "echo.test:"+port+" refused: connection cap of 1") {
		t.Fatalf("with one idle client open, got %d %q; want 429", resp.StatusCode, body)
	}
	if e := entry(t, s, "echo.test", port); e.Refused == 0 {
		t.Errorf("entry %+v", e)
	}
}

func TestLifetimeCap(t *testing.T) {
	port := echoOrigin(t)
	p := loopbackPolicy(t, newResolver("echo.test", "127.0.0.1"), "echo.test:"+port)
	p.MaxLifetime = 300 * time.Millisecond
	s := NewSession(t.Context(), p)
	start := time.Now()
	c, br := openTunnel(t, serve(t, s), "echo.test:"+port)
	waitClosed(t, c, br, 5*time.Second)
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("closed after %s, before its lifetime", d)
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(entry(t, s, "echo.test", port).Reason, "lifetime of 300ms") {
		if time.Now().After(deadline) {
			t.Fatalf("entry %+v does not say the lifetime cut it", entry(t, s, "echo.test", port))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCloseEndsEveryTunnel(t *testing.T) {
	port := echoOrigin(t)
	s := NewSession(t.Context(), loopbackPolicy(t, newResolver("echo.test", "127.0.0.1"), "echo.test:"+port))
	proxy := serve(t, s)
	type tunnel struct {
		c  net.Conn
		br *bufio.Reader
	}
	var ts []tunnel
	for range 5 {
		c, br := openTunnel(t, proxy, "echo.test:"+port)
		ts = append(ts, tunnel{c, br})
	}
	// An idle client connection that has sent nothing yet.
	idle, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	s.Close()
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %s", d)
	}
	for _, tn := range ts {
		waitClosed(t, tn.c, tn.br, time.Second)
	}
	waitClosed(t, idle, bufio.NewReader(idle), time.Second)
	if e := entry(t, s, "echo.test", port); e.Connections != 5 || !strings.Contains(e.Reason, "session was closed") {
		t.Errorf("entry %+v", e)
	}
	// After Close, a new connection is closed at once.
	c, err := net.Dial("tcp", proxy.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	waitClosed(t, c, bufio.NewReader(c), time.Second)
}

func TestContextEndsSession(t *testing.T) {
	port := echoOrigin(t)
	ctx, cancel := context.WithCancel(t.Context())
	s := NewSession(ctx, loopbackPolicy(t, newResolver("echo.test", "127.0.0.1"), "echo.test:"+port))
	c, br := openTunnel(t, serve(t, s), "echo.test:"+port)
	cancel()
	waitClosed(t, c, br, 2*time.Second)
	deadline := time.Now().Add(2 * time.Second)
	for !strings.Contains(entry(t, s, "echo.test", port).Reason, "run ended") {
		if time.Now().After(deadline) {
			t.Fatalf("entry %+v", entry(t, s, "echo.test", port))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSessionsKeepToTheirOwnRules(t *testing.T) {
	origin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, r.Host)
	}))
	defer origin.Close()
	port := portOf(t, origin.URL)
	const n = 50
	res := newResolver()
	for i := range n {
		res.names[fmt.Sprintf("h%d.test", i)] = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	}
	sessions := make([]*Session, n)
	var wg sync.WaitGroup
	for i := range n {
		sessions[i] = NewSession(t.Context(), loopbackPolicy(t, res, fmt.Sprintf("h%d.test:%s", i, port)))
		proxy := serve(t, sessions[i])
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := proxyClient(proxy, nil)
			defer c.CloseIdleConnections()
			for round := range 3 {
				own := fmt.Sprintf("http://h%d.test:%s/", i, port)
				other := fmt.Sprintf("http://h%d.test:%s/", (i+1+round)%n, port)
				if resp, err := c.Get(own); err != nil || resp.StatusCode != 200 {
					t.Errorf("session %d, own host: %v %v", i, resp, err)
				} else {
					resp.Body.Close()
				}
				if resp, err := c.Get(other); err != nil || resp.StatusCode != 403 {
					t.Errorf("session %d, another's host: %v %v", i, resp, err)
				} else {
					resp.Body.Close()
				}
			}
		}()
	}
	wg.Wait()
	for i, s := range sessions {
		for _, e := range s.Report() {
			own := e.Host == fmt.Sprintf("h%d.test", i)
			if own != (e.Decision == Allowed) {
				t.Errorf("session %d: %+v", i, e)
			}
		}
		if r := s.Report(); len(r) != 4 {
			t.Errorf("session %d reports %d hosts; want its own and the three it was refused", i, len(r))
		}
	}
}

// upstreamProxy is a test CONNECT and absolute-URI proxy that sends every
// connection to origin, and records what it was asked.
type upstreamProxy struct {
	*httptest.Server
	mu      sync.Mutex
	targets []string
	auth    []string
}

func newUpstreamProxy(t testing.TB, origin string) *upstreamProxy {
	up := &upstreamProxy{}
	up.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up.mu.Lock()
		up.targets = append(up.targets, r.Method+" "+r.RequestURI)
		up.auth = append(up.auth, r.Header.Get("Proxy-Authorization"))
		up.mu.Unlock()
		if r.Method != http.MethodConnect {
			io.WriteString(w, "via upstream "+r.URL.String())
			return
		}
		o, err := net.Dial("tcp", origin)
		if err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			o.Close()
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\n\r\n")
		go func() { io.Copy(o, brw); o.(*net.TCPConn).CloseWrite() }()
		io.Copy(c, o)
		c.Close()
		o.Close()
	}))
	t.Cleanup(up.Close)
	return up
}

func TestUpstreamProxy(t *testing.T) {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "through the corporate proxy")
	}))
	defer ts.Close()
	up := newUpstreamProxy(t, ts.Listener.Addr().String())
	upURL, _ := url.Parse(up.URL)
	upURL.User = url.UserPassword("corp", "secret")
	res := newResolver() // knows no name: the upstream resolves
	p := Policy{
		Rules:         mustRules(t, "example.com", "mirror.example.com"),
		Resolver:      res,
		LocalAddrs:    func() ([]netip.Addr, error) { return nil, nil },
		UpstreamProxy: upURL,
	}
	s := NewSession(t.Context(), p)
	proxy := serve(t, s)
	c := proxyClient(proxy, ts)
	// The client asks for example.com:443; the upstream carries it to the
	// TLS origin, whose certificate names example.com.
	resp, err := c.Get("https://example.com/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "through the corporate proxy" {
		t.Errorf("body %q", body)
	}
	resp, err = c.Get("http://mirror.example.com/debian/dists")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "via upstream http://mirror.example.com/debian/dists" {
		t.Errorf("plain HTTP body %q", body)
	}
	// Refused hosts never reach the upstream.
	if resp, err := c.Get("http://evil.test/"); err != nil || resp.StatusCode != 403 {
		t.Errorf("evil.test: %v %v", resp, err)
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	want := []string{"CONNECT example.com:443", "GET http://mirror.example.com/debian/dists"}
	if fmt.Sprint(up.targets) != fmt.Sprint(want) {
		t.Errorf("upstream saw %q, want %q", up.targets, want)
	}
	for _, a := range up.auth {
		if a != "Basic Y29ycDpzZWNyZXQ=" {
			t.Errorf("upstream Proxy-Authorization %q", a)
		}
	}
	if len(res.calls) != 0 {
		t.Errorf("names were looked up with an upstream proxy: %v", res.calls)
	}
	if e := entry(t, s, "example.com", "443"); e.Decision != Allowed || e.BytesIn == 0 {
		t.Errorf("entry %+v", e)
	}
}

func TestUnreachableOriginIs502(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	port := portOf(t, "http://"+ln.Addr().String())
	ln.Close()
	s := NewSession(t.Context(), loopbackPolicy(t, newResolver("gone.test", "127.0.0.1"), "gone.test:"+port))
	resp, body := rawRequest(t, serve(t, s), "CONNECT gone.test:"+port+" HTTP/1.1\r\n\r\n")
	if resp.StatusCode != 502 || !strings.Contains(body, "gone.test:"+port+" cannot be reached") {
		t.Errorf("%d %q", resp.StatusCode, body)
	}
	if e := entry(t, s, "gone.test", port); e.Decision != Denied || e.Connections != 0 || e.Refused != 1 {
		t.Errorf("entry %+v", e)
	}
}

// TestKeptAliveOriginClosed: an origin that closes a kept-alive connection
// between requests (its idle timeout) costs the client nothing; the proxy
// carries the next request on a new connection.
func TestKeptAliveOriginClosed(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := http.ReadRequest(bufio.NewReader(c)); err != nil {
					return
				}
				// Answers as if it would keep the connection, then closes it.
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	s := NewSession(t.Context(), loopbackPolicy(t, newResolver("idle.test", "127.0.0.1"), "idle.test:"+port))
	c, err := net.Dial("tcp", serve(t, s).Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	for i := range 3 {
		fmt.Fprintf(c, "GET http://idle.test:%s/ HTTP/1.1\r\nHost: idle.test:%s\r\n\r\n", port, port)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || string(body) != "ok" {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
		time.Sleep(20 * time.Millisecond) // the origin's close arrives
	}
	if e := entry(t, s, "idle.test", port); e.Connections != 3 {
		t.Errorf("entry %+v; want three connections", e)
	}
}

func TestNamesAreCanonical(t *testing.T) {
	port := echoOrigin(t)
	s := NewSession(t.Context(), loopbackPolicy(t, newResolver("echo.a.test", "127.0.0.1"), "*.a.test:"+port))
	proxy := serve(t, s)
	c, br := openTunnel(t, proxy, "Echo.A.Test.:"+port)
	io.WriteString(c, "x")
	c.(*net.TCPConn).CloseWrite()
	io.ReadAll(br)
	// The wildcard's apex is not under it.
	resp, _ := rawRequest(t, proxy, "CONNECT a.test:"+port+" HTTP/1.1\r\n\r\n")
	if resp.StatusCode != 403 {
		t.Errorf("a.test under *.a.test: %d", resp.StatusCode)
	}
	if e := entry(t, s, "echo.a.test", port); e.Decision != Allowed || e.Reason != "rule *.a.test:"+port {
		t.Errorf("entry %+v", e)
	}
}

// TestRefusedPostIsRead: a refused request whose body the proxy never read
// still gets its answer. On loopback a reset seldom loses an answer already
// sent, so this guards the answer's shape; the drain before closing is for
// slower paths, like the relay's.
func TestRefusedPostIsRead(t *testing.T) {
	s := NewSession(t.Context(), loopbackPolicy(t, newResolver()))
	c, err := net.Dial("tcp", serve(t, s).Host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := strings.Repeat("x", 512<<10)
	go func() {
		fmt.Fprintf(c, "POST http://evil.test/upload HTTP/1.1\r\nHost: evil.test\r\nContent-Length: %d\r\n\r\n", len(body))
		io.WriteString(c, body)
	}()
	time.Sleep(100 * time.Millisecond) // the body is on its way when the answer comes
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 403 || !strings.Contains(string(got), "evil.test:80 denied") {
		t.Errorf("%d %q %v", resp.StatusCode, got, err)
	}
}
