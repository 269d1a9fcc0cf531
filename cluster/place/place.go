// Package place is a server's jobs in an airlock cluster (--database): the
// node's side of placement (docs/cluster.md, "Jobs across nodes").
//
// The node that takes a start admits it (the server's one gate, as on one
// node), and a Placer queues it in PostgreSQL (Start, queue.go) and waits until
// a node has started it. Every node's Placer claims the jobs that fit it, runs
// them as its own background jobs under their cluster id and fence, and
// records their end and output in PostgreSQL (claim.go); a foreground run is
// queued the same way, for its caller's node only (Room). Any node answers for
// any job (read.go): from its own engine when the job is its own, else from
// the database, or from the job's node while it runs there.
//
// The server keeps what is its own (its tenants and their limits, the audit
// log, the metrics, the tracking of the jobs it runs) and lends it through
// Server; package place knows nothing of HTTP, and reaches other nodes through
// the server's Peer.
package place

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/cluster"
	"github.com/airlock-sandbox/airlock/cluster/member"
	"github.com/airlock-sandbox/airlock/executor"
)

// Server is what placement asks of the server it works in.
type Server interface {
	// Caller is what the server's gate bounds the tenant's requests by, with
	// the stored secrets a spec names.
	Caller(tenant string, secrets []string) (executor.Caller, error)
	// SealKey is the tenant's key for its queued jobs' env and stdin
	// (cluster/seal), nil when the tenant has no token.
	SealKey(tenant string) ([]byte, error)
	// Peer is node id reached as the tenant, with the tenant's token.
	Peer(ctx context.Context, node, tenant string) (Peer, error)
	// Track follows job id, launched here for the tenant, until it ends and
	// hands its end to Placer.Ended; Tracked tells whether it follows job id.
	Track(tenant, id string)
	Tracked(id string) bool
	// Blocked counts a background job the policy refused.
	Blocked(p executor.Process)
	// Finished writes the run.finish of a job or run that a write of this
	// node's ended in the cluster, with its Result; Abandoned that of a run
	// whose caller was gone, which has only the end recorded.
	Finished(tenant string, background bool, res executor.Result)
	Abandoned(tenant, id string, end cluster.End)
}

// Peer is another node, called as a tenant: it answers for the jobs it runs.
type Peer interface {
	Get(ctx context.Context, id string) (api.Result, error)
	Logs(ctx context.Context, id string, opts api.LogsOptions) (api.Logs, error)
}

// Tenant is a tenant as placement counts it: its cluster-wide limits, from the
// server's configuration, which every node shares.
type Tenant struct {
	Name string
	// MaxRunning bounds its jobs and runs placed or running, MaxQueued those
	// waiting (cluster.Tenant); 0 is no limit.
	MaxRunning, MaxQueued int
}

// anonymous is the tenant of every request on a server without tokens: it
// sees every job.
const anonymous = ""

// Placer is a node's jobs in the cluster: what it claimed and is starting,
// the runs of its callers, the callers waiting for a job's start or end, and
// its claim loop.
type Placer struct {
	node *member.Node
	ex   *executor.Executor
	srv  Server
	log  *slog.Logger

	// ctx bounds placement's work, and wg its goroutines, until Stop.
	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	wake chan struct{} // a start was queued here: claim now

	mu       sync.Mutex
	starting map[string]bool // claimed, not yet launched or given back
	// runs are the foreground runs of this node's callers, from their queueing
	// to their end: the claim loop hands each its placement on the channel.
	runs map[string]chan cluster.Job
	// watched are closed at the database's next notice about a job: callers
	// waiting for its start or its end read it again then.
	watched map[string]chan struct{}

	// limits are the tenants whose limits this process has set in the
	// cluster, or is setting (under its own lock).
	limitsMu sync.Mutex
	limits   map[string]*tenantLimits
}

type tenantLimits struct {
	mu  sync.Mutex
	set bool
}

// New is node's placement over the executor ex, working for srv. Run starts
// its loops.
func New(node *member.Node, ex *executor.Executor, srv Server, log *slog.Logger) *Placer {
	p := &Placer{node: node, ex: ex, srv: srv, log: log, wake: make(chan struct{}, 1), starting: map[string]bool{},
		runs: map[string]chan cluster.Job{}, watched: map[string]chan struct{}{}, limits: map[string]*tenantLimits{}}
	p.ctx, p.stop = context.WithCancel(context.Background())
	return p
}

// Node is this node's id: the node runs here run on.
func (p *Placer) Node() string { return p.node.Self().ID }

// The database's notices wake a node when work is queued or a job it waits
// for changes; it also looks every pollEvery, for notices it missed (sent
// while its listening connection was down). reconcileEvery is how often it
// checks what the cluster has placed on it against what it runs.
const (
	pollEvery      = time.Second
	reconcileEvery = 5 * time.Second
)

// Run reconciles the node with the cluster and starts its claim loop and its
// listening for notices; the server calls it once the jobs already running
// here are tracked.
func (p *Placer) Run() {
	p.reconcile(p.ctx)
	p.wg.Go(func() { p.node.Cluster().Listen(p.ctx, p.notice) })
	p.wg.Go(func() {
		claim := time.NewTicker(pollEvery)
		defer claim.Stop()
		reconcile := time.NewTicker(reconcileEvery)
		defer reconcile.Stop()
		for {
			select {
			case <-p.ctx.Done():
				return
			case <-p.wake:
			case <-claim.C:
			case <-reconcile.C:
				p.reconcile(p.ctx)
			case <-p.node.Lapsed():
				p.reconcile(p.ctx)
			}
			p.claimAll(p.ctx)
			p.deliverKills(p.ctx)
		}
	})
}

// Stop ends placement's loops and waits for every goroutine it started: the
// jobs it launched run on, and the next process reconciles them.
func (p *Placer) Stop() {
	p.stop()
	p.wg.Wait()
}

// notice wakes what the database's notice concerns.
func (p *Placer) notice(n cluster.Notice) {
	switch {
	case n.Queue, n.KillFor == p.node.Self().ID:
		p.wakeUp()
	case n.Job != "":
		p.mu.Lock()
		if ch := p.watched[n.Job]; ch != nil {
			close(ch)
			delete(p.watched, n.Job)
		}
		p.mu.Unlock()
	}
}

// wakeUp makes the claim loop look at the queue now.
func (p *Placer) wakeUp() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// started forgets that job id is being started: launched, given back, or
// handed on.
func (p *Placer) started(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.starting, id)
}

// watch returns a channel closed at the next notice about job id.
func (p *Placer) watch(id string) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	ch := p.watched[id]
	if ch == nil {
		ch = make(chan struct{})
		p.watched[id] = ch
	}
	return ch
}

// unwatch forgets a watch that is no longer waited on: a caller that stops
// waiting leaves nothing behind (one still waiting on it re-reads within
// pollEvery, and watches again).
func (p *Placer) unwatch(id string, ch <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.watched[id] == ch {
		delete(p.watched, id)
	}
}
