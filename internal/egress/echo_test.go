package egress

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"strings"
	"testing"
)

const echoValue = "s3cret-value-echoed"

// echoingOrigin is a secretOrigin (api.test, other.test) whose answers are
// h's.
func echoingOrigin(t *testing.T, h http.HandlerFunc) *secretOrigin {
	t.Helper()
	o := newSecretOrigin(t)
	o.ts.Config.Handler = h
	return o
}

// echoSession is secretSession with one secret whose value is echoValue,
// set as a Bearer header on api.test's requests.
func echoSession(t *testing.T, o *secretOrigin) (*Session, *http.Client) {
	s, c, _ := secretSession(t, o, Secret{Name: "TOKEN", Value: echoValue, Placeholder: NewPlaceholder(), Header: "Authorization: Bearer {value}"})
	return s, c
}

// bearer is the value the origin was sent.
func bearer(r *http.Request) string {
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

// TestSecretEchoedInABigBody: a body of 1 MiB and more, which the proxy
// otherwise hands to the kernel to copy, passes the scrubber when it comes
// from a secret's host: the value is masked at its start, across a read's
// edge and at its end, and the length holds.
func TestSecretEchoedInABigBody(t *testing.T) {
	const size = 3 << 20
	o := echoingOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		v := bearer(r)
		body := bytes.Repeat([]byte{'.'}, size)
		copy(body, v)
		copy(body[32<<10-5:], v) // across a 32 KiB read
		copy(body[1<<20-3:], v)  // across the first MiB
		copy(body[size-len(v):], v)
		w.Header().Set("Content-Length", fmt.Sprint(size))
		w.Write(body)
	})
	_, c := echoSession(t, o)
	resp, body := get(t, c, "https://api.test:"+o.port+"/big", "")
	if resp.StatusCode != 200 || len(body) != size {
		t.Fatalf("%d, %d bytes; want 200 and %d", resp.StatusCode, len(body), size)
	}
	if strings.Contains(body, echoValue) {
		t.Errorf("the value reached the client in a %d MiB body", size>>20)
	}
	if n := strings.Count(body, strings.Repeat("*", len(echoValue))); n != 4 {
		t.Errorf("%d masks in the body; want 4", n)
	}
}

// TestSecretEchoedInEarlyHints: the headers of a 103 Early Hints answer
// are hidden as the final answer's are.
func TestSecretEchoedInEarlyHints(t *testing.T) {
	o := echoingOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css?auth="+bearer(r)+">; rel=preload")
		w.Header().Set("X-"+bearer(r), "named after it")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		io.WriteString(w, "final")
	})
	_, c := echoSession(t, o)
	var hints []string
	req, _ := http.NewRequest("GET", "https://api.test:"+o.port+"/", nil)
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
			hints = append(hints, fmt.Sprint(code, h))
			return nil
		},
	}))
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "final" || len(hints) != 1 || !strings.HasPrefix(hints[0], "103 ") {
		t.Fatalf("answer %q after hints %q; want one 103, then the final answer", body, hints)
	}
	if strings.Contains(strings.ToLower(hints[0]), echoValue) || !strings.Contains(hints[0], "auth=airlock-secret-") {
		t.Errorf("the 103's headers reached the client as %q; want the placeholder, no header named after the value", hints[0])
	}
}

// TestSecretEchoedInTrailers: trailers, declared or not, are hidden too.
func TestSecretEchoedInTrailers(t *testing.T) {
	o := echoingOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Echo")
		io.WriteString(w, "body ")
		w.(http.Flusher).Flush() // chunked, so the trailers can follow
		io.WriteString(w, "then trailers")
		w.Header().Set("X-Echo", "Bearer "+bearer(r))
		w.Header().Set(http.TrailerPrefix+"X-Undeclared", bearer(r))
	})
	_, c := echoSession(t, o)
	resp, err := c.Get("https://api.test:" + o.port + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "body then trailers" {
		t.Fatalf("body %q", body)
	}
	got := fmt.Sprint(resp.Trailer)
	if strings.Contains(got, echoValue) || !strings.Contains(resp.Trailer.Get("X-Echo"), "airlock-secret-") {
		t.Errorf("trailers reached the client as %s; want the placeholder", got)
	}
}

// TestSecretEchoedInTheStatusLine: an origin that says the value in its
// status line, or sends a line so malformed that the proxy's error would
// quote it, hands the client the placeholder.
func TestSecretEchoedInTheStatusLine(t *testing.T) {
	o := newSecretOrigin(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", o.ts.TLS)
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
			go func() {
				defer c.Close()
				br := bufio.NewReader(c)
				req, err := http.ReadRequest(br)
				if err != nil {
					return
				}
				v := bearer(req)
				if req.URL.Path == "/reason" {
					fmt.Fprintf(c, "HTTP/1.1 200 OK %s\r\nContent-Length: 2\r\n\r\nok", v)
				} else {
					fmt.Fprintf(c, "%s 200\r\n\r\n", v)
				}
			}()
		}
	}()
	o.port = portOf(t, "https://"+ln.Addr().String())
	_, c := echoSession(t, o)
	resp, _ := get(t, c, "https://api.test:"+o.port+"/reason", "")
	if strings.Contains(resp.Status, echoValue) || !strings.Contains(resp.Status, "airlock-secret-") {
		t.Errorf("status line %q; want the placeholder", resp.Status)
	}
	resp, body := get(t, c, "https://api.test:"+o.port+"/malformed", "")
	if resp.StatusCode != 502 || strings.Contains(body, echoValue) {
		t.Errorf("a malformed answer: %d %q; want 502 without the value", resp.StatusCode, body)
	}
}

// TestSecretHostAnswersIdentity: the proxy asks a secret's host for an
// unencoded answer, which it can scan, and refuses one encoded anyway.
func TestSecretHostAnswersIdentity(t *testing.T) {
	var asked []string
	o := echoingOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.Header.Get("Accept-Encoding"))
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		io.WriteString(zw, bearer(r))
		zw.Close()
	})
	_, c := echoSession(t, o)
	resp, body := get(t, c, "https://api.test:"+o.port+"/", "")
	if resp.StatusCode != 502 || !strings.Contains(body, "encoded") || strings.Contains(body, echoValue) {
		t.Errorf("a gzip answer from a secret's host: %d %q; want 502 saying why", resp.StatusCode, body)
	}
	if len(asked) != 1 || asked[0] != "identity" {
		t.Errorf("the origin was asked Accept-Encoding %q; want identity", asked)
	}
	// Another host's answer is not touched.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		io.WriteString(zw, "fine")
		zw.Close()
	}))
	defer plain.Close()
	_, pport, _ := net.SplitHostPort(plain.Listener.Addr().String())
	p := loopbackPolicy(t, newResolver("plain.test", "127.0.0.1"), "plain.test:"+pport)
	resp2, err := proxyClient(serve(t, NewSession(t.Context(), p)), nil).Get("http://plain.test:" + pport + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp2.Body)
	resp2.Body.Close()
	if string(b) != "fine" {
		t.Errorf("another host's gzip answer: %q", b)
	}
}
