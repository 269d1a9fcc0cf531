package executor

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/internal/initproto"
	"github.com/airlock-sandbox/airlock/store"
)

// Background jobs (docs/DESIGN.md, "Jobs and crashes"). A job is a detached container whose output the
// engine keeps in a bounded log; whichever airlock process holds the job's lock
// copies that log into the data dir, enforces the job's deadlines, and records how
// it ended. The record and the log files are the truth: any process on the same
// data dir can answer for any job, and a new process takes over the jobs of one
// that died, from where it stopped.

// Labels of background containers, besides LabelManaged and LabelID.
const (
	// LabelStore names the data dir (store id) that owns the container.
	LabelStore = labelPrefix + "store"
	// LabelDeadline is when a foreground run's container is surely abandoned if it
	// still exists (RFC 3339): its owner would have removed it by then.
	LabelDeadline = labelPrefix + "deadline"
	// LabelNode and LabelAttempt are, in cluster mode, the node a job was
	// placed on and the attempt it runs as: its fence (docs/cluster.md).
	LabelNode    = labelPrefix + "node"
	LabelAttempt = labelPrefix + "attempt"
)

// job is the stored record of a background job.
type job struct {
	ID          string            `json:"id"`
	State       State             `json:"state"`
	Command     string            `json:"command,omitempty"`
	Argv        []string          `json:"argv,omitempty"`
	EnvNames    []string          `json:"env_names,omitempty"` // values are never stored
	Image       string            `json:"image"`
	Runtime     string            `json:"runtime"`
	Labels      map[string]string `json:"labels,omitempty"`
	Workspace   string            `json:"workspace,omitempty"`
	Tenant      string            `json:"tenant,omitempty"`
	MaxOutput   int64             `json:"max_output"`
	TailLines   int               `json:"tail_lines"`
	LogCap      int64             `json:"log_cap"`
	CreatedAt   time.Time         `json:"created_at"`
	Deadline    time.Time         `json:"deadline,omitzero"` // from the timeout; zero: none
	ContainerID string            `json:"container_id,omitempty"`
	// Marker is set when airlock's init runs the job: the secret that starts
	// the init's report in the job's stdout log (docs/DESIGN.md, "The init").
	Marker string `json:"marker,omitempty"`
	// Placement is set for a job a cluster placed on this node.
	Placement *Placement `json:"placement,omitempty"`

	StartedAt   time.Time `json:"started_at"`
	FinishedAt  time.Time `json:"finished_at,omitzero"`
	ExitCode    int       `json:"exit_code"`
	Signal      string    `json:"signal,omitempty"`
	TimedOut    bool      `json:"timed_out,omitempty"`
	OOMKilled   bool      `json:"oom_killed,omitempty"`
	BlockRule   string    `json:"block_rule,omitempty"`
	BlockReason string    `json:"block_reason,omitempty"`
	Error       string    `json:"error,omitempty"`

	Kill  *killOrder    `json:"kill,omitempty"`
	Usage ResourceUsage `json:"usage"`
	// Egress is what the job's connections through airlock's proxy did,
	// written when the job ends or its airlock process stops.
	Egress []api.EgressEntry `json:"egress,omitempty"`
	Log    logCursor         `json:"log"`
}

// killOrder is a request to end a running job, kept in the record so that
// whichever process watches the job carries it out, escalation included.
type killOrder struct {
	Signal  string    `json:"signal"`
	Timeout bool      `json:"timeout,omitempty"` // the job's own deadline, not a caller
	At      time.Time `json:"at"`
	ForceAt time.Time `json:"force_at,omitzero"` // SIGKILL then; zero: never
	Forced  bool      `json:"forced,omitempty"`
	// BackstopAt is when the engine's SIGKILL follows the SIGKILL airlock's
	// init was asked to carry out (see killSignal), if the job still runs.
	BackstopAt   time.Time `json:"backstop_at,omitzero"`
	BackstopDone bool      `json:"backstop_done,omitempty"`
}

