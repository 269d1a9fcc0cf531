package executor

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/internal/initproto"
)

// The warm pool: sandboxes started ahead of time whose init waits for its one
// command. A claim sets the limits the engine can change on a running container
// (memory, CPUs, pids) and sends the command; the sandbox serves that one run
// and is removed after it, off the request path, while a refill starts its
// successor. A miss is a cold start, never a reuse. docs/DESIGN.md, "The pool".

// Labels of a pooled sandbox, besides io.airlock.managed and io.airlock.id.
const (
	// labelPool names the process (an instance of the pool) that owns it; the
	// owner holds the store lock "pool-<owner>" while it lives.
	labelPool      = labelPrefix + "pool"
	labelPoolStore = labelPrefix + "pool.store" // the owner's data dir (store id)
)

// poolIdle is how long a pooled sandbox waits for a run before the pool
// replaces it: an engine restart or a long idle leaves no stale sandbox.
const poolIdle = 30 * time.Minute

// PoolKey is what a pooled sandbox cannot change after its start.
type PoolKey struct {
	Image, Runtime, User, Network string
	TmpfsSize                     int64
	Workdir                       string // made by the engine at the start when the image lacks it
	Workspace                     string // a workspace id, or none
}

// PoolStat is one key's pool, for metrics.
type PoolStat struct {
	Key          PoolKey
	Size, Idle   int
	Hits, Misses int64
	LastRefill   time.Duration
}

type pool struct {
	e      *Executor
	owner  string
	unlock func()
	ctx    context.Context
	stop   context.CancelFunc
	wg     sync.WaitGroup // refills and removals in flight

	mu    sync.Mutex
	keys  map[PoolKey]*poolEntry
	limit chan struct{} // bounds concurrent refills: the engine starts a few at a time
	// inflight counts the claims whose runs have not been released: while runs
	// are in flight, a pool with a quarter of its size or more idle defers its
	// refills to the moment none is (see refill).
	inflight int
	// retiring counts, by workspace, the used sandboxes on it not yet gone: a
	// workspace is removed only after them (dropWorkspace).
	retiring map[string]int
}

type poolEntry struct {
	fills        sync.WaitGroup // starts in flight, each ending with its sandbox kept or removed
	size         int
	idle         []*pooled
	filling      int            // starts asked for, waiting for their turn or under way
	starting     int            // starts under way (past the pool's limit)
	waiters      []chan *pooled // claims that missed, each waiting for a start under way
	hits, misses int64
	lastRefill   time.Duration
}

type pooled struct {
	sb      *sandbox
	started time.Time
}

// WithPool keeps warm sandboxes for images: sizes by image reference, for the
// Config's default runtime, user, network and tmpfs size; a reference may name
// another runtime after an @ (airlock/minimal@runsc). After a run on a
// workspace, one sandbox for that workspace is kept warm too.
func WithPool(sizes map[string]int) Option {
	return func(e *Executor) error {
		for ref, n := range sizes {
			if n < 0 || n > 64 {
				return fmt.Errorf("pool %s=%d: size must be 0..64", ref, n)
			}
		}
		e.poolSizes = sizes
		return nil
	}
}

// poolImage splits a pool's reference into its image and runtime: IMAGE, or
// IMAGE@RUNTIME (an image's digest, image@sha256:…, names no runtime).
func poolImage(ref, defaultRuntime string) (image, runtime string) {
	if i := strings.LastIndex(ref, "@"); i > 0 && !strings.Contains(ref[i+1:], ":") {
		return ref[:i], ref[i+1:]
	}
	return ref, defaultRuntime
}

// startPool makes the pool of e and starts filling it.
func (e *Executor) startPool() error {
	if len(e.poolSizes) == 0 || e.cfg.InitPath == EngineInit {
		return nil
	}
	owner := NewID()
	unlock, ok, err := e.store.TryLock("pool-" + owner)
	if err != nil || !ok {
		return fmt.Errorf("%w: pool lock: %v", ErrStore, err)
	}
	p := &pool{e: e, owner: owner, unlock: unlock, keys: map[PoolKey]*poolEntry{}, limit: make(chan struct{}, 4), retiring: map[string]int{}}
	p.ctx, p.stop = context.WithCancel(context.Background())
	d := e.cfg.Defaults
	for ref, n := range e.poolSizes {
		img, rt := poolImage(ref, e.cfg.DefaultRuntime)
		if !slices.Contains(e.cfg.Runtimes, rt) {
			unlock()
			return fmt.Errorf("pool %s: runtime %q is not one the configuration allows (%s)", ref, rt, strings.Join(e.cfg.Runtimes, ", "))
		}
		key := PoolKey{Image: img, Runtime: rt, User: normalUser(e.cfg.DefaultUser), Network: "none", TmpfsSize: d.TmpfsSize, Workdir: "/workspace"}
		p.keys[key] = &poolEntry{size: n}
	}
	for key := range p.keys {
		p.refill(key)
	}
	e.pool = p
	p.wg.Go(func() {
		tick := time.NewTicker(time.Minute)
		defer tick.Stop()
		for {
			select {
			case <-p.ctx.Done():
				return
			case <-tick.C:
				p.expire()
			}
		}
	})
	return nil
}

