package egress

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"
)

// secretOrigin is an HTTPS origin for any name, signed by its own authority,
// that answers each request with the host it was asked for and the
// Authorization it got, and echoes that header back in X-Echo.
type secretOrigin struct {
	ts   *httptest.Server
	ca   *Authority
	port string
	mu   sync.Mutex
	seen []string // "host auth" per request
}

func newSecretOrigin(t *testing.T) *secretOrigin {
	t.Helper()
	ca, err := NewAuthority("test origin CA")
	if err != nil {
		t.Fatal(err)
	}
	o := &secretOrigin{ca: ca}
	o.ts = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		line := r.Host + " " + r.Header.Get("Authorization")
		o.mu.Lock()
		o.seen = append(o.seen, line)
		o.mu.Unlock()
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "https://other.test:"+o.port+"/landed", http.StatusFound)
			return
		}
		w.Header().Set("X-Echo", r.Header.Get("Authorization"))
		fmt.Fprint(w, line)
	}))
	o.ts.TLS = &tls.Config{GetCertificate: func(h *tls.ClientHelloInfo) (*tls.Certificate, error) { return ca.leaf(h.ServerName) }}
	o.ts.StartTLS()
	t.Cleanup(o.ts.Close)
	o.port = portOf(t, o.ts.URL)
	return o
}

func (o *secretOrigin) requests() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.seen...)
}

// secretSession is a session that may reach api.test and other.test on the
// origin's port, with secrets bound to api.test, and a client that trusts
// both the session's authority and the origin's, as a sandbox with airlock's
// bundle would.
func secretSession(t *testing.T, o *secretOrigin, secrets ...Secret) (*Session, *http.Client, *Authority) {
	t.Helper()
	auth, err := NewAuthority("airlock test")
	if err != nil {
		t.Fatal(err)
	}
	p := loopbackPolicy(t, newResolver("api.test", "127.0.0.1", "other.test", "127.0.0.1"), "api.test:"+o.port, "other.test:"+o.port, "api.test:80")
	for i := range secrets {
		if secrets[i].Rules == nil {
			secrets[i].Rules = mustRules(t, "api.test:"+o.port)
		}
	}
	p.Secrets, p.Authority = secrets, auth
	p.OriginRoots = x509.NewCertPool()
	p.OriginRoots.AppendCertsFromPEM(o.ca.CertPEM())
	s := NewSession(t.Context(), p)
	proxy := serve(t, s)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(auth.CertPEM())
	roots.AppendCertsFromPEM(o.ca.CertPEM())
	c := &http.Client{
		Transport:     &http.Transport{Proxy: http.ProxyURL(proxy), TLSClientConfig: &tls.Config{RootCAs: roots}},
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return s, c, auth
}

func get(t *testing.T, c *http.Client, rawURL, auth string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", rawURL, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", rawURL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestSecretPlaceholderOnlyForItsHost(t *testing.T) {
	o := newSecretOrigin(t)
	ph := NewPlaceholder()
	s, c, _ := secretSession(t, o, Secret{Name: "API_TOKEN", Value: "s3cret-value", Placeholder: ph})

	resp, body := get(t, c, "https://api.test:"+o.port+"/x", "Bearer "+ph)
	if want := "api.test:" + o.port + " Bearer s3cret-value"; o.requests()[0] != want {
		t.Errorf("the bound host got %q; want %q", o.requests()[0], want)
	}
	if want := "api.test:" + o.port + " Bearer ************"; body != want {
		t.Errorf("the echo reached the client as %q; want the value masked: %q", body, want)
	}
	if got := resp.Header.Get("X-Echo"); got != "Bearer "+ph {
		t.Errorf("the echoed header reached the client as %q; want the placeholder back", got)
	}
	// Two requests on one kept-alive interception.
	if get(t, c, "https://api.test:"+o.port+"/y", "Bearer "+ph); !strings.HasSuffix(o.requests()[1], "Bearer s3cret-value") {
		t.Errorf("second request: %q", o.requests()[1])
	}
	if _, body := get(t, c, "https://other.test:"+o.port+"/x", "Bearer "+ph); body != "other.test:"+o.port+" Bearer "+ph {
		t.Errorf("another allowed host got %q; want the placeholder unchanged", body)
	}
	if e := entry(t, s, "api.test", o.port); len(e.Secrets) != 1 || e.Secrets[0] != "API_TOKEN" || e.Decision != Allowed {
		t.Errorf("api.test's entry %+v; want API_TOKEN applied", e)
	}
	if e := entry(t, s, "other.test", o.port); len(e.Secrets) != 0 {
		t.Errorf("other.test's entry %+v; want no secret", e)
	}
	for _, e := range s.Report() {
		if strings.Contains(fmt.Sprintf("%+v", e), "s3cret-value") {
			t.Errorf("the report holds the value: %+v", e)
		}
	}
}

// TestSecretNotOverPlainHTTP: a plain-HTTP request to a secret's host is
// refused, saying why, rather than sent on without the value.
func TestSecretNotOverPlainHTTP(t *testing.T) {
	var got string
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Get("Authorization") }))
	defer plain.Close()
	ph, port := NewPlaceholder(), portOf(t, plain.URL)
	p := loopbackPolicy(t, newResolver("api.test", "127.0.0.1"), "api.test:"+port)
	p.Secrets = []Secret{{Name: "T", Value: "v", Placeholder: ph, Rules: p.Rules}}
	s := NewSession(t.Context(), p)
	proxy := serve(t, s)
	resp, body := rawRequest(t, proxy, "GET http://api.test:"+port+"/ HTTP/1.1\r\nHost: api.test:"+port+"\r\nAuthorization: Bearer "+ph+"\r\nConnection: close\r\n\r\n")
	if resp.StatusCode != http.StatusForbidden || got != "" || !strings.Contains(body, "secret T is bound to it") {
		t.Errorf("plain HTTP: status %d %q, origin got %q; want a 403 naming the secret, and nothing sent", resp.StatusCode, body, got)
	}
	if e := entry(t, s, "api.test", port); e.Refused != 1 || !strings.Contains(e.Reason, "only into HTTPS") || len(e.Secrets) != 0 {
		t.Errorf("api.test's entry %+v; want the refusal and its reason", e)
	}
}

