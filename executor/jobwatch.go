package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/airlock-sandbox/airlock/internal/initproto"
	"github.com/airlock-sandbox/airlock/store"
)

// The streams of a job, as indexes into per-stream arrays.
const (
	stdoutIdx = 0
	stderrIdx = 1
)

var streamNames = [2]string{"stdout", "stderr"}

// logCursor is how far a job's log has been copied from the engine into the
// data dir. It is saved with the record, and the log files are cut back to Kept
// before a new copy starts, so a crash at any moment neither loses nor repeats a
// byte: the copy resumes at the engine's messages stamped Time, skipping the
// messages of that stamp it had already taken. Each stream has its own place:
// the engine stamps each stream's messages in order, but not the two streams
// against each other, and the pieces of one long line all carry the stamp of
// the first.
type logCursor struct {
	Time   [2]time.Time `json:"time"`    // stamp of the last message taken
	AtTime [2]int       `json:"at_time"` // messages stamped Time taken
	// Owed is set when the last message taken did not end a line. This engine's
	// "local" log drops the newline that ends a line over 16 KiB (it keeps such a
	// line as pieces, and the last piece loses it): when the stream's next
	// message is not another piece (a new stamp), the newline was there.
	Owed  [2]bool  `json:"owed"`
	Kept  [2]int64 `json:"kept"`  // bytes in the stream's file (at most LogCap)
	Total [2]int64 `json:"total"` // bytes the job wrote
}

