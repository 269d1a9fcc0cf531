package executor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/internal/engine"
	"github.com/airlock-sandbox/airlock/internal/initproto"
	"github.com/airlock-sandbox/airlock/internal/relay"
	"github.com/airlock-sandbox/airlock/policy"
)

// RunOption changes how one Run delivers its output.
type RunOption func(*runOptions)

type runOptions struct {
	stdout, stderr io.Writer
}

// WithLiveOutput copies the command's stdout and stderr to the given writers as the
// bytes arrive, in addition to capturing them in the Result. Either may be nil.
func WithLiveOutput(stdout, stderr io.Writer) RunOption {
	return func(o *runOptions) { o.stdout, o.stderr = stdout, stderr }
}

// Run executes spec in a fresh sandbox container and returns its Result once the
// process has ended and the container is gone.
//
// The error is nil whenever the command ran, whatever its exit code. It is a
// *SpecError (errors.Is ErrInvalidSpec) for an invalid spec, and then nothing was
// created. It wraps ErrEngine when the engine failed, and then the Result is
// complete too: state failed, exit code 125, and the reason in Result.Error. When
// ctx ends first the container is killed, and the Result (state killed, the output
// so far) comes with ctx's error.
func (e *Executor) Run(ctx context.Context, spec Spec, opts ...RunOption) (Result, error) {
	if spec.Background {
		return Result{}, &SpecError{Field: "background", Reason: "Run executes in the foreground; use Start for background jobs"}
	}
	a, err := e.Admit(spec, Caller{})
	if err != nil {
		return Result{}, err
	}
	return e.Execute(ctx, a, opts...)
}

// Execute runs an admitted foreground request, as Run does (which is Admit
// then Execute). A request the policy refused is reported blocked, and nothing
// is created.
func (e *Executor) Execute(ctx context.Context, a Admitted, opts ...RunOption) (Result, error) {
	s := a.spec
	if s.Background {
		return Result{}, &SpecError{Field: "background", Reason: "a background job is started with Launch"}
	}
	var o runOptions
	for _, opt := range opts {
		opt(&o)
	}
	res := Result{ID: a.id, Image: s.Image, Runtime: s.Runtime, Labels: s.Labels, Workspace: s.Workspace, Tenant: a.caller.Tenant, StartedAt: time.Now().UTC()}
	if !a.decision.Allowed {
		return blockedResult(res, a.decision), nil
	}
	if err := e.checkRuntime(ctx, s.Runtime); err != nil {
		return failedResult(res, err)
	}
	secrets, err := e.bindSecrets(a)
	if err != nil {
		return failedResult(res, err)
	}
	s.Env = secrets.env(s.Env, e.trustPEM(s) != "")

	plan := e.plan(res.ID, s)
	if s.Workspace != "" {
		if err := e.mountWorkspace(ctx, &plan, s.Workspace, a.caller); err != nil {
			return failedResult(res, err)
		}
	}
	// airlock's init runs the command: its request goes on the init's stdin.
	if plan.InitVolume, plan.EtcDir, err = e.initVolume(ctx); err != nil {
		return failedResult(res, err)
	}
	plan.OpenStdin = plan.OpenStdin || plan.InitVolume != ""
	// A warm sandbox when the pool has one for this key; else a cold start.
	var sb *sandbox
	if e.pool != nil && plan.InitVolume != "" {
		sb = e.pool.claim(ctx, s)
		claimed := sb
		defer func() { e.pool.release(s, claimed) }()
	}
	warm := sb != nil
	if !warm {
		var link *relayLink
		if len(s.Egress) > 0 {
			if link, plan.RelayDir, err = e.listenRelay(ctx, plan.Name, s.Runtime); err != nil {
				return failedResult(res, err)
			}
		}
		sb, err = e.launch(ctx, plan, true)
		if link != nil {
			if err != nil {
				link.close()
			} else {
				sb.relay = link
			}
		}
	}
	if sb != nil {
		// Whatever happens from here, the container goes; its removal must not
		// depend on a context the caller may already have cancelled. A warm
		// sandbox goes off the request path (release).
		if !warm {
			defer e.discard(context.WithoutCancel(ctx), sb.containerID)
		}
		res.ContainerID = sb.containerID
		sb.init = plan.InitVolume != ""
		sb.argv, sb.env, sb.dir = plan.Cmd, plan.Env, plan.Workdir
	}
	if err != nil {
		if ctx.Err() != nil { // cut short by the caller, not the engine
			err = fmt.Errorf("cancelled before the command started: %w: %w", context.Cause(ctx), err)
		}
		return failedResult(res, err)
	}
	var eg *egressRun
	if len(s.Egress) > 0 {
		// The relay listens before the command starts: the request goes to
		// the init only after it.
		if eg, err = e.startEgress(ctx, sb.containerID, s.User, res.ID, s.Egress, sb.relay, secrets); err != nil {
			return failedResult(res, err)
		}
	}
	refused := sb.relay
	if eg == nil && refused != nil {
		// A warm sandbox's relay, for a run that may reach nothing: every
		// connection it carries is closed at once, until the run ends.
		refused.refuse()
	}
	sb.relay = nil // it serves no other run
	o, flushLive := secrets.live(o)
	res, err = e.supervise(ctx, sb, s, res, o)
	flushLive()
	if eg != nil {
		res.Egress = eg.close() // the run has ended: so does every connection
	} else if refused != nil {
		refused.cut()
		go refused.close()
	}
	if err == nil && s.Report != "" {
		res.Tests = e.testReport(context.WithoutCancel(ctx), s, a.caller)
	}
	secrets.redactResult(&res)
	return res, err
}

