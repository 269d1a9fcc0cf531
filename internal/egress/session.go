package egress

import (
	"bufio"
	"cmp"
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Resolver looks names up; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// DefaultConnectTimeout bounds a name's lookup and the dial of its address
// when Policy.ConnectTimeout is zero.
const DefaultConnectTimeout = 30 * time.Second

// Policy is what one run may reach and how much of it. The zero value of each
// limit means no limit; the caller sets them from the run's.
type Policy struct {
	// Rules are the run's hosts. A host no rule matches is refused.
	Rules []Rule
	// AllowCIDRs open addresses the address rules refuse (an internal mirror
	// on 10.0.0.0/8), and are the only way an IP literal is reached.
	AllowCIDRs []netip.Prefix
	// Resolver looks names up; nil is net.DefaultResolver.
	Resolver Resolver
	// Dial connects to a vetted address, or to UpstreamProxy; nil is a
	// net.Dialer.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// LocalAddrs lists the host's own addresses, which are refused; nil lists
	// the host's interfaces (at most once a second).
	LocalAddrs func() ([]netip.Addr, error)
	// UpstreamProxy, when set, is an http:// proxy every allowed connection
	// leaves through (CONNECT for tunnels, absolute-URI for plain HTTP). It
	// resolves names itself: the rules are still applied here, the address
	// rules are the upstream's to apply, and IP literals still need
	// AllowCIDRs. User and password in the URL become Proxy-Authorization.
	UpstreamProxy *url.URL
	// MaxConns bounds the client connections open at once. Each carries at
	// most one connection to an origin at a time, so it bounds those too;
	// and it bounds what idle client connections can hold in the proxy.
	MaxConns int
	// MaxBytesIn and MaxBytesOut bound the bytes received from origins and
	// sent to them, over the whole session.
	MaxBytesIn, MaxBytesOut int64
	// MaxLifetime bounds how long one client connection, with its tunnel or
	// its requests, stays open.
	MaxLifetime time.Duration
	// ConnectTimeout bounds a lookup and a dial; zero is
	// DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// Logger receives one line per refusal and per cut connection; nil
	// discards.
	Logger *slog.Logger

	// Secrets are the credentials of the run, put into its requests to
	// their hosts (see Secret). A CONNECT to a host one of them is bound to
	// is not a tunnel: the proxy terminates its TLS with a leaf from
	// Authority, and opens its own TLS to the origin, verified against
	// OriginRoots. Every other CONNECT stays a tunnel, never decrypted.
	Secrets   []Secret
	Authority *Authority
	// OriginRoots verify the origins of intercepted hosts; nil is the
	// system's roots. Tests trust their own authority through it.
	OriginRoots *x509.CertPool
}

// Decision is an Entry's verdict.
type Decision string

// The two decisions.
const (
	Allowed Decision = "allowed"
	Denied  Decision = "denied"
)

// Entry is what the session did for one host and port.
type Entry struct {
	// Host is the name (or IP literal) the client asked for, lowercase.
	Host string `json:"host"`
	Port uint16 `json:"port"`
	// Decision is allowed when at least one connection to Host and Port was
	// made, denied otherwise.
	Decision Decision `json:"decision"`
	// Reason is the last refusal or cut (a cap reached, the session closed),
	// else the rule that allowed the host.
	Reason string `json:"reason"`
	// Connections counts connections made to the origin, Refused the
	// attempts refused.
	Connections int `json:"connections"`
	Refused     int `json:"refused"`
	// BytesIn were received from the origin, BytesOut sent to it.
	BytesIn  int64 `json:"bytes_in"`
	BytesOut int64 `json:"bytes_out"`
	// Secrets names the secrets put into requests to Host and Port.
	Secrets []string `json:"secrets,omitempty"`
}

type hostPort struct {
	host string
	port uint16
}

func (k hostPort) String() string {
	return net.JoinHostPort(k.host, strconv.Itoa(int(k.port)))
}

// tally is an Entry while the session runs; the byte counters are updated
// without the session's lock.
type tally struct {
	connections int
	refused     int
	reason      string
	in, out     atomic.Int64
	secrets     map[string]bool // names of the secrets applied
}

// budget is a byte cap shared by every connection of a session. Reads and
// writes reserve before they move bytes, so the cap is exact even when
// connections race.
type budget struct {
	max  int64
	used atomic.Int64
}

// reserve returns how many of want bytes may move, 0 when the cap is reached.
func (b *budget) reserve(want int) int {
	if b.max <= 0 {
		b.used.Add(int64(want))
		return want
	}
	for {
		u := b.used.Load()
		left := b.max - u
		if left <= 0 {
			return 0
		}
		n := int64(want)
		if n > left {
			n = left
		}
		if b.used.CompareAndSwap(u, u+n) {
			return int(n)
		}
	}
}

func (b *budget) release(n int) {
	if n > 0 {
		b.used.Add(-int64(n))
	}
}

func (b *budget) spent() bool { return b.max > 0 && b.used.Load() >= b.max }

// Session is one run's proxy: every connection the run's sandbox opens is
// handed to Serve, and Close ends them all.
type Session struct {
	p      Policy
	ctx    context.Context
	cancel context.CancelFunc
	stop   func() bool
	log    *slog.Logger

	in, out budget

	refusing atomic.Int32 // connections over MaxConns being answered

	mu      sync.Mutex
	closed  bool
	links   map[*link]struct{}
	open    int // client connections being served
	tallies map[hostPort]*tally
	others  *tally // the hosts past MaxEntries, together
	wg      sync.WaitGroup

	logs logLimit
}

// NewSession starts a run's proxy. It closes itself when ctx ends.
func NewSession(ctx context.Context, p Policy) *Session {
	if p.Resolver == nil {
		p.Resolver = net.DefaultResolver
	}
	if p.Dial == nil {
		p.Dial = (&net.Dialer{}).DialContext
	}
	if p.LocalAddrs == nil {
		p.LocalAddrs = recentInterfaceAddrs
	}
	if p.ConnectTimeout <= 0 {
		p.ConnectTimeout = DefaultConnectTimeout
	}
	log := p.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Session{
		p:       p,
		log:     log,
		in:      budget{max: p.MaxBytesIn},
		out:     budget{max: p.MaxBytesOut},
		links:   make(map[*link]struct{}),
		tallies: make(map[hostPort]*tally),
	}
	s.ctx, s.cancel = context.WithCancel(context.WithoutCancel(ctx))
	s.stop = context.AfterFunc(ctx, func() { s.shut("the run ended") })
	return s
}

// Close ends every connection of the session at once, refuses the ones that
// come after, and returns when every Serve has returned.
func (s *Session) Close() {
	s.shut("the session was closed")
}

func (s *Session) shut(cause string) {
	s.stop()
	s.mu.Lock()
	first := !s.closed
	s.closed = true
	links := make([]*link, 0, len(s.links))
	for l := range s.links {
		links = append(links, l)
	}
	s.mu.Unlock()
	s.cancel()
	for _, l := range links {
		l.cut(cause)
	}
	s.wg.Wait()
	if n := s.logs.leftOut(); first && n > 0 {
		s.log.Info("egress log lines left out", "lines", n, "at_most_per_second", 1, "burst", logBurst)
	}
}

// MaxEntries bounds the hosts and ports a session's report lists one by
// one; the ones asked for after them share one more entry, OthersHost.
const MaxEntries = 128

// OthersHost is the Host of the report's entry for the hosts and ports
// past MaxEntries.
const OthersHost = "(others)"

// maxHostLen is a host name's longest (DNS). A longer one is refused, and
// the report and the log name it by its beginning and its length.
const maxHostLen = 253

// maxReason bounds a reason kept in the report.
const maxReason = 1 << 10

// Report returns one Entry per host and port the session was asked for,
// sorted by host then port, at most MaxEntries of them, then one for
// OthersHost if more were asked for.
func (s *Session) Report() []Entry {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Entry, 0, len(s.tallies)+1)
	for k, t := range s.tallies {
		out = append(out, t.entry(k))
	}
	slices.SortFunc(out, func(a, b Entry) int {
		return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.Port, b.Port))
	})
	if t := s.others; t != nil {
		e := t.entry(hostPort{host: OthersHost})
		e.Reason = fmt.Sprintf("past the %d hosts and ports listed: %d more attempts refused and %d connections made (the last: %s)",
			MaxEntries, t.refused, t.connections, t.reason)
		out = append(out, e)
	}
	return out
}