// killSignal is how sig reaches the job's container. Under airlock's init a
// SIGKILL goes to the init as initproto.ForceKill: it ends every process with
// SIGKILL and still reports, where the engine's SIGKILL would end the init
// and the report with it. The engine's own SIGKILL is the backstop.
func (j *job) killSignal(sig string) string {
	if j.Marker != "" && sig == "SIGKILL" {
		return strconv.Itoa(initproto.ForceKill)
	}
	return sig
}

// signal sends sig to job j's container (by id or name) as killSignal says. A
// runtime that refuses the init's ForceKill (gVisor's runsc knows no real-time
// signals) gets the engine's SIGKILL instead: the job still ends, without the
// init's report.
func (e *Executor) signal(ctx context.Context, container string, j *job, sig string) error {
	s := j.killSignal(sig)
	err := e.eng.Kill(ctx, container, s)
	if err != nil && s != sig {
		err = e.eng.Kill(ctx, container, sig)
	}
	return err
}

// backstop is when the engine's SIGKILL follows one sent through the init.
func (j *job) backstop(now time.Time) time.Time {
	if j.Marker == "" {
		return time.Time{}
	}
	return now.Add(jobInitBackstop)
}

// jobInitBackstop is how long the host gives a job's init to end it, at a
// SIGKILL or past its deadline's grace, before the engine's SIGKILL. It is
// longer than a run's (initBackstop): the init may still be passing on what
// the command wrote before it died, through the engine's log, which takes it
// one line at a time (a few thousand lines a second on a loaded engine).
const jobInitBackstop = 30 * time.Second

func (j *job) ended() bool { return j.State != StateRunning }

// outcome is the job's record as callers see it, without its output: the one
// conversion from a record (Result and Process are both made from it).
func (j *job) outcome() Result {
	r := Result{
		ID: j.ID, State: j.State, ExitCode: j.ExitCode, Signal: j.Signal, TimedOut: j.TimedOut,
		OOMKilled: j.OOMKilled, Blocked: j.State == StateBlocked, BlockReason: j.BlockReason, BlockRule: j.BlockRule,
		Error: j.Error, StartedAt: j.StartedAt, FinishedAt: j.FinishedAt, ResourceUsage: j.Usage,
		ContainerID: j.ContainerID, Image: j.Image, Runtime: j.Runtime, Labels: j.Labels, Workspace: j.Workspace, Tenant: j.Tenant,
		StdoutBytes: j.Log.Total[stdoutIdx], StderrBytes: j.Log.Total[stderrIdx], Egress: j.Egress,
	}
	if j.Placement != nil {
		r.Node = j.Placement.Node
	}
	r.Success = r.State == StateCompleted && r.ExitCode == 0
	if j.ended() {
		r.DurationMS = j.FinishedAt.Sub(j.StartedAt).Milliseconds()
	} else {
		r.DurationMS = time.Since(j.StartedAt).Milliseconds()
	}
	return r
}

// process is the job as Start, List and Kill report it.
func (j *job) process() Process { return j.outcome().Process(j.Command, j.Argv) }

// finish records how the job ended.
func (j *job) finish(st State, exitCode int, reason string) {
	j.State, j.ExitCode, j.Error = st, exitCode, reason
	if j.FinishedAt.IsZero() {
		j.FinishedAt = time.Now().UTC()
	}
}

// Start runs spec as a background job and returns as soon as its container has
// started. The job has no timeout unless spec gives one (at most
// Config.MaxBackgroundTimeout). A command the policy refuses is recorded and
// returned with state blocked; nothing runs.
func (e *Executor) Start(ctx context.Context, spec Spec) (Process, error) {
	spec.Background = true
	a, err := e.Admit(spec, Caller{})
	if err != nil {
		return Process{}, err
	}
	return e.Launch(ctx, a)
}

