package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// The benchmarks compare the proxy with a direct connection on loopback; read
// their ratio, not their absolute numbers, which are the machine's.

const benchDownload = 100 << 20

// BenchmarkDownload100MB moves 100 MB of plain HTTP from an origin on
// loopback, directly and through a session.
func BenchmarkDownload100MB(b *testing.B) {
	origin := bigOrigin(benchDownload)
	defer origin.Close()
	port := portOf(b, origin.URL)
	s := NewSession(b.Context(), loopbackPolicy(b, newResolver("big.test", "127.0.0.1"), "big.test:"+port))
	proxy := serve(b, s)

	run := func(b *testing.B, c *http.Client, url string) {
		b.SetBytes(benchDownload)
		for b.Loop() {
			resp, err := c.Get(url)
			if err != nil {
				b.Fatal(err)
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || n != benchDownload {
				b.Fatalf("read %d, %v", n, err)
			}
		}
	}
	b.Run("direct", func(b *testing.B) {
		run(b, &http.Client{Transport: &http.Transport{}}, origin.URL+"/")
	})
	b.Run("proxy", func(b *testing.B) {
		run(b, proxyClient(proxy, nil), "http://big.test:"+port+"/")
	})
	// The same download inside a CONNECT tunnel, the path TLS takes.
	b.Run("tunnel", func(b *testing.B) {
		tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			c, err := net.Dial("tcp", proxy.Host)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(c, "CONNECT big.test:%s HTTP/1.1\r\n\r\n", port)
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
			if err != nil || resp.StatusCode != 200 {
				c.Close()
				return nil, fmt.Errorf("CONNECT: %v %v", resp, err)
			}
			return &bufConn{Conn: c, r: br}, nil
		}}
		run(b, &http.Client{Transport: tr}, "http://big.test:"+port+"/")
	})
}

// BenchmarkTLSFirstByte times a new TLS connection's first request, until the
// response's first byte: directly, and through CONNECT.
func BenchmarkTLSFirstByte(b *testing.B) {
	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "x")
	}))
	defer ts.Close()
	port := portOf(b, ts.URL)
	s := NewSession(b.Context(), loopbackPolicy(b, newResolver("example.com", "127.0.0.1"), "example.com:"+port))
	proxy := serve(b, s)

	run := func(b *testing.B, tr *http.Transport, url string) {
		tr.DisableKeepAlives = true
		c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		for b.Loop() {
			resp, err := c.Get(url)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	b.Run("direct", func(b *testing.B) {
		run(b, ts.Client().Transport.(*http.Transport).Clone(), ts.URL+"/")
	})
	b.Run("proxy", func(b *testing.B) {
		run(b, proxyClient(proxy, ts).Transport.(*http.Transport), "https://example.com:"+port+"/")
	})
}