func (t *tally) entry(k hostPort) Entry {
	e := Entry{
		Host:        k.host,
		Port:        k.port,
		Decision:    Denied,
		Reason:      t.reason,
		Connections: t.connections,
		Refused:     t.refused,
		BytesIn:     t.in.Load(),
		BytesOut:    t.out.Load(),
		Secrets:     slices.Sorted(maps.Keys(t.secrets)),
	}
	if t.connections > 0 {
		e.Decision = Allowed
	}
	return e
}

// tallyLocked returns k's tally, made on first use, or the one of the hosts
// past MaxEntries; s.mu is held.
func (s *Session) tallyLocked(k hostPort) *tally {
	k.host = shortHost(k.host)
	t := s.tallies[k]
	if t != nil {
		return t
	}
	if len(s.tallies) >= MaxEntries {
		if s.others == nil {
			s.others = &tally{}
		}
		return s.others
	}
	t = &tally{}
	s.tallies[k] = t
	return t
}

// shortHost is h, or when h is longer than a host name can be, its
// beginning and its length: what the report and the log name it by.
func shortHost(h string) string {
	if len(h) <= maxHostLen {
		return h
	}
	return fmt.Sprintf("%s...(%d bytes)", strings.ToValidUTF8(h[:64], "?"), len(h))
}