// normalUser is a user as the gate writes it: a bare uid gets its gid.
func normalUser(u string) string {
	if !strings.Contains(u, ":") {
		if _, err := strconv.ParseUint(u, 10, 32); err == nil {
			return u + ":" + u
		}
	}
	return u
}

// keyOf is the pool key of an admitted spec.
func keyOf(s Spec) PoolKey {
	return PoolKey{Image: s.Image, Runtime: s.Runtime, User: s.User, Network: s.Network, TmpfsSize: s.TmpfsSize, Workdir: s.Workdir, Workspace: s.Workspace}
}

// claim takes a warm sandbox for s, with s's limits set, or nil (a miss).
func (p *pool) claim(ctx context.Context, s Spec) *sandbox {
	key := keyOf(s)
	p.mu.Lock()
	p.inflight++ // until release, which every claim is followed by
	p.mu.Unlock()
	// A warm sandbox starts with the default limits; the engine sets others at
	// the claim, except under a runtime with a kernel of its own (gVisor),
	// which cannot change them: such a run starts cold.
	d := p.e.cfg.Defaults
	defaults := s.Memory == d.Memory && s.CPUs == d.CPUs && s.Pids == d.Pids
	p.mu.Lock()
	ent := p.keys[key]
	if ent == nil {
		p.mu.Unlock()
		return nil
	}
	eligible := defaults || !ownKernel(s.Runtime)
	var pd *pooled
	if n := len(ent.idle); n > 0 && eligible {
		pd, ent.idle = ent.idle[n-1], ent.idle[:n-1]
		ent.hits++
	} else {
		ent.misses++
	}
	dry := len(ent.idle) == 0
	p.mu.Unlock()
	if pd == nil && dry {
		p.refill(key) // the pool ran dry: fill it now, not after this run
	}
	if pd == nil && eligible {
		pd = p.await(ctx, ent)
	}
	if pd == nil {
		return nil
	}
	if s.Workspace != "" && !p.enter(ctx, pd.sb, s.Workspace) {
		return nil
	}
	if defaults {
		return pd.sb
	}
	if err := p.e.eng.Update(ctx, pd.sb.containerID, s.Memory, int64(s.CPUs*1e9), s.Pids); err != nil {
		p.e.cfg.Logger.Warn("pool: set the limits of a warm sandbox; starting one cold", "container_id", pd.sb.containerID, "err", err)
		p.remove(pd.sb)
		return nil
	}
	return pd.sb
}

// enter claims a warm sandbox on workspace id for the engine to see: its name
// loses warmSuffix, so that a removal in any process counts it as a run; then,
// as any start on a workspace does, it looks for a removal's mark
// (docs/DESIGN.md, "Workspaces"). When the sandbox is gone (a removal took it)
// or a removal is under way, it is dropped, and the run starts cold, which
// waits for the removal's outcome.
func (p *pool) enter(ctx context.Context, sb *sandbox, id string) bool {
	err := p.e.eng.Rename(ctx, sb.containerID, strings.TrimSuffix(sb.name, warmSuffix))
	if err == nil {
		err = p.e.enterWorkspace(ctx, id)
	}
	if err != nil {
		p.e.cfg.Logger.Debug("pool: a warm sandbox on a workspace cannot serve; starting one cold", "container_id", sb.containerID, "workspace", id, "err", err)
		p.remove(sb)
		return false
	}
	return true
}

