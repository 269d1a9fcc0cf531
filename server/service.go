package server

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/cluster/member"
	"github.com/airlock-sandbox/airlock/cluster/place"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/policy"
)

// Service is airlock's operations on behalf of tenants. The HTTP API and the MCP
// tools are thin layers over it, so that they agree by construction: the same
// checks, the same audit lines, the same metrics.
type Service struct {
	ex      *executor.Executor
	cfg     Config
	log     *slog.Logger
	audit   *auditLog
	metrics *metrics
	version string
	// node is the server's membership of a cluster; nil without a database.
	node *member.Node
	// jobs is where job operations go: localJobs, or clusterJobs on a node
	// of a cluster; chosen once, in NewService.
	jobs jobs
	// member is the node's part in a cluster, or noCluster; chosen with jobs.
	member membership
	// dial reaches another node (WithPeers); a cluster node needs it.
	dial func(address, token string) (Peer, error)

	// vault seals the secrets tenants store; nil without secrets_key_file.
	vault *vault

	tokens  []tokenHash
	mu      sync.Mutex
	tenants map[string]*tenantState

	// Trackers wait for background jobs to end, to audit and count them;
	// tracking holds the ids they wait for (under mu).
	trackCtx  context.Context
	stopTrack context.CancelFunc
	trackers  sync.WaitGroup
	tracking  map[string]bool
}

type tokenHash struct {
	sum    [sha256.Size]byte
	tenant string
	print  string
}

// tenantState is a tenant's limits and how many of its runs are active: foreground
// runs in flight plus background jobs running.
type tenantState struct {
	name   string
	limits Tenant
	caller executor.Caller // what the gate bounds the tenant's requests by

	mu     sync.Mutex
	active int
	// turns are the requests waiting for a place, first in first out; each is
	// closed when it may go.
	turns []chan struct{}
}

// Anonymous is the tenant of every request when the server has no tokens.
const Anonymous = ""

// NewService opens the audit log and starts tracking the background jobs that are
// already running (adopted by ex on start). A node of a cluster
// (cfg.Cluster.Database) needs WithPeers.
func NewService(ex *executor.Executor, cfg Config, log *slog.Logger, version string, opts ...Option) (*Service, error) {
	s := &Service{ex: ex, cfg: cfg, log: log, metrics: newMetrics(), version: version, tenants: map[string]*tenantState{},
		tracking: map[string]bool{}}
	for _, o := range opts {
		o(s)
	}
	if cfg.Cluster.Database != "" && s.dial == nil {
		return nil, errors.New("a node of a cluster reaches the other nodes: NewService needs WithPeers (cluster/peer.Dial)")
	}
	audit, err := openAudit(cfg.AuditLog)
	if err != nil {
		return nil, err
	}
	s.audit = audit
	if s.vault, err = openVault(&cfg); err != nil {
		audit.close()
		return nil, err
	}
	s.metrics.reg.MustRegister(newWorkspaceCollector(ex), newPoolCollector(ex))
	for _, t := range cfg.Tokens {
		s.tokens = append(s.tokens, tokenHash{sum: sha256.Sum256([]byte(t.Token)), tenant: t.Tenant, print: Fingerprint(t.Token)})
	}
	s.jobs, s.member = localJobs{s}, noCluster{}
	if cfg.Cluster.Database != "" { // the one choice of mode
		s.node, err = member.Join(cfg.memberConfig(), log, s.metrics.heartbeatFailures, place.Swept(placeServer{s}))
		if err != nil {
			audit.close()
			return nil, err
		}
		s.metrics.reg.MustRegister(newNodeCollector(s.node), s.metrics.heartbeatFailures)
		p := place.New(s.node, ex, placeServer{s}, log)
		s.jobs, s.member = clusterJobs{s, p}, clusterMember{s, p}
	}
	s.trackCtx, s.stopTrack = context.WithCancel(context.Background())
	running, err := ex.Running(context.Background())
	if err != nil {
		s.member.close()
		audit.close()
		return nil, err
	}
	tracked := map[string]bool{}
	for _, p := range running {
		t, err := s.tenant(p.Tenant)
		if err != nil {
			continue // a tenant the configuration no longer has: nobody can reach the job
		}
		t.mu.Lock()
		t.active++
		t.mu.Unlock()
		s.track(t, p.ID)
		tracked[p.ID] = true
	}
	s.settleEnded(tracked)
	s.trackers.Go(s.sweep)
	s.member.run()
	return s, nil
}

