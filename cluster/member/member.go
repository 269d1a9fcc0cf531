// Package member is a server's membership of an airlock cluster
// (--database): it registers the server as a node in PostgreSQL (through
// package cluster), keeps its lease with heartbeats, sweeps what expired, and
// answers for the nodes (list, drain, readiness), until Close. The server
// places jobs through it with package cluster/place (docs/cluster.md).
package member

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/cluster"
)

// Node is this server's membership of its cluster.
type Node struct {
	c     *cluster.Cluster
	self  cluster.Node
	url   string // the database's URL: never printed
	where string // the database, named without credentials, for messages
	log   *slog.Logger
	// heartbeatFailures counts failed heartbeats (airlock_node_heartbeat_failures_total).
	heartbeatFailures prometheus.Counter

	// lapsed is signalled when a heartbeat finds the lease had lapsed: the
	// cluster may have taken the node's jobs (cluster/place reconciles them).
	lapsed chan struct{}
	// swept is told the jobs each of this node's sweeps ended, to audit them.
	swept func([]cluster.Job)

	// stop ends the heartbeat and sweep loops; wg waits for them.
	stop context.CancelFunc
	wg   sync.WaitGroup
}

// openTimeout bounds opening the database, migrating it and registering, at start.
const openTimeout = time.Minute

// Config says how a node joins its cluster.
type Config struct {
	// Database is the cluster's PostgreSQL URL; it is never printed.
	Database string
	// ID is the node's id; empty takes the one kept in DataDir, or makes one.
	ID, DataDir string
	// Advertise is where the other nodes reach its API; empty is Listen, its
	// unspecified host replaced by the host name.
	Advertise, Listen string
	Lease             time.Duration
	Slots             int
	Memory            int64
}

// Join opens the cluster's database (migrating it), registers this server as
// a node and starts its heartbeat and sweep loops; failures counts failed
// heartbeats, and swept is told the jobs each sweep ended.
func Join(cfg Config, log *slog.Logger, failures prometheus.Counter, swept func([]cluster.Job)) (*Node, error) {
	n := &Node{url: cfg.Database, where: describeDatabase(cfg.Database), log: log, heartbeatFailures: failures,
		lapsed: make(chan struct{}, 1), swept: swept}
	id, err := nodeID(cfg.ID, cfg.DataDir)
	if err != nil {
		return nil, err
	}
	n.self = cluster.Node{ID: id, Address: advertised(cfg.Advertise, cfg.Listen), Slots: cfg.Slots, Memory: cfg.Memory, Lease: cfg.Lease}
	ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
	defer cancel()
	n.c, err = cluster.Open(ctx, cfg.Database, cluster.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("open %s: %s", n.where, scrub(err, cfg.Database))
	}
	l, err := n.c.Register(ctx, n.self)
	if err != nil {
		n.c.Close()
		return nil, fmt.Errorf("register node %s with %s: %s", id, n.where, scrub(err, cfg.Database))
	}
	log.Info("joined the cluster", "node", id, "address", n.self.Address, "slots", cfg.Slots, "memory", cfg.Memory,
		"lease", cfg.Lease.String(), "database", n.where, "lease_lapsed", l.Lapsed)
	if l.Lapsed {
		// The Service reconciles its jobs with the cluster as it starts.
		log.Warn("this node's lease had lapsed before it registered: the cluster may have taken its jobs", "node", id)
	}
	loops, stop := context.WithCancel(context.Background())
	n.stop = stop
	n.wg.Go(func() { n.every(loops, cfg.Lease/3, n.heartbeat) })
	n.wg.Go(func() { n.every(loops, cfg.Lease/2, n.sweep) })
	return n, nil
}

// every calls fn every period until ctx ends; each call gets the period to finish.
func (n *Node) every(ctx context.Context, period time.Duration, fn func(ctx context.Context)) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		cctx, cancel := context.WithTimeout(ctx, period)
		fn(cctx)
		cancel()
	}
}

// heartbeat renews the lease; a node the cluster no longer has (its row was
// removed) registers again.
func (n *Node) heartbeat(ctx context.Context) {
	l, err := n.c.Heartbeat(ctx, n.self.ID)
	if errors.Is(err, cluster.ErrNotFound) {
		l, err = n.c.Register(ctx, n.self)
	}
	switch {
	case err != nil && ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded):
		return // shutting down
	case err != nil:
		n.heartbeatFailures.Inc()
		n.log.Warn("heartbeat failed", "node", n.self.ID, "err", n.Scrub(err))
	case l.Lapsed:
		n.log.Warn("this node's lease had lapsed: the cluster may have taken its jobs", "node", n.self.ID)
		select {
		case n.lapsed <- struct{}{}:
		default:
		}
	}
}