// await waits, after a miss, for a start already under way that no other
// claim waits for: it is sooner than a cold start of the claim's own, and
// adds no start to an engine that is busy starting. Without one (or when the
// start fails, or the pool closes) it returns nil: a cold start. The sandbox
// is as fresh as a cold one; nothing is reused.
func (p *pool) await(ctx context.Context, ent *poolEntry) *pooled {
	p.mu.Lock()
	if ent.starting <= len(ent.waiters) {
		p.mu.Unlock()
		return nil
	}
	ch := make(chan *pooled, 1)
	ent.waiters = append(ent.waiters, ch)
	p.mu.Unlock()
	select {
	case pd := <-ch:
		return pd
	case <-ctx.Done():
	}
	p.mu.Lock()
	ent.waiters = slices.DeleteFunc(ent.waiters, func(c chan *pooled) bool { return c == ch })
	p.mu.Unlock()
	select {
	case pd := <-ch: // handed over meanwhile: the run takes it, and ends at once
		return pd
	default:
		return nil
	}
}

// release ends a claim once its run is over: the sandbox it used (nil after a
// miss) is removed and its successor started, both in the background. Neither
// starts earlier: an engine busy starting a container would slow the run it
// is for. After a run on a workspace one sandbox for that workspace is kept
// warm, so that an agent's loop of runs on one workspace finds one every time.
func (p *pool) release(s Spec, used *sandbox) {
	if used != nil {
		p.retire(used, s.Workspace)
	}
	key := keyOf(s)
	p.mu.Lock()
	p.inflight--
	if _, ok := p.keys[key]; !ok && s.Workspace != "" {
		p.keys[key] = &poolEntry{size: 1}
	}
	keys := []PoolKey{key}
	if p.inflight == 0 { // the deferred refills of every key
		keys = slices.Collect(maps.Keys(p.keys))
	}
	p.mu.Unlock()
	for _, k := range keys {
		p.refill(k)
	}
}

