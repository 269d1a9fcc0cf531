package executor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/images"
	"github.com/airlock-sandbox/airlock/internal/egress"
	"github.com/airlock-sandbox/airlock/internal/engine"
	"github.com/airlock-sandbox/airlock/internal/relay"
)

// A run that names hosts (Spec.Egress) reaches them through a proxy inside
// airlock, never through an engine network: the sandbox keeps its own
// loopback only. airlock's init, PID 1 of the sandbox, listens on that
// loopback and carries each connection to airlock over a Unix socket airlock
// listens on, one per sandbox, mounted into it (listenRelay); each connection
// goes to the run's egress session (internal/relay, internal/egress). Every
// warm sandbox of the pool has its socket from its start, and the claiming
// run's session serves it; for a run without Egress airlock closes every
// connection. Where no socket can be mounted, airlock execs the relay in the
// started sandbox and the connections go over the exec's stdio (execRelay).
// The sandbox's environment names the relay as its proxy. docs/DESIGN.md,
// "Network by allow-list".

// normalizeEgress checks a Spec's Egress within the operator's and the
// caller's bounds, applies the default, and returns the patterns as the
// proxy reads them.
func (c *Config) normalizeEgress(patterns []string, caller Caller) ([]string, error) {
	bad := func(err error) ([]string, error) { return nil, &SpecError{Field: "egress", Reason: err.Error()} }
	rules, err := egress.ParseRules(patterns)
	if err != nil {
		return bad(err)
	}
	bounds, err := c.egressBounds()
	if err != nil {
		return nil, err
	}
	if caller.EgressAllowed != nil || caller.EgressDefault != nil {
		var tenant egress.Bounds
		if tenant.Allowed, err = egress.ParseRules(caller.EgressAllowed); err != nil {
			return nil, err
		}
		if caller.EgressAllowed != nil && tenant.Allowed == nil {
			tenant.Allowed = []egress.Rule{}
		}
		if tenant.Default, err = egress.ParseRules(caller.EgressDefault); err != nil {
			return nil, err
		}
		if bounds.Allowed != nil {
			if bounds, err = bounds.Narrow(tenant); err != nil {
				return nil, err
			}
		} else {
			bounds.Allowed, bounds.Default = tenant.Allowed, tenant.Default
		}
	}
	if len(rules) == 0 {
		rules = bounds.Default
	} else if bounds.Allowed != nil {
		if err := egress.Within(rules, bounds.Allowed, "egress.allowed"); err != nil {
			return bad(err)
		}
	}
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.String()
	}
	return out, nil
}

// CheckEgress reports whether a caller's egress bounds lie within c's, so a
// server refuses a tenant's configuration at start, not at its first run.
func (c *Config) CheckEgress(caller Caller) error {
	_, err := c.normalizeEgress(nil, caller)
	return err
}

// egressRun is a run's egress: its proxy session and the relay feeding it.
type egressRun struct {
	sess  *egress.Session
	relay *relayLink
	stop  context.CancelFunc
}

// relayLink is airlock's end of a sandbox's relay: the connections it carries
// from the sandbox, with no session behind them yet.
type relayLink struct {
	conns interface {
		Accept() (net.Conn, error)
		Close() error
	}
	stop context.CancelFunc
	done chan struct{} // what carries the relay has ended
}