// since is where a new read of the engine's log must start to see every message
// not yet taken.
func (c *logCursor) since() time.Time {
	if c.Time[stdoutIdx].IsZero() || c.Time[stderrIdx].IsZero() {
		return time.Time{}
	}
	return minTime(c.Time[stdoutIdx], c.Time[stderrIdx])
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Intervals of a watcher: how often it checks deadlines, and how often it saves
// its progress and reads orders other processes left in the record.
const (
	watchTick    = 200 * time.Millisecond
	watchSaveGap = time.Second
	// forceResend is how often a SIGKILL the init has not carried out is
	// sent again, until the backstop.
	forceResend = time.Second
)

// watcher is the one goroutine, in the one process holding the job's lock, that
// copies a job's output, carries out its kill orders and deadlines, and records
// its end.
type watcher struct {
	e      *Executor
	id     string
	egress *egressRun // the job's egress, when this process started it
	// secrets are the job's, when this process started it: their values
	// are redacted in its logs before a byte is written.
	secrets runSecrets
	poke    chan struct{} // a kill order was just recorded
	done    chan struct{} // closed when the watcher stops
	// forceSent is when the watcher last asked the init again for a SIGKILL
	// (see enforce).
	forceSent time.Time
	// live is closed once the watcher knows the container ran when it began:
	// at once for a job this process started, after a look at the engine
	// for one it adopted (which may have stopped while nobody watched).
	live chan struct{}

	mu     sync.Mutex
	cur    logCursor
	replay [2]int // messages of stamp cur.Time[s] seen in the current read
	files  [2]*os.File
	tails  [2]ring
	werr   error // the first failed write to a log file
	usage  usageMeter
	j      *job // the record as last read
	// report is what followed the init's marker on stdout in the current read:
	// the init's report, which the cursor never counts as taken, so that a read
	// after a crash gets it again.
	report   []byte
	inReport bool
	// saved is what the record last got, so that an idle job costs no writes.
	saved struct {
		cur   logCursor
		usage ResourceUsage
	}
}

// watch starts the watcher of j, which holds the job's lock until it stops,
// and returns it (nil once the executor is closed). adopted says the job was
// started by another process, or by this one before a restart.
func (e *Executor) watch(j *job, unlock func(), eg *egressRun, secrets runSecrets, adopted bool) *watcher {
	w := &watcher{e: e, id: j.ID, j: j, poke: make(chan struct{}, 1), done: make(chan struct{}), live: make(chan struct{}),
		egress: eg, secrets: secrets}
	if !adopted {
		close(w.live)
	}
	e.jobsMu.Lock()
	if e.closed {
		e.jobsMu.Unlock()
		unlock()
		return nil
	}
	e.watchers[j.ID] = w
	e.jobsWG.Add(1)
	e.jobsMu.Unlock()
	go func() {
		defer e.jobsWG.Done()
		defer close(w.done)
		defer func() {
			e.jobsMu.Lock()
			delete(e.watchers, j.ID)
			e.jobsMu.Unlock()
			unlock()
		}()
		if err := w.run(); err != nil {
			e.cfg.Logger.Error("background job watcher stopped", "id", j.ID, "err", err)
		}
	}()
	return w
}

// adopt starts watching j here when it runs and no process watches it, and
// returns the watcher it started (nil when it started none).
func (e *Executor) adopt(j *job) *watcher {
	if j.ended() {
		return nil
	}
	e.jobsMu.Lock()
	_, watched := e.watchers[j.ID]
	e.jobsMu.Unlock()
	if watched {
		return nil
	}
	unlock, ok, err := e.store.TryLock(j.ID)
	if err != nil || !ok {
		return nil // watched by another process
	}
	fresh, err := e.job(j.ID) // it may have ended while the lock was held elsewhere
	if err != nil || fresh.ended() {
		unlock()
		return nil
	}
	return e.watch(fresh, unlock, nil, nil, true) // a job adopted from another process has no relay: its egress ended with it
}

// settleWait bounds how long an answer waits for the end of a job whose
// container stopped while no process watched it.
const settleWait = 5 * time.Second

// settle adopts j when no process watches it, and, when this process watches
// it, waits until its watcher knows the container still ran when it began
// (settleWait at most): a job whose container stopped while no process
// watched it (killed from outside, or ended while no airlock process ran) is
// then recorded as ended before the answer, and `airlock ps` with no server
// never calls such a job running.
func (e *Executor) settle(ctx context.Context, j *job) *job {
	e.adopt(j)
	e.jobsMu.Lock()
	w := e.watchers[j.ID]
	e.jobsMu.Unlock()
	if w == nil {
		return j
	}
	select {
	case <-w.live:
		return j
	case <-w.done:
	case <-time.After(settleWait):
	case <-ctx.Done():
	}
	if fresh, err := e.job(j.ID); err == nil {
		return fresh
	}
	return j
}

// changed yields when the job may have changed: at once when this process
// watches it and it ends, else after a short poll.
func (e *Executor) changed(id string) <-chan struct{} {
	e.jobsMu.Lock()
	w := e.watchers[id]
	e.jobsMu.Unlock()
	if w != nil {
		return w.done
	}
	c := make(chan struct{})
	time.AfterFunc(250*time.Millisecond, func() { close(c) })
	return c
}

// poke tells the job's watcher, if it is in this process, to read its record now.
func (e *Executor) poke(id string) {
	e.jobsMu.Lock()
	w := e.watchers[id]
	e.jobsMu.Unlock()
	if w != nil {
		select {
		case w.poke <- struct{}{}:
		default:
		}
	}
}

// stopWatchers stops every watcher of this process, leaving the jobs running for
// the next process to adopt; each saves its progress first.
func (e *Executor) stopWatchers() {
	e.jobsMu.Lock()
	e.closed = true
	e.jobsMu.Unlock()
	e.stopJobs()
	e.jobsWG.Wait()
}

func (w *watcher) run() error {
	e := w.e
	if err := w.openLogs(); err != nil {
		return err
	}
	defer w.closeLogs()
	ctx := e.jobsCtx
	cid := containerRef(w.j)
	exited := e.eng.Wait(ctx, cid, false)
	select {
	case <-w.live:
	default:
		if st, err := e.eng.Inspect(ctx, cid); err == nil && st.Running {
			close(w.live)
		}
	}

	statsCtx, stopStats := context.WithCancel(ctx)
	var stats sync.WaitGroup
	stats.Go(func() { e.eng.Stats(statsCtx, cid, w.usage.add) })
	defer func() { stopStats(); stats.Wait() }() // no sample lands after the watcher

	followCtx, stopFollow := context.WithCancel(ctx)
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		for followCtx.Err() == nil {
			if err := w.read(followCtx, cid, true); err != nil && followCtx.Err() == nil {
				e.cfg.Logger.Debug("log follow ended with an error", "id", w.id, "err", err)
			}
			select { // the follow ends when the container stops; or it broke: again
			case <-followCtx.Done():
			case <-time.After(watchTick):
			}
		}
	}()
	defer func() {
		stopFollow()
		<-followed
	}()

	tick := time.NewTicker(watchTick)
	defer tick.Stop()
	lastSave, lastLoad := time.Now(), time.Now()
	for {
		select {
		case exit := <-exited:
			if ctx.Err() != nil { // Close cut the wait short
				w.endEgress()
				return w.save()
			}
			err := exit.Err
			if err != nil {
				// The wait broke: see for ourselves whether the container still runs.
				st, ierr := e.eng.Inspect(ctx, cid)
				switch {
				case ierr == nil && st.Running:
					exited = e.eng.Wait(ctx, cid, false)
					continue
				case ierr == nil: // it stopped: the wait's error does not matter
					err = nil
				case !errors.Is(ierr, errNoContainer): // the engine is unwell: leave the job
					w.save()
					return fmt.Errorf("wait for the container: %v; inspect: %v", err, ierr)
				}
			}
			stopFollow()
			<-followed
			return w.finish(err)
		case <-ctx.Done(): // Close: leave the job running for the next process
			w.endEgress() // its connections end with this process
			return w.save()
		case <-w.poke:
			w.load()
			lastLoad = time.Now()
			w.enforce(ctx, cid)
		case now := <-tick.C:
			if now.Sub(lastLoad) >= watchSaveGap {
				w.load()
				lastLoad = now
			}
			w.enforce(ctx, cid)
			if now.Sub(lastSave) >= watchSaveGap {
				if err := w.save(); err != nil {
					e.cfg.Logger.Warn("save job progress", "id", w.id, "err", err)
				}
				lastSave = now
			}
		}
	}
}

