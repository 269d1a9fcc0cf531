package enginefake

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/internal/engine"
	"golang.org/x/sys/unix"
)

// Engine is an engine without Docker. It plays one container per test: the
// script fields say how each call answers and how the "process" behaves, and every
// call is recorded so that a test can check what airlock asked for, and in what
// order.
//
// Set the script fields before the run; the fake only reads them afterwards.
type Engine struct {
	// runtimes and cpus are what info reports; infoErr makes info fail.
	Runtimes []string
	CPUs     int
	InfoErr  error
	// RuntimePaths, DefaultRuntime and RuncCommit are info's, as the engine's.
	RuntimePaths   map[string]string
	DefaultRuntime string
	RuncCommit     string

	// createErrs[n] is what the nth create returns (nil, or past the end: success).
	CreateErrs []error
	// blockCreate makes create wait for its ctx to end, then fail with ctx's error.
	BlockCreate bool

	// imageMissing: the engine lacks the image until a build or pull makes it.
	ImageMissing bool
	ImageDigest  string   // the recipe digest label of the image inspectImage finds
	ImageVolumes []string // the paths the image declares as VOLUMEs
	ImageErr     error    // what inspectImage fails with
	BuildErr     error
	PullErr      error

	AttachErr  error
	StartErr   error
	WaitErr    error // what the wait channel yields when the container stops
	InspectErr error
	// removeErrs[n] is what the nth remove returns (nil, or past the end: success).
	RemoveErrs []error

	// stdout and stderr are what the process writes, in chunks of chunk bytes
	// (all at once when chunk is 0), before it ends.
	Stdout, Stderr string
	Chunk          int

	// The process exits by itself with exitCode runFor after start, unless hang is
	// set: then it runs until a kill whose signal is not in ignore ends it with
	// 128+signal.
	ExitCode  int
	OOMKilled bool
	RunFor    time.Duration
	Hang      bool
	Ignore    map[string]bool
	// BuildGate, when set, holds every image build until it is closed.
	BuildGate chan struct{}

	// sample is given to stats' callback once, if set.
	Sample *engine.UsageSample

	mu        sync.Mutex
	volumes   map[string]engine.Volume
	calls     []Call
	plans     []engine.Plan
	stdinBuf  bytes.Buffer
	endCode   int // the exit code the process ended with
	nCreate   int
	removes   int
	exitOnce  sync.Once
	Exited    chan struct{} // closed when the process ends
	startOnce sync.Once
	Started   chan struct{} // closed when start succeeds
	closeOnce sync.Once
	closed    chan struct{} // closed when airlock tears the engine.Attachment down
	stdinOnce sync.Once
	StdinEOF  chan struct{} // closed by closeStdin
}

// Call is one recorded call: the method and its main argument.
type Call struct {
	Method string
	Arg    string
	At     time.Time
}

func New() *Engine {
	return &Engine{
		Runtimes: []string{"runc"},
		CPUs:     4,
		Exited:   make(chan struct{}),
		Started:  make(chan struct{}),
		closed:   make(chan struct{}),
		StdinEOF: make(chan struct{}),
	}
}

// ContainerID is the id of the one container the fake plays.
const ContainerID = "c0ffee"

func (f *Engine) record(method, arg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, Call{Method: method, Arg: arg, At: time.Now()})
}

// reset forgets the calls made so far (New's info, typically).
func (f *Engine) Reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

// callsTo returns the arguments of every call to method, in order.
func (f *Engine) CallsTo(method string) []Call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []Call
	for _, c := range f.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// args returns the arguments of every call to method, in order.
func (f *Engine) Args(method string) []string {
	var out []string
	for _, c := range f.CallsTo(method) {
		out = append(out, c.Arg)
	}
	return out
}

// methods returns the methods called, in order.
func (f *Engine) Methods() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, c := range f.calls {
		out = append(out, c.Method)
	}
	return out
}

func (f *Engine) CreatedPlans() []engine.Plan {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.plans)
}

func (f *Engine) StdinData() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stdinBuf.String()
}

// exit ends the process with code; only the first call counts.
func (f *Engine) Exit(code int) {
	f.exitOnce.Do(func() {
		f.mu.Lock()
		f.endCode = code
		f.mu.Unlock()
		close(f.Exited)
	})
}