// sweep acts on what expired: any node may, and every node does.
func (n *Node) sweep(ctx context.Context) {
	sw, err := n.c.Sweep(ctx)
	if err != nil {
		if ctx.Err() == nil {
			n.log.Warn("sweep failed", "node", n.self.ID, "err", n.Scrub(err))
		}
		return
	}
	var ended []cluster.Job
	for state, ids := range map[api.State][]string{api.StateLost: sw.Lost, api.StateExpired: sw.Expired} {
		for _, id := range ids {
			j, err := n.c.Get(ctx, id)
			if err != nil { // removed since, or out of reach: its end is still told, as far as it is known
				j = cluster.Job{ID: id, State: state, Reason: "ended by the cluster's sweep; its row could not be read: " + n.Scrub(err)}
			}
			ended = append(ended, j)
		}
	}
	n.swept(ended)
}

// StopLoops ends the heartbeats and sweeps and waits for them: the node's
// lease then runs out, as a hung node's would.
func (n *Node) StopLoops() {
	n.stop()
	n.wg.Wait()
}

// Close stops the loops and closes the database's connections. The node's
// lease runs out by itself; its row stays, listed as not live.
func (n *Node) Close() {
	n.StopLoops()
	n.c.Close()
}

// Ready reports whether the database answers and this node's lease holds, by
// the database's clock.
func (n *Node) Ready(ctx context.Context) error {
	nodes, err := n.c.Nodes(ctx)
	if err != nil {
		// Whatever failed (a timeout too), the node cannot answer for the cluster.
		return &databaseError{msg: n.where + ": " + n.Scrub(err), err: err}
	}
	for _, s := range nodes {
		if s.ID == n.self.ID {
			if !s.Live {
				return fmt.Errorf("%w: node %s's lease lapsed %s ago (last heartbeat %s ago, lease %s)", api.ErrLeaseLapsed,
					s.ID, (s.LeaseAge - s.Lease).Round(time.Millisecond), s.LeaseAge.Round(time.Millisecond), s.Lease)
			}
			return nil
		}
	}
	return fmt.Errorf("%w: node %s is not registered in %s", api.ErrLeaseLapsed, n.self.ID, n.where)
}

// Nodes lists the cluster's nodes as the API reports them.
func (n *Node) Nodes(ctx context.Context) (api.NodeList, error) {
	list, err := n.c.Nodes(ctx)
	if err != nil {
		return api.NodeList{}, n.Unavailable(err)
	}
	out := api.NodeList{Self: n.self.ID, Nodes: make([]api.Node, 0, len(list))}
	for _, s := range list {
		out.Nodes = append(out.Nodes, apiNode(s))
	}
	return out, nil
}

// Drain sets whether node id takes new placements and returns it as it is now.
func (n *Node) Drain(ctx context.Context, id string, draining bool) (api.Node, error) {
	if err := n.c.Drain(ctx, id, draining); err != nil {
		if errors.Is(err, cluster.ErrNotFound) {
			return api.Node{}, fmt.Errorf("%w: no node %q in the cluster", api.ErrNodeNotFound, id)
		}
		return api.Node{}, n.Unavailable(err)
	}
	list, err := n.c.Nodes(ctx)
	if err != nil {
		return api.Node{}, n.Unavailable(err)
	}
	for _, s := range list {
		if s.ID == id {
			return apiNode(s), nil
		}
	}
	return api.Node{}, fmt.Errorf("%w: no node %q in the cluster", api.ErrNodeNotFound, id)
}

// Unavailable names the database in an error of the cluster package that
// means it is out of reach, without its credentials.
func (n *Node) Unavailable(err error) error {
	if errors.Is(err, cluster.ErrUnavailable) {
		return &databaseError{msg: n.where + ": " + n.Scrub(err), err: err}
	}
	return err
}

// databaseError is the cluster's database out of reach, named without
// credentials; it matches cluster.ErrUnavailable and the error underneath.
type databaseError struct {
	msg string
	err error
}