// endEgress ends the job's connections and records what they did.
func (w *watcher) endEgress() {
	if w.egress == nil {
		return
	}
	entries := w.egress.close()
	w.egress = nil
	if _, err := w.e.update(w.id, func(j *job) error { j.Egress = entries; return nil }); err != nil {
		w.e.cfg.Logger.Warn("record the job's egress", "id", w.id, "err", err)
	}
}

// load reads the record again, for kill orders other processes left in it.
func (w *watcher) load() {
	j, err := store.Get[job](w.e.store, w.id)
	if err != nil {
		w.e.cfg.Logger.Warn("read job record", "id", w.id, "err", err)
		return
	}
	w.mu.Lock()
	w.j = &j
	w.mu.Unlock()
}

// enforce carries out the job's timeout and the escalation of a kill order.
func (w *watcher) enforce(ctx context.Context, cid string) {
	e := w.e
	now := time.Now().UTC()
	w.mu.Lock()
	j := w.j
	w.mu.Unlock()
	k := j.Kill
	// Under airlock's init the init keeps the deadline itself; the watcher's
	// is the backstop, past the grace, and goes straight to the engine's SIGKILL.
	deadline := j.Deadline
	if j.Marker != "" {
		deadline = deadline.Add(e.cfg.KillGrace + jobInitBackstop)
	}
	if k == nil && !j.Deadline.IsZero() && now.After(deadline) {
		order := &killOrder{Signal: "SIGTERM", Timeout: true, At: now, ForceAt: now.Add(e.cfg.KillGrace)}
		if e.cfg.KillGrace == 0 || j.Marker != "" {
			order.Signal, order.ForceAt, order.Forced = "SIGKILL", time.Time{}, true
		}
		nj, err := e.update(w.id, func(j *job) error {
			if j.Kill == nil {
				j.Kill = order
			}
			return nil
		})
		if err != nil {
			e.cfg.Logger.Error("record timeout", "id", w.id, "err", err)
			return
		}
		w.setJob(nj)
		if nj.Kill != order { // a caller's kill came first
			return
		}
		if err := e.eng.Kill(ctx, cid, order.Signal); err != nil {
			e.cfg.Logger.Warn("kill at timeout", "id", w.id, "err", err)
		}
		return
	}
	if k != nil && !k.ForceAt.IsZero() && !k.Forced && now.After(k.ForceAt) {
		nj, err := e.update(w.id, func(j *job) error {
			if j.Kill != nil {
				j.Kill.Forced, j.Kill.BackstopAt = true, j.backstop(now)
			}
			return nil
		})
		if err != nil {
			e.cfg.Logger.Error("record escalation", "id", w.id, "err", err)
			return
		}
		w.setJob(nj)
		if err := e.signal(ctx, cid, j, "SIGKILL"); err != nil {
			e.cfg.Logger.Warn("SIGKILL after force_after", "id", w.id, "err", err)
		}
		return
	}
	// Until the backstop, a SIGKILL the init was asked for is asked again each
	// second: one sent before the init listened for it (a job just started,
	// on a loaded host) is lost, since the kernel drops a signal PID 1 has no
	// handler for.
	if k != nil && !k.BackstopAt.IsZero() && !k.BackstopDone && now.Before(k.BackstopAt) &&
		now.Sub(k.At) >= forceResend && now.Sub(w.forceSent) >= forceResend {
		w.forceSent = now
		if err := e.signal(ctx, cid, j, "SIGKILL"); err != nil {
			e.cfg.Logger.Debug("SIGKILL asked again", "id", w.id, "err", err)
		}
	}
	if k != nil && !k.BackstopAt.IsZero() && !k.BackstopDone && now.After(k.BackstopAt) {
		nj, err := e.update(w.id, func(j *job) error {
			if j.Kill != nil {
				j.Kill.BackstopDone = true
			}
			return nil
		})
		if err != nil {
			e.cfg.Logger.Error("record the backstop's SIGKILL", "id", w.id, "err", err)
			return
		}
		w.setJob(nj)
		e.cfg.Logger.Warn("airlock's init did not end the job at SIGKILL; the engine kills it", "id", w.id)
		if err := e.eng.Kill(ctx, cid, "SIGKILL"); err != nil {
			e.cfg.Logger.Warn("SIGKILL of the backstop", "id", w.id, "err", err)
		}
	}
}

