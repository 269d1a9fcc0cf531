package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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
	// labelRole is "holder" on a workspace's holder container.
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
	cid, err := e.create(ctx, plan)
	if err != nil {
		return err
	}
	if err := e.eng.Start(ctx, cid); err != nil {
		return e.engineErr("start workspace holder", err)
	}
	return nil
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

// workspaceUse is what the engine runs on a workspace now.
type workspaceUse struct {
	holder  string // the running holder's container id; empty when lost
	running int    // runs and jobs on it
}

func (e *Executor) workspaceUse(ctx context.Context, id string) (workspaceUse, error) {
	cs, err := e.eng.List(ctx, LabelWorkspace+"="+id)
	if err != nil {
		return workspaceUse{}, e.engineErr("list workspace containers", err)
	}
	var u workspaceUse
	for _, c := range cs {
		switch {
		case c.Labels[labelRole] == "holder" && c.Running:
			u.holder = c.ID
		case c.Labels[labelRole] != "holder" && c.Running:
			u.running++
		}
	}
	return u, nil
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
// use by a running run or job is not removed: ErrWorkspaceBusy.
func (e *Executor) RemoveWorkspace(ctx context.Context, id string, c Caller) error {
	r, err := e.workspaceRecord(ctx, id, c)
	if err != nil {
		return err
	}
	return e.removeWorkspace(ctx, r)
}

func (e *Executor) removeWorkspace(ctx context.Context, r workspaceRecord) error {
	if e.pool != nil {
		e.pool.dropWorkspace(r.ID) // its warm sandboxes are no use
	}
	u, err := e.workspaceUse(ctx, r.ID)
	if err != nil {
		return err
	}
	if u.running > 0 {
		return fmt.Errorf("%w: %d running run(s) or job(s) use %s; kill them or wait for them to end", ErrWorkspaceBusy, u.running, r.ID)
	}
	if err := e.eng.Remove(ctx, r.holder()); err != nil {
		return e.engineErr("remove workspace holder", err)
	}
	if err := e.eng.RemoveVolume(ctx, r.volume()); err != nil {
		if strings.Contains(err.Error(), "in use") {
			// A run started on it since we looked: its files went with the holder.
			return fmt.Errorf("%w: a run started on %s while it was being removed", ErrWorkspaceBusy, r.ID)
		}
		return e.engineErr("remove workspace volume", err)
	}
	return nil
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
// at /workspace, and its id as a label, by which a removal sees the run.
func (e *Executor) mountWorkspace(ctx context.Context, plan *containerPlan, id string, c Caller) error {
	r, err := e.workspaceRecord(ctx, id, c)
	if err != nil {
		return &SpecError{Field: "workspace", Reason: err.Error()}
	}
	u, err := e.workspaceUse(ctx, id)
	if err != nil {
		return err
	}
	if u.holder == "" {
		return &SpecError{Field: "workspace", Reason: fmt.Sprintf("%v: %s must be deleted and created again", ErrWorkspaceLost, id)}
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
