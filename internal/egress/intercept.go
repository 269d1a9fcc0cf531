package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"time"
)

// A CONNECT to a host that one of the run's secrets is bound to is not
// tunnelled: the proxy opens its own TLS to the origin, verified as any
// client would (the name the CONNECT asked for, Policy.OriginRoots), then
// answers the CONNECT and terminates the client's TLS with a leaf for that
// same name from Policy.Authority. Requests then pass one by one, each
// checked to name the CONNECT's host, with the secrets put in.
//
// The name is the CONNECT's, never the client's SNI or Host header: a
// client that asks for the bound host and then names another reaches the
// bound host or nothing, so a secret goes only where it is bound. The proxy
// follows no redirect: a client that follows one to another host opens a
// new CONNECT there, which carries no secret unless that host is bound too.

// intercept serves a CONNECT to t, a host secrets are bound to.
func (s *Session) intercept(l *link, br *bufio.Reader, t target, secrets []*Secret) {
	if s.p.Authority == nil {
		s.answer(l, &refusal{http.StatusBadGateway, t.key, "cannot be reached", "a secret is bound to it, and the proxy has no authority to terminate its TLS"})
		return
	}
	u, ref := s.dialTLS(t, secrets)
	if ref != nil {
		s.answer(l, ref)
		return
	}
	if !l.setUpstream(u) {
		s.noteCut(u.key, l.why())
		return
	}
	if _, err := io.WriteString(l.client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	tc := tls.Server(&bufConn{Conn: l.client, r: br}, &tls.Config{
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return s.p.Authority.leaf(t.key.host) },
		NextProtos:     []string{"http/1.1"},
		MinVersion:     tls.VersionTLS12,
	})
	tc.SetDeadline(time.Now().Add(s.p.ConnectTimeout))
	if err := tc.HandshakeContext(s.ctx); err != nil {
		s.logLimited("egress client TLS failed", "host", t.key.host, "port", t.key.port, "err", err)
		return
	}
	tc.SetDeadline(time.Time{})
	l.mu.Lock()
	l.client = tc
	l.mu.Unlock()

	cbr := bufio.NewReaderSize(tc, maxHead)
	for {
		req, hosts := l.nextRequest(cbr)
		if req == nil {
			return
		}
		if why := misdirected(req, hosts, t.key); why != "" {
			s.noteRefused(t.key, why)
			l.refuse(http.StatusMisdirectedRequest, why)
			return
		}
		req.URL.Scheme, req.URL.Host = "https", t.key.String()
		if len(hosts) > 0 {
			req.URL.Host = hosts[0] // as the client wrote it, checked above
		}
		l.mu.Lock()
		u = l.upstream
		l.mu.Unlock()
		if !s.carry(l, req, u, func() (*upstream, *refusal) { return s.dialTLS(t, secrets) }) {
			return
		}
	}
}

// misdirected says why a request in the tunnel to k names another host, or
// "": its Host headers and an absolute URI must all name k (port 443 when
// they name none), so that no virtual host behind k's address gets a
// secret meant for k.
func misdirected(req *http.Request, hosts []string, k hostPort) string {
	if req.Method == http.MethodConnect {
		return "a CONNECT inside a tunnel is not carried"
	}
	if req.URL.Host != "" && (req.URL.Scheme != "https" || !sameHost(req.URL.Host, k, 443)) {
		return fmt.Sprintf("the request's URI %q is not for %s, the host this tunnel was opened to", req.URL.String(), k)
	}
	for _, h := range hosts {
		if !sameHost(h, k, 443) {
			return fmt.Sprintf("Host header %q differs from %s, the host this tunnel was opened to", h, k)
		}
	}
	return ""
}

// dialTLS opens the proxy's own TLS to t, verified for t's name, carrying
// secrets.
func (s *Session) dialTLS(t target, secrets []*Secret) (*upstream, *refusal) {
	u, ref := s.dial(t, true)
	if ref != nil {
		return nil, ref
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.p.ConnectTimeout)
	defer cancel()
	tc := tls.Client(u.Conn, &tls.Config{
		ServerName: t.key.host,
		RootCAs:    s.p.OriginRoots,
		NextProtos: []string{"http/1.1"},
		MinVersion: tls.VersionTLS12,
	})
	if err := tc.HandshakeContext(ctx); err != nil {
		u.Close()
		s.mu.Lock()
		u.t.connections--
		s.mu.Unlock()
		return nil, &refusal{http.StatusBadGateway, t.key, "cannot be reached", "TLS to the origin: " + err.Error()}
	}
	// The caps count what the session carries: for an intercepted host,
	// the requests and responses, not their encryption.
	u.Conn, u.secrets = tc, secrets
	u.br = bufio.NewReaderSize(u, maxHead)
	return u, nil
}
