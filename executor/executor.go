package executor

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/images"
	"github.com/airlock-sandbox/airlock/internal/engine"
	"github.com/airlock-sandbox/airlock/store"
)

// Labels airlock puts on every container it creates.
const (
	labelPrefix  = "io.airlock."
	LabelManaged = labelPrefix + "managed" // always "true"
	LabelID      = labelPrefix + "id"      // the run's airlock id
)

// Executor runs Specs in sandbox containers. It is safe for concurrent use.
type Executor struct {
	cfg      Config
	eng      engineAPI
	closeEng func() error

	mu   sync.Mutex
	info engineInfo
	runc runcChoice // the engine runtime of runc sandboxes, chosen at start

	buildMu sync.Mutex            // one image build at a time; others wait for its outcome
	builds  map[string]ImageBuild // the build under way, by image ref (under mu)
	// buildPatience (a constant's; shorter in unit tests) is how long a run
	// waits for a background build it did not ask to wait for.
	buildPatience time.Duration

	initMu  sync.Mutex
	initVol string // the volume holding Config.InitPath, once made
	initEtc string // the directory of the init and sandboxEtc on the engine's host ("" when unknown)

	relayMu      sync.Mutex
	relayChecked bool   // relayDir is known (see relaySockets)
	relayDir     string // where relays' sockets are made; "" when the engine cannot see it

	poolSizes map[string]int // WithPool
	pool      *pool          // nil without one

	oomWait time.Duration // oomEventWait; shorter in unit tests of a fake engine

	// Background jobs: their records and logs, and the watchers of this process.
	store    *store.Store
	jobsCtx  context.Context // ends when the executor closes
	stopJobs context.CancelFunc
	jobsMu   sync.Mutex
	jobsWG   sync.WaitGroup
	watchers map[string]*watcher
	closed   bool

	// The stdin of background jobs, being written (see feed).
	feeding sync.WaitGroup
	feedMu  sync.Mutex
	feeds   map[*attachment]bool
}

// Option configures New.
type Option func(*Executor) error

// WithConfig replaces DefaultConfig. Start from DefaultConfig and change fields.
func WithConfig(c Config) Option {
	return func(e *Executor) error { e.cfg = c; return nil }
}

// WithEngine replaces the Docker engine: for unit tests, with the fake of
// internal/enginefake, of the executor and of the packages above it.
func WithEngine(eng engine.Engine) Option {
	return func(e *Executor) error { e.eng = eng; return nil }
}

// New connects to the engine (DOCKER_HOST, or the local socket), checks that it
// answers, opens the data dir of background jobs, and returns an Executor. It
// changes nothing on the engine: a process that answers for background jobs
// calls Reconcile next.
func New(opts ...Option) (*Executor, error) {
	e := &Executor{cfg: DefaultConfig(), watchers: map[string]*watcher{}, builds: map[string]ImageBuild{}, feeds: map[*attachment]bool{}, oomWait: oomEventWait, buildPatience: buildPatience}
	e.jobsCtx, e.stopJobs = context.WithCancel(context.Background())
	for _, opt := range opts {
		if err := opt(e); err != nil {
			return nil, err
		}
	}
	if e.eng == nil {
		d, err := newDockerEngine()
		if err != nil {
			return nil, err
		}
		e.eng, e.closeEng = d, d.Close
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	info, err := e.eng.Info(ctx)
	if err != nil {
		e.Close()
		return nil, e.engineErr("unreachable", err)
	}
	e.info = info
	e.runc = chooseRunc(info, e.cfg.PatchedRunc)
	if e.cfg.Ceilings.CPUs == 0 {
		e.cfg.Ceilings.CPUs = float64(info.CPUs)
	}
	if err := e.cfg.check(); err != nil {
		e.Close()
		return nil, err
	}
	e.runc.warn(e.cfg.Logger, e.cfg.PatchedRunc)
	if e.cfg.InitPath != EngineInit {
		if err := checkInit(e.cfg.InitPath); err != nil {
			e.Close()
			return nil, err
		}
	}
	dir := e.cfg.DataDir
	if dir == "" {
		dir = store.DefaultDir()
	}
	if e.store, err = store.Open(dir); err != nil {
		e.Close()
		return nil, fmt.Errorf("%w: %v", ErrStore, err)
	}
	if err := e.startPool(); err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// Close waits for background jobs to take their stdin (see feed), stops
// watching them (they go on running, for the next executor on the same data
// dir to adopt), and releases the connection to the engine. Foreground runs in
// flight are not affected.
func (e *Executor) Close() error {
	if e.pool != nil {
		e.pool.close()
	}
	e.stopFeeds()
	e.stopWatchers()
	if e.closeEng != nil {
		return e.closeEng()
	}
	return nil
}

// Ping asks the engine whether it answers.
func (e *Executor) Ping(ctx context.Context) error {
	if _, err := e.eng.Info(ctx); err != nil {
		return e.engineErr("unreachable", err)
	}
	return nil
}

// DataDir is the directory of the background jobs' records and logs.
func (e *Executor) DataDir() string { return e.store.Dir() }

// Config returns the configuration in effect, with engine-derived ceilings filled in.
func (e *Executor) Config() Config { return e.cfg }

// EngineRuntimes lists the OCI runtimes the engine offers.
func (e *Executor) EngineRuntimes() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.info.Runtimes)
}

