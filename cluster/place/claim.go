package place

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/cluster"
	"github.com/airlock-sandbox/airlock/cluster/seal"
	"github.com/airlock-sandbox/airlock/executor"
)

// claimAll takes queued jobs while they fit this node, and starts each.
func (p *Placer) claimAll(ctx context.Context) {
	for ctx.Err() == nil && p.claimOne(ctx) {
	}
}

// claimOne takes the next queued job that fits this node, if any, and starts
// it; a run goes to its caller, who starts it. It reports whether it took one.
func (p *Placer) claimOne(ctx context.Context) bool {
	j, err := p.node.Cluster().Claim(ctx, p.node.Self().ID)
	switch {
	case errors.Is(err, cluster.ErrNoWork), errors.Is(err, cluster.ErrNodeUnavailable):
		return false
	case err != nil:
		if ctx.Err() == nil {
			p.log.Warn("claim queued work", "node", p.node.Self().ID, "err", p.node.Scrub(err))
		}
		return false
	}
	p.mu.Lock()
	p.starting[j.ID] = true
	if j.CallerNode != "" { // a run: its caller starts it
		ch := p.runs[j.ID]
		if ch != nil {
			ch <- j // buffered, and sent once: under the lock, so that a caller that gives up finds it
		}
		p.mu.Unlock()
		if ch == nil { // never started: it has no run.start, and owes no finish
			p.wg.Go(func() {
				p.recordEnd(j.ID, j.Fence(), cluster.End{State: api.StateFailed, ExitCode: api.ExitFailed,
					Reason: "its caller went away before it could run"}, nil)
				p.started(j.ID)
			})
		}
		return true
	}
	p.mu.Unlock()
	p.wg.Go(func() {
		defer p.started(j.ID)
		p.launch(ctx, j)
	})
	return true
}

// launch starts a job the cluster placed here: the spec and decision its
// queuing node admitted, judged by nobody again; this node checks only what
// is its own (AdmittedElsewhere). Start is recorded before the container
// exists: if this node dies from then on the job is lost, and never run twice
// behind the cluster's back. However the job ends, its end is recorded, and
// audited, through finish.
func (p *Placer) launch(ctx context.Context, j cluster.Job) {
	fence := j.Fence()
	fail := func(reason string) {
		now := time.Now().UTC()
		p.finish(j.ID, j.Tenant, fence, executor.Result{ID: j.ID, State: api.StateFailed, ExitCode: api.ExitFailed,
			Error: "node " + fence.Node + ": " + reason, Tenant: j.Tenant, Node: fence.Node, StartedAt: now, FinishedAt: now})
	}
	key, err := p.srv.SealKey(j.Tenant)
	if err != nil {
		fail(err.Error())
		return
	}
	q, err := seal.Open(key, j.ID, j.Spec)
	if err != nil {
		fail("could not read the job's request: " + err.Error())
		return
	}
	caller, err := p.srv.Caller(j.Tenant, q.Spec.Secrets)
	if err != nil {
		fail(err.Error())
		return
	}
	a, err := p.ex.AdmittedElsewhere(j.ID, executor.Placement{Node: fence.Node, Attempt: fence.Attempt}, q.Spec, caller, q.Decision)
	if err != nil {
		fail("cannot run the job: " + err.Error())
		return
	}
	if err := p.node.Cluster().Start(ctx, j.ID, fence); err != nil {
		// Fenced: the cluster gave the job to another attempt; out of reach:
		// it stays placed here, and reconcile gives it back.
		p.log.Warn("start a placed job", "id", j.ID, "err", p.node.Scrub(err))
		return
	}
	proc, err := p.ex.Launch(context.WithoutCancel(ctx), a)
	if err != nil || proc.State != executor.StateRunning {
		res, gerr := p.ex.Get(context.WithoutCancel(ctx), j.ID)
		if gerr != nil {
			reason := "the job did not start"
			if err != nil {
				reason = err.Error()
			}
			fail(reason)
		} else {
			p.finish(j.ID, j.Tenant, fence, res)
		}
		return
	}
	p.srv.Track(j.Tenant, proc.ID)
	if err := p.node.Cluster().Launched(ctx, j.ID, fence); err != nil {
		// The job runs; its caller learns it from the next read of the row
		// that answers (its end, or a lost node's sweep).
		p.log.Warn("record a placed job's launch", "id", j.ID, "err", p.node.Scrub(err))
	}
}