func (e *databaseError) Error() string   { return e.msg }
func (e *databaseError) Unwrap() []error { return []error{cluster.ErrUnavailable, e.err} }

// Scrub is err's message without the database URL's password.
func (n *Node) Scrub(err error) string { return scrub(err, n.url) }

// Cluster is the cluster's database.
func (n *Node) Cluster() *cluster.Cluster { return n.c }

// Self is this node as it registered.
func (n *Node) Self() cluster.Node { return n.self }

// Lapsed is signalled when a heartbeat finds the lease had lapsed: the
// cluster may have taken the node's jobs.
func (n *Node) Lapsed() <-chan struct{} { return n.lapsed }

func apiNode(s cluster.NodeStatus) api.Node {
	return api.Node{
		ID: s.ID, Address: s.Address, Live: s.Live, Draining: s.Draining,
		Lease: api.Seconds(s.Lease.Seconds()), LeaseAge: api.Seconds(s.LeaseAge.Seconds()),
		Slots: s.Slots, Memory: s.Memory, Running: s.Running, MemoryInUse: s.MemoryInUse,
		RegisteredAt: s.RegisteredAt.UTC(), HeartbeatAt: s.HeartbeatAt.UTC(),
	}
}

// nodeIDFile keeps a node's id in its data dir across restarts.
const nodeIDFile = "node-id"

// nodeID is the configured id, else the one kept in the data dir, else a new
// one made from the host name and a random suffix (two data dirs on one host
// are two nodes) and kept there.
func nodeID(configured, dataDir string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	path := filepath.Join(dataDir, nodeIDFile)
	data, err := os.ReadFile(path)
	if err == nil {
		id := strings.TrimSpace(string(data))
		if !ValidID(id) {
			return "", fmt.Errorf("node id in %s: %q is not 1 to 63 letters, digits, '.', '_' or '-' (fix it, or remove the file for a new id)", path, id)
		}
		return id, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read node id: %w", err)
	}
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if ValidID(string(r)) {
			return r
		}
		return '-'
	}, host)
	suffix := make([]byte, 3)
	rand.Read(suffix)
	id := strings.Trim(fmt.Sprintf("%.48s-%s", host, hex.EncodeToString(suffix)), "-.")
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", fmt.Errorf("keep node id: %w", err)
	}
	// O_EXCL: two servers starting at once on one data dir agree on the first id.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nodeID("", dataDir)
	}
	if err != nil {
		return "", fmt.Errorf("keep node id: %w", err)
	}
	_, err = f.WriteString(id + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("keep node id: %w", err)
	}
	return id, nil
}

// advertised is the address other nodes reach this one at: the configured
// one, else the listen address, whose unspecified host (0.0.0.0, ::, none)
// becomes the host name.
func advertised(configured, listen string) string {
	if configured != "" {
		return configured
	}
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		if h, err := os.Hostname(); err == nil {
			host = h
		}
	}
	return net.JoinHostPort(host, port)
}

// describeDatabase names a database for messages without its credentials:
// `PostgreSQL database "airlock" at db:5432 as user "airlock"`.
func describeDatabase(url string) string {
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		return "the cluster database (" + RedactURL(url) + ")"
	}
	return fmt.Sprintf("PostgreSQL database %q at %s as user %q", cfg.Database,
		net.JoinHostPort(cfg.Host, fmt.Sprint(cfg.Port)), cfg.User)
}

// scrub is err's message with the database URL's password, if it appears,
// replaced. pgx does not put passwords in its errors; this keeps it so.
func scrub(err error, url string) string {
	msg := err.Error()
	if url == "" {
		return msg
	}
	if cfg, perr := pgconn.ParseConfig(url); perr == nil && cfg.Password != "" {
		msg = strings.ReplaceAll(msg, cfg.Password, "redacted")
	}
	return msg
}

// ValidID tells whether id may name a node: a node id goes into logs, metric labels and URLs as it is.
func ValidID(id string) bool {
	if len(id) == 0 || len(id) > 63 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// RedactURL is a database URL without its password, in the user part or in
// the query.
func RedactURL(v string) string {
	u, err := url.Parse(v)
	if err != nil {
		if v == "" {
			return ""
		}
		return "redacted"
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "redacted")
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "redacted")
		u.RawQuery = q.Encode()
	}
	return u.String()
}
