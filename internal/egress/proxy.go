package egress

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/textproto"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// maxHead bounds a request's line and headers, the client's and an upstream
// proxy's answer alike.
const maxHead = 64 << 10

// Serve speaks HTTP/1.1 proxy on one client connection until it ends, then
// closes it. It takes CONNECT host:port (a tunnel, no decryption) and
// absolute-URI requests (GET http://host/path), several on one connection,
// each host vetted on its own. It returns at once, closing conn, when the
// session is closed. Serve is safe to call from many goroutines.
func (s *Session) Serve(conn net.Conn) {
	l, full := s.register(conn)
	if l == nil {
		// Up to maxRefusing refusals at a time, each read for the report;
		// past them, a flood is closed at once.
		if full && s.refusing.Add(1) <= maxRefusing {
			s.refuseOverCap(conn)
		}
		if full {
			s.refusing.Add(-1)
		}
		conn.Close()
		return
	}
	defer l.finish()
	if d := s.p.MaxLifetime; d > 0 {
		t := time.AfterFunc(d, func() { l.cut(fmt.Sprintf("lifetime of %s reached", d)) })
		defer t.Stop()
	}
	br := bufio.NewReaderSize(conn, maxHead)
	for {
		req, hosts := l.nextRequest(br)
		if req == nil {
			return
		}
		if req.Method == http.MethodConnect {
			s.connect(l, br, req)
			return
		}
		if !s.forward(l, req, hosts) {
			return
		}
	}
}

// nextRequest reads the next request from the client, with its Host headers
// (see peekHosts); nil when the client is done or was refused.
func (l *link) nextRequest(br *bufio.Reader) (*http.Request, []string) {
	hosts, err := peekHosts(br)
	if err != nil {
		if errors.Is(err, errHeadTooLarge) {
			l.refuse(http.StatusRequestHeaderFieldsTooLarge, "request line and headers over 64 KiB")
		}
		return nil, nil
	}
	req, err := http.ReadRequest(br)
	if err != nil {
		l.refuse(http.StatusBadRequest, "not an HTTP/1 request: "+err.Error())
		return nil, nil
	}
	return req, hosts
}

// maxRefusing bounds the connections over MaxConns being answered at once.
const maxRefusing = 64

// overCapWait bounds how long a connection over MaxConns may take to send
// the request it is refused, so that a flood of them holds little.
const overCapWait = 5 * time.Second

// overCapHead bounds the head read of a connection over MaxConns: enough
// for the request line and Host of any real client, so that up to
// maxRefusing of them hold at most this each.
const overCapHead = 4 << 10

// refuseOverCap reads the request of a connection over MaxConns, for the
// report's sake, and answers 429. It reads at most overCapHead bytes.
func (s *Session) refuseOverCap(conn net.Conn) {
	conn.SetDeadline(time.Now().Add(overCapWait))
	why := fmt.Sprintf("connection cap of %d reached", s.p.MaxConns)
	br := bufio.NewReaderSize(conn, overCapHead)
	if _, err := waitHead(br); err != nil {
		if errors.Is(err, errHeadTooLarge) {
			refuse(conn, http.StatusTooManyRequests, why)
		}
		s.logRefused("", 0, why)
		return
	}
	req, err := http.ReadRequest(br)
	if err != nil {
		s.logRefused("", 0, why)
		return
	}
	k := hostPort{host: canonicalHost(req.URL.Hostname()), port: 80}
	if req.Method == http.MethodConnect {
		h, p, err := splitAuthority(req.RequestURI)
		if err != nil {
			refuse(conn, http.StatusTooManyRequests, why)
			return
		}
		k = hostPort{h, p}
	} else if p, err := strconv.ParseUint(req.URL.Port(), 10, 16); err == nil {
		k.port = uint16(p)
	}
	if k.host == "" {
		refuse(conn, http.StatusTooManyRequests, why)
		return
	}
	s.noteRefused(k, why)
	refuse(conn, http.StatusTooManyRequests, (&refusal{key: k, verb: "refused", why: why}).text())
}

var errHeadTooLarge = errors.New("request head too large")