func (f *Engine) Info(ctx context.Context) (engine.Info, error) {
	f.record("info", "")
	if f.InfoErr != nil {
		return engine.Info{}, f.InfoErr
	}
	return engine.Info{Version: "fake", APIVer: "1.41", CPUs: f.CPUs, Runtimes: slices.Clone(f.Runtimes),
		RuntimePaths: maps.Clone(f.RuntimePaths), DefaultRuntime: f.DefaultRuntime, RuncCommit: f.RuncCommit}, nil
}

func (f *Engine) InspectImage(ctx context.Context, ref string) (engine.Image, bool, error) {
	f.record("inspectImage", ref)
	f.mu.Lock()
	defer f.mu.Unlock()
	return engine.Image{Ref: ref, ID: "sha256:fake", RecipeDigest: f.ImageDigest, Volumes: f.ImageVolumes}, !f.ImageMissing, f.ImageErr
}

func (f *Engine) RemoveImage(ctx context.Context, id string) error {
	f.record("removeImage", id)
	return nil
}

func (f *Engine) BuildImage(ctx context.Context, tag string, buildContext io.Reader, labels map[string]string, progress io.Writer) error {
	f.record("buildImage", tag)
	if _, err := io.Copy(io.Discard, buildContext); err != nil {
		return fmt.Errorf("fake: read build context: %w", err)
	}
	if f.BuildGate != nil {
		fmt.Fprintln(progress, "Step 1/2 : FROM scratch")
		select {
		case <-f.BuildGate:
		case <-ctx.Done():
			return ctx.Err()
		}
		fmt.Fprintln(progress, "Step 2/2 : ADD rootfs.tar /")
	}
	f.made(f.BuildErr)
	return f.BuildErr
}

// made marks the image present after a build or pull that did not fail.
func (f *Engine) made(err error) {
	if err == nil {
		f.mu.Lock()
		f.ImageMissing = false
		f.mu.Unlock()
	}
}

func (f *Engine) PullImage(ctx context.Context, ref string) error {
	f.record("pullImage", ref)
	f.made(f.PullErr)
	return f.PullErr
}

func (f *Engine) ListImages(ctx context.Context) ([]engine.Image, error) {
	f.record("listImages", "")
	return nil, nil
}

func (f *Engine) Create(ctx context.Context, p engine.Plan) (string, error) {
	f.record("create", p.Name)
	f.mu.Lock()
	f.plans = append(f.plans, p)
	n := f.nCreate
	f.nCreate++
	f.mu.Unlock()
	if f.BlockCreate {
		<-ctx.Done()
		return "", ctx.Err()
	}
	if n < len(f.CreateErrs) && f.CreateErrs[n] != nil {
		return "", f.CreateErrs[n]
	}
	return ContainerID, nil
}

func (f *Engine) Attach(ctx context.Context, id string, stdin bool) (*engine.Attachment, error) {
	f.record("attach", fmt.Sprintf("%s stdin=%t", id, stdin))
	if f.AttachErr != nil {
		return nil, f.AttachErr
	}
	return &engine.Attachment{
		CopyOutput: f.copyOutput,
		Stdin:      fakeStdin{f},
		CloseStdin: func() error {
			f.record("closeStdin", id)
			f.stdinOnce.Do(func() { close(f.StdinEOF) })
			return nil
		},
		Close: func() {
			f.record("close", id)
			f.closeOnce.Do(func() { close(f.closed) })
		},
	}, nil
}

// copyOutput writes the scripted output, then holds the streams open until the
// process ends or airlock closes the engine.Attachment, as the engine does.
func (f *Engine) copyOutput(stdout, stderr io.Writer) error {
	for _, s := range []struct {
		w    io.Writer
		data string
	}{{stdout, f.Stdout}, {stderr, f.Stderr}} {
		for data := s.data; data != ""; {
			n := len(data)
			if f.Chunk > 0 {
				n = min(n, f.Chunk)
			}
			if _, err := io.WriteString(s.w, data[:n]); err != nil {
				return err
			}
			data = data[n:]
		}
	}
	select {
	case <-f.Exited:
	case <-f.closed:
	}
	return nil
}

type fakeStdin struct{ f *Engine }

func (s fakeStdin) Write(p []byte) (int, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	return s.f.stdinBuf.Write(p)
}