// sweepEvery is how often a server reconciles its data dir with the engine:
// sandboxes left by processes that died (a crashed CLI's, say) go, jobs no
// process watches are adopted, and expired records (KeepJobs) are forgotten.
const sweepEvery = 5 * time.Minute

// sweepOnce reconciles the data dir with the engine and forgets the jobs
// that ended longer ago than KeepJobs: this node's records, and in cluster mode
// the cluster's rows and output too (every node prunes; any one suffices).
func (s *Service) sweepOnce() {
	ctx, cancel := context.WithTimeout(s.trackCtx, 2*time.Minute)
	defer cancel()
	if err := s.ex.Reconcile(ctx); err != nil && ctx.Err() == nil {
		s.log.Warn("periodic reconcile", "err", err)
	}
	reaped, err := s.ex.ReapWorkspaces(ctx)
	if err != nil && ctx.Err() == nil {
		s.log.Warn("reap expired workspaces", "err", err)
	}
	for _, id := range reaped {
		s.write(auditEvent{Event: "workspace.delete", Workspace: id, Reason: "its ttl passed"})
		s.member.unbindWorkspace(ctx, id)
	}
	if s.cfg.KeepJobs > 0 {
		removed, err := s.ex.Prune(ctx, seconds(s.cfg.KeepJobs))
		if err != nil {
			s.log.Warn("forget expired jobs", "err", err)
		}
		if len(removed) > 0 {
			s.log.Info("forgot expired jobs", "count", len(removed))
		}
		s.member.prune(ctx, seconds(s.cfg.KeepJobs))
	}
}

// sweep runs sweepOnce every sweepEvery until the service closes.
func (s *Service) sweep() {
	tick := time.NewTicker(sweepEvery)
	defer tick.Stop()
	for {
		select {
		case <-s.trackCtx.Done():
			return
		case <-tick.C:
		}
		s.sweepOnce()
	}
}

// settleEnded writes the owed finish of every background job that ended while no
// server watched it, and of every job whose record is gone.
func (s *Service) settleEnded(tracked map[string]bool) {
	owed, err := s.audit.pending()
	if err != nil {
		s.log.Error("audit log: list owed finishes", "err", err)
	}
	for id, tenant := range owed {
		if tracked[id] {
			continue
		}
		r, err := s.ex.Get(context.Background(), id)
		switch {
		case errors.Is(err, executor.ErrNotFound):
			s.write(auditEvent{Event: "run.finish", Tenant: tenant, ID: id, Background: true,
				Error: "the job's record was removed before its end was audited"})
		case err != nil:
			s.log.Error("audit log: an owed finish", "id", id, "err", err)
			continue
		case r.State == executor.StateRunning:
			continue // its tenant is no longer configured: owed until a server tracks it
		default:
			s.write(auditEvent{Event: "run.finish", Tenant: r.Tenant, Background: true}.withResult(r))
		}
		s.settle(id)
	}
}

// Close stops tracking background jobs (they go on running) and closes the audit
// log. With killJobs, running jobs are killed first.
func (s *Service) Close(ctx context.Context, killJobs bool) error {
	if killJobs {
		running, err := s.ex.Running(ctx)
		if err == nil {
			for _, p := range running {
				if _, err := s.ex.Kill(ctx, p.ID, "SIGTERM", time.Second); err != nil {
					s.log.Warn("kill job at shutdown", "id", p.ID, "err", err)
				}
			}
			for _, p := range running {
				s.ex.Wait(ctx, p.ID)
			}
		}
	}
	s.stopTrack()
	s.member.stop() // before the trackers are waited for: the cluster's loops start trackers
	s.trackers.Wait()
	s.member.close()
	return s.audit.close()
}

// Authenticate maps a bearer token to its tenant, comparing it with every known
// token in constant time. With no tokens configured every caller is Anonymous.
func (s *Service) Authenticate(token string) (string, bool) {
	if len(s.tokens) == 0 {
		return Anonymous, true
	}
	sum := sha256.Sum256([]byte(token))
	tenant, found := "", 0
	for _, t := range s.tokens {
		if subtle.ConstantTimeCompare(sum[:], t.sum[:]) == 1 {
			tenant, found = t.tenant, 1
		}
	}
	return tenant, found == 1 && token != ""
}