func TestSecretHeaderAndBasic(t *testing.T) {
	o := newSecretOrigin(t)
	last := func() string { r := o.requests(); return r[len(r)-1] }
	_, c, _ := secretSession(t, o, Secret{Name: "H", Value: "tok", Header: "Authorization: token {value}"})
	if get(t, c, "https://api.test:"+o.port+"/", ""); !strings.HasSuffix(last(), " token tok") {
		t.Errorf("header template: origin got %q", last())
	}
	_, c, _ = secretSession(t, o, Secret{Name: "B", Value: "tok", BasicUser: "git"})
	if get(t, c, "https://api.test:"+o.port+"/", ""); !strings.HasSuffix(last(), " Basic "+base64.StdEncoding.EncodeToString([]byte("git:tok"))) {
		t.Errorf("basic user: origin got %q", last())
	}
	// git puts a URL's user:token into Basic credentials: the placeholder
	// is replaced inside them.
	ph := NewPlaceholder()
	_, c, _ = secretSession(t, o, Secret{Name: "P", Value: "tok", Placeholder: ph})
	basic := func(s string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(s)) }
	if get(t, c, "https://api.test:"+o.port+"/", basic("x:"+ph)); !strings.HasSuffix(last(), " "+basic("x:tok")) {
		t.Errorf("placeholder in basic: origin got %q", last())
	}
}

func TestSecretPlaceholderOfAnotherSession(t *testing.T) {
	o := newSecretOrigin(t)
	mine, theirs := NewPlaceholder(), NewPlaceholder()
	_, c, _ := secretSession(t, o, Secret{Name: "T", Value: "v", Placeholder: mine})
	if _, body := get(t, c, "https://api.test:"+o.port+"/", "Bearer "+theirs); !strings.HasSuffix(body, "Bearer "+theirs) {
		t.Errorf("another session's placeholder became %q; want it unchanged", body)
	}
}