// sandbox is a started container whose streams airlock holds.
type sandbox struct {
	containerID string
	name        string
	init        bool // airlock's init is PID 1: it takes the command on stdin
	argv, env   []string
	dir         string
	autoRemove  bool // the engine removes it when it stops (a warm sandbox)
	att         *attachment
	relay       *relayLink    // made with the sandbox, for the run that claims it
	exited      chan struct{} // closed when the container has stopped
	exit        containerExit // set before exited is closed
}

// launch creates and starts the container of plan: the one place that decides
// how a sandbox comes to exist, for a run and for a job alike, so that a pool
// of pre-started ones can take its place. attached (a foreground run): airlock
// holds the container's streams and waits for its end; otherwise (a background
// job) the engine keeps its output, and only a stdin, if the plan has one, is
// attached. A non-nil sandbox must be discarded even when err is set.
func (e *Executor) launch(ctx context.Context, plan containerPlan, attached bool) (*sandbox, error) {
	create := e.create
	if plan.Workspace != "" {
		create = e.createOnWorkspace
	}
	cid, err := create(ctx, plan)
	if err != nil {
		return nil, err
	}
	sb := &sandbox{containerID: cid, name: plan.Name, exited: make(chan struct{})}

	// Streams and the wait outlive ctx: after a cancel, airlock still kills the
	// container and drains what it wrote.
	bg := context.WithoutCancel(ctx)
	if attached || plan.OpenStdin {
		if sb.att, err = e.eng.Attach(bg, cid, plan.OpenStdin); err != nil {
			return sb, e.engineErr("attach", err)
		}
	}
	var waitC <-chan containerExit
	if attached {
		waitC = e.eng.Wait(bg, cid, true)
	}
	if err := e.eng.Start(ctx, cid); err != nil {
		if sb.att != nil {
			sb.att.Close()
		}
		return sb, e.engineErr("start container", err)
	}
	if attached {
		go func() {
			sb.exit = <-waitC
			close(sb.exited)
		}()
	}
	return sb, nil
}