// peekHosts waits for a whole request head in br, without consuming it, and
// returns its Host header values: http.ReadRequest drops the Host header of an
// absolute-URI request, and the proxy must see it to refuse a mismatch.
func peekHosts(br *bufio.Reader) ([]string, error) {
	b, err := waitHead(br)
	if err != nil {
		return nil, err
	}
	tp := textproto.NewReader(bufio.NewReader(bytes.NewReader(b)))
	if _, err := tp.ReadLine(); err != nil {
		return nil, nil // ReadRequest says what is wrong
	}
	h, _ := tp.ReadMIMEHeader()
	return h.Values("Host"), nil
}

// waitHead waits until br holds a whole head, a request's or a response's
// line and headers up to the empty line that ends them, and returns it
// without consuming it; errHeadTooLarge when br's buffer fills first. Every
// head the proxy reads, the client's, an origin's and an upstream proxy's,
// is waited for so before net/http parses it, which then reads within what
// br holds: textproto alone grows a line without bound, and a peer that
// never ends one would grow airlock's memory with it.
func waitHead(br *bufio.Reader) ([]byte, error) {
	from := 0 // where the search for the end goes on
	for {
		if br.Buffered() == 0 {
			if _, err := br.Peek(1); err != nil {
				return nil, err
			}
		}
		b, _ := br.Peek(br.Buffered())
		if n := headEnd(b, from); n > 0 {
			return b[:n], nil
		}
		if len(b) >= br.Size() {
			return nil, errHeadTooLarge
		}
		from = max(0, len(b)-2)
		if _, err := br.Peek(len(b) + 1); err != nil {
			return nil, err
		}
	}
}

// headEnd returns the length of the head that b begins with, or 0 when b
// holds no empty line yet at or after from: the first line end followed by
// an empty line, CRLF or LF alone, as textproto reads them.
func headEnd(b []byte, from int) int {
	end := 0
	if i := bytes.Index(b[from:], []byte("\n\r\n")); i >= 0 {
		end = from + i + 3
	}
	if i := bytes.Index(b[from:], []byte("\n\n")); i >= 0 && (end == 0 || from+i+2 < end) {
		end = from + i + 2
	}
	return end
}

// refuse answers a request the proxy will not carry, and says why in plain
// text, so that curl, pip and apt show it. The connection is closed after.
func refuse(w io.Writer, status int, why string) {
	body := "airlock egress proxy: " + why + "\n"
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		status, http.StatusText(status), len(body), body)
}

// refuse answers the link's client with a refusal; the connection closes
// after it, lingering so the answer is read (see link.finish).
func (l *link) refuse(status int, why string) {
	l.mu.Lock()
	l.refused = true
	l.mu.Unlock()
	refuse(l.client, status, why)
}

// failed answers a request that failed before any of its answer reached the
// client: 429 naming the cap when one stopped it, 502 otherwise, nothing when
// the link was cut (its client is gone).
func (l *link) failed(u *upstream, what string, err error) {
	switch {
	case l.why() != "":
	case u.capReached() != "":
		// In the report before the client reads the answer.
		l.s.noteEnd(l, u)
		l.refuse(http.StatusTooManyRequests, fmt.Sprintf("%s refused: %s", u.key, u.capReached()))
	default:
		// An error can quote what the origin sent (a malformed status
		// line), so it passes the scrubber too.
		l.refuse(http.StatusBadGateway, hideText(fmt.Sprintf("%s: %s: %v", u.key, what, err), u.secrets))
	}
}

// refusal is why a request to key is not carried, and the status that says
// so. verb says how ("denied", "cannot be reached"); the report keeps why
// alone, the client's answer names the host too.
type refusal struct {
	status int
	key    hostPort
	verb   string
	why    string
}

func (r *refusal) text() string { return fmt.Sprintf("%s %s: %s", r.key, r.verb, r.why) }

// answer records the refusal in the report and answers the client with it.
func (s *Session) answer(l *link, r *refusal) {
	s.noteRefused(r.key, r.why)
	l.refuse(r.status, r.text())
}