// dropWorkspace removes the warm sandboxes of a workspace, so that it can be
// deleted.
func (p *pool) dropWorkspace(id string) {
	p.mu.Lock()
	var drop []*pooled
	var ents []*poolEntry
	for key, ent := range p.keys {
		if key.Workspace == id {
			drop = append(drop, ent.idle...)
			ents = append(ents, ent)
			delete(p.keys, key)
		}
	}
	p.mu.Unlock()
	for _, pd := range drop {
		pd.sb.att.Close()
		pd.sb.cutRelay()
		p.e.discard(context.Background(), pd.sb.containerID)
	}
	for _, ent := range ents {
		ent.fills.Wait() // a start in flight removes its sandbox itself
	}
	// The sandboxes its runs used, retiring (each within retireWait of the
	// engine's answers).
	for {
		p.mu.Lock()
		n := p.retiring[id]
		p.mu.Unlock()
		if n == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// refill starts sandboxes for key in the background until it has its size.
//
// A container's start takes the engine's and the host's CPU from the runs in
// flight: while any is, a pool that still has a sandbox idle (or starting)
// waits, and release refills it when the last run ends. A burst within the
// pool's size is then served without a start beside it, and a pool that ran
// dry refills at once (a miss takes a start under way: await).
func (p *pool) refill(key PoolKey) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ent := p.keys[key]
	if ent == nil || p.ctx.Err() != nil {
		return
	}
	if p.inflight > 0 && len(ent.idle)+ent.filling > 0 {
		return
	}
	for ; len(ent.idle)+ent.filling < ent.size; ent.filling++ {
		ent.fills.Add(1)
		p.wg.Go(func() {
			defer ent.fills.Done()
			p.fill(key, ent)
		})
	}
}

func (p *pool) fill(key PoolKey, ent *poolEntry) {
	select {
	case p.limit <- struct{}{}:
		defer func() { <-p.limit }()
	case <-p.ctx.Done():
		p.filled(key, ent, nil, 0)
		return
	}
	p.mu.Lock()
	ent.starting++
	p.mu.Unlock()
	t0 := time.Now()
	sb, err := p.start(key)
	p.mu.Lock()
	ent.starting--
	p.mu.Unlock()
	if err != nil {
		switch {
		case p.ctx.Err() != nil:
		case key.Workspace != "" && errors.Is(err, ErrInvalidSpec): // the workspace went
			p.e.cfg.Logger.Debug("pool: no warm sandbox on the workspace", "workspace", key.Workspace, "err", err)
		default:
			p.e.cfg.Logger.Warn("pool: start a warm sandbox", "image", key.Image, "workspace", key.Workspace, "err", err)
		}
		if key.Workspace != "" { // lost, deleted or being deleted: the next run on it adds it again
			p.mu.Lock()
			if p.keys[key] == ent {
				delete(p.keys, key)
			}
			p.mu.Unlock()
		}
		p.filled(key, ent, nil, 0)
		return
	}
	p.filled(key, ent, sb, time.Since(t0))
}

// filled records the end of one start; a sandbox nobody wants any more (its
// key dropped, the pool closed or full) is removed before the start counts as
// ended, so that a dropped workspace's volume is free once its fills are.
func (p *pool) filled(key PoolKey, ent *poolEntry, sb *sandbox, took time.Duration) {
	p.mu.Lock()
	ent.filling--
	keep := false
	if sb != nil && p.keys[key] == ent && p.ctx.Err() == nil {
		pd := &pooled{sb: sb, started: time.Now()}
		switch {
		case len(ent.waiters) > 0: // a claim that missed takes it at once
			ent.waiters[0] <- pd
			ent.waiters = ent.waiters[1:]
			keep = true
		case len(ent.idle) < ent.size:
			ent.idle = append(ent.idle, pd)
			keep = true
		}
		if keep {
			ent.lastRefill = took
		}
	}
	// Claims that wait for more starts than are under way start cold.
	for len(ent.waiters) > ent.starting || len(ent.waiters) > 0 && p.ctx.Err() != nil {
		last := len(ent.waiters) - 1
		ent.waiters[last] <- nil
		ent.waiters = ent.waiters[:last]
	}
	p.mu.Unlock()
	if sb != nil && !keep {
		sb.att.Close()
		sb.cutRelay()
		p.e.discard(context.Background(), sb.containerID)
	}
}

// start creates and starts one sandbox for key: its init waits for a command.
func (p *pool) start(key PoolKey) (*sandbox, error) {
	e := p.e
	// Not the pool's context: a create cut short by Close can still be made by
	// the engine after airlock gave up on it, and be left behind. A start in
	// flight finishes, and filled removes what nobody wants.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	id := NewID()
	s := Spec{Image: key.Image, Runtime: key.Runtime, User: key.User, Network: key.Network, TmpfsSize: key.TmpfsSize,
		Memory: e.cfg.Defaults.Memory, CPUs: e.cfg.Defaults.CPUs, Pids: e.cfg.Defaults.Pids, Workdir: key.Workdir,
		Argv: []string{initproto.WarmArg}}
	plan := e.plan(id, s)
	plan.Labels[labelPool], plan.Labels[labelPoolStore] = p.owner, e.store.ID()
	// Its deadline covers the wait and the longest run it may serve.
	deadline := time.Now().Add(poolIdle + e.cfg.Ceilings.Timeout + e.cfg.KillGrace + abandonAfter)
	plan.Labels[LabelDeadline] = deadline.UTC().Format(time.RFC3339)
	if key.Workspace != "" {
		// Idle, it is named as such: removals of the workspace, in any
		// process, remove it rather than wait for it (see enter).
		plan.Name += warmSuffix
		if err := e.mountWorkspace(ctx, &plan, key.Workspace, Caller{Tenant: p.workspaceTenant(ctx, key.Workspace)}); err != nil {
			return nil, err
		}
	}
	var err error
	if plan.InitVolume, plan.EtcDir, err = e.initVolume(ctx); err != nil {
		return nil, err
	}
	plan.OpenStdin, plan.AutoRemove = true, true
	// Its relay listens from its start, for whichever run claims it: that
	// run's session serves it, or airlock refuses its connections (Execute).
	link, dir, err := e.listenRelay(ctx, plan.Name, key.Runtime)
	if err != nil {
		return nil, err
	}
	plan.RelayDir = dir
	sb, err := e.launch(ctx, plan, true)
	if err != nil {
		if link != nil {
			link.close()
		}
		if sb != nil {
			e.discard(context.Background(), sb.containerID)
		}
		return nil, err
	}
	sb.init, sb.autoRemove, sb.relay = true, true, link
	return sb, nil
}

// workspaceTenant is the tenant that owns workspace id (warm sandboxes are made
// only after a run of that tenant on it).
func (p *pool) workspaceTenant(ctx context.Context, id string) string {
	all, err := p.e.workspaceRecords(ctx)
	if err != nil {
		return ""
	}
	for _, r := range all {
		if r.ID == id {
			return r.Tenant
		}
	}
	return ""
}

// retire ends a used sandbox off the request path. Its init has reported
// and waits (initproto.LingerAfterReport) for a SIGTERM to exit; the engine
// then removes the container as it stops (AutoRemove). A removal is engine
// work that would slow the runs in flight beside it, so the SIGTERM waits
// until none is, at most retireDelay. A sandbox still running retireWait
// later is removed by force.
//
// A sandbox on a workspace goes at once: the workspace cannot be removed
// while a container mounts it, and dropWorkspace waits for it.
func (p *pool) retire(sb *sandbox, workspace string) {
	if workspace != "" {
		p.mu.Lock()
		p.retiring[workspace]++
		p.mu.Unlock()
	}
	p.wg.Go(func() {
		if workspace != "" {
			defer func() {
				p.mu.Lock()
				if p.retiring[workspace]--; p.retiring[workspace] == 0 {
					delete(p.retiring, workspace)
				}
				p.mu.Unlock()
			}()
		} else {
			p.quiet(sb.exited)
		}
		ctx, cancel := context.WithTimeout(context.Background(), signalTimeout)
		p.e.eng.Kill(ctx, sb.containerID, "SIGTERM") // an init that already went: no matter
		cancel()
		sb.att.Close()
		select {
		case <-sb.exited:
		case <-time.After(retireWait):
			p.e.discard(context.Background(), sb.containerID)
		}
	})
}

// quiet waits until no run is in flight, at most retireDelay, or until done
// closes or the pool does.
func (p *pool) quiet(done <-chan struct{}) {
	deadline := time.After(retireDelay)
	for {
		p.mu.Lock()
		busy := p.inflight > 0
		p.mu.Unlock()
		if !busy {
			return
		}
		select {
		case <-done:
			return
		case <-p.ctx.Done():
			return
		case <-deadline:
			return
		case <-time.After(20 * time.Millisecond):
		}
	}
}

const (
	retireDelay = 2 * time.Second
	retireWait  = 5 * time.Second
)

// cutRelay cuts the relay the pool started in sb, if any: sb serves no run.
func (sb *sandbox) cutRelay() {
	if sb.relay != nil {
		sb.relay.cut()
	}
}

// remove removes an unwanted sandbox off the request path.
func (p *pool) remove(sb *sandbox) {
	p.wg.Go(func() {
		if sb.att != nil {
			sb.att.Close()
		}
		sb.cutRelay()
		p.e.discard(context.Background(), sb.containerID)
	})
}

// expire replaces the sandboxes that waited longer than poolIdle.
func (p *pool) expire() {
	p.mu.Lock()
	var old []*pooled
	var keys []PoolKey
	for key, ent := range p.keys {
		ent.idle = slices.DeleteFunc(ent.idle, func(pd *pooled) bool {
			if time.Since(pd.started) > poolIdle {
				old = append(old, pd)
				return true
			}
			return false
		})
		keys = append(keys, key)
	}
	p.mu.Unlock()
	for _, pd := range old {
		p.remove(pd.sb)
	}
	for _, key := range keys {
		p.refill(key)
	}
}

// close removes every warm sandbox and waits for refills and removals.
func (p *pool) close() {
	p.stop()
	p.mu.Lock()
	var idle []*pooled
	for _, ent := range p.keys {
		idle = append(idle, ent.idle...)
		ent.idle = nil
	}
	p.mu.Unlock()
	for _, pd := range idle {
		p.remove(pd.sb)
	}
	p.wg.Wait()
	p.unlock()
}

// stats reports each key's pool.
func (p *pool) stats() []PoolStat {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []PoolStat
	for key, ent := range p.keys {
		out = append(out, PoolStat{Key: key, Size: ent.size, Idle: len(ent.idle), Hits: ent.hits, Misses: ent.misses, LastRefill: ent.lastRefill})
	}
	return out
}

// PoolStats reports the warm pool, key by key; none without a pool.
func (e *Executor) PoolStats() []PoolStat {
	if e.pool == nil {
		return nil
	}
	return e.pool.stats()
}

// removePooledOrphans removes the warm sandboxes of pools whose process died:
// those of this data dir whose owner's lock is free.
func (e *Executor) removePooledOrphans(ctx context.Context) error {
	cs, err := e.eng.List(ctx, labelPoolStore+"="+e.store.ID())
	if err != nil {
		return e.engineErr("list pooled sandboxes", err)
	}
	dead := map[string]bool{}
	for _, c := range cs {
		owner := c.Labels[labelPool]
		if e.pool != nil && owner == e.pool.owner {
			continue
		}
		gone, known := dead[owner]
		if !known {
			unlock, ok, err := e.store.TryLock("pool-" + owner)
			if err != nil {
				return errors.Join(ErrStore, err)
			}
			if ok {
				unlock()
			}
			gone, dead[owner] = ok, ok
		}
		if gone {
			e.discard(ctx, c.ID)
		}
	}
	return nil
}