// Ended records and audits the end of job id, which the server tracked, in
// the cluster when the cluster placed it here, and reports whether it did; a
// job from before the cluster is this host's, and false leaves it to the
// server.
func (p *Placer) Ended(tenant, id string, res executor.Result) bool {
	pl, ok, _ := p.ex.Placed(id)
	if !ok || pl.Node != p.node.Self().ID {
		return false
	}
	p.finish(id, tenant, cluster.Fence{Node: pl.Node, Attempt: pl.Attempt}, res)
	return true
}

// finish records the end of a job this node ran, with its output, and
// audits it.
func (p *Placer) finish(id, tenant string, fence cluster.Fence, res executor.Result) {
	end := cluster.End{State: res.State, ExitCode: res.ExitCode, Reason: res.Error}
	if res.Blocked {
		end.Reason = res.BlockReason
	}
	res.Node = fence.Node
	end.Result, _ = json.Marshal(res)
	if logs, err := p.ex.Logs(p.ctx, id, executor.LogsOptions{Stream: "both", Limit: p.ex.Config().LogCap}); err == nil {
		end.Stdout = cluster.Stream{Data: logs.Stdout, Total: max(logs.StdoutBytes, int64(len(logs.Stdout)))}
		end.Stderr = cluster.Stream{Data: logs.Stderr, Total: max(logs.StderrBytes, int64(len(logs.Stderr)))}
	}
	p.recordEnd(id, fence, end, func() { p.srv.Finished(tenant, true, res) })
}

