package place

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/cluster"
	"github.com/airlock-sandbox/airlock/executor"
)

// Any node answers for any job of the tenant's: this node's own from its
// engine (live usage, live output), the others from their node while they
// run there, else from the cluster's row and output (docs/cluster.md, "Jobs
// across nodes"). Another tenant's job answers as an unknown id.

// Get reports job id. This node's own record answers while the job runs here
// (live usage) and until its end is in the cluster; the cluster's row answers
// for the rest, and for an end it decided (lost).
func (p *Placer) Get(ctx context.Context, tenant, id string) (executor.Result, error) {
	local, lerr := p.ex.Get(ctx, id)
	if lerr == nil && tenant != anonymous && local.Tenant != tenant {
		return executor.Result{}, notFound(id)
	}
	if lerr == nil && local.State == executor.StateRunning {
		return local, nil
	}
	j, err := p.job(ctx, tenant, id)
	switch {
	case lerr == nil && (err != nil || !j.Ended()):
		return local, nil // a job of this node whose end the cluster has not recorded yet, or one from before the cluster
	case err != nil:
		return executor.Result{}, err
	case j.State == api.StateRunning && j.Node != p.node.Self().ID:
		// Its node answers with its live usage; the row, when it cannot.
		if c, perr := p.srv.Peer(ctx, j.Node, tenant); perr == nil {
			if r, perr := c.Get(ctx, id); perr == nil {
				return r, nil
			}
		}
	}
	return resultOf(j), nil
}

// Logs is a page of job id's output: from this node's record when it holds
// the job, from the job's node while it runs there, else from the cluster
// once the job has ended.
func (p *Placer) Logs(ctx context.Context, tenant, id string, opts executor.LogsOptions) (executor.Logs, error) {
	if p.isLocal(id) {
		if err := p.own(tenant, id); err != nil {
			return executor.Logs{}, err
		}
		return p.ex.Logs(ctx, id, opts)
	}
	j, err := p.job(ctx, tenant, id)
	if err != nil {
		return executor.Logs{}, err
	}
	if !j.Ended() {
		if j.Node == "" || j.State != api.StateRunning {
			return executor.Logs{}, fmt.Errorf("%w: job %s waits in the queue and has no output yet", api.ErrOnAnotherNode, id)
		}
		c, err := p.srv.Peer(ctx, j.Node, tenant)
		if err == nil {
			var l executor.Logs
			if l, err = c.Logs(ctx, id, opts); err == nil || !isTransport(err) {
				return l, err
			}
		}
		return executor.Logs{}, fmt.Errorf("%w: job %s runs on node %s, which holds its output until it ends, and did not answer: %v",
			api.ErrOnAnotherNode, id, j.Node, err)
	}
	return p.output(ctx, j, opts)
}

