package executor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fakeEngine is an engine without Docker. It plays one container per test: the
// script fields say how each call answers and how the "process" behaves, and every
// call is recorded so that a test can check what airlock asked for, and in what
// order.
//
// Set the script fields before the run; the fake only reads them afterwards.
type fakeEngine struct {
	// runtimes and cpus are what info reports; infoErr makes info fail.
	runtimes []string
	cpus     int
	infoErr  error

	// createErrs[n] is what the nth create returns (nil, or past the end: success).
	createErrs []error
	// blockCreate makes create wait for its ctx to end, then fail with ctx's error.
	blockCreate bool

	// imageMissing: the engine lacks the image until a build or pull makes it.
	imageMissing bool
	imageDigest  string   // the recipe digest label of the image inspectImage finds
	imageVolumes []string // the paths the image declares as VOLUMEs
	imageErr     error    // what inspectImage fails with
	buildErr     error
	pullErr      error

	attachErr  error
	startErr   error
	waitErr    error // what the wait channel yields when the container stops
	inspectErr error

	// stdout and stderr are what the process writes, in chunks of chunk bytes
	// (all at once when chunk is 0), before it ends.
	stdout, stderr string
	chunk          int

	// The process exits by itself with exitCode runFor after start, unless hang is
	// set: then it runs until a kill whose signal is not in ignore ends it with
	// 128+signal.
	exitCode  int
	oomKilled bool
	runFor    time.Duration
	hang      bool
	ignore    map[string]bool

	// sample is given to stats' callback once, if set.
	sample *usageSample

	mu        sync.Mutex
	calls     []fakeCall
	plans     []containerPlan
	stdinBuf  bytes.Buffer
	endCode   int // the exit code the process ended with
	nCreate   int
	exitOnce  sync.Once
	exited    chan struct{} // closed when the process ends
	startOnce sync.Once
	started   chan struct{} // closed when start succeeds
	closeOnce sync.Once
	closed    chan struct{} // closed when airlock tears the attachment down
	stdinOnce sync.Once
	stdinEOF  chan struct{} // closed by closeStdin
}

// fakeCall is one recorded call: the method and its main argument.
type fakeCall struct {
	method string
	arg    string
	at     time.Time
}

func newFakeEngine() *fakeEngine {
	return &fakeEngine{
		runtimes: []string{"runc"},
		cpus:     4,
		exited:   make(chan struct{}),
		started:  make(chan struct{}),
		closed:   make(chan struct{}),
		stdinEOF: make(chan struct{}),
	}
}

const fakeContainerID = "c0ffee"

func (f *fakeEngine) record(method, arg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fakeCall{method: method, arg: arg, at: time.Now()})
}

// reset forgets the calls made so far (New's info, typically).
func (f *fakeEngine) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

// callsTo returns the arguments of every call to method, in order.
func (f *fakeEngine) callsTo(method string) []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeCall
	for _, c := range f.calls {
		if c.method == method {
			out = append(out, c)
		}
	}
	return out
}

// args returns the arguments of every call to method, in order.
func (f *fakeEngine) args(method string) []string {
	var out []string
	for _, c := range f.callsTo(method) {
		out = append(out, c.arg)
	}
	return out
}

// methods returns the methods called, in order.
func (f *fakeEngine) methods() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		out = append(out, c.method)
	}
	return out
}

func (f *fakeEngine) createdPlans() []containerPlan {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.plans)
}

func (f *fakeEngine) stdinData() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stdinBuf.String()
}

// exit ends the process with code; only the first call counts.
func (f *fakeEngine) exit(code int) {
	f.exitOnce.Do(func() {
		f.mu.Lock()
		f.endCode = code
		f.mu.Unlock()
		close(f.exited)
	})
}

func (f *fakeEngine) info(ctx context.Context) (engineInfo, error) {
	f.record("info", "")
	if f.infoErr != nil {
		return engineInfo{}, f.infoErr
	}
	return engineInfo{Version: "fake", APIVer: "1.41", CPUs: f.cpus, Runtimes: slices.Clone(f.runtimes)}, nil
}

func (f *fakeEngine) inspectImage(ctx context.Context, ref string) (Image, bool, error) {
	f.record("inspectImage", ref)
	f.mu.Lock()
	defer f.mu.Unlock()
	return Image{Ref: ref, ID: "sha256:fake", RecipeDigest: f.imageDigest, Volumes: f.imageVolumes}, !f.imageMissing, f.imageErr
}

func (f *fakeEngine) removeImage(ctx context.Context, id string) error {
	f.record("removeImage", id)
	return nil
}

func (f *fakeEngine) buildImage(ctx context.Context, tag string, buildContext io.Reader, labels map[string]string, progress io.Writer) error {
	f.record("buildImage", tag)
	if _, err := io.Copy(io.Discard, buildContext); err != nil {
		return fmt.Errorf("fake: read build context: %w", err)
	}
	f.made(f.buildErr)
	return f.buildErr
}

// made marks the image present after a build or pull that did not fail.
func (f *fakeEngine) made(err error) {
	if err == nil {
		f.mu.Lock()
		f.imageMissing = false
		f.mu.Unlock()
	}
}