// target is a vetted destination: the addresses to dial (none when an
// upstream proxy resolves) and the rule that allowed it.
type target struct {
	key   hostPort
	addrs []netip.Addr
	rule  string
}

// vet decides whether the session may reach host on port, and where.
func (s *Session) vet(ctx context.Context, host string, port uint16) (target, *refusal) {
	k := hostPort{host, port}
	denied := func(why string) (target, *refusal) {
		return target{}, &refusal{http.StatusForbidden, k, "denied", why}
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" || !covered(a.Unmap(), s.p.AllowCIDRs) {
			return denied("an IP address is reached only when the operator's egress.allow_cidrs covers it; ask for the host by name")
		}
		if port != 80 && port != 443 {
			return denied("an IP address is reached on ports 80 and 443 only")
		}
		return target{key: k, addrs: []netip.Addr{a.Unmap()}, rule: "egress.allow_cidrs"}, nil
	}
	if why := checkName(host); why != "" {
		return denied("not a host name: " + why)
	}
	rule := ""
	for _, r := range s.p.Rules {
		if r.Match(host, port) {
			rule = "rule " + r.String()
			break
		}
	}
	if rule == "" {
		return denied("no egress rule of this run allows it (" + s.rulesText() + ")")
	}
	if s.p.UpstreamProxy != nil {
		return target{key: k, rule: rule}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.p.ConnectTimeout)
	defer cancel()
	addrs, err := s.p.Resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return target{}, &refusal{http.StatusBadGateway, k, "cannot be resolved", err.Error()}
	}
	if len(addrs) == 0 {
		return target{}, &refusal{http.StatusBadGateway, k, "cannot be resolved", "no address"}
	}
	local, err := s.p.LocalAddrs()
	if err != nil {
		return denied("cannot list the host's own addresses to refuse them: " + err.Error())
	}
	good := addrs[:0:0]
	first := ""
	for _, a := range addrs {
		if why := vetAddr(a, s.p.AllowCIDRs, local); why != "" {
			if first == "" {
				first = fmt.Sprintf("it resolves to %s, %s", a, why)
			}
			continue
		}
		good = append(good, a.Unmap())
	}
	if len(good) == 0 {
		return denied(first)
	}
	return target{key: k, addrs: good, rule: rule}, nil
}

func (s *Session) rulesText() string {
	if len(s.p.Rules) == 0 {
		return "it has none"
	}
	names := make([]string, len(s.p.Rules))
	for i, r := range s.p.Rules {
		names[i] = r.String()
	}
	return "its rules: " + strings.Join(names, ", ")
}

// dial opens a connection for t: to one of its vetted addresses, in order, or
// through the upstream proxy (with a CONNECT when tunnel is set). It never
// looks the name up again.
func (s *Session) dial(t target, tunnel bool) (*upstream, *refusal) {
	tl, why := s.acquire(t.key, t.rule)
	if why != "" {
		return nil, &refusal{http.StatusTooManyRequests, t.key, "refused", why}
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.p.ConnectTimeout)
	defer cancel()
	var c net.Conn
	var err error
	if s.p.UpstreamProxy != nil {
		c, err = s.dialUpstreamProxy(ctx, t.key, tunnel)
	} else {
		for _, a := range t.addrs {
			c, err = s.p.Dial(ctx, "tcp", netip.AddrPortFrom(a, t.key.port).String())
			if err == nil {
				break
			}
		}
	}
	if err != nil {
		s.mu.Lock()
		tl.connections--
		s.mu.Unlock()
		return nil, &refusal{http.StatusBadGateway, t.key, "cannot be reached", err.Error()}
	}
	return &upstream{Conn: c, s: s, key: t.key, t: tl}, nil
}

// proxyAddr is the upstream proxy's host:port.
func (s *Session) proxyAddr() string {
	u := s.p.UpstreamProxy
	if u.Port() != "" {
		return u.Host
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// proxyAuth is the Proxy-Authorization value for the upstream proxy, or "".
func (s *Session) proxyAuth() string {
	u := s.p.UpstreamProxy.User
	if u == nil {
		return ""
	}
	pw, _ := u.Password()
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+pw))
}