// Launch starts an admitted background job, as Start does (which is Admit then
// Launch). A request the policy refused is recorded and returned blocked.
func (e *Executor) Launch(ctx context.Context, a Admitted) (Process, error) {
	s := a.spec
	if !s.Background {
		return Process{}, &SpecError{Field: "background", Reason: "a foreground run is run with Execute"}
	}
	now := time.Now().UTC()
	j := &job{
		ID: a.id, State: StateRunning, Command: s.Command, Argv: s.Argv,
		EnvNames: slices.Sorted(maps.Keys(s.Env)), Image: s.Image, Runtime: s.Runtime, Labels: s.Labels, Workspace: s.Workspace, Tenant: a.caller.Tenant,
		MaxOutput: s.MaxOutput, TailLines: s.TailLines, LogCap: e.cfg.LogCap, CreatedAt: now, StartedAt: now,
		Placement: a.placement,
	}
	// The lock comes before the record: a record of a running job whose lock is
	// free has lost its process, and reconcile may act on it.
	unlock, _, err := e.store.TryLock(j.ID)
	if err != nil {
		return Process{}, fmt.Errorf("%w: %v", ErrStore, err)
	}
	locked := true
	defer func() {
		if locked {
			unlock()
		}
	}()

	if d := a.decision; !d.Allowed {
		j.finish(StateBlocked, ExitBlocked, "")
		j.BlockRule, j.BlockReason = d.Rule, blockReason(d)
		j.FinishedAt = j.StartedAt
		return j.process(), e.put(j)
	}
	if err := e.put(j); err != nil {
		return Process{}, err
	}
	fail := func(err error) (Process, error) {
		j.finish(StateFailed, ExitFailed, err.Error())
		if perr := e.put(j); perr != nil {
			e.cfg.Logger.Error("record failed start", "id", j.ID, "err", perr)
		}
		return j.process(), err
	}
	if err := e.checkRuntime(ctx, s.Runtime); err != nil {
		return fail(err)
	}
	secrets, err := e.bindSecrets(a)
	if err != nil {
		return fail(err)
	}
	s.Env = secrets.env(s.Env, e.trustPEM(s) != "")
	// The engine keeps the job's output; its container carries the store's label
	// and no deadline: it outlives this process, and reconcile knows it as a job.
	plan := e.plan(j.ID, s)
	if s.Workspace != "" {
		if err := e.mountWorkspace(ctx, &plan, s.Workspace, a.caller); err != nil {
			return fail(err)
		}
	}
	plan.LogCap = j.LogCap
	plan.Labels[LabelStore] = e.store.ID()
	delete(plan.Labels, LabelDeadline)
	if p := a.placement; p != nil {
		plan.Labels[LabelNode], plan.Labels[LabelAttempt] = p.Node, strconv.Itoa(p.Attempt)
	}
	// airlock's init runs the job: it keeps the deadline and counts and
	// measures exactly; its request goes first on the job's stdin.
	if plan.InitVolume, plan.EtcDir, err = e.initVolume(ctx); err != nil {
		return fail(err)
	}
	var stdin string
	if plan.InitVolume != "" {
		j.Marker = "airlock-report-" + NewID() + NewID() + " "
		plan.OpenStdin = true
		req := e.initRequest(s, plan.Cmd, plan.Env, plan.Workdir)
		req.Keep, req.Marker = j.LogCap, j.Marker
		line, _ := json.Marshal(req)
		stdin = string(line) + "\n"
		if err := e.put(j); err != nil { // the marker is recorded before the report can come
			return fail(err)
		}
	}
	if s.Stdin != nil {
		stdin += *s.Stdin
	}
	var link *relayLink
	if len(s.Egress) > 0 {
		if link, plan.RelayDir, err = e.listenRelay(ctx, plan.Name, s.Runtime); err != nil {
			return fail(err)
		}
	}
	sb, err := e.launch(ctx, plan, false)
	if err != nil {
		if link != nil {
			link.close()
		}
		if sb != nil {
			e.discard(context.WithoutCancel(ctx), sb.containerID)
		}
		return fail(err)
	}
	var eg *egressRun
	if len(s.Egress) > 0 {
		// The relay listens before the init reads its request.
		if eg, err = e.startEgress(ctx, sb.containerID, s.User, j.ID, s.Egress, link, secrets); err != nil {
			if sb.att != nil {
				sb.att.Close()
			}
			e.discard(context.WithoutCancel(ctx), sb.containerID)
			return fail(err)
		}
	}
	if sb.att != nil {
		e.feed(sb.att, stdin)
	}
	j.ContainerID, j.StartedAt = sb.containerID, time.Now().UTC()
	if s.Timeout > 0 {
		j.Deadline = j.StartedAt.Add(s.Timeout.Duration())
	}
	// An update, not a put: a kill may have been ordered since the record was
	// first written (the job is listed from then on), and it must hold.
	started, err := e.update(j.ID, func(r *job) error {
		r.ContainerID, r.StartedAt, r.Deadline = j.ContainerID, j.StartedAt, j.Deadline
		return nil
	})
	if err != nil {
		// The container runs and carries the job's labels: the next reconcile adopts it.
		e.cfg.Logger.Error("record started job", "id", j.ID, "err", err)
	} else if j = started; j.Kill != nil {
		// Ordered while the container was being made: its signal may have found
		// no container yet, so it goes again.
		if err := e.signal(ctx, containerRef(j), j, j.Kill.Signal); err != nil {
			e.cfg.Logger.Warn("send a kill ordered while the job started", "id", j.ID, "err", err)
		}
	}
	locked = false
	e.watch(j, unlock, eg, secrets, false)
	return j.process(), nil
}