func (f *fakeEngine) pullImage(ctx context.Context, ref string) error {
	f.record("pullImage", ref)
	f.made(f.pullErr)
	return f.pullErr
}

func (f *fakeEngine) listImages(ctx context.Context) ([]Image, error) {
	f.record("listImages", "")
	return nil, nil
}

func (f *fakeEngine) create(ctx context.Context, p containerPlan) (string, error) {
	f.record("create", p.Name)
	f.mu.Lock()
	f.plans = append(f.plans, p)
	n := f.nCreate
	f.nCreate++
	f.mu.Unlock()
	if f.blockCreate {
		<-ctx.Done()
		return "", ctx.Err()
	}
	if n < len(f.createErrs) && f.createErrs[n] != nil {
		return "", f.createErrs[n]
	}
	return fakeContainerID, nil
}

func (f *fakeEngine) attach(ctx context.Context, id string, stdin bool) (*attachment, error) {
	f.record("attach", fmt.Sprintf("%s stdin=%t", id, stdin))
	if f.attachErr != nil {
		return nil, f.attachErr
	}
	return &attachment{
		copyOutput: f.copyOutput,
		stdin:      fakeStdin{f},
		closeStdin: func() error {
			f.record("closeStdin", id)
			f.stdinOnce.Do(func() { close(f.stdinEOF) })
			return nil
		},
		close: func() {
			f.record("close", id)
			f.closeOnce.Do(func() { close(f.closed) })
		},
	}, nil
}

// copyOutput writes the scripted output, then holds the streams open until the
// process ends or airlock closes the attachment, as the engine does.
func (f *fakeEngine) copyOutput(stdout, stderr io.Writer) error {
	for _, s := range []struct {
		w    io.Writer
		data string
	}{{stdout, f.stdout}, {stderr, f.stderr}} {
		for data := s.data; data != ""; {
			n := len(data)
			if f.chunk > 0 {
				n = min(n, f.chunk)
			}
			if _, err := io.WriteString(s.w, data[:n]); err != nil {
				return err
			}
			data = data[n:]
		}
	}
	select {
	case <-f.exited:
	case <-f.closed:
	}
	return nil
}

type fakeStdin struct{ f *fakeEngine }

func (s fakeStdin) Write(p []byte) (int, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	return s.f.stdinBuf.Write(p)
}

func (f *fakeEngine) wait(ctx context.Context, id string, nextExit bool) <-chan error {
	f.record("wait", id)
	c := make(chan error, 1)
	go func() {
		<-f.exited
		c <- f.waitErr
	}()
	return c
}

func (f *fakeEngine) start(ctx context.Context, id string) error {
	f.record("start", id)
	if f.startErr != nil {
		return f.startErr
	}
	f.startOnce.Do(func() { close(f.started) })
	switch {
	case f.hang:
	case f.runFor > 0:
		time.AfterFunc(f.runFor, func() { f.exit(f.exitCode) })
	default:
		f.exit(f.exitCode)
	}
	return nil
}

func (f *fakeEngine) kill(ctx context.Context, id, signal string) error {
	f.record("kill", signal)
	if f.ignore[signal] {
		return nil
	}
	sig := unix.SignalNum(signal)
	if sig == 0 {
		return fmt.Errorf("fake: unknown signal %q", signal)
	}
	f.exit(128 + int(sig))
	return nil
}

func (f *fakeEngine) inspect(ctx context.Context, id string) (containerState, error) {
	f.record("inspect", id)
	if f.inspectErr != nil {
		return containerState{}, f.inspectErr
	}
	select {
	case <-f.exited:
	default:
		return containerState{Running: true}, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return containerState{ExitCode: f.endCode, OOMKilled: f.oomKilled}, nil
}

func (f *fakeEngine) stats(ctx context.Context, id string, sample func(usageSample)) error {
	f.record("stats", id)
	if f.sample != nil {
		sample(*f.sample)
	}
	select {
	case <-ctx.Done():
	case <-f.exited:
	}
	return nil
}

func (f *fakeEngine) remove(ctx context.Context, id string) error {
	f.record("remove", id)
	return nil
}

// logs and list serve background jobs, which the integration suite tests on the
// real engine; the fake has no containers to list and no logs to read.
func (f *fakeEngine) logs(ctx context.Context, id string, since time.Time, follow bool, frame func(logFrame) error) error {
	f.record("logs", id)
	return nil
}

func (f *fakeEngine) list(ctx context.Context, label string) ([]containerSummary, error) {
	return nil, nil
}

// newFakeExecutor returns an Executor over f with a test configuration (KillGrace
// 50ms, quiet logger), with New's own calls to the engine forgotten.
func newFakeExecutor(t *testing.T, f *fakeEngine, change func(*Config)) *Executor {
	t.Helper()
	cfg := testConfig()
	if change != nil {
		change(&cfg)
	}
	e, err := New(WithConfig(cfg), withEngine(f))
	if err != nil {
		t.Fatalf("New with a fake engine: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	e.oomWait = 100 * time.Millisecond // the fake's flag is never late
	f.reset()
	return e
}

var errFake = errors.New("fake engine failure")

// sigkillExit is the exit code of a process ended by SIGKILL.
const sigkillExit = 128 + int(syscall.SIGKILL)
