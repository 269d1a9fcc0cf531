package place

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/cluster"
	"github.com/airlock-sandbox/airlock/cluster/seal"
	"github.com/airlock-sandbox/airlock/executor"
)

// Start starts admitted background job a of tenant t through the cluster:
// a refused one is recorded as blocked, here and in the cluster for any node
// to answer; an allowed one is queued, and answered once a node has started
// it or its fate has to wait (awaitStart). started writes its run.start,
// once its request is sealed for the queue.
func (p *Placer) Start(ctx context.Context, t Tenant, a executor.Admitted, started func()) (executor.Process, error) {
	if err := p.setLimits(ctx, t); err != nil {
		return executor.Process{}, err
	}
	spec := a.Spec()
	key, err := p.srv.SealKey(t.Name)
	if err != nil {
		return executor.Process{}, err
	}
	specJSON, err := seal.Spec(key, a.ID(), spec, a.Decision())
	if err != nil {
		return executor.Process{}, err
	}
	started()
	if !a.Decision().Allowed {
		// Nothing runs: recorded here, and in the cluster for any node to answer.
		proc, err := p.ex.Launch(ctx, a)
		if err != nil {
			return proc, err
		}
		p.srv.Blocked(proc)
		res, err := p.ex.Get(ctx, a.ID())
		if err != nil {
			return proc, err
		}
		resJSON, _ := json.Marshal(res)
		_, err = p.node.Cluster().Record(ctx, cluster.NewJob{ID: a.ID(), Tenant: t.Name, Spec: specJSON},
			cluster.End{State: res.State, ExitCode: res.ExitCode, Reason: res.BlockReason, Result: resJSON})
		return proc, p.node.Unavailable(err)
	}
	_, err = p.node.Cluster().Enqueue(ctx, cluster.NewJob{
		ID: a.ID(), Tenant: t.Name, Spec: specJSON, Workspace: spec.Workspace, Memory: spec.Memory,
		QueueTimeout: spec.QueueTimeout.Duration(), Retry: spec.Retry,
	})
	switch {
	case errors.Is(err, cluster.ErrQueueFull):
		return executor.Process{}, fmt.Errorf("%w: %v (max_queued); retry when one has started", api.ErrBusy, err)
	case errors.Is(err, cluster.ErrNotFound):
		return executor.Process{}, &executor.SpecError{Field: "workspace", Reason: fmt.Sprintf("no workspace %q of the tenant's is known to the cluster", spec.Workspace)}
	case err != nil:
		return executor.Process{}, p.node.Unavailable(err)
	}
	p.wakeUp()
	return p.awaitStart(ctx, a.ID(), spec.QueueTimeout.Duration())
}

// setLimits sets the tenant's cluster-wide limits from this node's
// configuration, once per tenant and process: every node sets the same.
func (p *Placer) setLimits(ctx context.Context, t Tenant) error {
	p.limitsMu.Lock()
	l := p.limits[t.Name]
	if l == nil {
		l = &tenantLimits{}
		p.limits[t.Name] = l
	}
	p.limitsMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.set {
		return nil
	}
	err := p.node.Cluster().SetTenant(ctx, cluster.Tenant{Name: t.Name, MaxRunning: t.MaxRunning, MaxQueued: t.MaxQueued})
	if err != nil {
		return p.node.Unavailable(err)
	}
	l.set = true
	return nil
}

// A start's answer waits startWait at most for a node to take the job, then
// launchWait at most for the taken job's sandbox to run: both well within the
// answer's write deadline, so that a caller always learns the job's id.
const (
	startWait  = 2 * time.Second
	launchWait = 30 * time.Second
)

// awaitStart answers a start once job id is durably queued: with the job
// running on a node, or ended, when a node takes it within startWait; else
// with the job as it is, queued, by its id, and the queue's deadline (any
// node's sweep) ends it if no node takes it in time. A job whose queue
// timeout is shorter than startWait is expired here, the answer then being
// ErrQueueTimeout, naming the wait.
func (p *Placer) awaitStart(ctx context.Context, id string, timeout time.Duration) (executor.Process, error) {
	answerBy := time.Now().Add(min(startWait, timeout))
	var started time.Time // when this wait first saw the job started
	var changed <-chan struct{}
	defer func() { p.unwatch(id, changed) }()
	for {
		p.unwatch(id, changed)
		changed = p.watch(id)
		j, err := p.node.Cluster().Get(ctx, id)
		if err != nil {
			return executor.Process{}, p.node.Unavailable(err)
		}
		if j.State == api.StateRunning && started.IsZero() {
			started = time.Now()
		}
		if !started.IsZero() && time.Since(started) > launchWait {
			return processOf(j), nil // its node could not record the launch: the job is running or lost
		}
		if j.State == api.StateQueued && time.Now().After(answerBy) {
			if timeout > startWait {
				return processOf(j), nil // queued: the caller has its id
			}
			// By the database's clock, which the deadline is kept by.
			var ended bool
			if j, ended, err = p.node.Cluster().Expire(ctx, id); err != nil {
				return executor.Process{}, p.node.Unavailable(err)
			}
			if ended {
				auditEnded(p.srv, j)
			}
		}
		switch {
		case j.State == api.StateQueued, j.State == api.StatePlaced, j.State == api.StateRunning && j.LaunchedAt.IsZero():
			select {
			case <-ctx.Done():
				return executor.Process{}, ctx.Err()
			case <-changed:
			case <-time.After(untilNextLook(answerBy)):
			}
		case j.State == api.StateExpired:
			return executor.Process{}, fmt.Errorf("%w: job %s: %s; nothing ran", api.ErrQueueTimeout, id, j.Reason)
		default:
			return processOf(j), nil
		}
	}
}