// create creates the container of plan, building or pulling its image first when
// the engine lacks it (see image). The container is made from the image's id,
// as inspected, and every path the image declares as a VOLUME gets a tmpfs of
// the run's size: the engine would otherwise give each an unbounded volume on
// the host's disk (docs/DESIGN.md, "Every writable place is bounded"). On
// failure no container is left.
func (e *Executor) create(ctx context.Context, plan containerPlan) (string, error) {
	img, err := e.image(ctx, plan.Image)
	if err != nil {
		return "", err
	}
	for _, v := range img.Volumes {
		if c := path.Clean(v); c == "/" || underSystemDir(c) {
			return "", fmt.Errorf("%w: image %q declares the VOLUME %s, where a sandbox can have no writable mount", ErrEngine, plan.Image, v)
		}
	}
	plan.Image, plan.Volumes = img.ID, img.Volumes
	plan.Runtime = e.engineRuntime(plan.Runtime)
	cid, err := e.eng.Create(ctx, plan)
	if errors.Is(err, engine.ErrNameInUse) {
		// The name is another's container, never ours to remove.
		return "", fmt.Errorf("%w: %w", ErrEngine, err)
	}
	if err != nil {
		// A create cut short by ctx may still have made the container: remove it by name.
		e.discard(context.WithoutCancel(ctx), plan.Name)
		return "", e.engineErr("create container", err)
	}
	return cid, nil
}

// Terminating a sandbox waits on the engine, which under load (a hundred gVisor
// sandboxes killed at once on two cores) can take tens of seconds per call: each
// signal call gets signalTimeout, and the SIGKILL with the wait for the stop gets
// killWait before the run is reported failed.
const (
	signalTimeout = 30 * time.Second
	killWait      = 2 * time.Minute
)

// abandonAfter is how long past its timeout a foreground sandbox may still exist
// while its process lives: the kill grace, the engine's slowest kill, the output
// drain, and a margin.
const abandonAfter = signalTimeout + killWait + outputDrainTimeout + 30*time.Second