func (s *Session) dialUpstreamProxy(ctx context.Context, k hostPort, tunnel bool) (net.Conn, error) {
	if sch := s.p.UpstreamProxy.Scheme; sch != "http" {
		return nil, fmt.Errorf("upstream proxy scheme %q: only http is supported", sch)
	}
	c, err := s.p.Dial(ctx, "tcp", s.proxyAddr())
	if err != nil {
		return nil, fmt.Errorf("upstream proxy: %w", err)
	}
	if !tunnel {
		return c, nil
	}
	if d, ok := ctx.Deadline(); ok {
		c.SetDeadline(d)
	}
	req := "CONNECT " + k.String() + " HTTP/1.1\r\nHost: " + k.String() + "\r\n"
	if a := s.proxyAuth(); a != "" {
		req += "Proxy-Authorization: " + a + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		c.Close()
		return nil, fmt.Errorf("upstream proxy: %w", err)
	}
	br := bufio.NewReaderSize(c, maxHead)
	_, err = waitHead(br)
	var resp *http.Response
	if err == nil {
		resp, err = http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("upstream proxy: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return nil, fmt.Errorf("upstream proxy answered %s", resp.Status)
	}
	c.SetDeadline(time.Time{})
	return &bufConn{Conn: c, r: br}, nil
}

// bufConn reads through the reader that read the upstream proxy's answer, so
// the origin's first bytes, if they came with it, are not lost.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(p []byte) (int, error) { return c.r.Read(p) }

func (c *bufConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// splitAuthority parses a CONNECT target, host:port, port required.
func splitAuthority(a string) (string, uint16, error) {
	h, p, err := net.SplitHostPort(a)
	if err != nil {
		return "", 0, err
	}
	n, err := strconv.ParseUint(p, 10, 16)
	if err != nil || n == 0 {
		return "", 0, fmt.Errorf("port %q is not 1 to 65535", p)
	}
	return canonicalHost(h), uint16(n), nil
}

// canonicalHost lowercases a name and drops one trailing dot, the forms rules
// are written in.
func canonicalHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// connect serves a CONNECT: vet, dial, answer 200, then copy both ways until
// either side ends or a cap cuts it.
func (s *Session) connect(l *link, br *bufio.Reader, req *http.Request) {
	host, port, err := splitAuthority(req.RequestURI)
	if err != nil {
		l.refuse(http.StatusBadRequest, fmt.Sprintf("CONNECT target %q is not host:port: %v", req.RequestURI, err))
		return
	}
	t, ref := s.vet(s.ctx, host, port)
	if ref == nil {
		if secrets := s.secretsFor(host, port); len(secrets) > 0 {
			s.intercept(l, br, t, secrets)
			return
		}
		var u *upstream
		u, ref = s.dial(t, true)
		if ref == nil {
			s.tunnel(l, br, u)
			return
		}
	}
	s.answer(l, ref)
}

func (s *Session) tunnel(l *link, br *bufio.Reader, u *upstream) {
	if !l.setUpstream(u) {
		s.noteCut(u.key, l.why())
		return
	}
	if _, err := io.WriteString(l.client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	// Each direction ends on its own: the end of the client's input is
	// passed on as a half-close, and the origin's end too where the client
	// connection can take one. An error in either ends both.
	outErr := make(chan error, 1)
	go func() {
		err := copyData(u, br)
		if err == nil {
			u.CloseWrite()
		} else {
			l.cut("")
		}
		outErr <- err
	}()
	_, inErr := copyOut(l.client, u, -1)
	if inErr == nil {
		if cw, ok := l.client.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		} else {
			l.cut("")
		}
	} else {
		l.cut("")
	}
	if err := <-outErr; err != nil || inErr != nil {
		// A tunnel that ended cleanly both ways was not cut, even when the
		// session closes before this line.
		s.noteEnd(l, u)
	}
}

// noteEnd records why u ended early, if it did: a cap, the lifetime, the
// session's end.
func (s *Session) noteEnd(l *link, u *upstream) {
	if why := u.capReached(); why != "" {
		s.noteCut(u.key, why)
	} else if why := l.why(); why != "" {
		s.noteCut(u.key, why)
	}
}

// copyData copies src to dst until src ends (nil) or either fails.
func copyData(dst io.Writer, src io.Reader) error {
	buf := make([]byte, 64<<10)
	for {
		n, rerr := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// copyOut copies n bytes (n < 0: until its end) from the origin u to dst,
// each read reserved from the session's download cap before it moves. It
// reads through a buffer, counting as the bytes come, until a read fills the
// buffer: a bulk transfer, which from then on the kernel moves (splice(2))
// when dst and u's connection are both TCP connections (a sandbox's
// connection handed over by its relay, and an origin), a chunk at a time, so
// that no byte passes through airlock's memory.
func copyOut(dst io.Writer, u *upstream, n int64) (int64, error) {
	buf := make([]byte, 32<<10)
	rf, _ := dst.(io.ReaderFrom)
	splice := false
	var total int64
	for n != 0 {
		if !splice {
			want := int64(len(buf))
			if n > 0 && n < want {
				want = n
			}
			got, err := u.Read(buf[:want])
			if got > 0 {
				if _, werr := dst.Write(buf[:got]); werr != nil {
					return total, werr
				}
				total += int64(got)
				if n > 0 {
					n -= int64(got)
				}
			}
			if err == io.EOF {
				if n > 0 {
					return total, io.ErrUnexpectedEOF
				}
				return total, nil
			}
			if err != nil {
				return total, err
			}
			splice = rf != nil && got == len(buf)
			continue
		}
		chunk := int64(1 << 20)
		if n > 0 && n < chunk {
			chunk = n
		}
		allowed := int64(u.s.in.reserve(int(chunk)))
		if allowed == 0 {
			return total, u.hit(fmt.Sprintf("download cap of %d bytes reached", u.s.in.max))
		}
		moved, err := rf.ReadFrom(io.LimitReader(u.Conn, allowed))
		u.s.in.release(int(allowed - moved))
		u.t.in.Add(moved)
		total += moved
		if n > 0 {
			n -= moved
		}
		if err != nil {
			return total, err
		}
		if moved < allowed { // the origin's end
			if n > 0 {
				return total, io.ErrUnexpectedEOF
			}
			return total, nil
		}
	}
	return total, nil
}

// maxInformational bounds the informational answers (1xx) an origin may
// send before its answer to one request.
const maxInformational = 16

// readResponse reads the origin's next answer to out, its head bounded by
// ubr's size (waitHead).
func readResponse(ubr *bufio.Reader, out *http.Request) (*http.Response, error) {
	if _, err := waitHead(ubr); err != nil {
		if errors.Is(err, errHeadTooLarge) {
			return nil, fmt.Errorf("the answer's status line and headers are over %d KiB", ubr.Size()>>10)
		}
		return nil, err
	}
	return http.ReadResponse(ubr, out)
}

// bigBody is the size from which a response's body is copied by copyOut
// rather than through net/http's writer.
const bigBody = 1 << 20

// writeBig writes resp, whose body of resp.ContentLength bytes (at least
// bigBody, no trailer) comes from u, a host no secret is bound to (their
// answers all pass the scrubber), to the client: its head as net/http
// writes one, then what ubr already holds of the body, then the rest from
// u by copyOut.
func writeBig(client net.Conn, resp *http.Response, u *upstream, ubr *bufio.Reader) error {
	bw := bufio.NewWriterSize(client, 4<<10)
	fmt.Fprintf(bw, "HTTP/1.1 %s\r\n", resp.Status)
	h := resp.Header.Clone()
	h.Del("Content-Length")
	if resp.Close {
		h.Set("Connection", "close")
	}
	h.Write(bw)
	fmt.Fprintf(bw, "Content-Length: %d\r\n\r\n", resp.ContentLength)
	held := min(int64(ubr.Buffered()), resp.ContentLength)
	if _, err := io.CopyN(bw, ubr, held); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	_, err := copyOut(client, u, resp.ContentLength-held)
	return err
}

// hopHeaders are the headers of one hop, never forwarded (RFC 9110, 7.6.1).
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func dropHopHeaders(h http.Header) {
	for _, f := range h["Connection"] {
		for _, name := range strings.Split(f, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// forward carries one absolute-URI request and its response, and reports
// whether the client connection may carry another.
func (s *Session) forward(l *link, req *http.Request, hosts []string) bool {
	if req.URL.Scheme != "http" || req.URL.Host == "" {
		why := "this proxy takes CONNECT host:port and absolute-URI requests (GET http://host/path); " +
			fmt.Sprintf("%q is not one", req.RequestURI)
		if req.URL.Scheme == "https" {
			why = "https goes through CONNECT host:443, not an absolute https:// URI"
		}
		l.refuse(http.StatusBadRequest, why)
		return false
	}
	host := canonicalHost(req.URL.Hostname())
	port := uint16(80)
	if p := req.URL.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			l.refuse(http.StatusBadRequest, fmt.Sprintf("port %q is not 1 to 65535", p))
			return false
		}
		port = uint16(n)
	}
	k := hostPort{host, port}
	for _, h := range hosts {
		if !sameHost(h, k, 80) {
			why := fmt.Sprintf("Host header %q differs from the URI's host %q", h, req.URL.Host)
			s.noteRefused(k, why)
			l.refuse(http.StatusBadRequest, why)
			return false
		}
	}
	t, ref := s.vet(s.ctx, host, port)
	if ref == nil {
		ref = s.plainRefusal(k)
	}
	if ref != nil {
		s.answer(l, ref)
		return false
	}

	l.mu.Lock()
	u := l.upstream
	l.mu.Unlock()
	if u != nil && u.key != k {
		u = nil
	}
	return s.carry(l, req, u, func() (*upstream, *refusal) {
		u, ref := s.dial(t, false)
		if ref == nil {
			u.br = bufio.NewReaderSize(u, maxHead)
		}
		return u, ref
	})
}

// carry sends req over u, kept alive from an earlier request, or when u is
// nil over a new connection from dial; and again over a new one when the
// origin had closed u before the request reached it. It reports whether
// the client connection may carry another request.
func (s *Session) carry(l *link, req *http.Request, u *upstream, dial func() (*upstream, *refusal)) bool {
	reused := u != nil
	for {
		if !reused {
			var ref *refusal
			if u, ref = dial(); ref != nil {
				s.answer(l, ref)
				return false
			}
			if !l.setUpstream(u) {
				s.noteCut(u.key, l.why())
				return false
			}
		}
		keep, retry := s.roundTrip(l, req, u, reused)
		if retry {
			l.setUpstream(nil)
			reused = false
			continue
		}
		if !keep {
			s.noteEnd(l, u)
		}
		return keep
	}
}

// sameHost reports whether a Host header names k: same host, and same port,
// defaultPort when it names none.
func sameHost(h string, k hostPort, defaultPort uint16) bool {
	host, port := h, strconv.Itoa(int(defaultPort))
	if hh, p, err := net.SplitHostPort(h); err == nil {
		host, port = hh, p
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	return canonicalHost(host) == k.host && port == strconv.Itoa(int(k.port))
}

// roundTrip sends req to the origin over u and its response to the client.
// It reports whether both connections can carry another request, and
// whether req should be sent again on a new connection: when u was kept
// alive from an earlier request, and the origin closed it before answering
// a request without a body (as Transport in net/http does).
func (s *Session) roundTrip(l *link, req *http.Request, u *upstream, reused bool) (keep, retry bool) {
	ubr := u.br
	bodyless := req.Body == nil || req.Body == http.NoBody || req.ContentLength == 0 && len(req.TransferEncoding) == 0
	stale := func(err error) bool {
		return reused && bodyless && u.capReached() == "" && l.why() == "" &&
			(errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE))
	}
	out := &http.Request{
		Method:        req.Method,
		URL:           req.URL,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        req.Header.Clone(),
		Body:          req.Body,
		ContentLength: req.ContentLength,
		Host:          req.URL.Host,
	}
	if len(req.TransferEncoding) > 0 {
		out.TransferEncoding = []string{"chunked"}
	}
	dropHopHeaders(out.Header)
	for _, sec := range u.secrets {
		if sec.apply(out.Header) {
			s.noteSecret(u.key, sec.Name)
		}
	}
	if len(u.secrets) > 0 {
		// The answer is scanned for the values, which a compressed body
		// would hide.
		out.Header.Set("Accept-Encoding", "identity")
	}
	if _, ok := out.Header["User-Agent"]; !ok {
		// Request.Write would add Go's own.
		out.Header["User-Agent"] = []string{""}
	}
	if strings.EqualFold(out.Header.Get("Expect"), "100-continue") {
		// The body is sent on; tell the client to send it now.
		out.Header.Del("Expect")
		if _, err := io.WriteString(l.client, "HTTP/1.1 100 Continue\r\n\r\n"); err != nil {
			return false, false
		}
	}
	var err error
	if s.p.UpstreamProxy != nil && u.secrets == nil {
		if a := s.proxyAuth(); a != "" {
			out.Header.Set("Proxy-Authorization", a)
		}
		err = out.WriteProxy(u)
	} else {
		err = out.Write(u)
	}
	if err != nil {
		if stale(err) {
			return false, true
		}
		l.failed(u, "sending the request failed", err)
		return false, false
	}
	resp, err := readResponse(ubr, out)
	if err != nil && stale(err) {
		return false, true
	}
	for n := 0; err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols; n++ {
		if n == maxInformational {
			err = fmt.Errorf("more than %d informational answers (1xx) before the answer", maxInformational)
			break
		}
		// An informational answer (103 Early Hints) is passed on as it
		// comes, with its headers hidden as the final answer's are.
		dropHopHeaders(resp.Header)
		hideResponse(resp, u.secrets)
		fmt.Fprintf(l.client, "HTTP/1.1 %s\r\n", resp.Status)
		resp.Header.Write(l.client)
		io.WriteString(l.client, "\r\n")
		resp, err = readResponse(ubr, out)
	}
	if err != nil {
		l.failed(u, "no answer", err)
		return false, false
	}
	defer func() { resp.Body.Close() }() // writeBig takes the body itself
	if resp.StatusCode == http.StatusSwitchingProtocols {
		l.refuse(http.StatusBadGateway, fmt.Sprintf("%s: switching protocols is not carried", u.key))
		return false, false
	}
	originClose := resp.Close
	dropHopHeaders(resp.Header)
	if len(u.secrets) > 0 {
		// Every byte of the answer passes the scrubber: status line and
		// headers now, the body as it passes, the trailers at its end. A
		// body encoded despite the request's identity cannot be scanned,
		// and is refused.
		if ce := resp.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
			l.refuse(http.StatusBadGateway, fmt.Sprintf("%s: the answer's body is encoded (%.40q) though the proxy asked for none: a host bound to a secret is answered only with a body the proxy can scan for it", u.key, ce))
			return false, false
		}
		hideResponse(resp, u.secrets)
		resp.Body = newScrubber(resp, u.secrets)
	}
	unbounded := resp.ContentLength < 0 && len(resp.TransferEncoding) == 0 &&
		req.Method != http.MethodHead && resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusNotModified
	keep = !req.Close && !originClose && !unbounded
	resp.Close = !keep
	if resp.ContentLength >= bigBody && len(resp.TransferEncoding) == 0 && resp.Trailer == nil && req.Method != http.MethodHead &&
		len(u.secrets) == 0 &&
		!strings.HasPrefix(resp.Status, "1") {
		err := writeBig(l.client, resp, u, ubr)
		resp.Body = http.NoBody // read whole, or the connection goes
		if err != nil {
			return false, false
		}
	} else if err := resp.Write(l.client); err != nil {
		return false, false
	}
	if originClose || unbounded {
		// Read to its end: the origin's connection cannot carry another.
		l.setUpstream(nil)
		u.Close()
	}
	return keep, false
}