// feed writes stdin to a started job's process through att, in the
// background: the job reads it at its own pace. Close waits for every feed to
// end (all written, or the process gone), at most feedGrace, so that a CLI that
// started a job with a large stdin delivers all of it before it exits.
func (e *Executor) feed(att *attachment, stdin string) {
	e.feedMu.Lock()
	e.feeds[att] = true
	e.feedMu.Unlock()
	e.feeding.Go(func() {
		// The output comes through the engine's log; this connection only feeds stdin.
		var drained sync.WaitGroup
		drained.Go(func() { att.CopyOutput(io.Discard, io.Discard) })
		io.WriteString(att.Stdin, stdin) // fails only when the process is gone
		att.CloseStdin()
		att.Close()
		drained.Wait()
		e.feedMu.Lock()
		delete(e.feeds, att)
		e.feedMu.Unlock()
	})
}

// feedGrace bounds how long Close waits for jobs to read their stdin.
const feedGrace = time.Minute

// stopFeeds waits for the feeds of stdin, and past feedGrace cuts them.
func (e *Executor) stopFeeds() {
	done := make(chan struct{})
	go func() { e.feeding.Wait(); close(done) }()
	select {
	case <-done:
		return
	case <-time.After(feedGrace):
	}
	e.feedMu.Lock()
	for att := range e.feeds {
		e.cfg.Logger.Warn("a job did not read all of its stdin before airlock closed; the rest is dropped")
		att.Close()
	}
	e.feedMu.Unlock()
	<-done
}

// Get reports a job: its state, its exit code once it has ended, its runtime so
// far, its resource usage, and its output as far as a Result holds it (the first
// max_output bytes of each stream, and the tails).
func (e *Executor) Get(ctx context.Context, id string) (Result, error) {
	j, err := e.job(id)
	if err != nil {
		return Result{}, err
	}
	return e.result(e.settle(ctx, j))
}

// Wait blocks until the job has ended or ctx ends, and returns its Result. When
// ctx ends first, the Result is the job's current one, with ctx's error.
func (e *Executor) Wait(ctx context.Context, id string) (Result, error) {
	for {
		j, err := e.job(id)
		if err != nil {
			return Result{}, err
		}
		if j.ended() {
			e.awaitRelease(ctx, id)
			return e.result(j)
		}
		e.adopt(j)
		select {
		case <-e.changed(id):
		case <-ctx.Done():
			r, err := e.result(j)
			if err != nil {
				return r, err
			}
			return r, fmt.Errorf("wait for %s: %w", id, context.Cause(ctx))
		}
	}
}