// Follow delivers job id's output from opts.Offset to opts.Follow until the
// job has ended, and returns its Result: from this node's engine when it holds
// the job; live through the job's node while it runs there; else from the
// cluster once the job has ended. begin is called once the request is known
// to be good.
func (p *Placer) Follow(ctx context.Context, tenant, id string, opts executor.LogsOptions, begin func()) (executor.Result, error) {
	if p.isLocal(id) {
		if err := p.own(tenant, id); err != nil {
			return executor.Result{}, err
		}
		if _, err := executor.CheckLogs(opts); err != nil {
			return executor.Result{}, err
		}
		begin()
		if _, err := p.ex.Logs(ctx, id, opts); err != nil {
			return executor.Result{}, err
		}
		return p.Get(ctx, tenant, id)
	}
	if _, err := p.job(ctx, tenant, id); err != nil {
		return executor.Result{}, err
	}
	if _, err := executor.CheckLogs(opts); err != nil {
		return executor.Result{}, err
	}
	begin()
	if j, err := p.job(ctx, tenant, id); err == nil && j.State == api.StateRunning && j.Node != p.node.Self().ID {
		// Its node follows it live; the end comes from the cluster.
		if c, err := p.srv.Peer(ctx, j.Node, tenant); err == nil {
			if _, err := c.Logs(ctx, id, opts); err != nil {
				return executor.Result{}, err
			}
			return p.Get(ctx, tenant, id)
		}
	}
	j, err := p.awaitEnd(ctx, tenant, id)
	if err != nil {
		return executor.Result{}, err
	}
	for _, stream := range []string{"stdout", "stderr"} {
		if opts.Stream != "" && opts.Stream != "both" && opts.Stream != stream {
			continue
		}
		for offset := opts.Offset; ; {
			o, err := p.node.Cluster().Output(ctx, id, stream, offset, 1<<20)
			if err != nil {
				return executor.Result{}, p.node.Unavailable(err)
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

// Kill kills job id: this node's own at once; another node's through the
// cluster, which that node delivers within a claim round; a queued one is
// ended before it runs.
func (p *Placer) Kill(ctx context.Context, tenant, id, signal string, forceAfter time.Duration) (executor.KillResult, error) {
	if p.isLocal(id) {
		if err := p.own(tenant, id); err != nil {
			return executor.KillResult{}, err
		}
		return p.ex.Kill(ctx, id, signal, forceAfter)
	}
	sig, forceAfter, err := executor.CheckKill(signal, forceAfter)
	if err != nil {
		return executor.KillResult{}, err
	}
	before, err := p.job(ctx, tenant, id)
	if err != nil {
		return executor.KillResult{}, err
	}
	if before.Ended() {
		proc := processOf(before)
		return executor.KillResult{Process: proc, AlreadyEnded: true,
			Message: fmt.Sprintf("process %s had already ended (%s, exit code %d); nothing to kill", id, proc.State, *proc.ExitCode)}, nil
	}
	j, ended, err := p.node.Cluster().RequestKill(ctx, id, sig, forceAfter)
	if err != nil {
		return executor.KillResult{}, p.node.Unavailable(err)
	}
	if ended {
		auditEnded(p.srv, j)
	}
	proc := processOf(j)
	if j.Ended() {
		return executor.KillResult{Process: proc, Signal: sig, Message: fmt.Sprintf("process %s was waiting in the queue: it ended before it ran", id)}, nil
	}
	msg := fmt.Sprintf("asked node %s to send %s to process %s", j.Node, sig, id)
	if forceAfter > 0 {
		msg += fmt.Sprintf("; SIGKILL follows in %s if it is still running", forceAfter)
	}
	return executor.KillResult{Process: proc, Signal: sig, Message: msg}, nil
}

// Wait waits for job id to end: a job of this node on its engine, its end
// then read as Get reads it; another node's in the cluster.
func (p *Placer) Wait(ctx context.Context, tenant, id string) (executor.Result, error) {
	if p.isLocal(id) {
		if err := p.own(tenant, id); err != nil {
			return executor.Result{}, err
		}
		if _, err := p.ex.Wait(ctx, id); err != nil {
			r, _ := p.Get(context.WithoutCancel(ctx), tenant, id)
			return r, err
		}
		return p.Get(ctx, tenant, id)
	}
	j, err := p.awaitEnd(ctx, tenant, id)
	if err != nil {
		return resultOf(j), err
	}
	return resultOf(j), nil
}

// List lists the tenant's jobs (opts.Tenant) across the cluster, most recent
// first.
func (p *Placer) List(ctx context.Context, opts executor.ListOptions) (executor.ProcessList, error) {
	opts, err := executor.CheckList(opts, api.States)
	if err != nil {
		return executor.ProcessList{}, err
	}
	jobs, total, err := p.node.Cluster().List(ctx, cluster.Filter{Tenant: opts.Tenant, State: opts.State, Labels: opts.Labels, Limit: opts.Limit})
	if err != nil {
		return executor.ProcessList{}, p.node.Unavailable(err)
	}
	list := executor.ProcessList{Processes: make([]executor.Process, 0, len(jobs)), Total: total}
	for _, j := range jobs {
		list.Processes = append(list.Processes, processOf(j))
	}
	return list, nil
}

// Remove deletes an ended job: its row and output in the cluster, and this
// node's record when it holds one.
func (p *Placer) Remove(ctx context.Context, tenant, id string) error {
	j, err := p.job(ctx, tenant, id)
	if err != nil {
		return err
	}
	if !j.Ended() {
		return fmt.Errorf("process %s: %w", id, executor.ErrRunning)
	}
	if p.isLocal(id) {
		if err := p.ex.Remove(ctx, id); err != nil {
			return err
		}
	}
	return p.node.Unavailable(p.node.Cluster().Remove(ctx, id))
}

// job reads job id from the cluster for the tenant: another tenant's answers
// as an unknown id.
func (p *Placer) job(ctx context.Context, tenant, id string) (cluster.Job, error) {
	j, err := p.node.Cluster().Get(ctx, id)
	if errors.Is(err, cluster.ErrNotFound) || err == nil && tenant != anonymous && j.Tenant != tenant {
		return cluster.Job{}, notFound(id)
	}
	return j, p.node.Unavailable(err)
}

// isLocal tells whether this node holds job id's record: its own engine then
// answers for it, live.
func (p *Placer) isLocal(id string) bool {
	_, err := p.ex.Owner(id)
	return err == nil
}

// own fails with not_found unless this node's job id is the tenant's: another
// tenant's id answers exactly as an unknown one.
func (p *Placer) own(tenant, id string) error {
	owner, err := p.ex.Owner(id)
	if errors.Is(err, executor.ErrNotFound) || err == nil && tenant != anonymous && owner != tenant {
		return notFound(id)
	}
	return err
}

// notFound is the answer for an unknown id, and for another tenant's.
func notFound(id string) error {
	return fmt.Errorf("process %q: %w", id, executor.ErrNotFound)
}

// output is a page of an ended job's output, read from the cluster.
func (p *Placer) output(ctx context.Context, j cluster.Job, opts executor.LogsOptions) (executor.Logs, error) {
	opts, err := executor.CheckLogs(opts)
	if err != nil {
		return executor.Logs{}, err
	}
	l := executor.Logs{ID: j.ID, State: resultOf(j).State}
	for _, stream := range []string{"stdout", "stderr"} {
		if opts.Stream != "" && opts.Stream != "both" && opts.Stream != stream {
			continue
		}
		o, err := p.node.Cluster().Output(ctx, j.ID, stream, opts.Offset, opts.Limit)
		if err != nil {
			return executor.Logs{}, p.node.Unavailable(err)
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

// awaitEnd reads job id from the cluster at each notice about it, and every
// pollEvery, until it has ended or ctx ends.
func (p *Placer) awaitEnd(ctx context.Context, tenant, id string) (cluster.Job, error) {
	var last cluster.Job
	var changed <-chan struct{}
	defer func() { p.unwatch(id, changed) }()
	for {
		p.unwatch(id, changed)
		changed = p.watch(id)
		j, err := p.job(ctx, tenant, id)
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

// isTransport tells whether err is a failure to reach a peer rather than its
// answer.
func isTransport(err error) bool {
	var e *api.Error
	return !errors.As(err, &e)
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