func (f *Engine) Wait(ctx context.Context, id string, nextExit bool) <-chan engine.Exit {
	f.record("wait", id)
	c := make(chan engine.Exit, 1)
	go func() {
		<-f.Exited
		f.mu.Lock()
		code := f.endCode
		f.mu.Unlock()
		c <- engine.Exit{Code: code, Err: f.WaitErr}
	}()
	return c
}

func (f *Engine) Start(ctx context.Context, id string) error {
	f.record("start", id)
	if f.StartErr != nil {
		return f.StartErr
	}
	f.startOnce.Do(func() { close(f.Started) })
	switch {
	case f.Hang:
	case f.RunFor > 0:
		time.AfterFunc(f.RunFor, func() { f.Exit(f.ExitCode) })
	default:
		f.Exit(f.ExitCode)
	}
	return nil
}

func (f *Engine) Kill(ctx context.Context, id, signal string) error {
	f.record("kill", signal)
	if f.Ignore[signal] {
		return nil
	}
	sig := unix.SignalNum(signal)
	if sig == 0 {
		return fmt.Errorf("fake: unknown signal %q", signal)
	}
	f.Exit(128 + int(sig))
	return nil
}

func (f *Engine) Inspect(ctx context.Context, id string) (engine.State, error) {
	f.record("inspect", id)
	if f.InspectErr != nil {
		return engine.State{}, f.InspectErr
	}
	select {
	case <-f.Exited:
	default:
		return engine.State{Running: true}, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return engine.State{ExitCode: f.endCode, OOMKilled: f.OOMKilled}, nil
}

func (f *Engine) Stats(ctx context.Context, id string, sample func(engine.UsageSample)) error {
	f.record("stats", id)
	if f.Sample != nil {
		sample(*f.Sample)
	}
	select {
	case <-ctx.Done():
	case <-f.Exited:
	}
	return nil
}

func (f *Engine) Remove(ctx context.Context, id string) error {
	f.record("remove", id)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.removes++; f.removes <= len(f.RemoveErrs) {
		return f.RemoveErrs[f.removes-1]
	}
	return nil
}

// Rename is recorded; the fake plays one container, whose name it ignores.
func (f *Engine) Rename(ctx context.Context, id, name string) error {
	f.record("rename", id+" "+name)
	return nil
}

// logs and list serve background jobs, which the integration suite tests on the
// real engine; the fake has no containers to list and no logs to read.
func (f *Engine) Logs(ctx context.Context, id string, since time.Time, follow bool, frame func(engine.LogFrame) error) error {
	f.record("logs", id)
	return nil
}

func (f *Engine) List(ctx context.Context, label string) ([]engine.ContainerSummary, error) {
	return nil, nil
}

// Exec is not played: workspaces' files are tested against the real engine.
func (f *Engine) Exec(ctx context.Context, id, user string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	f.record("exec", id)
	return -1, fmt.Errorf("the fake engine plays no exec")
}

func (f *Engine) CreateVolume(ctx context.Context, name string, opts, labels map[string]string) error {
	f.record("createVolume", name)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.volumes == nil {
		f.volumes = map[string]engine.Volume{}
	}
	f.volumes[name] = engine.Volume{Name: name, Labels: labels}
	return nil
}

func (f *Engine) Update(ctx context.Context, id string, memory, nanoCPUs, pids int64) error {
	f.record("update", id)
	return nil
}

func (f *Engine) CopyTo(ctx context.Context, id, dir string, archive io.Reader) error {
	f.record("copyTo", id+":"+dir)
	return nil
}

func (f *Engine) RemoveVolume(ctx context.Context, name string) error {
	f.record("removeVolume", name)
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.volumes, name)
	return nil
}

func (f *Engine) ListVolumes(ctx context.Context, label string) ([]engine.Volume, error) {
	f.record("listVolumes", label)
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []engine.Volume
	for _, v := range f.volumes {
		if hasLabel(v.Labels, label) {
			out = append(out, v)
		}
	}
	return out, nil
}

// hasLabel reports whether labels carry label, given as "k=v" or "k".
func hasLabel(labels map[string]string, label string) bool {
	k, v, withValue := strings.Cut(label, "=")
	have, ok := labels[k]
	return ok && (!withValue || have == v)
}