// TestSecretHostile: the sandbox tries to have the value sent elsewhere than
// its host.
func TestSecretHostile(t *testing.T) {
	o := newSecretOrigin(t)
	ph := NewPlaceholder()
	s, c, auth := secretSession(t, o, Secret{Name: "T", Value: "the-value", Placeholder: ph})
	api := "api.test:" + o.port

	// A redirect from the bound host is the client's to follow: the proxy
	// hands it back, and a request to the other host carries the placeholder.
	resp, _ := get(t, c, "https://"+api+"/redirect", "Bearer "+ph)
	if resp.StatusCode != http.StatusFound {
		t.Errorf("redirect: status %d; want the 302 itself", resp.StatusCode)
	}
	if _, body := get(t, c, resp.Header.Get("Location"), "Bearer "+ph); strings.Contains(body, "the-value") {
		t.Errorf("the redirect's target got %q", body)
	}

	// Inside the tunnel to the bound host: a Host header or an absolute URI
	// naming another host, and an SNI naming another host.
	proxy := c.Transport.(*http.Transport).Proxy
	pu, _ := proxy(nil)
	for _, tc := range []struct{ name, sni, line, host string }{
		{"host header", "api.test", "GET /x HTTP/1.1", "other.test:" + o.port},
		{"host header, default port", "api.test", "GET /x HTTP/1.1", "api.test"},
		{"absolute URI", "api.test", "GET https://other.test:" + o.port + "/x HTTP/1.1", api},
		{"plain absolute URI", "api.test", "GET http://" + api + "/x HTTP/1.1", api},
		{"SNI of another", "other.test", "GET /x HTTP/1.1", "other.test:" + o.port},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, br := openTunnel(t, pu, api)
			defer conn.Close()
			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM(auth.CertPEM())
			tlsc := tls.Client(&bufConn{Conn: conn, r: br}, &tls.Config{ServerName: tc.sni, RootCAs: roots, InsecureSkipVerify: tc.sni != "api.test"})
			if err := tlsc.Handshake(); err != nil {
				t.Fatal(err)
			}
			if cn := tlsc.ConnectionState().PeerCertificates[0].Subject.CommonName; cn != "api.test" {
				t.Errorf("the leaf names %q; want the CONNECT's host whatever the SNI", cn)
			}
			fmt.Fprintf(tlsc, "%s\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", tc.line, tc.host, ph)
			resp, err := http.ReadResponse(bufio.NewReader(tlsc), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusMisdirectedRequest {
				t.Errorf("status %d %q; want 421", resp.StatusCode, body)
			}
		})
	}
	for _, r := range o.requests() {
		if strings.Contains(r, "the-value") && !strings.HasPrefix(r, api+" ") {
			t.Errorf("the value reached %q", r)
		}
	}
	if e := entry(t, s, "api.test", o.port); e.Refused == 0 {
		t.Errorf("api.test's entry %+v; want the misdirected requests counted as refused", e)
	}
}

// TestSecretOriginVerified: the proxy's own TLS to a bound host is verified;
// an origin it cannot verify gets nothing.
func TestSecretOriginVerified(t *testing.T) {
	o := newSecretOrigin(t)
	ph := NewPlaceholder()
	s, c, _ := secretSession(t, o, Secret{Name: "T", Value: "v", Placeholder: ph})
	s.p.OriginRoots = x509.NewCertPool() // trusts nothing
	_, err := c.Get("https://api.test:" + o.port + "/")
	if err == nil || !strings.Contains(err.Error(), "Bad Gateway") {
		t.Errorf("an unverifiable origin: %v; want the proxy's 502", err)
	}
	if len(o.requests()) != 0 {
		t.Errorf("the origin got %q", o.requests())
	}
}

func TestAuthorityRoundTrip(t *testing.T) {
	a, err := NewAuthority("x")
	if err != nil {
		t.Fatal(err)
	}
	key, err := a.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseAuthority(a.CertPEM(), key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := b.leaf("api.test")
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(a.CertPEM())
	if _, err := leaf.Leaf.Verify(x509.VerifyOptions{DNSName: "api.test", Roots: roots}); err != nil {
		t.Errorf("a leaf of the parsed authority does not verify against the original: %v", err)
	}
	if _, err := ParseAuthority(a.CertPEM(), []byte("junk")); err == nil {
		t.Error("a junk key was taken")
	}
}

func TestCheckSecretHeader(t *testing.T) {
	for h, ok := range map[string]bool{
		"Authorization: Bearer {value}": true,
		"X-Api-Key: {value}":            true,
		"Authorization: Bearer":         false,
		"no colon {value}":              false,
		"Bad Name: {value}":             false,
		"Proxy-Authorization: {value}":  false,
		"X: {value}\r\nY: z":            false,
	} {
		if err := CheckSecretHeader(h); (err == nil) != ok {
			t.Errorf("CheckSecretHeader(%q) = %v; want ok %v", h, err, ok)
		}
	}
	if err := CheckSecretHeader("Authorization: Bearer ghp_pasted"); err == nil || strings.Contains(err.Error(), "ghp_pasted") {
		t.Errorf("a template with a value pasted in: %v; want an error that does not quote it", err)
	}
}

func TestScrubber(t *testing.T) {
	secrets := []*Secret{{Value: "s3cret"}, {Value: "xy"}}
	for _, in := range []string{"", "s3cret", "a s3cret b s3cr", "s3crets3cret xy", strings.Repeat("-", 70<<10) + "s3cret"} {
		want := strings.ReplaceAll(strings.ReplaceAll(in, "s3cret", "******"), "xy", "**")
		for name, r := range map[string]io.Reader{"whole": strings.NewReader(in), "byte by byte": iotest.OneByteReader(strings.NewReader(in))} {
			got, err := io.ReadAll(newScrubber(&http.Response{Body: io.NopCloser(r)}, secrets))
			if err != nil || string(got) != want {
				t.Errorf("%s %.40q: %.40q %v; want %.40q", name, in, got, err, want)
			}
		}
	}
}