// tenant returns the state of the named tenant, creating it on first use.
func (s *Service) tenant(name string) (*tenantState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tenants[name]; ok {
		return t, nil
	}
	limits, ok := s.cfg.Tenants[name]
	if !ok {
		limits = s.cfg.TenantDefaults
	}
	limits.MaxConcurrent = cmp.Or(limits.MaxConcurrent, s.cfg.TenantDefaults.MaxConcurrent)
	limits.MaxQueued = cmp.Or(limits.MaxQueued, s.cfg.TenantDefaults.MaxQueued)
	limits.MaxWorkspaces = cmp.Or(limits.MaxWorkspaces, s.cfg.TenantDefaults.MaxWorkspaces)
	limits.MaxWorkspaceBytes = cmp.Or(limits.MaxWorkspaceBytes, s.cfg.TenantDefaults.MaxWorkspaceBytes)
	if limits.AllowedImages == nil {
		limits.AllowedImages = s.cfg.TenantDefaults.AllowedImages
	}
	t := &tenantState{name: name, limits: limits, caller: executor.Caller{
		Tenant: name, MaxMemory: limits.MaxMemory, MaxTimeout: seconds(limits.MaxTimeout), Images: limits.AllowedImages,
		MaxWorkspaces: limits.MaxWorkspaces, MaxWorkspaceBytes: limits.MaxWorkspaceBytes,
	}}
	if limits.Egress != nil {
		t.caller.EgressAllowed, t.caller.EgressDefault = limits.Egress.Allowed, limits.Egress.Default
	}
	if limits.Policy != nil {
		p, err := policy.New(*limits.Policy)
		if err != nil {
			return nil, fmt.Errorf("tenant %q policy: %w", name, err)
		}
		t.caller.Policy = p
	}
	s.tenants[name] = t
	return t, nil
}

// Ready reports whether the engine answers.
func (s *Service) Ready(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	return s.ex.Ping(ctx)
}

// ClusterReady reports whether the cluster's database answers and this node's
// lease holds; it is nil for a server without a database.
func (s *Service) ClusterReady(ctx context.Context) error {
	return s.member.ready(ctx)
}

// Nodes lists the nodes of the server's cluster. Any authenticated caller may:
// the list names nodes and their addresses, which the callers of a cluster
// reach anyway, and nothing of any tenant's.
func (s *Service) Nodes(ctx context.Context) (api.NodeList, error) {
	return s.member.nodes(ctx)
}

// Drain stops (draining) or resumes new placements on node id, as the tenant
// asks: one of the admin tenants, or anyone on a server without tokens.
func (s *Service) Drain(ctx context.Context, tenant, id string, draining bool, via, remote string) (api.Node, error) {
	event := "node.drain"
	if !draining {
		event = "node.undrain"
	}
	n, err := s.member.drain(ctx, id, draining, func() error {
		if len(s.tokens) > 0 && !slices.Contains(s.cfg.Cluster.AdminTenants, tenant) {
			err := fmt.Errorf("%w: draining a node is for the operator: tenant %q is not one of the server's admin tenants (--admin-tenants)", api.ErrForbidden, tenant)
			s.write(auditEvent{Event: event, Tenant: tenant, Node: id, Via: via, Remote: remote, Error: err.Error()})
			return err
		}
		return nil
	})
	if err != nil {
		return n, err
	}
	s.write(auditEvent{Event: event, Tenant: tenant, Node: id, Via: via, Remote: remote})
	s.log.Info("node drain set", "node", id, "draining", draining, "tenant", tenant)
	return n, nil
}

// notFound is the answer for an unknown id, and for another tenant's.
func notFound(id string) error {
	return fmt.Errorf("process %q: %w", id, executor.ErrNotFound)
}

// own fails with not_found unless the job exists and belongs to t: another
// tenant's id answers exactly as an unknown one.
func (s *Service) own(t *tenantState, id string) error {
	owner, err := s.ex.Owner(id)
	if errors.Is(err, executor.ErrNotFound) || err == nil && t.name != Anonymous && owner != t.name {
		return notFound(id)
	}
	return err
}

// owned returns the tenant, once it has checked that the tenant owns job id.
func (s *Service) owned(tenant, id string) (*tenantState, error) {
	t, err := s.tenant(tenant)
	if err != nil {
		return nil, err
	}
	return t, s.own(t, id)
}

