package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/cluster"
	"github.com/airlock-sandbox/airlock/cluster/seal"
	"github.com/airlock-sandbox/airlock/executor"
)

// Background jobs in cluster mode (docs/cluster.md, "Jobs across nodes"). The
// node that takes a start admits it (the one gate, as on one node), queues it
// in PostgreSQL and waits until a node has started it. Every node claims the
// jobs that fit it, runs them as its own background jobs under their cluster
// id and fence, and records their end and output in PostgreSQL. Any node
// answers for any job: from its own engine when the job is its own, else from
// the database.

// placer is a node's side of placement: what it claimed and is starting, and
// the wake-up of its claim loop.
type placer struct {
	wake chan struct{} // a start was queued here: claim now

	mu       sync.Mutex
	starting map[string]bool // claimed, not yet launched or given back
	// runs are the foreground runs of this node's callers, from their queueing
	// to their end: the claim loop hands each its placement on the channel.
	runs map[string]chan cluster.Job
	// watched are closed at the database's next notice about a job: callers
	// waiting for its start or its end read it again then.
	watched map[string]chan struct{}
}

// started forgets that job id is being started: launched, given back, or
// handed on.
func (p *placer) started(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.starting, id)
}

// watch returns a channel closed at the next notice about job id.
func (p *placer) watch(id string) <-chan struct{} {
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
func (p *placer) unwatch(id string, ch <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.watched[id] == ch {
		delete(p.watched, id)
	}
}

// notice wakes what the database's notice concerns.
func (s *Service) notice(n cluster.Notice) {
	switch {
	case n.Queue, n.KillFor == s.node.Self().ID:
		s.wakePlacer()
	case n.Job != "":
		s.placer.mu.Lock()
		if ch := s.placer.watched[n.Job]; ch != nil {
			close(ch)
			delete(s.placer.watched, n.Job)
		}
		s.placer.mu.Unlock()
	}
}

// The database's notices wake a node when work is queued or a job it waits
// for changes; it also looks every pollEvery, for notices it missed (sent
// while its listening connection was down). reconcileEvery is how often it
// checks what the cluster has placed on it against what it runs.
const (
	pollEvery      = time.Second
	reconcileEvery = 5 * time.Second
)

// startPlacing starts the node's claim loop; NewService calls it once the jobs
// already running here are tracked.
func (s *Service) startPlacing() {
	s.placer = &placer{wake: make(chan struct{}, 1), starting: map[string]bool{}, runs: map[string]chan cluster.Job{},
		watched: map[string]chan struct{}{}}
	s.reconcilePlaced(s.trackCtx)
	s.trackers.Go(func() { s.node.Cluster().Listen(s.trackCtx, s.notice) })
	s.trackers.Go(func() {
		claim := time.NewTicker(pollEvery)
		defer claim.Stop()
		reconcile := time.NewTicker(reconcileEvery)
		defer reconcile.Stop()
		for {
			select {
			case <-s.trackCtx.Done():
				return
			case <-s.placer.wake:
			case <-claim.C:
			case <-reconcile.C:
				s.reconcilePlaced(s.trackCtx)
			case <-s.node.Lapsed():
				s.reconcilePlaced(s.trackCtx)
			}
			s.claimAll(s.trackCtx)
			s.deliverKills(s.trackCtx)
		}
	})
}

// wakePlacer makes the claim loop look at the queue now.
func (s *Service) wakePlacer() {
	select {
	case s.placer.wake <- struct{}{}:
	default:
	}
}

// claimAll takes queued jobs while they fit this node, and starts each.
func (s *Service) claimAll(ctx context.Context) {
	for ctx.Err() == nil && s.claimOne(ctx) {
	}
}

// claimOne takes the next queued job that fits this node, if any, and starts
// it; a run goes to its caller, who starts it. It reports whether it took one.
func (s *Service) claimOne(ctx context.Context) bool {
	j, err := s.node.Cluster().Claim(ctx, s.node.Self().ID)
	switch {
	case errors.Is(err, cluster.ErrNoWork), errors.Is(err, cluster.ErrNodeUnavailable):
		return false
	case err != nil:
		if ctx.Err() == nil {
			s.log.Warn("claim queued work", "node", s.node.Self().ID, "err", s.node.Scrub(err))
		}
		return false
	}
	s.placer.mu.Lock()
	s.placer.starting[j.ID] = true
	if j.CallerNode != "" { // a run: its caller starts it
		ch := s.placer.runs[j.ID]
		if ch != nil {
			ch <- j // buffered, and sent once: under the lock, so that a caller that gives up finds it
		}
		s.placer.mu.Unlock()
		if ch == nil { // never started: it has no run.start, and owes no finish
			s.trackers.Go(func() {
				s.recordEnd(j.ID, j.Fence(), cluster.End{State: api.StateFailed, ExitCode: api.ExitFailed,
					Reason: "its caller went away before it could run"}, nil)
				s.placer.started(j.ID)
			})
		}
		return true
	}
	s.placer.mu.Unlock()
	s.trackers.Go(func() {
		defer s.placer.started(j.ID)
		s.launchPlaced(ctx, j)
	})
	return true
}

// launchPlaced starts a job the cluster placed here: the spec and decision
// its queuing node admitted, judged by nobody again; this node checks only
// what is its own (AdmittedElsewhere). Start is recorded before the container
// exists: if this node dies from then on the job is lost, and never run twice
// behind the cluster's back. However the job ends, its end is recorded, and
// audited, through finishPlaced.
func (s *Service) launchPlaced(ctx context.Context, j cluster.Job) {
	fence := j.Fence()
	fail := func(reason string) {
		now := time.Now().UTC()
		s.finishPlaced(j.ID, j.Tenant, fence, executor.Result{ID: j.ID, State: api.StateFailed, ExitCode: api.ExitFailed,
			Error: "node " + fence.Node + ": " + reason, Tenant: j.Tenant, Node: fence.Node, StartedAt: now, FinishedAt: now})
	}
	t, err := s.tenant(j.Tenant)
	if err != nil {
		fail(err.Error())
		return
	}
	key, err := s.sealKey(t.name)
	if err != nil {
		fail(err.Error())
		return
	}
	q, err := seal.Open(key, j.ID, j.Spec)
	if err != nil {
		fail("could not read the job's request: " + err.Error())
		return
	}
	caller, err := s.callerFor(t, q.Spec.Secrets)
	if err != nil {
		fail(err.Error())
		return
	}
	a, err := s.ex.AdmittedElsewhere(j.ID, executor.Placement{Node: fence.Node, Attempt: fence.Attempt}, q.Spec, caller, q.Decision)
	if err != nil {
		fail("cannot run the job: " + err.Error())
		return
	}
	if err := s.node.Cluster().Start(ctx, j.ID, fence); err != nil {
		// Fenced: the cluster gave the job to another attempt; out of reach:
		// it stays placed here, and reconcilePlaced gives it back.
		s.log.Warn("start a placed job", "id", j.ID, "err", s.node.Scrub(err))
		return
	}
	p, err := s.ex.Launch(context.WithoutCancel(ctx), a)
	if err != nil || p.State != executor.StateRunning {
		res, gerr := s.ex.Get(context.WithoutCancel(ctx), j.ID)
		if gerr != nil {
			reason := "the job did not start"
			if err != nil {
				reason = err.Error()
			}
			fail(reason)
		} else {
			s.finishPlaced(j.ID, t.name, fence, res)
		}
		return
	}
	s.trackStarted(t, p.ID, func() {})
	if err := s.node.Cluster().Launched(ctx, j.ID, fence); err != nil {
		// The job runs; its caller learns it from the next read of the row
		// that answers (its end, or a lost node's sweep).
		s.log.Warn("record a placed job's launch", "id", j.ID, "err", s.node.Scrub(err))
	}
}

// finishPlaced records the end of a job this node ran, with its output, and
// audits it.
func (s *Service) finishPlaced(id, tenant string, fence cluster.Fence, res executor.Result) {
	end := cluster.End{State: res.State, ExitCode: res.ExitCode, Reason: res.Error}
	if res.Blocked {
		end.Reason = res.BlockReason
	}
	res.Node = fence.Node
	end.Result, _ = json.Marshal(res)
	if logs, err := s.ex.Logs(s.trackCtx, id, executor.LogsOptions{Stream: "both", Limit: s.ex.Config().LogCap}); err == nil {
		end.Stdout = cluster.Stream{Data: logs.Stdout, Total: max(logs.StdoutBytes, int64(len(logs.Stdout)))}
		end.Stderr = cluster.Stream{Data: logs.Stderr, Total: max(logs.StderrBytes, int64(len(logs.Stderr)))}
	}
	finish := auditEvent{Event: "run.finish", Tenant: tenant, Background: true, Via: "cluster"}.withResult(res)
	s.recordEnd(id, fence, end, &finish)
}

// recordEnd records the end of a job or run this node ran until the database
// takes it, the cluster refuses it (it is no longer this node's: ErrFenced),
// or the service closes (the next start records it, or the sweep). Once the
// database has taken it, finish (if any) is written to the audit log: the
// run.finish of a cluster job is written by the one node whose write ended
// it, and by no other.
func (s *Service) recordEnd(id string, fence cluster.Fence, end cluster.End, finish *auditEvent) {
	for wait := 200 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		ctx, cancel := context.WithTimeout(s.trackCtx, 30*time.Second)
		err := s.node.Cluster().Finish(ctx, id, fence, end)
		cancel()
		switch {
		case err == nil:
			if finish != nil {
				s.write(*finish)
			}
			return
		case errors.Is(err, cluster.ErrFenced):
			s.log.Warn("the cluster no longer counts this node's attempt of a job: its end is not recorded",
				"id", id, "node", fence.Node, "attempt", fence.Attempt, "err", err)
			return
		}
		s.log.Warn("record a job's end in the cluster; retrying", "id", id, "err", s.node.Scrub(err))
		select {
		case <-s.trackCtx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// auditEnded writes the run.finish of job j, which a write of this node's
// (an expiry, a kill in the queue, a sweep) has just ended in the cluster. A
// foreground run that never started has no run.start (its node writes that as
// it starts the run), and so owes no finish.
func (s *Service) auditEnded(j cluster.Job) {
	if j.CallerNode != "" && j.StartedAt.IsZero() {
		return
	}
	s.write(auditEvent{Event: "run.finish", Tenant: j.Tenant, Background: j.CallerNode == "", Via: "cluster"}.withResult(resultOf(j)))
}

// auditSwept audits the ends of the jobs this node's sweep ended (lost with
// their node, or expired in the queue).
func (s *Service) auditSwept(jobs []cluster.Job) {
	for _, j := range jobs {
		s.auditEnded(j)
	}
}

// reconcilePlaced makes what this node runs agree with what the cluster has
// placed on it: at start, after a lapsed lease, and now and then.
//   - A job this node runs that the cluster no longer counts as its own (lost,
//     or queued again while the node was away) is killed: its end would be
//     refused anyway.
//   - A job the cluster has running here whose record ended while no process
//     watched it gets its end recorded; one with no record here never started
//     (the node stopped between Start and its container) and ends failed.
//   - A job placed here and not being started is given back to the queue.
func (s *Service) reconcilePlaced(ctx context.Context) {
	running, err := s.ex.Running(ctx)
	if err != nil {
		return
	}
	var held []cluster.Held
	for _, p := range running {
		if pl, ok, _ := s.ex.Placed(p.ID); ok && pl.Node == s.node.Self().ID {
			held = append(held, cluster.Held{Job: p.ID, Attempt: pl.Attempt})
		}
	}
	if len(held) > 0 {
		owned, err := s.node.Cluster().Owned(ctx, s.node.Self().ID, held)
		if err != nil {
			return
		}
		own := map[cluster.Held]bool{}
		for _, h := range owned {
			own[h] = true
		}
		for _, h := range held {
			if !own[h] {
				s.log.Warn("killing a job the cluster no longer counts as this node's", "id", h.Job, "attempt", h.Attempt)
				if _, err := s.ex.Kill(ctx, h.Job, "SIGKILL", 0); err != nil {
					s.log.Warn("kill a job the cluster gave up", "id", h.Job, "err", err)
				}
			}
		}
	}
	assigned, err := s.node.Cluster().Assigned(ctx, s.node.Self().ID)
	if err != nil {
		return
	}
	for _, j := range assigned {
		s.placer.mu.Lock()
		busy := s.placer.starting[j.ID] || s.placer.runs[j.ID] != nil
		s.placer.mu.Unlock()
		if busy || s.tracked(j.ID) { // its tracker records its end
			continue
		}
		if j.CallerNode != "" { // a run whose caller is gone: this process did not queue it
			end := cluster.End{State: api.StateFailed, ExitCode: api.ExitFailed,
				Reason: "node " + j.Node + " restarted while the run waited or ran; its caller was gone"}
			var finish *auditEvent
			if !j.StartedAt.IsZero() { // its start was audited
				ev := auditEvent{Event: "run.finish", Tenant: j.Tenant, ID: j.ID, State: end.State, ExitCode: &end.ExitCode,
					Error: end.Reason, Via: "cluster"}
				finish = &ev
			}
			s.recordEnd(j.ID, j.Fence(), end, finish)
			continue
		}
		switch j.State {
		case api.StatePlaced:
			if err := s.node.Cluster().Release(ctx, j.ID, j.Fence()); err != nil {
				s.log.Warn("give back a placed job", "id", j.ID, "err", s.node.Scrub(err))
			}
		case api.StateRunning:
			res, err := s.ex.Get(ctx, j.ID)
			switch {
			case errors.Is(err, executor.ErrNotFound):
				s.finishPlaced(j.ID, j.Tenant, j.Fence(), executor.Result{ID: j.ID, State: api.StateFailed, ExitCode: api.ExitFailed,
					Tenant: j.Tenant, StartedAt: j.StartedAt, FinishedAt: time.Now().UTC(),
					Error: "node " + j.Node + " has no record of the job: it stopped before the job's container was made"})
			case err == nil && res.State != api.StateRunning:
				if pl, ok, _ := s.ex.Placed(j.ID); ok && pl.Attempt == j.Attempt {
					s.finishPlaced(j.ID, j.Tenant, j.Fence(), res)
				}
			}
		}
	}
}

// deliverKills sends the kills asked on other nodes for jobs this node runs.
func (s *Service) deliverKills(ctx context.Context) {
	kills, err := s.node.Cluster().KillRequests(ctx, s.node.Self().ID)
	if err != nil {
		return
	}
	for _, k := range kills {
		s.placer.mu.Lock()
		starting := s.placer.starting[k.Job]
		s.placer.mu.Unlock()
		if pl, ok, _ := s.ex.Placed(k.Job); starting || !ok || pl.Attempt != k.Fence.Attempt {
			continue // its sandbox is being made: the next round delivers it
		}
		if _, err := s.ex.Kill(ctx, k.Job, k.Signal, k.ForceAfter); err != nil && !errors.Is(err, executor.ErrNotFound) {
			s.log.Warn("deliver a kill", "id", k.Job, "err", err)
			continue
		}
		if err := s.node.Cluster().KillDelivered(ctx, k); err != nil {
			s.log.Warn("record a delivered kill", "id", k.Job, "err", s.node.Scrub(err))
		}
	}
}

// startQueued is Start in cluster mode, for an admitted job: a refused one is
// recorded as blocked; an allowed one is queued, and answered by awaitStart.
func (s *Service) startQueued(ctx context.Context, t *tenantState, a executor.Admitted, via, remote string) (executor.Process, error) {
	if err := s.tenantLimits(ctx, t); err != nil {
		return executor.Process{}, err
	}
	spec := a.Spec()
	key, err := s.sealKey(t.name)
	if err != nil {
		return executor.Process{}, err
	}
	specJSON, err := seal.Spec(key, a.ID(), spec, a.Decision())
	if err != nil {
		return executor.Process{}, err
	}
	s.auditStart(a, via, remote)
	if !a.Decision().Allowed {
		// Nothing runs: recorded here, and in the cluster for any node to answer.
		p, err := s.ex.Launch(ctx, a)
		if err != nil {
			return p, err
		}
		s.metrics.runs.WithLabelValues("background", string(p.State)).Inc()
		s.metrics.refusals.WithLabelValues(p.BlockRule).Inc()
		res, err := s.ex.Get(ctx, a.ID())
		if err != nil {
			return p, err
		}
		resJSON, _ := json.Marshal(res)
		_, err = s.node.Cluster().Record(ctx, cluster.NewJob{ID: a.ID(), Tenant: t.name, Spec: specJSON},
			cluster.End{State: res.State, ExitCode: res.ExitCode, Reason: res.BlockReason, Result: resJSON})
		return p, s.node.Unavailable(err)
	}
	_, err = s.node.Cluster().Enqueue(ctx, cluster.NewJob{
		ID: a.ID(), Tenant: t.name, Spec: specJSON, Workspace: spec.Workspace, Memory: spec.Memory,
		QueueTimeout: spec.QueueTimeout.Duration(), Retry: spec.Retry,
	})
	switch {
	case errors.Is(err, cluster.ErrQueueFull):
		return executor.Process{}, fmt.Errorf("%w: %v (max_queued); retry when one has started", api.ErrBusy, err)
	case errors.Is(err, cluster.ErrNotFound):
		return executor.Process{}, &executor.SpecError{Field: "workspace", Reason: fmt.Sprintf("no workspace %q of the tenant's is known to the cluster", spec.Workspace)}
	case err != nil:
		return executor.Process{}, s.node.Unavailable(err)
	}
	s.wakePlacer()
	return s.awaitStart(ctx, a.ID(), spec.QueueTimeout.Duration())
}

// tenantLimits sets the tenant's cluster-wide limits from this node's
// configuration, once per tenant and process: every node sets the same.
func (s *Service) tenantLimits(ctx context.Context, t *tenantState) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.clusterLimits {
		return nil
	}
	err := s.node.Cluster().SetTenant(ctx, cluster.Tenant{Name: t.name, MaxRunning: t.limits.MaxConcurrent, MaxQueued: t.limits.MaxQueued})
	if err != nil {
		return s.node.Unavailable(err)
	}
	t.clusterLimits = true
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
func (s *Service) awaitStart(ctx context.Context, id string, timeout time.Duration) (executor.Process, error) {
	answerBy := time.Now().Add(min(startWait, timeout))
	var started time.Time // when this wait first saw the job started
	var changed <-chan struct{}
	defer func() { s.placer.unwatch(id, changed) }()
	for {
		s.placer.unwatch(id, changed)
		changed = s.placer.watch(id)
		j, err := s.node.Cluster().Get(ctx, id)
		if err != nil {
			return executor.Process{}, s.node.Unavailable(err)
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
			if j, ended, err = s.node.Cluster().Expire(ctx, id); err != nil {
				return executor.Process{}, s.node.Unavailable(err)
			}
			if ended {
				s.auditEnded(j)
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

// clusterJob reads job id from the cluster for the tenant: another tenant's
// answers as an unknown id.
func (s *Service) clusterJob(ctx context.Context, tenant, id string) (cluster.Job, error) {
	j, err := s.node.Cluster().Get(ctx, id)
	if errors.Is(err, cluster.ErrNotFound) || err == nil && tenant != Anonymous && j.Tenant != tenant {
		return cluster.Job{}, notFound(id)
	}
	return j, s.node.Unavailable(err)
}

// isLocal tells whether this node holds job id's record: its own engine then
// answers for it, live.
func (s *Service) isLocal(id string) bool {
	_, err := s.ex.Owner(id)
	return err == nil
}

// resultOf is a job's Result as the cluster knows it: the one its node
// recorded at the end, or one made from the row (queued, running elsewhere,
// lost, expired).
func resultOf(j cluster.Job) executor.Result {
	if j.Ended() && len(j.Result) > 0 {
		var r executor.Result
		if json.Unmarshal(j.Result, &r) == nil {
			return r
		}
	}
	var spec api.Spec
	json.Unmarshal(j.Spec, &spec)
	r := executor.Result{
		ID: j.ID, State: j.State, Tenant: j.Tenant, Node: j.Node, Image: spec.Image, Runtime: spec.Runtime,
		Labels: spec.Labels, Workspace: spec.Workspace, StartedAt: j.StartedAt, FinishedAt: j.EndedAt,
	}
	switch {
	case j.State == api.StatePlaced:
		r.State = api.StateQueued // placed, not started: still waiting, as the caller sees it
	case j.Ended():
		r.ExitCode, r.Error = *j.ExitCode, j.Reason
		if j.StartedAt.IsZero() {
			r.StartedAt = j.EndedAt
		}
		r.DurationMS = r.FinishedAt.Sub(r.StartedAt).Milliseconds()
	case !j.StartedAt.IsZero():
		r.DurationMS = time.Since(j.StartedAt).Milliseconds()
	}
	if j.State == api.StateQueued || j.State == api.StatePlaced {
		r.StartedAt = j.QueuedAt
	}
	return r
}

// processOf is a job as Start, List and Kill report it, from its row.
func processOf(j cluster.Job) executor.Process {
	var spec api.Spec
	json.Unmarshal(j.Spec, &spec)
	return resultOf(j).Process(spec.Command, spec.Argv)
}

// clusterLogs is a page of an ended job's output, read from the cluster.
func (s *Service) clusterLogs(ctx context.Context, j cluster.Job, opts executor.LogsOptions) (executor.Logs, error) {
	opts, err := executor.CheckLogs(opts)
	if err != nil {
		return executor.Logs{}, err
	}
	l := executor.Logs{ID: j.ID, State: resultOf(j).State}
	for _, stream := range []string{"stdout", "stderr"} {
		if opts.Stream != "" && opts.Stream != "both" && opts.Stream != stream {
			continue
		}
		o, err := s.node.Cluster().Output(ctx, j.ID, stream, opts.Offset, opts.Limit)
		if err != nil {
			return executor.Logs{}, s.node.Unavailable(err)
		}
		if stream == "stdout" {
			l.Stdout, l.StdoutSize, l.StdoutBytes, l.StdoutNext = o.Data, o.Size, o.Total, o.Next
		} else {
			l.Stderr, l.StderrSize, l.StderrBytes, l.StderrNext = o.Data, o.Size, o.Total, o.Next
		}
		l.Truncated = l.Truncated || o.Truncated()
	}
	return l, nil
}

// awaitEnd polls the cluster until job id has ended or ctx ends.
func (s *Service) awaitEnd(ctx context.Context, tenant, id string) (cluster.Job, error) {
	var last cluster.Job
	var changed <-chan struct{}
	defer func() { s.placer.unwatch(id, changed) }()
	for {
		s.placer.unwatch(id, changed)
		changed = s.placer.watch(id)
		j, err := s.clusterJob(ctx, tenant, id)
		if err != nil && last.ID != "" && ctx.Err() != nil {
			return last, ctx.Err()
		}
		if err != nil || j.Ended() {
			return j, err
		}
		last = j
		select {
		case <-ctx.Done():
			return j, ctx.Err()
		case <-changed:
		case <-time.After(pollEvery):
		}
	}
}

// clusterGet reports job id in cluster mode. This node's own record answers
// while the job runs here (live usage) and until its end is in the cluster;
// the cluster's row answers for the rest, and for an end it decided (lost).
func (s *Service) clusterGet(ctx context.Context, tenant, id string) (executor.Result, error) {
	local, lerr := s.ex.Get(ctx, id)
	if lerr == nil && tenant != Anonymous && local.Tenant != tenant {
		return executor.Result{}, notFound(id)
	}
	if lerr == nil && local.State == executor.StateRunning {
		return local, nil
	}
	j, err := s.clusterJob(ctx, tenant, id)
	switch {
	case lerr == nil && (err != nil || !j.Ended()):
		return local, nil // a job of this node whose end the cluster has not recorded yet, or one from before the cluster
	case err != nil:
		return executor.Result{}, err
	case j.State == api.StateRunning && j.Node != s.node.Self().ID:
		// Its node answers with its live usage; the row, when it cannot.
		if c, perr := s.peer(ctx, j.Node, tenant); perr == nil {
			if r, perr := c.Get(ctx, id); perr == nil {
				return r, nil
			}
		}
	}
	return resultOf(j), nil
}

// peer is a client of node id's HTTP API, calling as the tenant: with the
// tenant's token from this node's configuration, which every node of a
// cluster shares (docs/cluster.md, "Jobs across nodes").
func (s *Service) peer(ctx context.Context, id, tenant string) (Peer, error) {
	nodes, err := s.node.Cluster().Nodes(ctx)
	if err != nil {
		return nil, s.node.Unavailable(err)
	}
	token := ""
	for _, t := range s.cfg.Tokens {
		if t.Tenant == tenant {
			token = t.Token
			break
		}
	}
	for _, n := range nodes {
		if n.ID == id && n.Live {
			return s.dial(n.Address, token)
		}
	}
	return nil, fmt.Errorf("%w: node %s is not live", api.ErrOnAnotherNode, id)
}

// clusterLogsOf answers Logs in cluster mode: from this node's record when it
// holds the job, else from the cluster once the job has ended.
func (s *Service) clusterLogsOf(ctx context.Context, tenant, id string, opts executor.LogsOptions) (executor.Logs, error) {
	if s.isLocal(id) {
		if _, err := s.owned(tenant, id); err != nil {
			return executor.Logs{}, err
		}
		return s.ex.Logs(ctx, id, opts)
	}
	j, err := s.clusterJob(ctx, tenant, id)
	if err != nil {
		return executor.Logs{}, err
	}
	if !j.Ended() {
		if j.Node == "" || j.State != api.StateRunning {
			return executor.Logs{}, fmt.Errorf("%w: job %s waits in the queue and has no output yet", api.ErrOnAnotherNode, id)
		}
		c, err := s.peer(ctx, j.Node, tenant)
		if err == nil {
			var l executor.Logs
			if l, err = c.Logs(ctx, id, opts); err == nil || !isTransport(err) {
				return l, err
			}
		}
		return executor.Logs{}, fmt.Errorf("%w: job %s runs on node %s, which holds its output until it ends, and did not answer: %v",
			api.ErrOnAnotherNode, id, j.Node, err)
	}
	return s.clusterLogs(ctx, j, opts)
}

// clusterFollow follows a job that runs on another node: live through that
// node, or from the cluster once the job has ended (from opts.Offset on).
func (s *Service) clusterFollow(ctx context.Context, tenant, id string, opts executor.LogsOptions, begin func()) (executor.Result, error) {
	if _, err := s.clusterJob(ctx, tenant, id); err != nil {
		return executor.Result{}, err
	}
	if _, err := executor.CheckLogs(opts); err != nil {
		return executor.Result{}, err
	}
	begin()
	if j, err := s.clusterJob(ctx, tenant, id); err == nil && j.State == api.StateRunning && j.Node != s.node.Self().ID {
		// Its node follows it live; the end comes from the cluster.
		if c, err := s.peer(ctx, j.Node, tenant); err == nil {
			if _, err := c.Logs(ctx, id, opts); err != nil {
				return executor.Result{}, err
			}
			return s.clusterGet(ctx, tenant, id)
		}
	}
	j, err := s.awaitEnd(ctx, tenant, id)
	if err != nil {
		return executor.Result{}, err
	}
	for _, stream := range []string{"stdout", "stderr"} {
		if opts.Stream != "" && opts.Stream != "both" && opts.Stream != stream {
			continue
		}
		for offset := opts.Offset; ; {
			o, err := s.node.Cluster().Output(ctx, id, stream, offset, 1<<20)
			if err != nil {
				return executor.Result{}, s.node.Unavailable(err)
			}
			if len(o.Data) == 0 {
				break
			}
			if err := opts.Follow(executor.LogChunk{Stream: stream, Offset: offset, Data: o.Data}); err != nil {
				return executor.Result{}, err
			}
			offset = o.Next
		}
	}
	return resultOf(j), nil
}

// clusterKill kills a job in cluster mode: this node's own at once; another
// node's through the cluster, which that node delivers within a claim round;
// a queued one is ended before it runs.
func (s *Service) clusterKill(ctx context.Context, tenant, id, signal string, forceAfter time.Duration) (executor.KillResult, error) {
	if s.isLocal(id) {
		if _, err := s.owned(tenant, id); err != nil {
			return executor.KillResult{}, err
		}
		return s.ex.Kill(ctx, id, signal, forceAfter)
	}
	sig, forceAfter, err := executor.CheckKill(signal, forceAfter)
	if err != nil {
		return executor.KillResult{}, err
	}
	before, err := s.clusterJob(ctx, tenant, id)
	if err != nil {
		return executor.KillResult{}, err
	}
	if before.Ended() {
		p := processOf(before)
		return executor.KillResult{Process: p, AlreadyEnded: true,
			Message: fmt.Sprintf("process %s had already ended (%s, exit code %d); nothing to kill", id, p.State, *p.ExitCode)}, nil
	}
	j, ended, err := s.node.Cluster().RequestKill(ctx, id, sig, forceAfter)
	if err != nil {
		return executor.KillResult{}, s.node.Unavailable(err)
	}
	if ended {
		s.auditEnded(j)
	}
	p := processOf(j)
	if j.Ended() {
		return executor.KillResult{Process: p, Signal: sig, Message: fmt.Sprintf("process %s was waiting in the queue: it ended before it ran", id)}, nil
	}
	msg := fmt.Sprintf("asked node %s to send %s to process %s", j.Node, sig, id)
	if forceAfter > 0 {
		msg += fmt.Sprintf("; SIGKILL follows in %s if it is still running", forceAfter)
	}
	return executor.KillResult{Process: p, Signal: sig, Message: msg}, nil
}

// clusterWait waits for a job in cluster mode; a job of this node is waited
// for on its engine, and its end then read as clusterGet reads it.
func (s *Service) clusterWait(ctx context.Context, tenant, id string) (executor.Result, error) {
	if s.isLocal(id) {
		if _, err := s.owned(tenant, id); err != nil {
			return executor.Result{}, err
		}
		if _, err := s.ex.Wait(ctx, id); err != nil {
			r, _ := s.clusterGet(context.WithoutCancel(ctx), tenant, id)
			return r, err
		}
		return s.clusterGet(ctx, tenant, id)
	}
	j, err := s.awaitEnd(ctx, tenant, id)
	if err != nil {
		return resultOf(j), err
	}
	return resultOf(j), nil
}

// clusterList lists the tenant's jobs across the cluster, most recent first.
func (s *Service) clusterList(ctx context.Context, opts executor.ListOptions) (executor.ProcessList, error) {
	opts, err := executor.CheckList(opts, api.States)
	if err != nil {
		return executor.ProcessList{}, err
	}
	jobs, total, err := s.node.Cluster().List(ctx, cluster.Filter{Tenant: opts.Tenant, State: opts.State, Labels: opts.Labels, Limit: opts.Limit})
	if err != nil {
		return executor.ProcessList{}, s.node.Unavailable(err)
	}
	list := executor.ProcessList{Processes: make([]executor.Process, 0, len(jobs)), Total: total}
	for _, j := range jobs {
		list.Processes = append(list.Processes, processOf(j))
	}
	return list, nil
}

// clusterRemove deletes an ended job: its row and output in the cluster, and
// this node's record when it holds one.
func (s *Service) clusterRemove(ctx context.Context, tenant, id string) error {
	j, err := s.clusterJob(ctx, tenant, id)
	if err != nil {
		return err
	}
	if !j.Ended() {
		return fmt.Errorf("process %s: %w", id, executor.ErrRunning)
	}
	if s.isLocal(id) {
		if err := s.ex.Remove(ctx, id); err != nil {
			return err
		}
	}
	return s.node.Unavailable(s.node.Cluster().Remove(ctx, id))
}

// isTransport tells whether err is a failure to reach a peer rather than its
// answer.
func isTransport(err error) bool {
	var e *api.Error
	return !errors.As(err, &e)
}

// placeRun queues a foreground run in the cluster, for this node only (it
// holds the caller's connection), so that runs count against the node's slots
// and the tenant's cluster-wide limit and wait their turn fairly with jobs.
// It returns once the run may start, recorded as started; the returned func
// records its end. Past its queue timeout the answer is ErrQueueTimeout.
func (s *Service) placeRun(ctx context.Context, t *tenantState, a executor.Admitted, waiting func()) (func(executor.Result, *auditEvent), error) {
	if err := s.tenantLimits(ctx, t); err != nil {
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
	s.placer.mu.Lock()
	s.placer.runs[id] = ch
	s.placer.mu.Unlock()
	forget := func() {
		s.placer.mu.Lock()
		delete(s.placer.runs, id)
		delete(s.placer.starting, id)
		s.placer.mu.Unlock()
	}
	_, err = s.node.Cluster().Enqueue(ctx, cluster.NewJob{ID: id, Tenant: t.name, Spec: specJSON, Memory: spec.Memory,
		QueueTimeout: timeout, CallerNode: s.node.Self().ID})
	if err != nil {
		forget()
		if errors.Is(err, cluster.ErrQueueFull) {
			return nil, fmt.Errorf("%w: %v (max_queued); retry when one has started", api.ErrBusy, err)
		}
		return nil, s.node.Unavailable(err)
	}
	// Claimed here rather than by the claim loop: one hop less for the run
	// when it may start now. Whatever the claim took, the loop takes the rest.
	if s.claimOne(s.trackCtx) {
		s.wakePlacer()
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
			e, _, err := s.node.Cluster().Expire(context.WithoutCancel(ctx), id) // never started: no finish owed
			switch {
			case err != nil:
				forget()
				return nil, s.node.Unavailable(err)
			case e.State == api.StateExpired:
				forget()
				return nil, fmt.Errorf("%w: run %s: %s; nothing ran", api.ErrQueueTimeout, id, e.Reason)
			}
			// Placed as it expired: its placement is on its way.
		case <-ctx.Done():
			s.placer.mu.Lock()
			delete(s.placer.runs, id)
			s.placer.mu.Unlock()
			select {
			case j = <-ch: // placed as the caller left: its slot is given back; never started, it owes no finish
				s.trackers.Go(func() {
					s.recordEnd(id, j.Fence(), cluster.End{State: api.StateKilled, ExitCode: 137, Reason: "its caller went away before it ran"}, nil)
				})
			default: // still queued: it leaves the queue
				s.node.Cluster().RequestKill(context.WithoutCancel(ctx), id, "SIGKILL", 0)
			}
			forget()
			return nil, ctx.Err()
		}
	}
	err = s.node.Cluster().Start(ctx, id, j.Fence())
	s.placer.started(id)
	if err != nil {
		forget()
		return nil, s.node.Unavailable(err)
	}
	return func(res executor.Result, finish *auditEvent) {
		end := cluster.End{State: res.State, ExitCode: res.ExitCode, Reason: res.Error}
		if end.State == "" || end.State == api.StateRunning { // the run failed before it had a Result
			end = cluster.End{State: api.StateFailed, ExitCode: api.ExitFailed, Reason: "the run did not complete"}
		}
		s.trackers.Go(func() {
			s.recordEnd(id, j.Fence(), end, finish)
			forget()
		})
	}, nil
}