// listenRelay listens for the relay of the sandbox name on a Unix socket of
// its own, in a directory of the engine's host to mount at relay.SocketDir
// (Plan.RelayDir): the sandbox's init finds the socket there and dials it for
// each connection. It returns no link when the runtime cannot reach a socket
// on the host (relaySockets): the relay is then exec'd (execRelay).
func (e *Executor) listenRelay(ctx context.Context, name, runtime string) (*relayLink, string, error) {
	base, ok := e.relaySockets(ctx, runtime)
	if !ok {
		return nil, "", nil
	}
	dir := filepath.Join(base, name)
	if err := os.Mkdir(dir, 0o711); err != nil {
		return nil, "", fmt.Errorf("%w: the relay's directory: %v", ErrEngine, err)
	}
	sock := filepath.Join(dir, filepath.Base(relay.Socket))
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err == nil {
		// The sandbox's user is not airlock's: its init must be able to
		// dial. No other user of the host can: the directory above is
		// airlock's alone (privateDir).
		err = os.Chmod(sock, 0o666)
	}
	// Under runc the sandbox's connections are the host kernel's: the init
	// hands each one over and airlock serves it directly, with no copy in
	// between. gVisor's are its own, and the init copies them.
	passFD := !ownKernel(runtime)
	if err == nil && passFD {
		err = os.WriteFile(filepath.Join(dir, filepath.Base(relay.PassFD)), nil, 0o644)
	}
	if err != nil {
		if ln != nil {
			ln.Close()
		}
		os.RemoveAll(dir)
		return nil, "", fmt.Errorf("%w: the relay's socket: %v", ErrEngine, err)
	}
	x := &relayLink{conns: ln, done: make(chan struct{})}
	if passFD {
		x.conns = relay.NewFDListener(ln)
	}
	x.stop = func() { os.RemoveAll(dir) }
	close(x.done)
	return x, dir, nil
}

// relaySockets returns the directory under which sandboxes' relay sockets
// are made, and whether a sandbox of runtime can use one. The engine must see
// the directory at the same path (it is bind-mounted): the first call asks it,
// by creating (never starting) a container that mounts it. gVisor opens a
// socket of the host only when registered with --host-uds=open (or all).
func (e *Executor) relaySockets(ctx context.Context, runtime string) (string, bool) {
	e.mu.Lock()
	args := e.info.RuntimeArgs[runtime]
	e.mu.Unlock()
	if ownKernel(runtime) && !slices.ContainsFunc(args, hostUDSOpen) {
		return "", false
	}
	e.relayMu.Lock()
	defer e.relayMu.Unlock()
	if e.relayChecked {
		return e.relayDir, e.relayDir != ""
	}
	dir := e.relayBase()
	if len(dir) > relayPathRoom {
		e.cfg.Logger.Warn("relays go over exec streams: the socket directory's path is too long for the Unix sockets under it; set a shorter egress.socket_dir",
			"dir", dir, "bytes", len(dir), "at_most", relayPathRoom)
		e.relayChecked = true
		return "", false
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		e.cfg.Logger.Warn("relays go over exec streams: no socket directory", "dir", dir, "err", err)
		e.relayChecked = true
		return "", false
	}
	if err := privateDir(dir); err != nil {
		e.cfg.Logger.Warn("relays go over exec streams: the socket directory is not airlock's alone, so another user of the host could reach a sandbox's relay; set egress.socket_dir to one that is",
			"dir", dir, "err", err)
		e.relayChecked = true
		return "", false
	}
	probe, err := os.MkdirTemp(dir, "probe-")
	if err != nil {
		e.cfg.Logger.Warn("relays go over exec streams: no socket directory", "dir", dir, "err", err)
		e.relayChecked = true
		return "", false
	}
	defer os.RemoveAll(probe)
	plan := containerPlan{
		Name: "airlock-relay-probe-" + NewID(), Image: images.Minimal.Ref, Cmd: []string{"true"},
		Memory: minMemory, NanoCPUs: 1e8, Pids: 2, TmpfsSize: 1 << 20, Network: "none", Runtime: "runc",
		RelayDir: probe, Labels: map[string]string{LabelManaged: "true", LabelID: "relay-probe"},
	}
	cid, err := e.create(ctx, plan)
	if err != nil {
		if !strings.Contains(err.Error(), probe) {
			return "", false // not the engine's answer about the directory: ask again next time
		}
		e.cfg.Logger.Warn("relays go over exec streams: the engine does not see airlock's socket directory; set one it sees with egress.socket_dir", "dir", dir, "err", err)
		e.relayChecked = true
		return "", false
	}
	e.discard(context.WithoutCancel(ctx), cid)
	e.relayChecked, e.relayDir = true, dir
	go e.sweepRelayDirs() // what processes that died left there
	return dir, true
}