// reserve counts a new run against the tenant's concurrency limit. A tenant
// at its limit waits its turn, first in first out, up to wait (the request's
// queue_timeout): then the answer is api.ErrBusy, naming the wait. waiting,
// if set, is called when the run has to wait.
func (s *Service) reserve(ctx context.Context, t *tenantState, wait time.Duration, waiting func()) (release func(), err error) {
	t.mu.Lock()
	if t.active < t.limits.MaxConcurrent && len(t.turns) == 0 {
		t.active++
		t.mu.Unlock()
		return t.releaser(), nil
	}
	if t.limits.MaxQueued > 0 && len(t.turns) >= t.limits.MaxQueued {
		t.mu.Unlock()
		return nil, fmt.Errorf("%w: the tenant has %d requests waiting for a place, its max_queued; retry when one ends",
			api.ErrBusy, t.limits.MaxQueued)
	}
	turn := make(chan struct{})
	t.turns = append(t.turns, turn)
	t.mu.Unlock()
	if waiting != nil {
		waiting()
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-turn:
		return t.releaser(), nil // the releaser that closed it passed its place on
	case <-timer.C:
		err = fmt.Errorf("%w: the tenant had %d runs active, its limit, for the whole queue timeout of %s; retry when one ends",
			api.ErrBusy, t.limits.MaxConcurrent, wait)
	case <-ctx.Done():
		err = ctx.Err()
	}
	t.mu.Lock()
	i := slices.Index(t.turns, turn)
	if i >= 0 {
		t.turns = slices.Delete(t.turns, i, i+1)
	}
	t.mu.Unlock()
	if i < 0 { // its turn came as it gave up: the place goes to the next
		t.releaser()()
	}
	return nil, err
}

// releaser returns the release of one place: it passes the place to the first
// request waiting, or frees it.
func (t *tenantState) releaser() func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			t.mu.Lock()
			defer t.mu.Unlock()
			if len(t.turns) > 0 && t.active <= t.limits.MaxConcurrent {
				close(t.turns[0])
				t.turns = t.turns[1:]
				return
			}
			t.active--
		})
	}
}

// admit passes spec through the executor's gate as the tenant's; an invalid
// field is refused, and audited as asked.
func (s *Service) admit(t *tenantState, spec executor.Spec, via, remote string) (executor.Admitted, error) {
	caller, err := s.callerFor(t, spec.Secrets)
	if err != nil {
		return executor.Admitted{}, err
	}
	a, err := s.ex.Admit(spec, caller)
	if err != nil {
		ev := specEvent("refused", t.name, spec)
		ev.Via, ev.Remote, ev.Error = via, remote, err.Error()
		s.write(ev)
	}
	return a, err
}

// auditStart writes the start of an admitted run as it will run, allowed or
// refused by the policy.
func (s *Service) auditStart(a executor.Admitted, via, remote string) {
	ev := specEvent("run.start", a.Tenant(), a.Spec())
	ev.ID, ev.Via, ev.Remote, ev.Decision = a.ID(), via, remote, "allowed"
	if d := a.Decision(); !d.Allowed {
		ev.Event, ev.Decision, ev.Rule, ev.Reason = "refused", "blocked", d.Rule, d.Reason
	}
	s.write(ev)
}

// RunFollower is how the caller of a foreground run follows it, each part
// optional: Admitted is called with the spec as admitted (every default
// filled: its deadlines) before the run waits for room; Queued with the run's
// id if it has to wait; Begin with the run's id once the run has room and its
// start is audited, just before its sandbox is made (not for a refusal);
// Stdout and Stderr get the output as the command writes it.
type RunFollower struct {
	Admitted       func(executor.Spec)
	Queued         func(id string)
	Begin          func(id string)
	Stdout, Stderr io.Writer
}