// plan turns a normalised Spec into the container to create.
func (e *Executor) plan(id string, s Spec) containerPlan {
	cmd := s.Argv
	if s.Command != "" {
		cmd = []string{"/bin/sh", "-c", s.Command}
	}
	env := make([]string, 0, len(s.Env))
	for _, k := range slices.Sorted(maps.Keys(s.Env)) {
		if len(s.Egress) > 0 && relay.IsProxyVar(k) {
			continue // the relay is the run's only way out: its variables win
		}
		env = append(env, k+"="+s.Env[k])
	}
	if len(s.Egress) > 0 {
		env = append(env, relay.Env()...)
	}
	labels := maps.Clone(s.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[LabelManaged] = "true"
	labels[LabelID] = id
	deadline := time.Now().Add(s.Timeout.Duration() + e.cfg.KillGrace + abandonAfter)
	labels[LabelDeadline] = deadline.UTC().Format(time.RFC3339)
	return containerPlan{
		Name:      "airlock-" + id,
		Image:     s.Image,
		Cmd:       cmd,
		Env:       env,
		Workdir:   s.Workdir,
		User:      s.User,
		Memory:    s.Memory,
		NanoCPUs:  int64(s.CPUs * 1e9),
		Pids:      s.Pids,
		TmpfsSize: s.TmpfsSize,
		Network:   s.Network,
		Runtime:   s.Runtime,
		OpenStdin: s.Stdin != nil,
		Labels:    labels,
	}
}

// initBackstop is how long past the run's timeout and kill grace the host waits
// for airlock's init to end the run before it kills the container itself.
const initBackstop = 5 * time.Second

// outputDrainTimeout bounds how long airlock waits, once the container has
// stopped, for the engine to deliver the last buffered output.
const outputDrainTimeout = 10 * time.Second

// statsDelay is how long a run goes before airlock asks for resource samples: the
// engine samples once a second, so a run that ends sooner would get none anyway.
const statsDelay = 250 * time.Millisecond

// supervise feeds stdin, captures output, enforces the timeout and ctx, and reads
// the final state once the container has stopped.
func (e *Executor) supervise(ctx context.Context, sb *sandbox, s Spec, res Result, o runOptions) (Result, error) {
	stdout, stderr := newCapture(s.MaxOutput, o.stdout), newCapture(s.MaxOutput, o.stderr)
	// Under airlock's init its stdout carries both streams, framed, and its report.
	var framed *initOutput
	out, errOut := io.Writer(stdout), io.Writer(stderr)
	if sb.init {
		framed = newInitOutput(stdout, stderr)
		out, errOut = framed, &logWriter{e.cfg.Logger, res.ID}
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		if err := sb.att.CopyOutput(out, errOut); err != nil {
			e.cfg.Logger.Debug("output stream ended with an error", "id", res.ID, "err", err)
		}
	}()
	switch {
	case sb.init:
		go sendRequest(sb.att, e.initRequest(s, sb.argv, sb.env, sb.dir), s.Stdin)
	case s.Stdin != nil:
		go func() {
			io.WriteString(sb.att.Stdin, *s.Stdin) // fails only when the process is gone
			sb.att.CloseStdin()
		}()
	}

	// The engine's samples, where the init does not measure.
	var usage usageMeter
	statsCtx, stopStats := context.WithCancel(context.WithoutCancel(ctx))
	statsDone := make(chan struct{})
	go func() {
		defer close(statsDone)
		if sb.init && !ownKernel(s.Runtime) {
			return
		}
		select {
		case <-time.After(statsDelay):
			if err := e.eng.Stats(statsCtx, sb.containerID, usage.add); err != nil {
				e.cfg.Logger.Debug("resource samples ended with an error", "id", res.ID, "err", err)
			}
		case <-statsCtx.Done():
		}
	}()

	// The init keeps the deadline inside the sandbox; the host's timer is the
	// backstop, for an init that could not.
	limit := s.Timeout.Duration()
	if sb.init {
		limit += e.cfg.KillGrace + initBackstop
	}
	timer := time.NewTimer(limit)
	defer timer.Stop()
	var timedOut, cancelled bool
	var reported <-chan struct{} // nil without the init: never ready
	if framed != nil {
		reported = framed.reported
	}
	select {
	case <-sb.exited:
	case <-reported:
		// The init has ended the command and said how; the container's own
		// stop, a moment later, is the engine's to finish.
	case <-timer.C:
		timedOut = true
		e.terminate(ctx, sb, reported)
	case <-ctx.Done():
		cancelled = true
		e.terminate(ctx, sb, reported)
	}

	select {
	case <-copied:
	case <-reported: // all of the output came before the report
	case <-time.After(outputDrainTimeout):
		e.cfg.Logger.Warn("output still open after the container stopped; closing it", "id", res.ID)
	}
	sb.att.Close()
	<-copied
	stopStats()
	<-statsDone
	var report *initproto.Report
	if framed != nil {
		var failed string
		if report, failed = framed.finish(); failed != "" {
			e.cfg.Logger.Warn("airlock's init", "id", res.ID, "err", failed)
		}
	}
	res.Stdout, res.StdoutTruncated, res.StdoutBytes, res.StdoutTail = stdout.result(s.TailLines)
	res.Stderr, res.StderrTruncated, res.StderrBytes, res.StderrTail = stderr.result(s.TailLines)
	res.ResourceUsage = usage.get()
	if report != nil {
		res.ResourceUsage = hostCPU(usageOf(report), usage.get(), s.Runtime)
		timedOut = timedOut || report.TimedOut
	}

	// With the init's report and its cgroup's OOM count, the run is known:
	// no wait for the container's stop, for the engine's OOM flag or for the
	// kernel's log. Without them (no init; gVisor, whose cgroup files do not
	// count OOM kills), the engine's record decides, once the container stopped.
	// A warm sandbox is removed by the engine as it stops: its report is all
	// there is to read, and without one (its init was killed: gVisor lets a
	// sandbox kill its own PID 1, and an OOM kill there ends the whole
	// sandbox), the exit code its wait saw and the kernel's log, the engine's
	// OOM flag being gone with the container.
	var st containerState
	if report == nil || report.OOMKills < 0 && !sb.autoRemove {
		// After an exit or a terminate it has stopped, or never will; after a
		// report the init is ending, and its container stops a moment later.
		stopped := false
		if report != nil {
			select {
			case <-sb.exited:
				stopped = true
			case <-time.After(killWait):
			}
		} else {
			select {
			case <-sb.exited:
				stopped = true
			default:
			}
		}
		if !stopped { // terminate gave up: the engine did not stop the container
			return failedResult(res, fmt.Errorf("%w: container %s did not stop within %s of SIGKILL", ErrEngine, sb.containerID, killWait))
		}
		if sb.exit.Err != nil {
			return failedResult(res, e.engineErr("wait for container", sb.exit.Err))
		}
		var err error
		if sb.autoRemove {
			st.ExitCode = sb.exit.Code
			st.OOMKilled = !timedOut && !cancelled && st.ExitCode == 128+int(syscall.SIGKILL) && kernelOOM(sb.containerID)
		} else if st, err = e.finalState(context.WithoutCancel(ctx), sb.containerID, timedOut || cancelled); err != nil {
			return failedResult(res, e.engineErr("inspect container", err))
		}
	}
	if report != nil {
		applyReport(&st, report)
	}
	endResult(&res, st, timedOut, cancelled)
	if cancelled {
		return res, fmt.Errorf("run %s: %w", res.ID, context.Cause(ctx))
	}
	return res, nil
}

// terminate ends every process in the container: SIGTERM to the init, which passes
// it on, then SIGKILL once the grace period is over (through airlock's init
// when it runs, so that its report still comes). The kill of PID 1 takes the
// whole PID namespace with it, so no descendant survives.
func (e *Executor) terminate(ctx context.Context, sb *sandbox, reported <-chan struct{}) {
	base := context.WithoutCancel(ctx)
	if e.cfg.KillGrace > 0 {
		tctx, cancel := context.WithTimeout(base, signalTimeout)
		err := e.eng.Kill(tctx, sb.containerID, "SIGTERM")
		cancel()
		if err != nil {
			e.cfg.Logger.Warn("SIGTERM failed", "container_id", sb.containerID, "err", err)
		}
		select {
		case <-sb.exited:
			return
		case <-reported:
			return
		case <-time.After(e.cfg.KillGrace):
		}
	}
	if sb.init {
		// The init ends every process with SIGKILL and still reports; the
		// engine's SIGKILL, below, only if it does not.
		tctx, cancel := context.WithTimeout(base, signalTimeout)
		err := e.eng.Kill(tctx, sb.containerID, strconv.Itoa(initproto.ForceKill))
		cancel()
		if err == nil {
			select {
			case <-sb.exited:
				return
			case <-reported: // a warm sandbox's init waits for its retirement
				return
			case <-time.After(initBackstop):
			}
		}
	}
	kctx, cancel := context.WithTimeout(base, killWait)
	defer cancel()
	if err := e.eng.Kill(kctx, sb.containerID, "SIGKILL"); err != nil {
		e.cfg.Logger.Warn("SIGKILL failed", "container_id", sb.containerID, "err", err)
	}
	select {
	case <-sb.exited:
	case <-kctx.Done():
		e.cfg.Logger.Error("container did not stop after SIGKILL", "container_id", sb.containerID, "waited", killWait.String())
	}
}

// discard removes a container (by id or name), logging rather than failing: the
// run's outcome is already decided. A busy engine can refuse a removal for a while
// (a storage driver reports "directory not empty" while it still unmounts), so a
// refused removal is tried again, with a growing pause, for up to a minute.
func (e *Executor) discard(ctx context.Context, container string) {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	pause := 100 * time.Millisecond
	for {
		err := e.eng.Remove(ctx, container)
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			e.cfg.Logger.Error("remove container", "container", container, "err", err)
			return
		case <-time.After(pause):
		}
		pause = min(2*pause, 5*time.Second)
	}
}