// untilNextLook is how long a wait for a start sleeps without a notice: a
// poll, or until the queue deadline when that comes sooner.
func untilNextLook(deadline time.Time) time.Duration {
	if d := time.Until(deadline); d > 0 && d < pollEvery {
		return d + 10*time.Millisecond
	}
	return pollEvery
}

// Room queues admitted foreground run a of tenant t in the cluster, for this
// node only (it holds the caller's connection), so that runs count against
// the node's slots and the tenant's cluster-wide limit and wait their turn
// fairly with jobs; waiting is called if it has to wait. It returns once the
// run may start, recorded as started; ended records its end, then calls
// audit (if any) to write its run.finish. Past its queue timeout the answer
// is ErrQueueTimeout.
func (p *Placer) Room(ctx context.Context, t Tenant, a executor.Admitted, waiting func()) (ended func(res executor.Result, audit func()), err error) {
	if err := p.setLimits(ctx, t); err != nil {
		return nil, err
	}
	id, spec := a.ID(), a.Spec()
	timeout := spec.QueueTimeout.Duration()
	spec.Env, spec.Stdin = nil, nil // never needed off this node: kept out of the database
	specJSON, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	ch := make(chan cluster.Job, 1)
	p.mu.Lock()
	p.runs[id] = ch
	p.mu.Unlock()
	forget := func() {
		p.mu.Lock()
		delete(p.runs, id)
		delete(p.starting, id)
		p.mu.Unlock()
	}
	_, err = p.node.Cluster().Enqueue(ctx, cluster.NewJob{ID: id, Tenant: t.Name, Spec: specJSON, Memory: spec.Memory,
		QueueTimeout: timeout, CallerNode: p.node.Self().ID})
	if err != nil {
		forget()
		if errors.Is(err, cluster.ErrQueueFull) {
			return nil, fmt.Errorf("%w: %v (max_queued); retry when one has started", api.ErrBusy, err)
		}
		return nil, p.node.Unavailable(err)
	}
	// Claimed here rather than by the claim loop: one hop less for the run
	// when it may start now. Whatever the claim took, the loop takes the rest.
	if p.claimOne(p.ctx) {
		p.wakeUp()
	}
	var j cluster.Job
	select {
	case j = <-ch: // room at once
	default:
		waiting()
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for j.ID == "" {
		select {
		case j = <-ch:
		case <-timer.C:
			e, _, err := p.node.Cluster().Expire(context.WithoutCancel(ctx), id) // never started: no finish owed
			switch {
			case err != nil:
				forget()
				return nil, p.node.Unavailable(err)
			case e.State == api.StateExpired:
				forget()
				return nil, fmt.Errorf("%w: run %s: %s; nothing ran", api.ErrQueueTimeout, id, e.Reason)
			}
			// Placed as it expired: its placement is on its way.
		case <-ctx.Done():
			p.mu.Lock()
			delete(p.runs, id)
			p.mu.Unlock()
			select {
			case j = <-ch: // placed as the caller left: its slot is given back; never started, it owes no finish
				p.wg.Go(func() {
					p.recordEnd(id, j.Fence(), cluster.End{State: api.StateKilled, ExitCode: 137, Reason: "its caller went away before it ran"}, nil)
				})
			default: // still queued: it leaves the queue
				p.node.Cluster().RequestKill(context.WithoutCancel(ctx), id, "SIGKILL", 0)
			}
			forget()
			return nil, ctx.Err()
		}
	}
	err = p.node.Cluster().Start(ctx, id, j.Fence())
	p.started(id)
	if err != nil {
		forget()
		return nil, p.node.Unavailable(err)
	}
	return func(res executor.Result, audit func()) {
		end := cluster.End{State: res.State, ExitCode: res.ExitCode, Reason: res.Error}
		if end.State == "" || end.State == api.StateRunning { // the run failed before it had a Result
			end = cluster.End{State: api.StateFailed, ExitCode: api.ExitFailed, Reason: "the run did not complete"}
		}
		p.wg.Go(func() {
			p.recordEnd(id, j.Fence(), end, audit)
			forget()
		})
	}, nil
}
