package executor

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/images"
)

// runWithin runs spec and fails the test, rather than hanging it, if Run does not
// return in time.
func runWithin(t *testing.T, ctx context.Context, e *Executor, spec Spec, opts ...RunOption) (Result, error) {
	t.Helper()
	type outcome struct {
		res Result
		err error
	}
	c := make(chan outcome, 1)
	go func() {
		res, err := e.Run(ctx, spec, opts...)
		c <- outcome{res, err}
	}()
	select {
	case o := <-c:
		return o.res, o.err
	case <-time.After(10 * time.Second):
		t.Fatalf("Run(%+v) did not return within 10s; the caller would hang", spec)
		return Result{}, nil
	}
}

// wantRemoved checks that the container was removed exactly once, by want.
func wantRemoved(t *testing.T, f *fakeEngine, want string) {
	t.Helper()
	if got := f.Args("remove"); !slices.Equal(got, []string{want}) {
		t.Errorf("remove was called with %q, want exactly [%q]: the container would be left behind", got, want)
	}
}

// wantFailed checks the Result and error of a run the engine made fail.
func wantFailed(t *testing.T, res Result, err error, msg string) {
	t.Helper()
	if !errors.Is(err, ErrEngine) {
		t.Errorf("Run error = %v, want one wrapping ErrEngine (the API would not answer 5xx)", err)
	}
	if res.State != StateFailed || res.ExitCode != ExitFailed || res.Success {
		t.Errorf("Result = state %q, exit %d, success %t; want failed, %d, false", res.State, res.ExitCode, res.Success, ExitFailed)
	}
	if res.Error == "" || !strings.Contains(res.Error, msg) {
		t.Errorf("Result.Error = %q, want a message containing %q", res.Error, msg)
	}
	if res.ID == "" {
		t.Errorf("a failed Result has no id")
	}
	if res.FinishedAt.IsZero() || res.FinishedAt.Before(res.StartedAt) {
		t.Errorf("a failed Result has started_at %v, finished_at %v", res.StartedAt, res.FinishedAt)
	}
}

func TestRunCreateFails(t *testing.T) {
	f := newFakeEngine()
	f.CreateErrs = []error{errFake}
	e := newFakeExecutor(t, f, nil)

	res, err := runWithin(t, t.Context(), e, Spec{Command: "true"})
	wantFailed(t, res, err, "create container")
	if !strings.Contains(res.Error, errFake.Error()) {
		t.Errorf("Result.Error = %q does not carry the engine's reason %q", res.Error, errFake)
	}
	// create may have made the container before failing: it is removed by name.
	wantRemoved(t, f, "airlock-"+res.ID)
	if res.ContainerID != "" {
		t.Errorf("container_id = %q after a failed create, want empty", res.ContainerID)
	}
	if got := f.Methods(); !slices.Equal(got, []string{"inspectImage", "create", "remove"}) {
		t.Errorf("engine calls = %q, want [inspectImage create remove]", got)
	}
}

// A busy engine can refuse a removal for a while; the run tries again until the
// container is gone, and its outcome is not changed by the refusals.
func TestRunRemovalRefusedIsRetried(t *testing.T) {
	f := newFakeEngine()
	f.RemoveErrs = []error{errFake, errFake}
	e := newFakeExecutor(t, f, nil)

	res, err := runWithin(t, t.Context(), e, Spec{Command: "true"})
	if err != nil || res.State != StateCompleted {
		t.Fatalf("Run = state %q, err %v; want completed", res.State, err)
	}
	if got, want := f.Args("remove"), []string{fakeContainerID, fakeContainerID, fakeContainerID}; !slices.Equal(got, want) {
		t.Errorf("remove was called with %q, want %q: two refusals, then success", got, want)
	}
}

func TestRunCreateCancelled(t *testing.T) {
	f := newFakeEngine()
	f.BlockCreate = true
	e := newFakeExecutor(t, f, nil)
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for len(f.CallsTo("create")) == 0 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()

	res, err := runWithin(t, ctx, e, Spec{Command: "true"})
	wantFailed(t, res, err, "create container")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run error = %v, want one wrapping context.Canceled", err)
	}
	wantRemoved(t, f, "airlock-"+res.ID)
}