// ended fills the outcome from the engine's final record of the container.
func endResult(r *Result, st containerState, timedOut, cancelled bool) {
	r.ExitCode = st.ExitCode
	r.OOMKilled = st.OOMKilled
	if st.ExitCode > 128 && st.ExitCode <= 128+64 {
		r.Signal = unix.SignalName(syscall.Signal(st.ExitCode - 128))
	}
	switch {
	case timedOut:
		r.State, r.TimedOut, r.ExitCode = StateTimedOut, true, ExitTimedOut
	case cancelled:
		r.State = StateKilled
	case st.OOMKilled && st.ExitCode == 128+int(syscall.SIGKILL):
		r.State = StateKilled // by the kernel's OOM killer
	default:
		r.State = StateCompleted
	}
	r.Success = r.State == StateCompleted && r.ExitCode == 0
	if !st.StartedAt.IsZero() && !st.FinishedAt.IsZero() {
		r.StartedAt, r.FinishedAt = st.StartedAt, st.FinishedAt
	} else {
		r.FinishedAt = time.Now().UTC()
	}
	// The engine's two stamps come from different clocks (the runtime's start, the
	// daemon's exit): a run of a few milliseconds can show a finish a hair before
	// its start. A result never says time ran backwards.
	if r.FinishedAt.Before(r.StartedAt) {
		r.FinishedAt = r.StartedAt
	}
	r.DurationMS = r.FinishedAt.Sub(r.StartedAt).Milliseconds()
}