// Run runs spec in the foreground and returns its Result. In cluster mode a run
// on a workspace that another node holds is run by that node, which the caller
// follows through this one (docs/cluster.md, "Jobs across nodes").
func (s *Service) Run(ctx context.Context, tenant string, spec executor.Spec, via, remote string, f RunFollower) (executor.Result, error) {
	t, err := s.tenant(tenant)
	if err != nil {
		return executor.Result{}, err
	}
	if spec.Background {
		return executor.Result{}, &executor.SpecError{Field: "background", Reason: "a foreground run; start a background job instead"}
	}
	if spec.Workspace != "" {
		if peer, err := s.member.holder(ctx, t.name, spec.Workspace); peer != nil || err != nil {
			if err != nil {
				return executor.Result{}, err
			}
			return forwardRun(ctx, peer, spec, f)
		}
	}
	a, err := s.admit(t, spec, via, remote)
	if err != nil {
		return executor.Result{}, err
	}
	if f.Admitted != nil {
		f.Admitted(a.Spec())
	}
	var res executor.Result
	var finish *auditEvent // the run's finish, once it has one
	waiting := func() {
		if f.Queued != nil {
			f.Queued(a.ID())
		}
	}
	ended, err := s.jobs.room(ctx, t, a, waiting)
	if err != nil {
		return executor.Result{}, err
	}
	defer func() { ended(res, finish) }()
	s.auditStart(a, via, remote)
	if !a.Decision().Allowed {
		res, err = s.ex.Execute(ctx, a) // blocked: the executor makes the Result, nothing runs
		s.metrics.ended("foreground", res)
		return res, err
	}
	if f.Begin != nil {
		f.Begin(a.ID())
	}
	gauge := s.metrics.running.WithLabelValues("foreground")
	gauge.Inc()
	res, err = s.ex.Execute(ctx, a, executor.WithLiveOutput(f.Stdout, f.Stderr))
	gauge.Dec()
	res.Node = s.jobs.node()
	ev := specEvent("run.finish", t.name, a.Spec()).withResult(res)
	ev.Via, ev.Remote = via, remote
	finish = &ev
	s.metrics.ended("foreground", res)
	return res, s.runError(ctx, err)
}

// runError decides whether the error of a run that failed in the engine is the
// server's (the engine no longer answers: the caller gets it) or only the run's,
// which its Result (state failed, exit 125, error) explains.
func (s *Service) runError(ctx context.Context, err error) error {
	if err == nil || !errors.Is(err, executor.ErrEngine) {
		return err
	}
	if s.Ready(ctx) != nil {
		return err
	}
	return nil
}

// Start starts spec as a background job.
func (s *Service) Start(ctx context.Context, tenant string, spec executor.Spec, via, remote string) (executor.Process, error) {
	t, err := s.tenant(tenant)
	if err != nil {
		return executor.Process{}, err
	}
	spec.Background = true
	a, err := s.admit(t, spec, via, remote)
	if err != nil {
		return executor.Process{}, err
	}
	return s.jobs.start(ctx, t, a, via, remote)
}

// trackStarted hands the admission of the tenant's job that started to its
// tracker, which audits its end: here, or, for a job the cluster placed here,
// where its end is recorded in the cluster (jobs.recordEnd).
func (s *Service) trackStarted(tenant, id string, release func()) {
	s.metrics.running.WithLabelValues("background").Inc()
	s.mu.Lock()
	s.tracking[id] = true
	s.mu.Unlock()
	s.trackers.Add(1)
	go func() {
		defer s.trackers.Done()
		defer func() {
			s.mu.Lock()
			delete(s.tracking, id)
			s.mu.Unlock()
		}()
		res, err := s.ex.Wait(s.trackCtx, id)
		release()
		s.metrics.running.WithLabelValues("background").Dec()
		if err != nil {
			return // the server is stopping; the job goes on and the next one tracks it
		}
		s.metrics.ended("background", res)
		if s.jobs.recordEnd(tenant, id, res) {
			return
		}
		ev := auditEvent{Event: "run.finish", Tenant: tenant, Background: true}.withResult(res)
		s.write(ev)
		s.settle(id)
	}()
}

// tracked tells whether a tracker waits for job id.
func (s *Service) tracked(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tracking[id]
}

// track follows a job adopted at start-up, already counted as active.
func (s *Service) track(t *tenantState, id string) {
	s.trackStarted(t.name, id, t.releaser())
}

// Get reports a background job. It reads the record once and checks the owner
// on the answer: the monitor is the call agents poll.
func (s *Service) Get(ctx context.Context, tenant, id string) (executor.Result, error) {
	return s.jobs.get(ctx, tenant, id)
}

// Logs returns or follows a background job's output.
func (s *Service) Logs(ctx context.Context, tenant, id string, opts executor.LogsOptions) (executor.Logs, error) {
	return s.jobs.logs(ctx, tenant, id, opts)
}

