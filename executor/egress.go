package executor

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/internal/egress"
	"github.com/airlock-sandbox/airlock/internal/engine"
	"github.com/airlock-sandbox/airlock/internal/relay"
)

// A run that names hosts (Spec.Egress) reaches them through a proxy inside
// airlock, never through an engine network: the sandbox keeps its own
// loopback only. Once its container has started, airlock execs the relay in
// it (airlock's init, as the run's user), which listens on the loopback and
// carries each connection over the exec's stdio to the run's egress session
// (internal/relay, internal/egress). With EgressConfig.WarmRelay the pool
// starts the relay with each warm sandbox instead, ahead of its claim; for a
// run without Egress airlock closes every connection it carries. The sandbox's environment names the
// relay as its proxy. docs/DESIGN.md, "Network by allow-list".

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
	relay *relayExec
	stop  context.CancelFunc
}

// relayExec is airlock's init running as the relay in a started sandbox,
// listening, with no session behind it yet.
type relayExec struct {
	host *relay.Host
	stop context.CancelFunc
	done chan struct{} // the relay's exec has ended
}

// execRelay starts the relay in the started container cid, as user, and
// waits until it listens. The exec outlives ctx: close ends it.
func (e *Executor) execRelay(ctx context.Context, cid, user string) (*relayExec, error) {
	ctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	x := &relayExec{stop: stop, done: make(chan struct{})}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		defer close(x.done)
		_, err := e.eng.Exec(ctx, cid, user, []string{engine.InitPath, relay.Arg}, inR, outW, io.Discard)
		outW.CloseWithError(cmpErr(err, io.EOF))
		inR.Close()
	}()
	var err error
	x.host, err = relay.NewHost(pipes{outR, inW}, 30*time.Second)
	if err != nil {
		x.close()
		return nil, fmt.Errorf("%w: start the egress relay: %v", ErrEngine, err)
	}
	return x, nil
}

// cut ends every connection through the relay at once: nothing the sandbox
// sends reaches airlock after it. The exec itself ends a little later.
func (x *relayExec) cut() {
	if x.host != nil {
		x.host.Close()
	}
	x.stop()
}

// refuse closes every connection the relay carries, at once, until cut.
func (x *relayExec) refuse() {
	go func() {
		for {
			conn, err := x.host.Accept()
			if err != nil {
				return
			}
			conn.Close()
		}
	}()
}

// close cuts the relay and waits for its exec to end.
func (x *relayExec) close() {
	x.cut()
	select {
	case <-x.done:
	case <-time.After(10 * time.Second):
	}
}

// startEgress serves, with a proxy session for the run's hosts, every
// connection of the relay in the started container cid: warm, the relay the
// pool started in it (nil when it has none), else one started now as user.
func (e *Executor) startEgress(ctx context.Context, cid, user, id string, patterns []string, warm *relayExec, secrets runSecrets) (*egressRun, error) {
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
	x := warm
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
			conn, err := x.host.Accept()
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
	go r.relay.close() // the exec's end is the engine's work, off the run's path
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