// awaitRelease waits for the job's watcher, wherever it runs, to let go of the
// job: it records the end first and removes the container after, so that a
// crash between the two loses no outcome. Wait returns after both.
func (e *Executor) awaitRelease(ctx context.Context, id string) {
	for {
		unlock, ok, err := e.store.TryLock(id)
		if err != nil {
			return
		}
		if ok {
			unlock()
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Kill sends signal (default SIGTERM) to every process in the job's container and,
// unless forceAfter is 0, SIGKILL after forceAfter if the job is still running.
// It returns at once; Wait tells when the job has ended. Killing a job that has
// already ended is not an error: the answer says so.
func (e *Executor) Kill(ctx context.Context, id, signal string, forceAfter time.Duration) (KillResult, error) {
	sig, forceAfter, err := CheckKill(signal, forceAfter)
	if err != nil {
		return KillResult{}, err
	}
	now := time.Now().UTC()
	j, err := e.update(id, func(j *job) error {
		if j.ended() {
			return nil
		}
		k := &killOrder{Signal: sig, At: now}
		if forceAfter > 0 {
			k.ForceAt = now.Add(forceAfter)
		}
		if sig == "SIGKILL" {
			k.BackstopAt = j.backstop(now)
		}
		if old := j.Kill; old != nil && !old.ForceAt.IsZero() && (k.ForceAt.IsZero() || old.ForceAt.Before(k.ForceAt)) {
			k.ForceAt, k.Forced = old.ForceAt, old.Forced // an earlier escalation stands
		}
		j.Kill = k
		return nil
	})
	if err != nil {
		return KillResult{}, err
	}
	if j.ended() {
		msg := fmt.Sprintf("process %s had already ended (%s, exit code %d); nothing to kill", id, j.State, j.ExitCode)
		return KillResult{Process: j.process(), AlreadyEnded: true, Message: msg}, nil
	}
	if err := e.signal(ctx, containerRef(j), j, sig); err != nil {
		return KillResult{}, e.engineErr("kill", err)
	}
	e.adopt(j)
	e.poke(id)
	msg := fmt.Sprintf("sent %s to process %s", sig, id)
	if forceAfter > 0 { // SIGKILL is its own escalation (CheckKill)
		msg += fmt.Sprintf("; SIGKILL follows in %s if it is still running", forceAfter)
	}
	return KillResult{Process: j.process(), Signal: sig, Message: msg}, nil
}

// List returns the jobs that match opts, most recently started first.
func (e *Executor) List(ctx context.Context, opts ListOptions) (ProcessList, error) {
	opts, err := CheckList(opts, states)
	if err != nil {
		return ProcessList{}, err
	}
	all, err := store.All[job](e.store)
	if err != nil {
		return ProcessList{}, fmt.Errorf("%w: %v", ErrStore, err)
	}
	list := ProcessList{Processes: []Process{}}
	slices.SortFunc(all, func(a, b job) int {
		return cmp.Or(b.CreatedAt.Compare(a.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	for _, j := range all {
		if !hasLabels(j.Labels, opts.Labels) || opts.Tenant != "" && j.Tenant != opts.Tenant {
			continue
		}
		if !j.ended() {
			j = *e.settle(ctx, &j)
		}
		if opts.State != "" && j.State != opts.State {
			continue
		}
		list.Total++
		if len(list.Processes) < opts.Limit {
			list.Processes = append(list.Processes, j.process())
		}
	}
	return list, nil
}

// Running lists every running job, with no page limit: for a server, which
// tracks each one.
func (e *Executor) Running(ctx context.Context) ([]Process, error) {
	all, err := store.All[job](e.store)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStore, err)
	}
	var out []Process
	for _, j := range all {
		if !j.ended() {
			out = append(out, j.process())
		}
	}
	return out, nil
}

// Owner returns the tenant that started the job ("" when none was named), for a
// server to refuse other tenants before it acts on an id.
func (e *Executor) Owner(id string) (string, error) {
	j, err := e.job(id)
	if err != nil {
		return "", err
	}
	return j.Tenant, nil
}

// Placed returns the placement of job id, for a job a cluster placed here.
func (e *Executor) Placed(id string) (Placement, bool, error) {
	j, err := e.job(id)
	if err != nil || j.Placement == nil {
		return Placement{}, false, err
	}
	return *j.Placement, true, nil
}

// Remove deletes an ended job's record and logs.
func (e *Executor) Remove(ctx context.Context, id string) error {
	j, err := e.job(id)
	if err != nil {
		return err
	}
	if !j.ended() {
		return fmt.Errorf("process %s: %w; kill it first", id, ErrRunning)
	}
	if err := e.store.Delete(id); err != nil {
		return fmt.Errorf("%w: %v", ErrStore, err)
	}
	return nil
}

// Prune removes every job that ended before olderThan ago, and returns their ids.
func (e *Executor) Prune(ctx context.Context, olderThan time.Duration) ([]string, error) {
	all, err := store.All[job](e.store)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStore, err)
	}
	cutoff := time.Now().Add(-olderThan)
	var removed []string
	for _, j := range all {
		if j.ended() && j.FinishedAt.Before(cutoff) {
			if err := e.store.Delete(j.ID); err != nil {
				return removed, fmt.Errorf("%w: %v", ErrStore, err)
			}
			removed = append(removed, j.ID)
		}
	}
	return removed, nil
}

// ErrStore wraps failures of the data dir (disk full, permissions).
var ErrStore = errors.New("store")

func (e *Executor) job(id string) (*job, error) {
	j, err := store.Get[job](e.store, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("process %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStore, err)
	}
	return &j, nil
}

func (e *Executor) put(j *job) error {
	if err := store.Put(e.store, j.ID, j); err != nil {
		return fmt.Errorf("%w: %v", ErrStore, err)
	}
	return nil
}

func (e *Executor) update(id string, fn func(*job) error) (*job, error) {
	j, err := store.Update(e.store, id, fn)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("process %q: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStore, err)
	}
	return &j, nil
}

// containerRef names a job's container: by id once known, else by its name.
func containerRef(j *job) string {
	if j.ContainerID != "" {
		return j.ContainerID
	}
	return "airlock-" + j.ID
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// states are those of a job on this host: a cluster's add queued, lost and
// expired (api.States).
var states = []State{StateRunning, StateCompleted, StateTimedOut, StateKilled, StateBlocked, StateFailed}

// CheckList bounds a list's options, filling in the default limit; a state
// filter must be one of states (this host's, or api.States in a cluster).
func CheckList(opts ListOptions, states []State) (ListOptions, error) {
	switch {
	case opts.Limit < 0 || opts.Limit > 1000:
		return opts, &SpecError{Field: "limit", Reason: fmt.Sprintf("%d is outside 0..1000", opts.Limit)}
	case opts.Limit == 0:
		opts.Limit = 50
	}
	if opts.State != "" && !slices.Contains(states, opts.State) {
		names := make([]string, len(states))
		for i, st := range states {
			names[i] = string(st)
		}
		return opts, &SpecError{Field: "state", Reason: fmt.Sprintf("%q is not one of %s", opts.State, strings.Join(names, ", "))}
	}
	return opts, nil
}

// CheckKill checks a kill's signal and escalation, and returns the signal's
// canonical name and the escalation, none after SIGKILL.
func CheckKill(signal string, forceAfter time.Duration) (string, time.Duration, error) {
	sig, err := ParseSignal(signal)
	if err != nil {
		return "", 0, err
	}
	if forceAfter < 0 {
		return "", 0, &SpecError{Field: "force_after", Reason: "must not be negative (0 means no escalation)"}
	}
	if sig == "SIGKILL" {
		forceAfter = 0
	}
	return sig, forceAfter, nil
}

// ParseSignal accepts a signal by name (SIGTERM, TERM, term) or number, and
// returns its canonical name; "" is SIGTERM.
func ParseSignal(s string) (string, error) {
	if s == "" {
		return "SIGTERM", nil
	}
	if n, err := strconv.Atoi(s); err == nil {
		if name := unix.SignalName(syscall.Signal(n)); name != "" {
			return name, nil
		}
	} else {
		name := strings.ToUpper(s)
		if !strings.HasPrefix(name, "SIG") {
			name = "SIG" + name
		}
		if unix.SignalNum(name) != 0 {
			return name, nil
		}
	}
	return "", &SpecError{Field: "signal", Reason: fmt.Sprintf("%q is not a signal name or number", s)}
}
