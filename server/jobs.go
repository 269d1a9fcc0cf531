package server

import (
	"context"
	"errors"
	"time"

	"github.com/airlock-sandbox/airlock/cluster"
	"github.com/airlock-sandbox/airlock/cluster/place"
	"github.com/airlock-sandbox/airlock/executor"
)

// jobs is where the Service's job operations go once it has resolved the
// tenant and, for a run or a start, admitted the request: this host's
// executor (localJobs), or the cluster's queue and rows with this node's
// engine for its own jobs (clusterJobs, cluster/place). NewService chooses one,
// once; the Service's operations ask no other question about the mode.
type jobs interface {
	// room waits for the place of an admitted foreground run, up to its
	// queue_timeout, calling waiting if it has to wait; ended gives the
	// place back and audits the run's finish, if any.
	room(ctx context.Context, t *tenantState, a executor.Admitted, waiting func()) (ended func(executor.Result, *auditEvent), err error)
	// start starts an admitted background job, auditing its start.
	start(ctx context.Context, t *tenantState, a executor.Admitted, via, remote string) (executor.Process, error)
	// recordEnd records and audits the end of job id where its mode keeps
	// ends, and reports whether it did; false leaves it to the local audit.
	recordEnd(tenant, id string, res executor.Result) bool
	get(ctx context.Context, tenant, id string) (executor.Result, error)
	logs(ctx context.Context, tenant, id string, opts executor.LogsOptions) (executor.Logs, error)
	follow(ctx context.Context, tenant, id string, opts executor.LogsOptions, begin func()) (executor.Result, error)
	kill(ctx context.Context, t *tenantState, id, signal string, forceAfter time.Duration) (executor.KillResult, error)
	wait(ctx context.Context, tenant, id string) (executor.Result, error)
	list(ctx context.Context, opts executor.ListOptions) (executor.ProcessList, error)
	remove(ctx context.Context, tenant, id string) error
	// node is the id of the node runs here run on; "" off a cluster.
	node() string
}

// localJobs are the jobs of one host: its executor, its data dir, the
// tenants' places counted in this process.
type localJobs struct{ s *Service }

func (l localJobs) room(ctx context.Context, t *tenantState, a executor.Admitted, waiting func()) (func(executor.Result, *auditEvent), error) {
	release, err := l.s.reserve(ctx, t, a.Spec().QueueTimeout.Duration(), waiting)
	if err != nil {
		return nil, err
	}
	return func(_ executor.Result, finish *auditEvent) {
		release()
		if finish != nil {
			l.s.write(*finish)
		}
	}, nil
}

func (l localJobs) start(ctx context.Context, t *tenantState, a executor.Admitted, via, remote string) (executor.Process, error) {
	s := l.s
	release, err := s.reserve(ctx, t, a.Spec().QueueTimeout.Duration(), nil)
	if err != nil {
		return executor.Process{}, err
	}
	s.auditStart(a, via, remote)
	allowed := a.Decision().Allowed
	if allowed {
		s.pend(a.ID(), t.name) // owed from the moment the start is written
	}
	p, err := s.ex.Launch(ctx, a)
	if err != nil || !allowed || p.State != executor.StateRunning {
		release()
		if p.ID != "" {
			s.metrics.runs.WithLabelValues("background", string(p.State)).Inc()
			if p.State == executor.StateBlocked {
				s.metrics.refusals.WithLabelValues(p.BlockRule).Inc()
			}
		}
		if allowed { // it never ran: its finish is now
			ev := specEvent("run.finish", t.name, a.Spec())
			ev.ID, ev.State, ev.Via = a.ID(), p.State, via
			if err != nil {
				ev.Error = err.Error()
			}
			s.write(ev)
			s.settle(a.ID())
		}
		if err != nil && p.ID != "" {
			return p, s.runError(ctx, err)
		}
		return p, err
	}
	s.trackStarted(t.name, p.ID, release)
	return p, nil
}

func (localJobs) node() string { return "" }

func (localJobs) recordEnd(string, string, executor.Result) bool { return false }

func (l localJobs) get(ctx context.Context, tenant, id string) (executor.Result, error) {
	r, err := l.s.ex.Get(ctx, id)
	if errors.Is(err, executor.ErrNotFound) || err == nil && tenant != Anonymous && r.Tenant != tenant {
		return executor.Result{}, notFound(id)
	}
	return r, err
}

func (l localJobs) logs(ctx context.Context, tenant, id string, opts executor.LogsOptions) (executor.Logs, error) {
	if _, err := l.s.owned(tenant, id); err != nil {
		return executor.Logs{}, err
	}
	return l.s.ex.Logs(ctx, id, opts)
}

func (l localJobs) follow(ctx context.Context, tenant, id string, opts executor.LogsOptions, begin func()) (executor.Result, error) {
	if _, err := l.s.owned(tenant, id); err != nil {
		return executor.Result{}, err
	}
	if _, err := executor.CheckLogs(opts); err != nil {
		return executor.Result{}, err
	}
	begin()
	if _, err := l.s.ex.Logs(ctx, id, opts); err != nil {
		return executor.Result{}, err
	}
	return l.s.Get(ctx, tenant, id)
}

func (l localJobs) kill(ctx context.Context, t *tenantState, id, signal string, forceAfter time.Duration) (executor.KillResult, error) {
	if err := l.s.own(t, id); err != nil {
		return executor.KillResult{}, err
	}
	return l.s.ex.Kill(ctx, id, signal, forceAfter)
}