// clip bounds a reason to maxReason bytes.
func clip(why string) string {
	if len(why) <= maxReason {
		return why
	}
	return strings.ToValidUTF8(why[:maxReason], "?") + "..."
}

// noteRefused records a refused attempt at k.
func (s *Session) noteRefused(k hostPort, why string) {
	why = clip(why)
	s.mu.Lock()
	t := s.tallyLocked(k)
	t.refused++
	t.reason = why
	s.mu.Unlock()
	s.logRefused(k.host, k.port, why)
}

// logRefused writes the refusal's log line, within the session's rate.
func (s *Session) logRefused(host string, port uint16, why string) {
	s.logLimited("egress refused", "host", shortHost(host), "port", port, "reason", clip(why))
}

// logLimited writes a line of the kinds a sandbox can make many of
// (refusals, cuts, failed handshakes), within the session's rate
// (logLimit).
func (s *Session) logLimited(msg string, args ...any) {
	n, ok := s.logs.take()
	if !ok {
		return
	}
	if n > 0 {
		args = append(args, "lines_left_out", n)
	}
	s.log.Info(msg, args...)
}

// noteCut records why an open connection to k was ended early.
func (s *Session) noteCut(k hostPort, why string) {
	why = clip(why)
	s.mu.Lock()
	s.tallyLocked(k).reason = "cut: " + why
	s.mu.Unlock()
	s.logLimited("egress cut", "host", shortHost(k.host), "port", k.port, "reason", why)
}

// logBurst is how many refusal and cut lines a session writes at once; past
// them, one a second, and the next line written says how many were left
// out.
const logBurst = 32

// logLimit is a session's budget of log lines: a refusal per connection,
// and a sandbox opens connections as fast as it likes.
type logLimit struct {
	mu      sync.Mutex
	tokens  float64
	last    time.Time
	started bool
	skipped int // left out since the last line written
	total   int // left out in all
}

// take reports whether a line may be written now, and how many were left
// out since the last one.
func (l *logLimit) take() (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if !l.started {
		l.started, l.tokens, l.last = true, logBurst, now
	}
	l.tokens = min(logBurst, l.tokens+now.Sub(l.last).Seconds())
	l.last = now
	if l.tokens < 1 {
		l.skipped++
		l.total++
		return 0, false
	}
	l.tokens--
	n := l.skipped
	l.skipped = 0
	return n, true
}

// leftOut returns how many lines were left out in all.
func (l *logLimit) leftOut() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total
}

// acquire counts a connection to k, or says why it may not be made.
func (s *Session) acquire(k hostPort, rule string) (*tally, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, "the session was closed"
	case s.in.spent():
		return nil, fmt.Sprintf("download cap of %d bytes reached", s.in.max)
	case s.out.spent():
		return nil, fmt.Sprintf("upload cap of %d bytes reached", s.out.max)
	}
	t := s.tallyLocked(k)
	t.connections++
	if t.reason == "" {
		t.reason = rule
	}
	return t, ""
}