func (w *watcher) setJob(j *job) {
	w.mu.Lock()
	w.j = j
	w.mu.Unlock()
}

// read copies the engine's log from the cursor on; with follow, until the
// container stops.
func (w *watcher) read(ctx context.Context, cid string, follow bool) error {
	w.mu.Lock()
	since := w.cur.since()
	w.replay = [2]int{}
	w.report, w.inReport = nil, false
	w.mu.Unlock()
	return w.e.eng.Logs(ctx, cid, since, follow, w.take)
}

// take copies one log message not taken before to the stream's file, up to the
// cap, and counts it towards the stream's total.
func (w *watcher) take(f logFrame) error {
	s := stdoutIdx
	if f.Stderr {
		s = stderrIdx
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	c := &w.cur
	if s == stdoutIdx && w.j.Marker != "" && (w.inReport || bytes.HasPrefix(f.Data, []byte(w.j.Marker))) {
		if !w.inReport && c.Owed[s] { // the line before the marker's ended
			w.write(s, []byte{'\n'})
			c.Owed[s] = false
		}
		w.inReport = true
		if len(w.report)+len(f.Data) <= maxReport {
			w.report = append(w.report, f.Data...)
		}
		return nil
	}
	switch {
	case f.Time.Before(c.Time[s]):
		// Taken before: a stream's stamps only grow, so a read that starts early
		// for the other stream's sake sends these again.
		return nil
	case f.Time.Equal(c.Time[s]): // the same line, or a read resuming within a stamp
		w.replay[s]++
		if w.replay[s] <= c.AtTime[s] {
			return nil
		}
		if !c.Owed[s] {
			// The message taken last under this stamp ended its line, and every
			// line gets a stamp of its own: this is the engine sending it again
			// (its log follow does, across a file rotation).
			return nil
		}
		c.AtTime[s] = w.replay[s]
	default:
		if c.Owed[s] {
			w.write(s, []byte{'\n'})
		}
		c.Time[s], c.AtTime[s], w.replay[s] = f.Time, 1, 1
	}
	w.write(s, f.Data)
	c.Owed[s] = !bytes.HasSuffix(f.Data, []byte{'\n'})
	return nil
}

// write appends p to stream s: to its file up to the cap, to its total and tail.
func (w *watcher) write(s int, p []byte) {
	p = w.secrets.redactBytes(p)
	c := &w.cur
	if room := w.j.LogCap - c.Kept[s]; room > 0 && len(p) > 0 {
		keep := p[:min(int64(len(p)), room)]
		if _, err := w.files[s].Write(keep); err != nil {
			if w.werr == nil {
				w.werr = err
				w.e.cfg.Logger.Error("write job log", "id", w.id, "stream", streamNames[s], "err", err)
			}
		} else {
			c.Kept[s] += int64(len(keep))
		}
	}
	c.Total[s] += int64(len(p))
	w.tails[s].write(p)
}

// openLogs opens the job's log files, cut back to what the saved cursor counts,
// and the saved tails.
func (w *watcher) openLogs() error {
	dir := w.e.store.JobDir(w.id)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	w.cur = w.j.Log
	for s, name := range streamNames {
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		// A file is never shorter than its count but when the end of a job cut
		// the init's newline off it and stopped before its record said so.
		if fi, err := f.Stat(); err == nil {
			w.cur.Kept[s] = min(w.cur.Kept[s], fi.Size())
		}
		if err := f.Truncate(w.cur.Kept[s]); err != nil {
			f.Close()
			return err
		}
		if _, err := f.Seek(w.cur.Kept[s], 0); err != nil {
			f.Close()
			return err
		}
		w.files[s] = f
		w.tails[s] = newRing(minTailBytes)
		if t, err := os.ReadFile(filepath.Join(dir, name+".tail")); err == nil {
			w.tails[s].write(t)
		}
	}
	w.usage.u = w.j.Usage
	w.saved.cur, w.saved.usage = w.cur, w.j.Usage
	return nil
}

func (w *watcher) closeLogs() {
	for _, f := range w.files {
		if f != nil {
			f.Close()
		}
	}
}

// save records the copy's progress and the resource usage so far. Tails are saved
// only for streams past the cap: the file holds the tail of the others.
func (w *watcher) save() error {
	w.mu.Lock()
	cur := w.cur
	usage := w.usage.get()
	if w.saved.cur == cur && w.saved.usage == usage {
		w.mu.Unlock()
		return nil // nothing new: spare the store a write
	}
	var tails [2][]byte
	for s := range tails {
		if cur.Total[s] > cur.Kept[s] {
			tails[s] = append([]byte(nil), w.tails[s].bytes()...)
		}
	}
	w.mu.Unlock()
	dir := w.e.store.JobDir(w.id)
	for s, t := range tails {
		if t != nil {
			// Written before the cursor that counts them, and replaced whole.
			tmp := filepath.Join(dir, streamNames[s]+".tail.tmp")
			if err := os.WriteFile(tmp, t, 0o600); err == nil {
				os.Rename(tmp, filepath.Join(dir, streamNames[s]+".tail"))
			}
		}
	}
	nj, err := w.e.update(w.id, func(j *job) error {
		j.Log, j.Usage = cur, usage
		return nil
	})
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.j = nj
	w.saved.cur, w.saved.usage = cur, usage
	w.mu.Unlock()
	return nil
}

// finish takes the rest of the log once the container has stopped, records how
// the job ended, and removes the container.
func (w *watcher) finish(waitErr error) error {
	e := w.e
	ctx, cancel := context.WithTimeout(context.WithoutCancel(e.jobsCtx), 2*time.Minute)
	defer cancel()
	cid := containerRef(w.j)
	var st containerState
	var reason error
	var rep *initproto.Report
	killedOutside := false
	if waitErr != nil {
		reason = errors.New("the container is gone: it was removed outside airlock")
	} else {
		if err := w.read(ctx, cid, false); err != nil {
			e.cfg.Logger.Warn("read the rest of the job's log", "id", w.id, "err", err)
		}
		rep = w.initReport()
		// The init's report, with its cgroup's OOM count, says how the job
		// ended; without one (no init, or the init itself was killed) or
		// without the count (gVisor), the engine's record does.
		if rep == nil || rep.OOMKills < 0 {
			var err error
			if st, err = e.finalState(ctx, cid, w.j.Kill != nil); err != nil {
				reason = e.engineErr("inspect container", err)
			} else if st.StartedAt.IsZero() {
				reason = errors.New("the container never started: the airlock process that created it stopped first")
			}
		}
		if rep != nil {
			applyReport(&st, rep)
			w.exact(rep)
		} else if reason == nil && w.j.Marker != "" && w.j.Kill == nil && !st.OOMKilled && st.ExitCode == 128+int(syscall.SIGKILL) {
			// airlock's init ends every job with a report, and the kernel
			// lets no signal but SIGKILL from outside end it: a SIGKILL
			// airlock did not send, the kernel's OOM killer aside, came from
			// outside (docker kill, docker rm -f, the engine).
			killedOutside = true
		}
	}
	w.endEgress()
	if err := w.save(); err != nil {
		return err
	}
	if _, err := e.update(w.id, func(j *job) error {
		if reason != nil {
			j.finish(StateFailed, ExitFailed, reason.Error())
			return nil
		}
		j.end(st, rep != nil && rep.TimedOut)
		if killedOutside {
			j.State = StateKilled
			j.Error = "killed from outside airlock: the sandbox's init got a SIGKILL airlock did not send (docker kill or docker rm -f, say)"
		}
		return nil
	}); err != nil {
		return err
	}
	if waitErr == nil {
		e.discard(ctx, cid)
	}
	return nil
}

// maxReport bounds the init's report (two tails of initproto.TailBytes, in
// base64, and the figures).
const maxReport = 1 << 20

// initReport is the init's report from the last read of the job's log, or nil
// when there is none (no init, or it was killed before it could write one).
func (w *watcher) initReport() *initproto.Report {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.inReport {
		return nil
	}
	var rep initproto.Report
	body := bytes.TrimSuffix(w.report[len(w.j.Marker):], []byte{'\n'})
	if err := json.Unmarshal(body, &rep); err != nil {
		w.e.cfg.Logger.Warn("read the report of airlock's init", "id", w.id, "err", err)
		return nil
	}
	return &rep
}

// exact makes the copy of the job's output what the init counted: each file
// holds the stream's first LogCap bytes and no byte of the init's (the newline
// it may have put before its report), the totals are the true ones, a stream
// past the cap gets the tail the init kept, and the usage is the init's.
func (w *watcher) exact(rep *initproto.Report) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for s, n := range [2]int64{rep.StdoutBytes, rep.StderrBytes} {
		if keep := min(n, w.j.LogCap); w.cur.Kept[s] > keep {
			if err := w.files[s].Truncate(keep); err != nil {
				w.e.cfg.Logger.Error("cut job log", "id", w.id, "stream", streamNames[s], "err", err)
				continue
			}
			w.files[s].Seek(keep, 0)
			w.cur.Kept[s] = keep
		}
		w.cur.Total[s] = n
		if n > w.j.LogCap {
			w.tails[s] = newRing(minTailBytes)
			w.tails[s].write(w.secrets.redactBytes([2][]byte{rep.StdoutTail, rep.StderrTail}[s]))
		}
	}
	w.usage.set(hostCPU(usageOf(rep), w.usage.get(), w.j.Runtime))
}

// end records the final state of the job's container (the engine's, or the
// init's report), and whether a kill order or the timeout ended it: the
// init's own deadline (timedOut), or the host's.
func (j *job) end(st containerState, timedOut bool) {
	// A kill order explains the end only when it came before it.
	ordered := j.Kill != nil && !j.Kill.At.After(st.FinishedAt)
	r := Result{StartedAt: j.StartedAt}
	endResult(&r, st, timedOut || ordered && j.Kill.Timeout, !timedOut && ordered && !j.Kill.Timeout)
	j.State, j.ExitCode, j.Signal, j.TimedOut, j.OOMKilled = r.State, r.ExitCode, r.Signal, r.TimedOut, r.OOMKilled
	// started_at was answered while the job ran: it stays as it was said. The
	// finish is the engine's, never before the start.
	j.FinishedAt = r.FinishedAt
	if j.FinishedAt.Before(j.StartedAt) {
		j.FinishedAt = j.StartedAt
	}
}
