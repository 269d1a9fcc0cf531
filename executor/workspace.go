package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/images"
	"github.com/airlock-sandbox/airlock/internal/engine"
	"github.com/airlock-sandbox/airlock/internal/initproto"
)

// A workspace is a labelled engine volume of the local driver, a tmpfs with
// the workspace's size and inode limits, kept mounted by a holder container
// that does nothing else: the engine mounts such a volume only while a
// container uses it, and unmounting a tmpfs discards its files. Runs mount the
// volume at /workspace; files move through the holder (workspace_files.go).
// docs/DESIGN.md, "Workspaces", says why and what survives which restart.

type (
	WorkspaceSpec = api.WorkspaceSpec
	Workspace     = api.Workspace
	FileInfo      = api.FileInfo
	FileList      = api.FileList
)

var (
	ErrWorkspaceNotFound = api.ErrWorkspaceNotFound
	ErrWorkspaceBusy     = api.ErrWorkspaceBusy
	ErrWorkspaceFull     = api.ErrWorkspaceFull
	ErrWorkspaceLost     = api.ErrWorkspaceLost
	ErrFileNotFound      = api.ErrFileNotFound
	ErrUnsafePath        = api.ErrUnsafePath
	ErrWrongType         = api.ErrWrongType
	// ErrWorkspaceQuota: Caller.MaxWorkspaces or MaxWorkspaceBytes would be passed.
	ErrWorkspaceQuota = api.ErrWorkspaceQuota
)

const (
	// LabelWorkspace carries the workspace id on its volume, its holder and
	// every run and job that mounts it.
	LabelWorkspace = labelPrefix + "workspace"
	// labelWorkspaceRecord holds the workspace's record (JSON) on its volume.
	labelWorkspaceRecord = labelPrefix + "workspace.record"
	// labelRole is "holder" on a workspace's holder container, "deleting" on
	// the mark of its removal.
	labelRole = labelPrefix + "role"
)

const (
	minWorkspaceSize = 1 << 20
	// holderUser runs the holder's file operations when the Config's default
	// user is a name, not a uid:gid.
	holderUser = "65534:65534"
)

var workspaceIDPattern = regexp.MustCompile(`^ws_[0-9a-f]{24}$`)