func (l localJobs) wait(ctx context.Context, tenant, id string) (executor.Result, error) {
	if _, err := l.s.owned(tenant, id); err != nil {
		return executor.Result{}, err
	}
	return l.s.ex.Wait(ctx, id)
}

func (l localJobs) list(ctx context.Context, opts executor.ListOptions) (executor.ProcessList, error) {
	return l.s.ex.List(ctx, opts)
}

func (l localJobs) remove(ctx context.Context, tenant, id string) error {
	if _, err := l.s.owned(tenant, id); err != nil {
		return err
	}
	return l.s.ex.Remove(ctx, id)
}

// clusterJobs are the jobs of a node of a cluster (cluster/place): admitted
// here, queued in the cluster, run by any node; this node's own jobs answer
// from its engine, the others from the database or their node.
type clusterJobs struct {
	s *Service
	p *place.Placer
}

func (c clusterJobs) room(ctx context.Context, t *tenantState, a executor.Admitted, waiting func()) (func(executor.Result, *auditEvent), error) {
	if !a.Decision().Allowed { // refused: nothing runs, and it takes no node's slot
		return localJobs{c.s}.room(ctx, t, a, waiting)
	}
	ended, err := c.p.Room(ctx, t.placeTenant(), a, waiting) // a slot on this node, by the cluster's queue
	if err != nil {
		return nil, err
	}
	return func(res executor.Result, finish *auditEvent) {
		var audit func()
		if finish != nil {
			audit = func() { c.s.write(*finish) }
		}
		ended(res, audit)
	}, nil
}

func (c clusterJobs) start(ctx context.Context, t *tenantState, a executor.Admitted, via, remote string) (executor.Process, error) {
	return c.p.Start(ctx, t.placeTenant(), a, func() { c.s.auditStart(a, via, remote) })
}

func (c clusterJobs) node() string { return c.p.Node() }

func (c clusterJobs) recordEnd(tenant, id string, res executor.Result) bool {
	return c.p.Ended(tenant, id, res)
}

func (c clusterJobs) get(ctx context.Context, tenant, id string) (executor.Result, error) {
	return c.p.Get(ctx, tenant, id)
}

func (c clusterJobs) logs(ctx context.Context, tenant, id string, opts executor.LogsOptions) (executor.Logs, error) {
	return c.p.Logs(ctx, tenant, id, opts)
}

func (c clusterJobs) follow(ctx context.Context, tenant, id string, opts executor.LogsOptions, begin func()) (executor.Result, error) {
	return c.p.Follow(ctx, tenant, id, opts, begin)
}

func (c clusterJobs) kill(ctx context.Context, t *tenantState, id, signal string, forceAfter time.Duration) (executor.KillResult, error) {
	return c.p.Kill(ctx, t.name, id, signal, forceAfter)
}

func (c clusterJobs) wait(ctx context.Context, tenant, id string) (executor.Result, error) {
	return c.p.Wait(ctx, tenant, id)
}

func (c clusterJobs) list(ctx context.Context, opts executor.ListOptions) (executor.ProcessList, error) {
	return c.p.List(ctx, opts)
}

func (c clusterJobs) remove(ctx context.Context, tenant, id string) error {
	return c.p.Remove(ctx, tenant, id)
}

// placeTenant is the tenant as the cluster counts it: its max_concurrent is its
// cluster-wide max_running.
func (t *tenantState) placeTenant() place.Tenant {
	return place.Tenant{Name: t.name, MaxRunning: t.limits.MaxConcurrent, MaxQueued: t.limits.MaxQueued}
}

// placeServer is the Service as cluster/place sees it: the tenants, the
// audit log, the metrics and the trackers stay the Service's.
type placeServer struct{ s *Service }

func (h placeServer) Caller(tenant string, secrets []string) (executor.Caller, error) {
	t, err := h.s.tenant(tenant)
	if err != nil {
		return executor.Caller{}, err
	}
	return h.s.callerFor(t, secrets)
}

func (h placeServer) SealKey(tenant string) ([]byte, error) { return h.s.sealKey(tenant) }

func (h placeServer) Peer(ctx context.Context, node, tenant string) (place.Peer, error) {
	p, err := h.s.peer(ctx, node, tenant)
	if err != nil {
		return nil, err
	}
	return p, nil
}

func (h placeServer) Track(tenant, id string) { h.s.trackStarted(tenant, id, func() {}) }
func (h placeServer) Tracked(id string) bool  { return h.s.tracked(id) }

func (h placeServer) Blocked(p executor.Process) {
	h.s.metrics.runs.WithLabelValues("background", string(p.State)).Inc()
	h.s.metrics.refusals.WithLabelValues(p.BlockRule).Inc()
}

func (h placeServer) Finished(tenant string, background bool, res executor.Result) {
	h.s.write(auditEvent{Event: "run.finish", Tenant: tenant, Background: background, Via: "cluster"}.withResult(res))
}

func (h placeServer) Abandoned(tenant, id string, end cluster.End) {
	h.s.write(auditEvent{Event: "run.finish", Tenant: tenant, ID: id, State: end.State, ExitCode: &end.ExitCode,
		Error: end.Reason, Via: "cluster"})
}