// link is one client connection and the origin connection it uses now.
type link struct {
	s      *Session
	client net.Conn

	mu       sync.Mutex
	upstream *upstream
	cause    string
	refused  bool // the client was answered with a refusal
}

// register adds a client connection to the session. It returns nil and
// false once the session is closed, nil and true when MaxConns are open.
func (s *Session) register(c net.Conn) (*link, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false
	}
	if s.p.MaxConns > 0 && s.open >= s.p.MaxConns {
		return nil, true
	}
	s.open++
	l := &link{s: s, client: c}
	s.links[l] = struct{}{}
	s.wg.Add(1)
	return l, false
}

// cut closes the link's connections; the first cause is kept.
func (l *link) cut(cause string) {
	l.mu.Lock()
	if l.cause == "" {
		l.cause = cause
	}
	u, client := l.upstream, l.client
	l.mu.Unlock()
	client.Close()
	if u != nil {
		u.Close()
	}
}

// setUpstream makes u the link's origin connection, closing the one before.
// It closes u instead when the link was cut meanwhile.
func (l *link) setUpstream(u *upstream) bool {
	l.mu.Lock()
	old, cause := l.upstream, l.cause
	if cause == "" {
		l.upstream = u
	}
	l.mu.Unlock()
	if old != nil && old != u {
		old.Close()
	}
	if cause != "" && u != nil {
		u.Close()
		return false
	}
	return true
}

// why returns the cause of a cut, or "".
func (l *link) why() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cause
}

// lingerFor bounds how long a refused client's connection is drained before
// it closes.
const lingerFor = 500 * time.Millisecond

func (l *link) finish() {
	l.mu.Lock()
	linger := l.refused && l.cause == ""
	l.mu.Unlock()
	if linger {
		// Closing with the client's unread bytes (the body of a refused
		// POST) would reset the connection, and the client could lose the
		// answer that says why: send the end, then drain for a moment.
		if cw, ok := l.client.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
			l.client.SetReadDeadline(time.Now().Add(lingerFor))
			io.CopyN(io.Discard, l.client, 1<<20)
		}
	}
	l.cut("")
	s := l.s
	s.mu.Lock()
	delete(s.links, l)
	s.open--
	s.mu.Unlock()
	s.wg.Done()
}

// upstream is a connection to an origin (or to the upstream proxy for one
// origin): it counts its bytes into the session's caps and its host's tally.
type upstream struct {
	net.Conn
	s   *Session
	key hostPort
	t   *tally
	// br reads the origin's responses when the connection carries plain
	// HTTP; it outlives one request on a kept-alive connection.
	br *bufio.Reader
	// secrets are put into the requests it carries, when it is the proxy's
	// own TLS to an intercepted host (intercept.go).
	secrets []*Secret
	// capHit names the cap that stopped a read or write, for the report.
	capHit atomic.Pointer[string]
}

type capError struct{ what string }

func (e *capError) Error() string { return e.what }

func (u *upstream) Read(p []byte) (int, error) {
	n := u.s.in.reserve(len(p))
	if n == 0 {
		return 0, u.hit(fmt.Sprintf("download cap of %d bytes reached", u.s.in.max))
	}
	got, err := u.Conn.Read(p[:n])
	u.s.in.release(n - got)
	u.t.in.Add(int64(got))
	return got, err
}

func (u *upstream) Write(p []byte) (int, error) {
	n := u.s.out.reserve(len(p))
	wrote, err := u.Conn.Write(p[:n])
	u.s.out.release(n - wrote)
	u.t.out.Add(int64(wrote))
	if err == nil && n < len(p) {
		err = u.hit(fmt.Sprintf("upload cap of %d bytes reached", u.s.out.max))
	}
	return wrote, err
}

func (u *upstream) hit(what string) error {
	u.capHit.CompareAndSwap(nil, &what)
	return &capError{what}
}

// capReached returns the cap that stopped this connection, or "".
func (u *upstream) capReached() string {
	if p := u.capHit.Load(); p != nil {
		return *p
	}
	return ""
}

// CloseWrite half-closes when the connection can, so a tunnelled client's
// end of input reaches the origin.
func (u *upstream) CloseWrite() error {
	if cw, ok := u.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

var _ io.ReadWriteCloser = (*upstream)(nil)