// checkRuntime fails when the engine lacks the runtime, asking the engine again
// first in case it was registered since.
func (e *Executor) checkRuntime(ctx context.Context, name string) error {
	e.mu.Lock()
	have := slices.Contains(e.info.Runtimes, name)
	e.mu.Unlock()
	if have {
		return nil
	}
	info, err := e.eng.Info(ctx)
	if err != nil {
		return e.engineErr("unreachable", err)
	}
	e.mu.Lock()
	e.info = info
	e.mu.Unlock()
	if !slices.Contains(info.Runtimes, name) {
		return fmt.Errorf("%w: runtime %q is not installed in the engine (it offers: %s)", ErrEngine, name, strings.Join(info.Runtimes, ", "))
	}
	return nil
}

// image returns the engine's image ref, first building it from its recipe
// (airlock's own images) or, when the pull policy allows, pulling it, if the
// engine lacks it.
func (e *Executor) image(ctx context.Context, ref string) (Image, error) {
	img, found, err := e.eng.InspectImage(ctx, ref)
	if err != nil {
		return Image{}, e.engineErr(fmt.Sprintf("inspect image %q", ref), err)
	}
	if found {
		return img, nil
	}
	if b, ok := e.Building(ref); ok {
		if err := e.awaitBuild(ctx, b); err != nil {
			return Image{}, err
		}
	}
	e.buildMu.Lock()
	defer e.buildMu.Unlock()
	if img, found, err = e.eng.InspectImage(ctx, ref); err != nil || found { // built meanwhile?
		if err != nil {
			return Image{}, e.engineErr(fmt.Sprintf("inspect image %q", ref), err)
		}
		return img, nil
	}
	if r, ok := images.Lookup(ref); ok {
		if err := e.build(ctx, r, io.Discard, false); err != nil {
			return Image{}, err
		}
	} else {
		if e.cfg.Pull != PullMissing {
			return Image{}, fmt.Errorf("%w: image %q is not on the engine, and the pull policy is %q: "+
				"load or build it on the engine, or have the operator allow pulls (--pull missing)", ErrEngine, ref, e.cfg.Pull)
		}
		pullCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		if err := e.eng.PullImage(pullCtx, ref); err != nil {
			return Image{}, e.engineErr(fmt.Sprintf("image %q is not on the engine, and pulling it failed", ref), err)
		}
	}
	img, found, err = e.eng.InspectImage(ctx, ref)
	switch {
	case err != nil:
		return Image{}, e.engineErr(fmt.Sprintf("inspect image %q", ref), err)
	case !found:
		return Image{}, fmt.Errorf("%w: image %q is still not on the engine after it was made", ErrEngine, ref)
	}
	return img, nil
}

// BuildImages builds the named recipes (every recipe when none is named), offline
// and without the build cache, writing the engine's build output to progress. An
// image already built from the very same build context is left as it is.
func (e *Executor) BuildImages(ctx context.Context, progress io.Writer, names ...string) error {
	return e.buildImages(ctx, progress, false, names...)
}

// BuildImagesInBackground builds, as BuildImages does, every recipe whose
// image is missing or out of date, and returns at once; the channel gets the
// outcome. Meanwhile a run whose image is still missing is told so at once,
// or waits for it under WaitForImageBuilds; one whose image is there (an older
// build, say) runs on it. A server calls it at its start, so that it serves
// while airlock/debian, minutes of debootstrap, is made.
// Names, when given, limit it to those recipes.
func (e *Executor) BuildImagesInBackground(ctx context.Context, names ...string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- e.buildImages(ctx, io.Discard, true, names...) }()
	return done
}