// oomEventWait bounds how long airlock waits for the engine's OOM flag on a
// container that ended by a SIGKILL airlock did not send: the engine learns of
// the exit and of the OOM kill from two events, and the exit can come first.
//
// The flag can also never come: the engine's shim arms its OOM monitor just
// after the process starts, so an OOM kill within a sandbox's first moments (a
// balloon that fills 32 MiB in tens of milliseconds on a loaded engine) goes
// unflagged, and no wait helps. The kernel's own log (kernelOOM) tells of it
// where airlock may read it.
const oomEventWait = 2 * time.Second

// finalState reads the engine's record of a stopped container. For an exit by
// a SIGKILL airlock did not send and not (yet) flagged as OOM, it asks again for
// a moment, so that an OOM kill is reported as one.
func (e *Executor) finalState(ctx context.Context, cid string, killedByAirlock bool) (containerState, error) {
	st, err := e.eng.Inspect(ctx, cid)
	unexplained := func() bool {
		return err == nil && !killedByAirlock && st.ExitCode == 128+int(syscall.SIGKILL) && !st.OOMKilled
	}
	if unexplained() && kernelOOM(cid) {
		st.OOMKilled = true // the kernel says so, and the engine may never
	}
	deadline := time.Now().Add(e.oomWait)
	for unexplained() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		st, err = e.eng.Inspect(ctx, cid)
	}
	return st, err
}

// blocked is the Result of a command the policy refused: nothing ran.
func blockedResult(r Result, d policy.Decision) Result {
	r.State, r.Blocked, r.ExitCode = StateBlocked, true, ExitBlocked
	r.BlockRule, r.BlockReason = d.Rule, blockReason(d)
	r.FinishedAt = r.StartedAt
	return r
}

// blockReason is the policy's reason, with the simple command it refused.
func blockReason(d policy.Decision) string {
	if d.Match != "" {
		return d.Reason + ": " + d.Match
	}
	return d.Reason
}

// failed marks r as an infrastructure failure and returns it with err.
func failedResult(r Result, err error) (Result, error) {
	r.State, r.ExitCode, r.Success, r.Error = StateFailed, ExitFailed, false, err.Error()
	r.FinishedAt = time.Now().UTC()
	r.DurationMS = r.FinishedAt.Sub(r.StartedAt).Milliseconds()
	return r, err
}

// usageMeter keeps the latest cumulative counters and the highest memory peak.
type usageMeter struct {
	mu    sync.Mutex
	u     ResourceUsage
	exact bool // set from the init's report: samples no longer count
}

func (m *usageMeter) add(s usageSample) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.exact {
		return
	}
	m.u.CPUMS = int64(s.CPUNanos / 1e6)
	m.u.MemoryPeakBytes = max(m.u.MemoryPeakBytes, int64(s.MemoryPeak))
	m.u.IOReadBytes = int64(s.IORead)
	m.u.IOWriteBytes = int64(s.IOWrite)
	m.u.Samples++
}

func (m *usageMeter) set(u ResourceUsage) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.u, m.exact = u, true
}

func (m *usageMeter) get() ResourceUsage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.u
}