// sweepRelayDirs removes the relay directories whose containers are gone
// (removeStaleRelayDirs), once this process knows the directory.
func (e *Executor) sweepRelayDirs() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	all, err := e.eng.List(ctx, LabelManaged+"=true")
	if err != nil {
		return
	}
	live := map[string]bool{}
	for _, c := range all {
		live[c.Name] = true
	}
	e.removeStaleRelayDirs(live)
}

// privateDir makes dir, the relays' directory, traversable by airlock's
// user alone (mode 0700): a sandbox's socket is open to any user who can
// reach it (the sandbox's user is not airlock's), and its path is in every
// sandbox's /proc/*/mountinfo; the engine mounts each sandbox's own
// directory, below dir, into it, so the sandbox never walks dir. It first
// checks that no other user can change where the path leads: dir is a
// directory of airlock's user, not a link, and each directory above it is
// root's or airlock's user's and writable by no one else, unless sticky
// (/tmp). docs/DESIGN.md, "Egress proxy", says why this and not a check of
// each peer.
func privateDir(dir string) error {
	uid := uint32(os.Geteuid())
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir() || !ok:
		return fmt.Errorf("%s is not a directory", dir)
	case st.Uid != uid:
		return fmt.Errorf("%s belongs to user %d, not to airlock's (%d)", dir, st.Uid, uid)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return err
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(dir))
	if err != nil {
		return err
	}
	for p := parent; ; p = filepath.Dir(p) {
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		switch {
		case !ok:
			return fmt.Errorf("%s: no owner", p)
		case st.Uid != uid && st.Uid != 0:
			return fmt.Errorf("%s, above it, belongs to user %d, who could move it", p, st.Uid)
		case fi.Mode().Perm()&0o022 != 0 && fi.Mode()&os.ModeSticky == 0:
			return fmt.Errorf("%s, above it, is writable by other users (mode %v), who could move it", p, fi.Mode().Perm())
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// relayBase is the directory of the relays' sockets, asked of the engine or
// not: a directory per engine under the socket directory, so that a process
// sweeping what its engine's dead containers left (removeStaleRelayDirs)
// never takes the sockets of another engine's sandboxes on the same host.
func (e *Executor) relayBase() string {
	base := e.cfg.Egress.SocketDir
	if base == "" {
		base = filepath.Join(os.TempDir(), fmt.Sprintf("airlock-relay-%d", os.Getuid()))
	}
	e.mu.Lock()
	id := e.info.ID
	e.mu.Unlock()
	if id == "" {
		return base
	}
	sum := sha256.Sum256([]byte(id))
	return filepath.Join(base, hex.EncodeToString(sum[:4]))
}

// relayPathRoom is how long the relay directory (relayBase) may be: the
// longest socket under it, a transfer's in a holder's directory
// ("/airlock-ws_<24 hex>-holder/<8 hex>.sock", 57 bytes), must fit a Unix
// socket's 107.
const relayPathRoom = 107 - 57

// hostUDSOpen says whether a runsc argument lets the sandbox open the host's
// Unix sockets.
func hostUDSOpen(arg string) bool {
	v, ok := strings.CutPrefix(strings.TrimLeft(arg, "-"), "host-uds=")
	return ok && (v == "open" || v == "all")
}

// execRelay starts the relay in the started container cid, as user, and
// waits until it listens: the channel where no socket can be. The exec
// outlives ctx: close ends it.
func (e *Executor) execRelay(ctx context.Context, cid, user string) (*relayLink, error) {
	ctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	x := &relayLink{stop: stop, done: make(chan struct{})}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		defer close(x.done)
		_, err := e.eng.Exec(ctx, cid, user, []string{engine.InitPath, relay.Arg}, inR, outW, io.Discard)
		outW.CloseWithError(cmpErr(err, io.EOF))
		inR.Close()
	}()
	host, err := relay.NewHost(pipes{outR, inW}, 30*time.Second)
	if err != nil {
		x.close()
		return nil, fmt.Errorf("%w: start the egress relay: %v", ErrEngine, err)
	}
	x.conns = host
	return x, nil
}

// cut ends every connection through the relay at once: nothing the sandbox
// sends reaches airlock after it. An exec ends a little later.
func (x *relayLink) cut() {
	if x.conns != nil {
		x.conns.Close()
	}
	x.stop()
}

// refuse closes every connection the relay carries, at once, until cut.
func (x *relayLink) refuse() {
	go func() {
		for {
			conn, err := x.conns.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
}

// close cuts the relay and waits for its exec, if any, to end.
func (x *relayLink) close() {
	x.cut()
	select {
	case <-x.done:
	case <-time.After(10 * time.Second):
	}
}

// startEgress serves, with a proxy session for the run's hosts, every
// connection of the relay in the started container cid: linked, the relay
// made with its sandbox (nil when it has none), else one exec'd now as user.
// On failure, linked is closed.
func (e *Executor) startEgress(ctx context.Context, cid, user, id string, patterns []string, linked *relayLink, secrets runSecrets) (_ *egressRun, err error) {
	defer func() {
		if err != nil && linked != nil {
			linked.close()
		}
	}()
	rules, err := egress.ParseRules(patterns)
	if err != nil {
		return nil, err
	}
	bounds, err := e.cfg.egressBounds()
	if err != nil {
		return nil, err
	}
	upstream, err := e.cfg.upstreamProxy()
	if err != nil {
		return nil, err
	}
	x := linked
	if x == nil {
		if x, err = e.execRelay(ctx, cid, user); err != nil {
			return nil, err
		}
	}
	c := e.cfg.Egress
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	r := &egressRun{relay: x, stop: stop}
	r.sess = egress.NewSession(sctx, egress.Policy{
		Rules: rules, AllowCIDRs: bounds.AllowCIDRs, Resolver: c.Resolver, UpstreamProxy: upstream,
		MaxConns: c.MaxConns, MaxBytesIn: c.MaxBytesIn, MaxBytesOut: c.MaxBytesOut, MaxLifetime: c.MaxLifetime,
		Logger:  e.cfg.Logger.With("id", id),
		Secrets: secrets, Authority: e.authorityFor(secrets), OriginRoots: c.OriginRoots,
	})
	go func() {
		for {
			conn, err := x.conns.Accept()
			if err != nil {
				return
			}
			go r.sess.Serve(conn)
		}
	}()
	return r, nil
}

// close ends every connection, the relay and the session, and returns what
// the session did.
func (r *egressRun) close() []api.EgressEntry {
	r.relay.cut()
	r.sess.Close()
	r.stop()
	go r.relay.close() // an exec's end is the engine's work, off the run's path
	var out []api.EgressEntry
	for _, en := range r.sess.Report() {
		out = append(out, api.EgressEntry{Host: en.Host, Port: int(en.Port), Decision: string(en.Decision), Reason: en.Reason,
			Connections: int64(en.Connections), Refused: int64(en.Refused), BytesIn: en.BytesIn, BytesOut: en.BytesOut, Secrets: en.Secrets})
	}
	return out
}

// pipes is the relay's exec as one connection: its stdout to read, its stdin
// to write.
type pipes struct {
	r *io.PipeReader
	w *io.PipeWriter
}

func (p pipes) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p pipes) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p pipes) Close() error {
	p.w.Close()
	p.r.Close()
	return nil
}