// recordEnd records the end of a job or run this node ran until the database
// takes it, the cluster refuses it (it is no longer this node's: ErrFenced),
// or placement stops (the next start records it, or the sweep). Once the
// database has taken it, audit (if any) writes its run.finish: the run.finish
// of a cluster job is written by the one node whose write ended it, and by no
// other.
func (p *Placer) recordEnd(id string, fence cluster.Fence, end cluster.End, audit func()) {
	for wait := 200 * time.Millisecond; ; wait = min(2*wait, 5*time.Second) {
		ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
		err := p.node.Cluster().Finish(ctx, id, fence, end)
		cancel()
		switch {
		case err == nil:
			if audit != nil {
				audit()
			}
			return
		case errors.Is(err, cluster.ErrFenced):
			p.log.Warn("the cluster no longer counts this node's attempt of a job: its end is not recorded",
				"id", id, "node", fence.Node, "attempt", fence.Attempt, "err", err)
			return
		}
		p.log.Warn("record a job's end in the cluster; retrying", "id", id, "err", p.node.Scrub(err))
		select {
		case <-p.ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// auditEnded writes the run.finish of job j, which a write of this node's
// (an expiry, a kill in the queue, a sweep) has just ended in the cluster. A
// foreground run that never started has no run.start (its node writes that as
// it starts the run), and so owes no finish.
func auditEnded(srv Server, j cluster.Job) {
	if j.CallerNode != "" && j.StartedAt.IsZero() {
		return
	}
	srv.Finished(j.Tenant, j.CallerNode == "", resultOf(j))
}

// Swept is how srv audits the ends of the jobs its node's sweeps ended (lost
// with their node, or expired in the queue): member.Join's swept.
func Swept(srv Server) func([]cluster.Job) {
	return func(jobs []cluster.Job) {
		for _, j := range jobs {
			auditEnded(srv, j)
		}
	}
}

// reconcile makes what this node runs agree with what the cluster has
// placed on it: at start, after a lapsed lease, and now and then.
//   - A job this node runs that the cluster no longer counts as its own (lost,
//     or queued again while the node was away) is killed: its end would be
//     refused anyway.
//   - A job the cluster has running here whose record ended while no process
//     watched it gets its end recorded; one with no record here never started
//     (the node stopped between Start and its container) and ends failed.
//   - A job placed here and not being started is given back to the queue.
func (p *Placer) reconcile(ctx context.Context) {
	running, err := p.ex.Running(ctx)
	if err != nil {
		return
	}
	self := p.node.Self().ID
	var held []cluster.Held
	for _, r := range running {
		if pl, ok, _ := p.ex.Placed(r.ID); ok && pl.Node == self {
			held = append(held, cluster.Held{Job: r.ID, Attempt: pl.Attempt})
		}
	}
	if len(held) > 0 {
		owned, err := p.node.Cluster().Owned(ctx, self, held)
		if err != nil {
			return
		}
		own := map[cluster.Held]bool{}
		for _, h := range owned {
			own[h] = true
		}
		for _, h := range held {
			if !own[h] {
				p.log.Warn("killing a job the cluster no longer counts as this node's", "id", h.Job, "attempt", h.Attempt)
				if _, err := p.ex.Kill(ctx, h.Job, "SIGKILL", 0); err != nil {
					p.log.Warn("kill a job the cluster gave up", "id", h.Job, "err", err)
				}
			}
		}
	}
	assigned, err := p.node.Cluster().Assigned(ctx, self)
	if err != nil {
		return
	}
	for _, j := range assigned {
		p.mu.Lock()
		busy := p.starting[j.ID] || p.runs[j.ID] != nil
		p.mu.Unlock()
		if busy || p.srv.Tracked(j.ID) { // its tracker records its end
			continue
		}
		if j.CallerNode != "" { // a run whose caller is gone: this process did not queue it
			end := cluster.End{State: api.StateFailed, ExitCode: api.ExitFailed,
				Reason: "node " + j.Node + " restarted while the run waited or ran; its caller was gone"}
			var audit func()
			if !j.StartedAt.IsZero() { // its start was audited
				audit = func() { p.srv.Abandoned(j.Tenant, j.ID, end) }
			}
			p.recordEnd(j.ID, j.Fence(), end, audit)
			continue
		}
		switch j.State {
		case api.StatePlaced:
			if err := p.node.Cluster().Release(ctx, j.ID, j.Fence()); err != nil {
				p.log.Warn("give back a placed job", "id", j.ID, "err", p.node.Scrub(err))
			}
		case api.StateRunning:
			res, err := p.ex.Get(ctx, j.ID)
			switch {
			case errors.Is(err, executor.ErrNotFound):
				p.finish(j.ID, j.Tenant, j.Fence(), executor.Result{ID: j.ID, State: api.StateFailed, ExitCode: api.ExitFailed,
					Tenant: j.Tenant, StartedAt: j.StartedAt, FinishedAt: time.Now().UTC(),
					Error: "node " + j.Node + " has no record of the job: it stopped before the job's container was made"})
			case err == nil && res.State != api.StateRunning:
				if pl, ok, _ := p.ex.Placed(j.ID); ok && pl.Attempt == j.Attempt {
					p.finish(j.ID, j.Tenant, j.Fence(), res)
				}
			}
		}
	}
}

// deliverKills sends the kills asked on other nodes for jobs this node runs.
func (p *Placer) deliverKills(ctx context.Context) {
	kills, err := p.node.Cluster().KillRequests(ctx, p.node.Self().ID)
	if err != nil {
		return
	}
	for _, k := range kills {
		p.mu.Lock()
		starting := p.starting[k.Job]
		p.mu.Unlock()
		if pl, ok, _ := p.ex.Placed(k.Job); starting || !ok || pl.Attempt != k.Fence.Attempt {
			continue // its sandbox is being made: the next round delivers it
		}
		if _, err := p.ex.Kill(ctx, k.Job, k.Signal, k.ForceAfter); err != nil && !errors.Is(err, executor.ErrNotFound) {
			p.log.Warn("deliver a kill", "id", k.Job, "err", err)
			continue
		}
		if err := p.node.Cluster().KillDelivered(ctx, k); err != nil {
			p.log.Warn("record a delivered kill", "id", k.Job, "err", p.node.Scrub(err))
		}
	}
}