func TestRunEnsuresImage(t *testing.T) {
	tests := []struct {
		name      string
		image     string
		missing   bool
		pull      PullPolicy
		imageErr  error
		buildErr  error
		pullErr   error
		wantCalls []string // the engine calls up to the create, or to the failure
		wantFail  string   // "" when the run must succeed
	}{
		{
			name:      "present image is only inspected",
			wantCalls: []string{"inspectImage", "create", "attach"},
		},
		{
			name:      "own image is built from its recipe",
			missing:   true,
			wantCalls: []string{"inspectImage", "inspectImage", "inspectImage", "buildImage", "inspectImage", "create", "attach"},
		},
		{
			name:      "own image with :latest is built too",
			image:     "airlock/minimal:latest",
			missing:   true,
			wantCalls: []string{"inspectImage", "inspectImage", "inspectImage", "buildImage", "inspectImage", "create", "attach"},
		},
		{
			name:      "other image is pulled when the policy allows",
			image:     "example.org/tools:1",
			missing:   true,
			pull:      PullMissing,
			wantCalls: []string{"inspectImage", "inspectImage", "pullImage", "inspectImage", "create", "attach"},
		},
		{
			name:      "other image is not pulled when it does not",
			image:     "example.org/tools:1",
			missing:   true,
			pull:      PullNever,
			wantCalls: []string{"inspectImage", "inspectImage"},
			wantFail:  `image "example.org/tools:1" is not on the engine, and the pull policy is "never": load or build it on the engine, or have the operator allow pulls (--pull missing)`,
		},
		{
			name:      "pull fails, without the host's addresses",
			image:     "example.org/tools:1",
			missing:   true,
			pull:      PullMissing,
			pullErr:   errors.New("Get \"https://example.org/v2/\": dial tcp: lookup example.org on 192.0.2.1:53: no such host"),
			wantCalls: []string{"inspectImage", "inspectImage", "pullImage"},
			wantFail:  `image "example.org/tools:1" is not on the engine, and pulling it failed: Get "https://example.org/v2/": dial tcp: lookup example.org on <address>: no such host`,
		},
		{
			name:      "build fails",
			missing:   true,
			buildErr:  errFake,
			wantCalls: []string{"inspectImage", "inspectImage", "inspectImage", "buildImage"},
			wantFail:  `build image "airlock/minimal"`,
		},
		{
			name:      "image inspect fails",
			imageErr:  errFake,
			wantCalls: []string{"inspectImage"},
			wantFail:  `inspect image "airlock/minimal"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeEngine()
			f.ImageMissing, f.ImageErr = tt.missing, tt.imageErr
			f.BuildErr, f.PullErr = tt.buildErr, tt.pullErr
			f.Stdout = "ok\n"
			e := newFakeExecutor(t, f, func(c *Config) { c.Pull = cmp.Or(tt.pull, PullNever) })

			res, err := runWithin(t, t.Context(), e, Spec{Command: "true", Image: tt.image})
			calls := f.Methods()
			if got := calls[:min(len(calls), len(tt.wantCalls))]; !slices.Equal(got, tt.wantCalls) {
				t.Errorf("engine calls = %q, want them to start with %q", calls, tt.wantCalls)
			}
			if tt.wantFail != "" {
				wantFailed(t, res, err, tt.wantFail)
				if slices.Contains(calls, "create") {
					t.Errorf("a container was created for a run without its image: %q", calls)
				}
				return
			}
			if err != nil || res.State != StateCompleted || res.Stdout != "ok\n" {
				t.Fatalf("Run = (state %q, stdout %q, error %q), %v; want a completed run", res.State, res.Stdout, res.Error, err)
			}
			if got := f.CreatedPlans(); len(got) != 1 || got[0].Image != "sha256:fake" {
				t.Errorf("created %+v, want one container of the image's id, as inspected", got)
			}
			wantRemoved(t, f, fakeContainerID)
		})
	}
}

// TestRunCoversImageVolumes: every path an image declares as a VOLUME gets a
// bounded tmpfs of the run's, so that the engine makes no volume of its own.
func TestRunCoversImageVolumes(t *testing.T) {
	f := newFakeEngine()
	f.ImageVolumes = []string{"/data", "/var/lib/x", "/tmp"}
	e := newFakeExecutor(t, f, nil)
	if _, err := runWithin(t, t.Context(), e, Spec{Command: "true", TmpfsSize: 8 << 20}); err != nil {
		t.Fatal(err)
	}
	plans := f.CreatedPlans()
	if len(plans) != 1 || !slices.Equal(plans[0].Volumes, []string{"/data", "/var/lib/x", "/tmp"}) {
		t.Fatalf("plans %+v", plans)
	}
}

func TestRunAttachOrStartFails(t *testing.T) {
	tests := []struct {
		name      string
		attachErr error
		startErr  error
		wantMsg   string
		wantCalls []string
	}{
		{
			name:      "attach fails",
			attachErr: errFake,
			wantMsg:   "attach",
			wantCalls: []string{"inspectImage", "create", "attach", "remove"},
		},
		{
			name:      "start fails",
			startErr:  errFake,
			wantMsg:   "start container",
			wantCalls: []string{"inspectImage", "create", "attach", "wait", "start", "close", "remove"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeEngine()
			f.AttachErr, f.StartErr = tt.attachErr, tt.startErr
			e := newFakeExecutor(t, f, nil)

			res, err := runWithin(t, t.Context(), e, Spec{Command: "true"})
			wantFailed(t, res, err, tt.wantMsg)
			wantRemoved(t, f, fakeContainerID)
			if res.ContainerID != fakeContainerID {
				t.Errorf("container_id = %q, want %q: the container existed", res.ContainerID, fakeContainerID)
			}
			if got := f.Methods(); !slices.Equal(got, tt.wantCalls) {
				t.Errorf("engine calls = %q, want %q", got, tt.wantCalls)
			}
		})
	}
}

func TestRunExit(t *testing.T) {
	tests := []struct {
		name        string
		exitCode    int
		oomKilled   bool
		wantState   State
		wantSuccess bool
		wantSignal  string
	}{
		{name: "exit 0", exitCode: 0, wantState: StateCompleted, wantSuccess: true},
		{name: "exit 3", exitCode: 3, wantState: StateCompleted},
		{name: "exit 127", exitCode: 127, wantState: StateCompleted},
		{name: "OOM kill", exitCode: sigkillExit, oomKilled: true, wantState: StateKilled, wantSignal: "SIGKILL"},
		{name: "child OOM-killed, main exits 0", exitCode: 0, oomKilled: true, wantState: StateCompleted, wantSuccess: true},
		{name: "SIGKILL without OOM", exitCode: sigkillExit, wantState: StateCompleted, wantSignal: "SIGKILL"},
		{name: "SIGSEGV", exitCode: 128 + 11, wantState: StateCompleted, wantSignal: "SIGSEGV"},
		{name: "exit 255 is no signal", exitCode: 255, wantState: StateCompleted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeEngine()
			f.ExitCode, f.OOMKilled = tt.exitCode, tt.oomKilled
			e := newFakeExecutor(t, f, nil)

			res, err := runWithin(t, t.Context(), e, Spec{Command: "true", Labels: map[string]string{"agent": "a1"}})
			if err != nil {
				t.Fatalf("Run returned error %v; a command's exit status is a Result, never an error", err)
			}
			if res.State != tt.wantState || res.Success != tt.wantSuccess || res.ExitCode != tt.exitCode {
				t.Errorf("Result = state %q, success %t, exit %d; want %q, %t, %d", res.State, res.Success, res.ExitCode, tt.wantState, tt.wantSuccess, tt.exitCode)
			}
			if res.OOMKilled != tt.oomKilled {
				t.Errorf("oom_killed = %t, want %t (read from the engine's flag, not guessed from the exit code)", res.OOMKilled, tt.oomKilled)
			}
			if res.Signal != tt.wantSignal {
				t.Errorf("signal = %q, want %q", res.Signal, tt.wantSignal)
			}
			if res.TimedOut || res.Blocked || res.Error != "" {
				t.Errorf("Result has timed_out %t, blocked %t, error %q; want none", res.TimedOut, res.Blocked, res.Error)
			}
			if res.ContainerID != fakeContainerID || res.Image != "airlock/minimal" || res.Runtime != "runc" || res.Labels["agent"] != "a1" {
				t.Errorf("provenance = container %q, image %q, runtime %q, labels %v; want %q, airlock/minimal, runc, agent=a1",
					res.ContainerID, res.Image, res.Runtime, res.Labels, fakeContainerID)
			}
			if res.FinishedAt.Before(res.StartedAt) || res.DurationMS < 0 {
				t.Errorf("started_at %v, finished_at %v, duration %dms", res.StartedAt, res.FinishedAt, res.DurationMS)
			}
			wantRemoved(t, f, fakeContainerID)
		})
	}
}

func TestRunUsesEngineTimes(t *testing.T) {
	f := newFakeEngine()
	e := newFakeExecutor(t, f, nil)
	res, err := runWithin(t, t.Context(), e, Spec{Command: "true"})
	if err != nil {
		t.Fatal(err)
	}
	// The fake reports no process times: airlock's own clock stands in.
	if res.StartedAt.IsZero() || res.FinishedAt.IsZero() {
		t.Errorf("started_at %v, finished_at %v; want both set", res.StartedAt, res.FinishedAt)
	}

	start := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	var r Result
	endResult(&r, containerState{StartedAt: start, FinishedAt: start.Add(1500 * time.Millisecond)}, false, false)
	if !r.StartedAt.Equal(start) || r.DurationMS != 1500 {
		t.Errorf("ended with engine times: started_at %v, duration %dms; want %v, 1500ms", r.StartedAt, r.DurationMS, start)
	}
}

func TestRunTimeout(t *testing.T) {
	tests := []struct {
		name       string
		killGrace  time.Duration
		ignoreTERM bool
		wantKills  []string
		wantSignal string
	}{
		{name: "SIGTERM ends it", killGrace: 50 * time.Millisecond, wantKills: []string{"SIGTERM"}, wantSignal: "SIGTERM"},
		{name: "SIGTERM ignored, SIGKILL after grace", killGrace: 50 * time.Millisecond, ignoreTERM: true, wantKills: []string{"SIGTERM", "SIGKILL"}, wantSignal: "SIGKILL"},
		{name: "no grace: SIGKILL at once", killGrace: 0, wantKills: []string{"SIGKILL"}, wantSignal: "SIGKILL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeEngine()
			f.Hang = true
			f.Ignore = map[string]bool{"SIGTERM": tt.ignoreTERM}
			f.Stdout = "before the timeout\n"
			e := newFakeExecutor(t, f, func(c *Config) { c.KillGrace = tt.killGrace })

			begin := time.Now()
			res, err := runWithin(t, t.Context(), e, Spec{Command: "sleep 100", Timeout: 0.05})
			if err != nil {
				t.Fatalf("Run returned error %v; a timeout is a Result, not an error", err)
			}
			if elapsed := time.Since(begin); elapsed < 50*time.Millisecond {
				t.Errorf("Run returned after %v, before the 50ms timeout", elapsed)
			}
			if res.State != StateTimedOut || res.ExitCode != ExitTimedOut || !res.TimedOut || res.Success {
				t.Errorf("Result = state %q, exit %d, timed_out %t, success %t; want timed_out, 124, true, false", res.State, res.ExitCode, res.TimedOut, res.Success)
			}
			if res.Signal != tt.wantSignal {
				t.Errorf("signal = %q, want %q", res.Signal, tt.wantSignal)
			}
			if res.Stdout != f.Stdout {
				t.Errorf("stdout = %q, want the output written before the timeout %q", res.Stdout, f.Stdout)
			}
			kills := f.CallsTo("kill")
			var signals []string
			for _, k := range kills {
				signals = append(signals, k.Arg)
			}
			if !slices.Equal(signals, tt.wantKills) {
				t.Fatalf("kill signals = %q, want %q", signals, tt.wantKills)
			}
			if len(kills) == 2 {
				if gap := kills[1].At.Sub(kills[0].At); gap < tt.killGrace {
					t.Errorf("SIGKILL came %v after SIGTERM, before the %v grace period", gap, tt.killGrace)
				}
			}
			wantRemoved(t, f, fakeContainerID)
		})
	}
}

func TestRunCancelled(t *testing.T) {
	errAgentGone := errors.New("agent went away")
	tests := []struct {
		name       string
		ignoreTERM bool
		cause      error
		wantKills  []string
	}{
		{name: "cancel", wantKills: []string{"SIGTERM"}},
		{name: "cancel, SIGTERM ignored", ignoreTERM: true, wantKills: []string{"SIGTERM", "SIGKILL"}},
		{name: "cancel with a cause", cause: errAgentGone, wantKills: []string{"SIGTERM"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeEngine()
			f.Hang = true
			f.Ignore = map[string]bool{"SIGTERM": tt.ignoreTERM}
			f.Stdout = "partial"
			e := newFakeExecutor(t, f, nil)
			ctx, cancel := context.WithCancelCause(t.Context())
			defer cancel(nil)
			go func() {
				<-f.Started
				cancel(tt.cause)
			}()

			res, err := runWithin(t, ctx, e, Spec{Command: "sleep 100"})
			if !errors.Is(err, context.Canceled) && tt.cause == nil {
				t.Errorf("Run error = %v, want one wrapping context.Canceled", err)
			}
			if tt.cause != nil && !errors.Is(err, tt.cause) {
				t.Errorf("Run error = %v, want one wrapping the cancel cause %v", err, tt.cause)
			}
			if errors.Is(err, ErrEngine) {
				t.Errorf("Run error = %v wraps ErrEngine; a cancel is not an engine failure", err)
			}
			if res.State != StateKilled || res.Success || res.TimedOut {
				t.Errorf("Result = state %q, success %t, timed_out %t; want killed, false, false", res.State, res.Success, res.TimedOut)
			}
			if res.Stdout != "partial" {
				t.Errorf("stdout = %q, want the output so far %q", res.Stdout, "partial")
			}
			if got := f.Args("kill"); !slices.Equal(got, tt.wantKills) {
				t.Errorf("kill signals = %q, want %q", got, tt.wantKills)
			}
			wantRemoved(t, f, fakeContainerID)
		})
	}
}

func TestRunInvalidSpecTouchesNothing(t *testing.T) {
	for _, spec := range []Spec{
		{},
		{Command: "true", Memory: -1},
		{Command: "true", Runtime: "kata"},
		{Command: "true", Background: true},
	} {
		f := newFakeEngine()
		e := newFakeExecutor(t, f, nil)
		res, err := runWithin(t, t.Context(), e, spec)
		if !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("Run(%+v) error = %v, want ErrInvalidSpec", spec, err)
		}
		if res.ID != "" || res.State != "" {
			t.Errorf("Run(%+v) returned a Result (id %q, state %q) for an invalid spec", spec, res.ID, res.State)
		}
		if calls := f.Methods(); len(calls) != 0 {
			t.Errorf("Run(%+v) made engine calls %q for an invalid spec; nothing may be started", spec, calls)
		}
	}
}

func TestRunRuntime(t *testing.T) {
	t.Run("allowed but not installed", func(t *testing.T) {
		f := newFakeEngine()
		e := newFakeExecutor(t, f, nil)
		res, err := runWithin(t, t.Context(), e, Spec{Command: "true", Runtime: "runsc"})
		wantFailed(t, res, err, `"runsc"`)
		if !strings.Contains(res.Error, "not installed") {
			t.Errorf("Result.Error = %q, want it to say the runtime is not installed", res.Error)
		}
		if got := f.Methods(); !slices.Equal(got, []string{"info"}) {
			t.Errorf("engine calls = %q, want only [info]: nothing may be created", got)
		}
		if res.Runtime != "runsc" {
			t.Errorf("runtime = %q, want runsc", res.Runtime)
		}
	})
	t.Run("installed since New", func(t *testing.T) {
		f := newFakeEngine()
		e := newFakeExecutor(t, f, nil)
		f.Runtimes = []string{"runc", "runsc"}
		res, err := runWithin(t, t.Context(), e, Spec{Command: "true", Runtime: "runsc"})
		if err != nil || res.State != StateCompleted {
			t.Fatalf("Run with a newly installed runsc = state %q, error %q, %v; want completed", res.State, res.Error, err)
		}
		if got := f.CreatedPlans(); len(got) != 1 || got[0].Runtime != "runsc" {
			t.Errorf("plan runtime = %+v, want runsc", got)
		}
		if got := e.EngineRuntimes(); !slices.Contains(got, "runsc") {
			t.Errorf("EngineRuntimes = %q after the engine was asked again, want runsc among them", got)
		}
	})
	t.Run("engine unreachable", func(t *testing.T) {
		f := newFakeEngine()
		e := newFakeExecutor(t, f, nil)
		f.InfoErr = errFake
		res, err := runWithin(t, t.Context(), e, Spec{Command: "true", Runtime: "runsc"})
		wantFailed(t, res, err, "unreachable")
	})
	t.Run("default runtime does not ask again", func(t *testing.T) {
		f := newFakeEngine()
		e := newFakeExecutor(t, f, nil)
		if _, err := runWithin(t, t.Context(), e, Spec{Command: "true"}); err != nil {
			t.Fatal(err)
		}
		if n := len(f.CallsTo("info")); n != 0 {
			t.Errorf("info was called %d times for a runtime the engine is known to have", n)
		}
	})
}

func TestRunOutput(t *testing.T) {
	var lines strings.Builder
	for i := range 200 {
		fmt.Fprintf(&lines, "line %d\n", i)
	}
	tests := []struct {
		name      string
		stdout    string
		stderr    string
		chunk     int
		maxOutput int64
		tailLines int
	}{
		{name: "small output, default limits", stdout: "hello\n", stderr: "warning\n"},
		{name: "truncated stdout", stdout: lines.String(), stderr: "e\n", maxOutput: 10, tailLines: 3},
		{name: "truncated both, chunked", stdout: lines.String(), stderr: strings.Repeat("E", 1000), chunk: 7, maxOutput: 100, tailLines: 2},
		{name: "no output", maxOutput: 10},
		{name: "output exactly at the limit", stdout: "0123456789", maxOutput: 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeEngine()
			f.Stdout, f.Stderr, f.Chunk = tt.stdout, tt.stderr, tt.chunk
			e := newFakeExecutor(t, f, nil)
			var liveOut, liveErr lockedBuffer

			res, err := runWithin(t, t.Context(), e, Spec{Command: "true", MaxOutput: tt.maxOutput, TailLines: tt.tailLines}, WithLiveOutput(&liveOut, &liveErr))
			if err != nil {
				t.Fatal(err)
			}
			limit, tail := tt.maxOutput, tt.tailLines
			if limit == 0 {
				limit = 1 << 20
			}
			if tail == 0 {
				tail = 100
			}
			for _, s := range []struct {
				name                string
				written             string
				kept, gotTail, live string
				truncated           bool
				bytes               int64
			}{
				{"stdout", tt.stdout, res.Stdout, res.StdoutTail, liveOut.String(), res.StdoutTruncated, res.StdoutBytes},
				{"stderr", tt.stderr, res.Stderr, res.StderrTail, liveErr.String(), res.StderrTruncated, res.StderrBytes},
			} {
				want := s.written[:min(int64(len(s.written)), limit)]
				if s.kept != want {
					t.Errorf("%s = %q, want the first %d bytes %q", s.name, s.kept, limit, want)
				}
				if wantTrunc := int64(len(s.written)) > limit; s.truncated != wantTrunc {
					t.Errorf("%s_truncated = %t, want %t", s.name, s.truncated, wantTrunc)
				}
				if s.bytes != int64(len(s.written)) {
					t.Errorf("%s_bytes = %d, want %d", s.name, s.bytes, len(s.written))
				}
				if wantTail := naiveLastLines(s.written, tail); s.gotTail != wantTail {
					t.Errorf("%s_tail = %q, want the last %d lines %q", s.name, s.gotTail, tail, wantTail)
				}
				if s.live != s.written {
					t.Errorf("live %s got %d bytes, want every one of the %d written", s.name, len(s.live), len(s.written))
				}
			}
		})
	}
}

// lockedBuffer is a bytes.Buffer safe for the run's goroutines and the test's.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestRunPlan(t *testing.T) {
	callerLabels := map[string]string{"agent": "a1", "session": "s9"}
	tests := []struct {
		name    string
		spec    Spec
		wantCmd []string
		wantEnv []string
	}{
		{
			name:    "command runs under sh -c",
			spec:    Spec{Command: "echo $HOME; ls", Labels: callerLabels},
			wantCmd: []string{"/bin/sh", "-c", "echo $HOME; ls"},
			wantEnv: []string{},
		},
		{
			name:    "argv runs as is",
			spec:    Spec{Argv: []string{"printf", "%s\n", "a b", ""}, Env: map[string]string{"ZED": "z", "A": "1", "M": "x=y", "EMPTY": ""}},
			wantCmd: []string{"printf", "%s\n", "a b", ""},
			wantEnv: []string{"A=1", "EMPTY=", "M=x=y", "ZED=z"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeEngine()
			e := newFakeExecutor(t, f, nil)
			res, err := runWithin(t, t.Context(), e, tt.spec)
			if err != nil {
				t.Fatal(err)
			}
			plans := f.CreatedPlans()
			if len(plans) != 1 {
				t.Fatalf("create was called %d times, want 1", len(plans))
			}
			p := plans[0]
			if !slices.Equal(p.Cmd, tt.wantCmd) {
				t.Errorf("plan Cmd = %q, want %q", p.Cmd, tt.wantCmd)
			}
			if !slices.Equal(p.Env, tt.wantEnv) {
				t.Errorf("plan Env = %q, want %q (sorted K=V)", p.Env, tt.wantEnv)
			}
			wantLabels := maps.Clone(tt.spec.Labels)
			if wantLabels == nil {
				wantLabels = map[string]string{}
			}
			wantLabels[LabelManaged] = "true"
			wantLabels[LabelID] = res.ID
			deadline, err := time.Parse(time.RFC3339, p.Labels[LabelDeadline])
			if err != nil || deadline.Before(time.Now()) || deadline.After(time.Now().Add(time.Hour)) {
				t.Errorf("deadline label %q: want a time after the run's timeout (%v)", p.Labels[LabelDeadline], err)
			}
			wantLabels[LabelDeadline] = p.Labels[LabelDeadline]
			if !maps.Equal(p.Labels, wantLabels) {
				t.Errorf("plan labels = %v, want %v: the janitor finds containers by these", p.Labels, wantLabels)
			}
			if _, ok := tt.spec.Labels[LabelID]; ok {
				t.Errorf("the caller's labels map was changed: %v", tt.spec.Labels)
			}
			if !maps.Equal(res.Labels, tt.spec.Labels) {
				t.Errorf("Result labels = %v, want the caller's %v echoed back", res.Labels, tt.spec.Labels)
			}
			if p.Name != "airlock-"+res.ID {
				t.Errorf("plan Name = %q, want airlock-%s", p.Name, res.ID)
			}
			if len(res.ID) != 24 || strings.Trim(res.ID, "0123456789abcdef") != "" {
				t.Errorf("Result.ID = %q, want 24 hex digits", res.ID)
			}
		})
	}
}

func TestRunPlanLimits(t *testing.T) {
	f := newFakeEngine()
	e := newFakeExecutor(t, f, func(c *Config) { c.Networks = []string{"none", "sandnet"} })
	spec := Spec{
		Command: "true", Image: "alpine:3.20", Workdir: "/tmp", User: "1000:1000",
		Memory: 256 << 20, CPUs: 1.5, Pids: 64, TmpfsSize: 8 << 20, Network: "sandnet",
	}
	if _, err := runWithin(t, t.Context(), e, spec); err != nil {
		t.Fatal(err)
	}
	p := f.CreatedPlans()[0]
	want := containerPlan{
		Name: p.Name, Image: "sha256:fake", Cmd: p.Cmd, Env: p.Env, Workdir: "/tmp", User: "1000:1000",
		Memory: 256 << 20, NanoCPUs: 1_500_000_000, Pids: 64, TmpfsSize: 8 << 20, Network: "sandnet",
		Runtime: "runc", OpenStdin: false, Labels: p.Labels,
	}
	if fmt.Sprint(p) != fmt.Sprint(want) {
		t.Errorf("plan = %+v\nwant   %+v", p, want)
	}

	f = newFakeEngine()
	e = newFakeExecutor(t, f, nil)
	if _, err := runWithin(t, t.Context(), e, Spec{Argv: []string{"true"}}); err != nil {
		t.Fatal(err)
	}
	p = f.CreatedPlans()[0]
	if p.Image != "sha256:fake" || p.Workdir != "/workspace" || p.User != "65534:65534" || p.Memory != 512<<20 ||
		p.NanoCPUs != 1e9 || p.Pids != 256 || p.TmpfsSize != 64<<20 || p.Network != "none" || p.Runtime != "runc" {
		t.Errorf("plan for an empty spec = %+v, want the shipped defaults", p)
	}
}

func TestRunStdin(t *testing.T) {
	t.Run("given", func(t *testing.T) {
		f := newFakeEngine()
		e := newFakeExecutor(t, f, nil)
		if _, err := runWithin(t, t.Context(), e, Spec{Command: "cat", Stdin: ptr("input data\n")}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-f.StdinEOF:
		case <-time.After(5 * time.Second):
			t.Fatal("stdin was never closed; a command reading it would hang")
		}
		if got := f.StdinData(); got != "input data\n" {
			t.Errorf("the process got stdin %q, want %q", got, "input data\n")
		}
		if got := f.Args("attach"); !slices.Equal(got, []string{fakeContainerID + " stdin=true"}) {
			t.Errorf("attach calls = %q, want stdin attached", got)
		}
		if p := f.CreatedPlans()[0]; !p.OpenStdin {
			t.Errorf("plan OpenStdin = false with stdin given")
		}
	})
	t.Run("absent", func(t *testing.T) {
		f := newFakeEngine()
		e := newFakeExecutor(t, f, nil)
		if _, err := runWithin(t, t.Context(), e, Spec{Command: "cat"}); err != nil {
			t.Fatal(err)
		}
		if got := f.Args("attach"); !slices.Equal(got, []string{fakeContainerID + " stdin=false"}) {
			t.Errorf("attach calls = %q, want stdin not attached", got)
		}
		if p := f.CreatedPlans()[0]; p.OpenStdin {
			t.Errorf("plan OpenStdin = true without stdin; a command reading stdin would hang")
		}
		if n := len(f.CallsTo("closeStdin")); n != 0 {
			t.Errorf("closeStdin called %d times without stdin", n)
		}
	})
}

func TestRunWaitOrInspectFails(t *testing.T) {
	tests := []struct {
		name       string
		waitErr    error
		inspectErr error
		wantMsg    string
	}{
		{name: "wait fails", waitErr: errFake, wantMsg: "wait for container"},
		{name: "inspect fails", inspectErr: errFake, wantMsg: "inspect container"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeEngine()
			f.WaitErr, f.InspectErr = tt.waitErr, tt.inspectErr
			f.Stdout = "kept\n"
			e := newFakeExecutor(t, f, nil)
			res, err := runWithin(t, t.Context(), e, Spec{Command: "true"})
			wantFailed(t, res, err, tt.wantMsg)
			if res.Stdout != "kept\n" {
				t.Errorf("stdout = %q after an engine failure, want the output captured %q", res.Stdout, "kept\n")
			}
			wantRemoved(t, f, fakeContainerID)
		})
	}
}

func TestRunResourceUsage(t *testing.T) {
	f := newFakeEngine()
	f.RunFor = statsDelay + 150*time.Millisecond
	f.Sample = &usageSample{CPUNanos: 2_500_000, MemoryPeak: 3 << 20, IORead: 10, IOWrite: 20}
	e := newFakeExecutor(t, f, nil)
	res, err := runWithin(t, t.Context(), e, Spec{Command: "true"})
	if err != nil {
		t.Fatal(err)
	}
	want := ResourceUsage{CPUMS: 2, MemoryPeakBytes: 3 << 20, IOReadBytes: 10, IOWriteBytes: 20, Samples: 1}
	if res.ResourceUsage != want {
		t.Errorf("resource_usage = %+v, want %+v", res.ResourceUsage, want)
	}
}

func TestUsageMeter(t *testing.T) {
	var m usageMeter
	m.add(usageSample{CPUNanos: 1e6, MemoryPeak: 500, IORead: 1, IOWrite: 2})
	m.add(usageSample{CPUNanos: 3e6, MemoryPeak: 200, IORead: 5, IOWrite: 6})
	want := ResourceUsage{CPUMS: 3, MemoryPeakBytes: 500, IOReadBytes: 5, IOWriteBytes: 6, Samples: 2}
	if got := m.get(); got != want {
		t.Errorf("usage after two samples = %+v, want %+v (counters latest, memory the highest peak)", got, want)
	}
}

func TestNew(t *testing.T) {
	t.Run("fills the CPU ceiling from the engine", func(t *testing.T) {
		f := newFakeEngine()
		f.CPUs = 6
		cfg := testConfig()
		cfg.Ceilings.CPUs = 0
		e, err := New(WithConfig(cfg), WithEngine(f))
		if err != nil {
			t.Fatal(err)
		}
		if got := e.Config().Ceilings.CPUs; got != 6 {
			t.Errorf("Ceilings.CPUs = %g, want the engine's 6", got)
		}
		if v, api := e.EngineVersion(); v != "fake" || api != "1.41" {
			t.Errorf("EngineVersion = %q, %q; want fake, 1.41", v, api)
		}
	})
	t.Run("engine unreachable", func(t *testing.T) {
		f := newFakeEngine()
		f.InfoErr = errFake
		if _, err := New(WithConfig(testConfig()), WithEngine(f)); !errors.Is(err, ErrEngine) {
			t.Errorf("New with an unreachable engine: error %v, want one wrapping ErrEngine", err)
		}
	})
	t.Run("bad config", func(t *testing.T) {
		cfg := testConfig()
		cfg.Defaults.Memory = cfg.Ceilings.Memory * 2
		if _, err := New(WithConfig(cfg), WithEngine(newFakeEngine())); err == nil || !strings.Contains(err.Error(), "memory") {
			t.Errorf("New with a default over its ceiling: error %v, want one naming memory", err)
		}
	})
	t.Run("option fails", func(t *testing.T) {
		bad := func(*Executor) error { return errFake }
		if _, err := New(WithEngine(newFakeEngine()), bad); !errors.Is(err, errFake) {
			t.Errorf("New with a failing option: error %v, want the option's", err)
		}
	})
}

// TestBuildImagesSkipsAnUpToDateImage checks that an image built from the very same
// build context is kept, and that a rebuild removes the image it replaces.
func TestBuildImagesSkipsAnUpToDateImage(t *testing.T) {
	bc, err := images.Minimal.Context()
	if err != nil {
		t.Fatal(err)
	}
	current := fmt.Sprintf("sha256:%x", sha256.Sum256(bc))
	for _, tt := range []struct {
		name      string
		found     bool
		digest    string
		wantCalls []string
	}{
		{"missing", false, "", []string{"inspectImage", "buildImage"}},
		{"up to date", true, current, []string{"inspectImage"}},
		{"recipe changed", true, "sha256:old", []string{"inspectImage", "buildImage", "removeImage"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeEngine()
			f.ImageMissing, f.ImageDigest = !tt.found, tt.digest
			e := newFakeExecutor(t, f, nil)
			if err := e.BuildImages(t.Context(), io.Discard, "minimal"); err != nil {
				t.Fatal(err)
			}
			if got := f.Methods(); !slices.Equal(got, tt.wantCalls) {
				t.Errorf("engine calls = %q, want %q", got, tt.wantCalls)
			}
		})
	}
}

// An airlock/debian built from the same recipe is up to date without a
// debootstrap: its key is the recipe's, not its build context's.
func TestBuildImagesDebianUpToDateByRecipe(t *testing.T) {
	key, err := images.Debian.Key()
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeEngine()
	f.ImageDigest = key
	e := newFakeExecutor(t, f, nil)
	if err := e.BuildImages(t.Context(), io.Discard, "debian"); err != nil {
		t.Fatal(err)
	}
	if got := f.Methods(); !slices.Equal(got, []string{"inspectImage"}) {
		t.Errorf("engine calls = %q, want only the inspection", got)
	}
}