// workspaceRecord is what airlock keeps of a workspace, in its volume's labels:
// the engine is the only place of record, so any airlock process on the same
// engine (a restarted server, a CLI) sees the same workspaces.
type workspaceRecord struct {
	ID        string            `json:"id"`
	Tenant    string            `json:"tenant,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
	Size      int64             `json:"size"`
	Inodes    int64             `json:"inodes"`
	Owner     string            `json:"owner"` // uid:gid of the files' owner
	CreatedAt time.Time         `json:"created_at"`
	ExpiresAt *time.Time        `json:"expires_at,omitempty"`
}

func (r workspaceRecord) volume() string { return "airlock-" + r.ID }
func (r workspaceRecord) holder() string { return "airlock-" + r.ID + "-holder" }

func (r workspaceRecord) workspace() Workspace {
	return Workspace{ID: r.ID, Tenant: r.Tenant, Labels: r.Labels, Size: r.Size, Inodes: r.Inodes,
		CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt}
}

func (r workspaceRecord) expired(now time.Time) bool {
	return r.ExpiresAt != nil && !now.Before(*r.ExpiresAt)
}

// CreateWorkspace makes an empty workspace owned by the caller's tenant, bounded
// by spec's size and inodes (the Config's defaults and ceiling), and starts the
// holder that keeps it. The error is a *SpecError naming an invalid field, or
// ErrWorkspaceQuota; nothing is left behind on failure.
func (e *Executor) CreateWorkspace(ctx context.Context, spec WorkspaceSpec, c Caller) (Workspace, error) {
	r, err := e.newWorkspaceRecord(spec, c)
	if err != nil {
		return Workspace{}, err
	}
	if err := e.checkWorkspaceQuota(ctx, r, c); err != nil {
		return Workspace{}, err
	}
	meta, err := json.Marshal(r)
	if err != nil {
		return Workspace{}, err
	}
	uid, gid, _ := strings.Cut(r.Owner, ":")
	opts := map[string]string{
		"type":   "tmpfs",
		"device": "tmpfs",
		"o": fmt.Sprintf("size=%d,nr_inodes=%d,uid=%s,gid=%s,mode=0755,nosuid,nodev",
			r.Size, r.Inodes, uid, gid),
	}
	labels := map[string]string{LabelManaged: "true", LabelWorkspace: r.ID, labelWorkspaceRecord: string(meta)}
	if err := e.eng.CreateVolume(ctx, r.volume(), opts, labels); err != nil {
		return Workspace{}, e.engineErr("create workspace volume", err)
	}
	if err := e.startHolder(ctx, r); err != nil {
		bg := context.WithoutCancel(ctx)
		e.discard(bg, r.holder())
		e.removeHolderDir(r)
		if rerr := e.eng.RemoveVolume(bg, r.volume()); rerr != nil {
			e.cfg.Logger.Error("remove workspace volume", "workspace", r.ID, "err", rerr)
		}
		return Workspace{}, err
	}
	return r.workspace(), nil
}

func (e *Executor) newWorkspaceRecord(spec WorkspaceSpec, c Caller) (workspaceRecord, error) {
	bad := func(field, format string, args ...any) (workspaceRecord, error) {
		return workspaceRecord{}, &SpecError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	size, err := bounded("size", spec.Size, e.cfg.WorkspaceSize, e.cfg.MaxWorkspaceSize, minWorkspaceSize, formatBytes)
	if err != nil {
		return workspaceRecord{}, err
	}
	inodes := spec.Inodes
	switch {
	case inodes < 0:
		return bad("inodes", "must not be negative")
	case inodes == 0:
		inodes = tmpfsInodes(size)
	case inodes < 16:
		return bad("inodes", "%d is below the minimum of 16", inodes)
	case inodes > max(size/1024, 16):
		return bad("inodes", "%d is more than one per KiB of the size (%d)", inodes, max(size/1024, 16))
	}
	ttl := float64(spec.TTL)
	if ttl < 0 || ttl != ttl || ttl > (100*365*24*time.Hour).Seconds() {
		return bad("ttl", "must be a positive number of seconds, at most 100 years")
	}
	if err := checkLabels(spec.Labels); err != nil {
		return workspaceRecord{}, err
	}
	now := time.Now().UTC()
	r := workspaceRecord{ID: "ws_" + NewID(), Tenant: c.Tenant, Labels: spec.Labels, Size: size, Inodes: inodes,
		Owner: e.workspaceOwner(), CreatedAt: now}
	if ttl > 0 {
		exp := now.Add(spec.TTL.Duration())
		r.ExpiresAt = &exp
	}
	return r, nil
}

// checkLabels bounds a workspace's labels: they live in an engine label, whose
// size the engine does not bound.
func checkLabels(labels map[string]string) error {
	total := 0
	for k, v := range labels {
		if k == "" || strings.ContainsRune(k+v, 0) {
			return &SpecError{Field: "labels", Reason: fmt.Sprintf("%q: keys must not be empty and no NUL is allowed", k)}
		}
		total += len(k) + len(v)
	}
	if total > 16<<10 {
		return &SpecError{Field: "labels", Reason: fmt.Sprintf("total %d bytes, over the limit of 16384", total)}
	}
	return nil
}

// workspaceOwner is the uid:gid that owns a workspace's files: the default user
// of runs, when it is numeric.
func (e *Executor) workspaceOwner() string {
	u, g, ok := strings.Cut(e.cfg.DefaultUser, ":")
	if _, err := strconv.ParseUint(u, 10, 32); err != nil {
		return holderUser
	}
	if !ok {
		g = u
	}
	if _, err := strconv.ParseUint(g, 10, 32); err != nil {
		return holderUser
	}
	return u + ":" + g
}

func (e *Executor) checkWorkspaceQuota(ctx context.Context, r workspaceRecord, c Caller) error {
	if c.MaxWorkspaces <= 0 && c.MaxWorkspaceBytes <= 0 {
		return nil
	}
	all, err := e.workspaceRecords(ctx)
	if err != nil {
		return err
	}
	count, total := 1, r.Size
	for _, w := range all {
		if w.Tenant == c.Tenant {
			count++
			total += w.Size
		}
	}
	switch {
	case c.MaxWorkspaces > 0 && count > c.MaxWorkspaces:
		return fmt.Errorf("%w: the tenant holds %d workspaces, its limit", ErrWorkspaceQuota, c.MaxWorkspaces)
	case c.MaxWorkspaceBytes > 0 && total > c.MaxWorkspaceBytes:
		return fmt.Errorf("%w: the tenant's workspaces would total %s, over its limit of %s",
			ErrWorkspaceQuota, formatBytes(total), formatBytes(c.MaxWorkspaceBytes))
	}
	return nil
}

// startHolder starts the container that keeps the workspace's tmpfs mounted and
// in which its file operations run: airlock/minimal, locked down like a
// sandbox, with airlock's init holding it (PID 1, waiting) and its file agent
// at hand. Its memory limit covers the workspace, since what the file
// operations write is charged to it.
func (e *Executor) startHolder(ctx context.Context, r workspaceRecord) error {
	initVol, _, err := e.initVolume(ctx)
	if err != nil {
		return err
	}
	if initVol == "" {
		return fmt.Errorf("%w: workspaces need airlock's init, whose file agent moves their files (Config.InitPath is EngineInit)", ErrInvalidSpec)
	}
	plan := containerPlan{
		Name:       r.holder(),
		Image:      images.Minimal.Ref,
		InitVolume: initVol,
		Cmd:        []string{initproto.HoldArg},
		Workdir:    "/workspace",
		User:       r.Owner,
		Memory:     r.Size + 64<<20,
		NanoCPUs:   1e9,
		Pids:       64,
		TmpfsSize:  1 << 20,
		Network:    "none",
		Runtime:    "runc",
		Workspace:  r.volume(),
		Labels:     map[string]string{LabelManaged: "true", LabelWorkspace: r.ID, labelRole: "holder"},
	}
	// Its relay directory is where the file agent dials airlock for the
	// data of a transfer (holderDial): a socket, not the engine's exec stream.
	if base, ok := e.relaySockets(ctx, plan.Runtime); ok {
		dir := filepath.Join(base, plan.Name)
		if err := os.Mkdir(dir, 0o711); err == nil || errors.Is(err, fs.ErrExist) {
			plan.RelayDir = dir
		}
	}
	cid, err := e.create(ctx, plan)
	if err != nil {
		return err
	}
	if err := e.eng.Start(ctx, cid); err != nil {
		return e.engineErr("start workspace holder", err)
	}
	return nil
}

// removeHolderDir removes the relay directory of r's holder, if there is one
// where this process would have made it (with no question to the engine).
func (e *Executor) removeHolderDir(r workspaceRecord) {
	os.RemoveAll(filepath.Join(e.relayBase(), r.holder()))
}

// workspaceRecords lists every workspace on the engine.
func (e *Executor) workspaceRecords(ctx context.Context) ([]workspaceRecord, error) {
	vols, err := e.eng.ListVolumes(ctx, LabelWorkspace)
	if err != nil {
		return nil, e.engineErr("list workspaces", err)
	}
	out := make([]workspaceRecord, 0, len(vols))
	for _, v := range vols {
		if r, ok := recordOf(v); ok {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b workspaceRecord) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

func recordOf(v engine.Volume) (workspaceRecord, bool) {
	var r workspaceRecord
	if err := json.Unmarshal([]byte(v.Labels[labelWorkspaceRecord]), &r); err != nil || r.ID != v.Labels[LabelWorkspace] || r.volume() != v.Name {
		return workspaceRecord{}, false
	}
	return r, true
}

// workspaceRecord finds the caller's workspace id: another tenant's is not found.
func (e *Executor) workspaceRecord(ctx context.Context, id string, c Caller) (workspaceRecord, error) {
	if !workspaceIDPattern.MatchString(id) {
		return workspaceRecord{}, fmt.Errorf("%w: %q", ErrWorkspaceNotFound, id)
	}
	vols, err := e.eng.ListVolumes(ctx, LabelWorkspace+"="+id)
	if err != nil {
		return workspaceRecord{}, e.engineErr("find workspace", err)
	}
	for _, v := range vols {
		if r, ok := recordOf(v); ok && r.Tenant == c.Tenant {
			return r, nil
		}
	}
	return workspaceRecord{}, fmt.Errorf("%w: %q", ErrWorkspaceNotFound, id)
}

// workspaceUse is what the engine has on a workspace now, sorted by what a
// removal does with it.
type workspaceUse struct {
	holder   string   // the running holder's container id; empty when lost
	held     bool     // a holder exists, running or not: without one the workspace was deleted
	running  int      // runs and jobs on it: started, or created and about to start
	deleting bool     // a removal holds the workspace's mark, and it is not stale
	warm     []string // idle warm sandboxes of a pool (this process's or another's)
	ended    []string // runs and jobs that ended, whose containers are not yet removed
}

func (e *Executor) workspaceUse(ctx context.Context, id string) (workspaceUse, error) {
	cs, err := e.eng.List(ctx, LabelWorkspace+"="+id)
	if err != nil {
		return workspaceUse{}, e.engineErr("list workspace containers", err)
	}
	var u workspaceUse
	now := time.Now()
	for _, c := range cs {
		switch {
		case c.Labels[labelRole] == roleHolder:
			u.held = true
			if c.Running {
				u.holder = c.ID
			}
		case c.Labels[labelRole] == roleDeleting:
			u.deleting = u.deleting || !pastDeadline(c, now)
		case c.Labels[labelPool] != "" && strings.HasSuffix(c.Name, warmSuffix):
			u.warm = append(u.warm, c.ID)
		case live(c):
			u.running++
		default:
			u.ended = append(u.ended, c.ID)
		}
	}
	return u, nil
}

// live says whether a container runs or is about to: created and not yet
// started counts, since its start may come at any moment.
func live(c containerSummary) bool {
	switch c.State {
	case "exited", "dead", "removing":
		return false
	}
	return true
}

// pastDeadline says whether c carries a deadline label that has passed.
func pastDeadline(c containerSummary, now time.Time) bool {
	t, err := time.Parse(time.RFC3339, c.Labels[LabelDeadline])
	return err == nil && now.After(t)
}

// Workspace reports the caller's workspace, with what its files take now.
func (e *Executor) Workspace(ctx context.Context, id string, c Caller) (Workspace, error) {
	r, err := e.workspaceRecord(ctx, id, c)
	if err != nil {
		return Workspace{}, err
	}
	u, err := e.workspaceUse(ctx, id)
	if err != nil {
		return Workspace{}, err
	}
	w := r.workspace()
	w.InUse, w.Lost = u.running, u.holder == ""
	if !w.Lost {
		bytes, inodes, err := e.workspaceUsage(ctx, r)
		if err != nil {
			return Workspace{}, err
		}
		w.UsedBytes, w.UsedInodes = &bytes, &inodes
	}
	return w, nil
}

// Workspaces lists the caller's workspaces, oldest first.
func (e *Executor) Workspaces(ctx context.Context, c Caller) ([]Workspace, error) {
	all, err := e.workspaceRecords(ctx)
	if err != nil {
		return nil, err
	}
	out := []Workspace{}
	for _, r := range all {
		if r.Tenant == c.Tenant {
			out = append(out, r.workspace())
		}
	}
	return out, nil
}

// RemoveWorkspace deletes the caller's workspace and its files. A workspace in
// use by a run or job (running, or starting) is not removed, and loses
// nothing: ErrWorkspaceBusy. Idle warm sandboxes on it, of any process's pool,
// are removed with it.
func (e *Executor) RemoveWorkspace(ctx context.Context, id string, c Caller) error {
	r, err := e.workspaceRecord(ctx, id, c)
	if err != nil {
		return err
	}
	return e.removeWorkspace(ctx, r)
}

// Removal and starts exclude each other through the engine, so that any
// process on it takes part (docs/DESIGN.md, "Workspaces"). A removal first
// creates the workspace's mark, a container never started whose name is the
// lock (names are unique on an engine), then lists what is on the workspace; a
// start first creates its container, then looks for the mark. Each writes
// before it reads, so at least one sees the other: a removal that sees a run
// or job, even one only created, gives up with nothing destroyed; a start that
// sees a mark removes its container and waits for the removal's outcome.
const (
	roleHolder   = "holder"
	roleDeleting = "deleting"
	// warmSuffix ends the name of a warm sandbox on a workspace while it is
	// idle: its claim renames it, so that every process sees which of them
	// serve a run.
	warmSuffix = "-warm"
	// markLife is how long a removal's mark counts: one whose process died
	// is ignored past it, and the reconciler removes it.
	markLife = 5 * time.Minute
	// removalTime bounds a removal's work once it holds the mark.
	removalTime = 2 * time.Minute
	// endedWait is how long a removal waits for the containers of runs that
	// ended to be removed by their owners before it answers busy.
	endedWait = 15 * time.Second
	// deletionWait is how long a start waits for a removal under way to end.
	deletionWait = time.Minute
)

// errDeleting: a removal of the workspace holds its mark.
var errDeleting = errors.New("the workspace is being deleted")

func (r workspaceRecord) mark() string { return "airlock-" + r.ID + "-deleting" }

func (e *Executor) removeWorkspace(ctx context.Context, r workspaceRecord) error {
	if e.pool != nil {
		e.pool.dropWorkspace(r.ID) // its warm sandboxes are no use
	}
	mark, err := e.markRemoval(ctx, r)
	if err != nil {
		return err
	}
	// From here the removal ends by itself, whatever the caller does: a half
	// done one would leave a mark that holds up runs, or a lost workspace.
	bg := context.WithoutCancel(ctx)
	defer e.discard(bg, mark)
	ctx, cancel := context.WithTimeout(bg, removalTime)
	defer cancel()
	u, err := e.workspaceUse(ctx, r.ID)
	if err != nil {
		return err
	}
	if u.running > 0 {
		return fmt.Errorf("%w: %d run(s) or job(s) use %s; kill them or wait for them to end", ErrWorkspaceBusy, u.running, r.ID)
	}
	// Containers of runs that ended still hold the volume; their owners remove
	// them (a job's only after it copied its output), so they are waited for,
	// never removed here.
	if err := e.awaitGone(ctx, r.ID, u.ended); err != nil {
		return err
	}
	// Nothing runs on it, and whatever is created on it from now on backs off:
	// the files can go.
	for _, id := range u.warm {
		e.discard(ctx, id)
	}
	if err := e.eng.Remove(ctx, r.holder()); err != nil {
		return e.engineErr("remove workspace holder", err)
	}
	e.removeHolderDir(r)
	for {
		err := e.eng.RemoveVolume(ctx, r.volume())
		if err == nil {
			return nil
		}
		if !strings.Contains(err.Error(), "in use") || ctx.Err() != nil {
			return e.engineErr("remove workspace volume", err)
		}
		// A start that created its container after the mark, before it saw
		// the mark; it removes it, and so does this.
		cs, lerr := e.eng.List(ctx, LabelWorkspace+"="+r.ID)
		if lerr != nil {
			return e.engineErr("list workspace containers", lerr)
		}
		for _, c := range cs {
			if c.Labels[labelRole] != roleDeleting {
				e.discard(ctx, c.ID)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// markRemoval creates the workspace's mark and returns its container id. A
// mark already there is another removal under way (ErrWorkspaceBusy), or,
// past its deadline, one whose process died: it is replaced.
func (e *Executor) markRemoval(ctx context.Context, r workspaceRecord) (string, error) {
	img, err := e.image(ctx, images.Minimal.Ref)
	if err != nil {
		return "", err
	}
	plan := containerPlan{
		Name:      r.mark(),
		Image:     img.ID,
		Cmd:       []string{"/bin/true"}, // never started
		User:      holderUser,
		Memory:    16 << 20,
		NanoCPUs:  1e8,
		Pids:      8,
		TmpfsSize: 1 << 20,
		Network:   "none",
		Runtime:   "runc",
		Labels: map[string]string{LabelManaged: "true", LabelWorkspace: r.ID, labelRole: roleDeleting,
			LabelDeadline: time.Now().Add(markLife).UTC().Format(time.RFC3339)},
	}
	for attempt := 0; ; attempt++ {
		cid, err := e.eng.Create(ctx, plan)
		if err == nil {
			return cid, nil
		}
		if !errors.Is(err, engine.ErrNameInUse) {
			if ctx.Err() != nil {
				// The engine may have made it after all: the mark then holds
				// until its deadline, and the reconciler removes it.
				return "", fmt.Errorf("remove %s: %w", r.ID, ctx.Err())
			}
			return "", e.engineErr("mark workspace for removal", err)
		}
		if attempt == 0 && e.staleMark(ctx, r) {
			e.discard(ctx, r.mark())
			continue
		}
		return "", fmt.Errorf("%w: %s is being deleted by another request", ErrWorkspaceBusy, r.ID)
	}
}

// staleMark says whether the workspace's mark has outlived its deadline.
func (e *Executor) staleMark(ctx context.Context, r workspaceRecord) bool {
	cs, err := e.eng.List(ctx, LabelWorkspace+"="+r.ID)
	if err != nil {
		return false
	}
	for _, c := range cs {
		if c.Labels[labelRole] == roleDeleting {
			return pastDeadline(c, time.Now())
		}
	}
	return false
}

// awaitGone waits, at most endedWait, until none of the containers ids of
// workspace id exists.
func (e *Executor) awaitGone(ctx context.Context, id string, ids []string) error {
	deadline := time.Now().Add(endedWait)
	for len(ids) > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %d run(s) or job(s) on %s ended but their containers are not yet removed; try again later", ErrWorkspaceBusy, len(ids), id)
		}
		time.Sleep(100 * time.Millisecond)
		cs, err := e.eng.List(ctx, LabelWorkspace+"="+id)
		if err != nil {
			return e.engineErr("list workspace containers", err)
		}
		ids = slices.DeleteFunc(ids, func(cid string) bool {
			return !slices.ContainsFunc(cs, func(c containerSummary) bool { return c.ID == cid })
		})
	}
	return nil
}

// enterWorkspace is a start's half of the exclusion, called once the start's
// container exists (created, or a warm sandbox claimed): nil when the
// workspace's files are there and no removal is under way; errDeleting while
// one is; else an error that says the workspace is lost or was deleted.
func (e *Executor) enterWorkspace(ctx context.Context, id string) error {
	u, err := e.workspaceUse(ctx, id)
	switch {
	case err != nil:
		return err
	case u.deleting:
		return errDeleting
	case !u.held:
		return &SpecError{Field: "workspace", Reason: fmt.Sprintf("%v: %s was deleted", ErrWorkspaceNotFound, id)}
	case u.holder == "":
		return &SpecError{Field: "workspace", Reason: fmt.Sprintf("%v: %s must be deleted and created again", ErrWorkspaceLost, id)}
	}
	return nil
}

// removeStrayVolume removes the volume of workspace id when it carries no
// record: the engine made it, plain and unbounded on its disk, for a start
// whose create came after the workspace's removal.
func (e *Executor) removeStrayVolume(ctx context.Context, id string) {
	if vols, err := e.eng.ListVolumes(ctx, LabelWorkspace+"="+id); err != nil || len(vols) > 0 {
		return // its record is there: lost, not deleted
	}
	if err := e.eng.RemoveVolume(ctx, workspaceRecord{ID: id}.volume()); err != nil {
		e.cfg.Logger.Warn("remove a stray workspace volume", "workspace", id, "err", err)
	}
}

// awaitRemoval waits, at most deletionWait, until no removal of workspace id
// is under way.
func (e *Executor) awaitRemoval(ctx context.Context, id string) error {
	deadline := time.Now().Add(deletionWait)
	for {
		u, err := e.workspaceUse(ctx, id)
		if err != nil || !u.deleting {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s is being deleted", ErrWorkspaceBusy, id)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// createOnWorkspace creates the container of plan, which mounts a workspace,
// as a start's half of the exclusion with removals says: the container first,
// then the look for a removal's mark. While a removal is under way the
// container goes, and, once the removal has ended, the start tries again: the
// workspace is there (the removal was refused) or it is gone (an error).
func (e *Executor) createOnWorkspace(ctx context.Context, plan containerPlan) (string, error) {
	id := plan.Labels[LabelWorkspace]
	for {
		cid, err := e.create(ctx, plan)
		if err != nil {
			return "", err
		}
		err = e.enterWorkspace(ctx, id)
		if err == nil {
			return cid, nil
		}
		e.discard(context.WithoutCancel(ctx), cid)
		if !errors.Is(err, errDeleting) {
			e.removeStrayVolume(context.WithoutCancel(ctx), id)
			return "", err
		}
		if err := e.awaitRemoval(ctx, id); err != nil {
			return "", err
		}
	}
}

// ReapWorkspaces removes every expired workspace no run uses, of any tenant,
// and returns their ids. A server calls it periodically; the CLI on start.
func (e *Executor) ReapWorkspaces(ctx context.Context) ([]string, error) {
	all, err := e.workspaceRecords(ctx)
	if err != nil {
		return nil, err
	}
	var reaped []string
	now := time.Now()
	for _, r := range all {
		if !r.expired(now) {
			continue
		}
		if err := e.removeWorkspace(ctx, r); err != nil {
			if !errors.Is(err, ErrWorkspaceBusy) {
				return reaped, err
			}
			continue
		}
		reaped = append(reaped, r.ID)
	}
	return reaped, nil
}

// mountWorkspace prepares plan to run on the caller's workspace id: the volume
// at /workspace, and its id as a label, by which a removal sees the run. Whether
// the files are there is decided once the container exists (createOnWorkspace).
func (e *Executor) mountWorkspace(ctx context.Context, plan *containerPlan, id string, c Caller) error {
	r, err := e.workspaceRecord(ctx, id, c)
	if err != nil {
		return &SpecError{Field: "workspace", Reason: err.Error()}
	}
	plan.Workspace = r.volume()
	plan.Labels = maps.Clone(plan.Labels)
	plan.Labels[LabelWorkspace] = id
	return nil
}

// WorkspaceTotals counts the workspaces of every tenant on the engine and sums
// their sizes (the memory they may take): for a server's metrics.
func (e *Executor) WorkspaceTotals(ctx context.Context) (count int, size int64, err error) {
	all, err := e.workspaceRecords(ctx)
	for _, r := range all {
		count++
		size += r.Size
	}
	return count, size, err
}
