package executor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/store"
)

// Reconcile makes the data dir and the engine agree: it adopts the running jobs
// no live process watches (their watchers take the output written meanwhile
// and, for jobs that ended meanwhile, their true end), records the jobs whose
// container vanished as failed, and removes the containers no record explains,
// as well as foreground sandboxes abandoned by a process that died. The CLI's
// job commands call it once; a server at its start and then every few minutes
// (see docs/DESIGN.md, "Jobs and crashes"). It is safe beside other processes
// on the same data dir.
func (e *Executor) Reconcile(ctx context.Context) error {
	// Containers first, records second: a job's record is written before its
	// container is created, so every container listed here that a job owns has
	// its record in the list read after.
	ours, err := e.eng.List(ctx, LabelStore+"="+e.store.ID())
	if err != nil {
		return e.engineErr("list containers", err)
	}
	jobs, err := store.All[job](e.store)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrStore, err)
	}
	byID := make(map[string]containerSummary, len(ours))
	for _, c := range ours {
		byID[c.Labels[LabelID]] = c
	}
	for i := range jobs {
		j := &jobs[i]
		c, found := byID[j.ID]
		delete(byID, j.ID)
		switch {
		case j.ended() && found: // it ended, but the process stopped before removing it
			e.discard(ctx, c.ID)
		case j.ended():
		case found:
			if j.ContainerID == "" { // created, but the process stopped before recording it
				j.ContainerID = c.ID
			}
			e.adopt(j)
		default:
			e.vanished(j)
		}
	}
	for _, c := range byID {
		e.cfg.Logger.Warn("removing a container no job record explains", "container_id", c.ID, "id", c.Labels[LabelID])
		e.discard(ctx, c.ID)
	}
	if err := e.removePooledOrphans(ctx); err != nil {
		return err
	}
	return e.removeAbandoned(ctx)
}

// vanished records a running job without a container as failed, unless a live
// process holds its lock (it may be creating the container right now).
func (e *Executor) vanished(j *job) {
	unlock, ok, err := e.store.TryLock(j.ID)
	if err != nil || !ok {
		return
	}
	defer unlock()
	reason := "the container is gone: it was removed outside airlock while no airlock process watched the job"
	if j.ContainerID == "" {
		reason = "the airlock process that started the job stopped before its container was created"
	}
	if _, err := e.update(j.ID, func(j *job) error {
		if !j.ended() {
			j.finish(StateFailed, ExitFailed, reason)
		}
		return nil
	}); err != nil && !errors.Is(err, ErrNotFound) {
		e.cfg.Logger.Error("record vanished job", "id", j.ID, "err", err)
	}
}

// removeAbandoned removes foreground sandboxes past their deadline: the process
// that ran them would have removed them by then, so it died.
func (e *Executor) removeAbandoned(ctx context.Context) error {
	fg, err := e.eng.List(ctx, LabelManaged+"=true")
	if err != nil {
		return e.engineErr("list containers", err)
	}
	now := time.Now()
	live := map[string]bool{}
	for _, c := range fg {
		live[c.Name] = true
		d, ok := c.Labels[LabelDeadline]
		if !ok {
			continue
		}
		if t, err := time.Parse(time.RFC3339, d); err == nil && now.After(t) {
			e.cfg.Logger.Warn("removing an abandoned sandbox", "container_id", c.ID, "id", c.Labels[LabelID])
			e.discard(ctx, c.ID)
			delete(live, c.Name)
		}
	}
	e.removeStaleRelayDirs(live)
	return nil
}

// relayDirGrace is how old a relay directory without its container must be
// to be removed: a process makes one just before it creates the container.
const relayDirGrace = 10 * time.Minute

// removeStaleRelayDirs removes the relay directories (listenRelay,
// startHolder) of containers that no longer exist: a process that died with
// a job or a holder running leaves its directory behind, and the directory
// is shared by every process on the host. Only a process that knows the
// directory looks: at its first use (relaySockets) and at each reconcile
// after it.
func (e *Executor) removeStaleRelayDirs(live map[string]bool) {
	e.relayMu.Lock()
	base := e.relayDir
	e.relayMu.Unlock()
	if base == "" {
		return
	}
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, en := range entries {
		info, err := en.Info()
		// A warm sandbox on a workspace loses warmSuffix at its claim.
		name := en.Name()
		if err != nil || !en.IsDir() || live[name] || live[strings.TrimSuffix(name, warmSuffix)] ||
			!strings.HasPrefix(name, "airlock-") || time.Since(info.ModTime()) < relayDirGrace {
			continue
		}
		os.RemoveAll(filepath.Join(base, name))
	}
}