// Follow delivers a job's output from opts.Offset to opts.Follow as the job
// writes it, until the job has ended and every byte is delivered, and returns
// the job's Result. begin is called once the request is known to be good (the
// job is the tenant's, the options valid), before the first chunk, so that a
// refusal can still be an ordinary answer.
func (s *Service) Follow(ctx context.Context, tenant, id string, opts executor.LogsOptions, begin func()) (executor.Result, error) {
	return s.jobs.follow(ctx, tenant, id, opts, begin)
}

// Kill signals a background job, with escalation to SIGKILL after forceAfter.
func (s *Service) Kill(ctx context.Context, tenant, id, signal string, forceAfter time.Duration, via, remote string) (executor.KillResult, error) {
	t, err := s.tenant(tenant)
	if err != nil {
		return executor.KillResult{}, err
	}
	k, err := s.jobs.kill(ctx, t, id, signal, forceAfter)
	if err != nil {
		return k, err
	}
	ev := auditEvent{Event: "kill", Tenant: t.name, ID: id, Via: via, Remote: remote, Signal: k.Signal, State: k.Process.State}
	if k.AlreadyEnded {
		ev.Reason = "already ended"
	}
	s.write(ev)
	return k, nil
}

// Wait waits up to timeout for a background job to end and returns its Result:
// the final one, or the current one (state running) when the wait timed out.
func (s *Service) Wait(ctx context.Context, tenant, id string, timeout time.Duration) (executor.Result, error) {
	wctx, cancel := context.WithTimeoutCause(ctx, timeout, errWaitTimeout)
	defer cancel()
	res, err := s.jobs.wait(wctx, tenant, id)
	if err != nil && errors.Is(context.Cause(wctx), errWaitTimeout) && ctx.Err() == nil {
		return res, nil
	}
	return res, err
}

var errWaitTimeout = errors.New("wait timed out")

// List lists the tenant's background jobs.
func (s *Service) List(ctx context.Context, tenant string, opts executor.ListOptions) (executor.ProcessList, error) {
	t, err := s.tenant(tenant)
	if err != nil {
		return executor.ProcessList{}, err
	}
	opts.Tenant = t.name
	return s.jobs.list(ctx, opts)
}

// Remove deletes an ended job's record and logs.
func (s *Service) Remove(ctx context.Context, tenant, id string) error {
	return s.jobs.remove(ctx, tenant, id)
}

// CheckResultOf is a policy decision as the API answers it.
func CheckResultOf(d policy.Decision) api.CheckResult {
	return api.CheckResult{Blocked: !d.Allowed, Allowed: d.Allowed, Rule: d.Rule, Reason: d.Reason, Match: d.Match, Mode: string(d.Mode)}
}

// Check judges a command with the tenant's policy and runs nothing.
func (s *Service) Check(ctx context.Context, tenant string, req api.CheckRequest, via, remote string) (api.CheckResult, error) {
	t, err := s.tenant(tenant)
	if err != nil {
		return api.CheckResult{}, err
	}
	// The command is bounded as a run's would be, before the policy parses it.
	d, err := s.ex.CheckCommand(t.caller, req.Command, req.Argv)
	if err != nil {
		return api.CheckResult{}, err
	}
	ev := auditEvent{Event: "check", Tenant: t.name, Command: req.Command, Argv: req.Argv, Via: via, Remote: remote, Decision: "allowed"}
	if !d.Allowed {
		ev.Decision, ev.Rule, ev.Reason = "blocked", d.Rule, d.Reason
	}
	s.write(ev)
	return CheckResultOf(d), nil
}

// authFailed audits a request refused for its token.
func (s *Service) authFailed(token, via, remote, reason string) {
	s.metrics.authFailures.Inc()
	ev := auditEvent{Event: "auth.failed", Via: via, Remote: remote, Reason: reason}
	if token != "" {
		ev.Token = Fingerprint(token)
	}
	s.write(ev)
}

func (s *Service) write(ev auditEvent) {
	if err := s.audit.write(ev); err != nil {
		s.log.Error("write audit log", "err", err)
	}
}

// pend records that the finish of background job id is owed to the audit log.
func (s *Service) pend(id, tenant string) {
	if err := s.audit.pend(id, tenant); err != nil {
		s.log.Error("audit log: record an owed finish", "id", id, "err", err)
	}
}

// settle records that the finish of job id is written.
func (s *Service) settle(id string) {
	if err := s.audit.settle(id); err != nil {
		s.log.Error("audit log: settle an owed finish", "id", id, "err", err)
	}
}