func (e *Executor) buildImages(ctx context.Context, progress io.Writer, background bool, names ...string) error {
	todo := images.All()
	if len(names) > 0 {
		todo = todo[:0:0]
		for _, n := range names {
			r, ok := images.Named(n)
			if !ok {
				return fmt.Errorf("image recipe %q: unknown", n)
			}
			todo = append(todo, r)
		}
	}
	e.buildMu.Lock()
	defer e.buildMu.Unlock()
	for _, r := range todo {
		if err := e.build(ctx, r, progress, background); err != nil {
			return err
		}
	}
	return nil
}

// build builds r unless the engine holds an image of the same build context, and
// removes the image it replaces, so that rebuilds leave no dangling images.
func (e *Executor) build(ctx context.Context, r images.Recipe, progress io.Writer, background bool) error {
	digest, err := r.Key()
	if err != nil {
		return fmt.Errorf("build image %q: %w", r.Ref, err)
	}
	old, found, err := e.eng.InspectImage(ctx, r.Ref)
	if err != nil {
		return e.engineErr(fmt.Sprintf("inspect image %q", r.Ref), err)
	}
	if found && old.RecipeDigest == digest {
		fmt.Fprintf(progress, "%s is up to date (recipe %.19s)\n", r.Ref, digest)
		return nil
	}
	why := "image missing, building it from its recipe"
	if found {
		why = "image recipe changed, rebuilding it"
	}
	e.cfg.Logger.Info(why, "image", r.Ref, "recipe", digest[:19])
	if background { // runs that need it are told, or wait with news of it
		e.buildingProgress(r.Ref, images.Progress{Stage: "starting"})
		defer e.buildDone(r.Ref)
	}
	bc, err := r.ContextWithProgress(func(p images.Progress) { e.buildingProgress(r.Ref, p) })
	if err != nil {
		return fmt.Errorf("build image %q: %w", r.Ref, err)
	}
	labels := map[string]string{images.Label: r.Name, images.DigestLabel: digest}
	e.buildingProgress(r.Ref, images.Progress{Stage: "engine: importing the root filesystem", Percent: images.ContextPercent})
	if err := e.eng.BuildImage(ctx, r.Ref, bytes.NewReader(bc), labels, &buildSteps{e: e, ref: r.Ref, out: progress}); err != nil {
		return e.engineErr(fmt.Sprintf("build image %q", r.Ref), err)
	}
	e.cfg.Logger.Info("image built", "image", r.Ref)
	if found {
		// Runs still using the old image keep it; it is then merely untagged.
		if err := e.eng.RemoveImage(ctx, old.ID); err != nil {
			e.cfg.Logger.Debug("old image kept", "image", old.ID, "err", err)
		}
	}
	return nil
}

// Images lists the sandbox images airlock built that the engine holds.
func (e *Executor) Images(ctx context.Context) ([]Image, error) {
	list, err := e.eng.ListImages(ctx)
	if err != nil {
		return nil, e.engineErr("list images", err)
	}
	return list, nil
}

// NewID returns a fresh airlock id: 24 hex digits, safe in container names.
func NewID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// EngineVersion returns the engine's version and the API version in use.
func (e *Executor) EngineVersion() (version, api string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.info.Version, e.info.APIVer
}

// engineErr wraps err, a failure of the engine during op, as ErrEngine. The text
// a caller reads has the host's addresses taken out (a failed pull names the
// host's DNS resolver, a refused connection its peer); the whole text goes to
// the log, for the operator.
func (e *Executor) engineErr(op string, err error) error {
	msg := err.Error()
	if red := redactAddrs(msg); red != msg {
		e.cfg.Logger.Warn("engine error", "op", op, "err", msg)
		msg = red
	}
	return fmt.Errorf("%w: %s: %s", ErrEngine, op, msg)
}

// hostAddr matches an IPv4 address, or a bracketed IPv6 one, with any port.
var hostAddr = regexp.MustCompile(`\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b|\[[0-9a-fA-F:.%]+\](:\d+)?`)

// redactAddrs replaces the network addresses in s.
func redactAddrs(s string) string { return hostAddr.ReplaceAllString(s, "<address>") }
