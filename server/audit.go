package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
)

// auditLog appends one JSON line per decision and per run. Env values
// and tokens never reach it: specs are reduced to env names, and tokens appear
// only as fingerprints.
//
// A background job's run.finish may come long after its run.start, from another
// server process: the ids of jobs whose start is written and whose finish is not
// yet are kept as files in pendingDir, so that a server which starts after such a
// job ended while nothing watched it still writes its finish.
type auditLog struct {
	mu         sync.Mutex
	f          *os.File
	pendingDir string
}

// auditEvent is one line of the audit log.
type auditEvent struct {
	Time   time.Time `json:"time"`
	Event  string    `json:"event"` // check, run.start, run.finish, kill, refused, auth.failed, node.drain, node.undrain, secret.put, secret.delete
	Tenant string    `json:"tenant,omitempty"`
	ID     string    `json:"id,omitempty"`
	Via    string    `json:"via,omitempty"` // http or mcp

	Command    string   `json:"command,omitempty"`
	Argv       []string `json:"argv,omitempty"`
	EnvNames   []string `json:"env_names,omitempty"`
	Image      string   `json:"image,omitempty"`
	Background bool     `json:"background,omitempty"`

	Decision string `json:"decision,omitempty"` // allowed or blocked
	Rule     string `json:"rule,omitempty"`
	Reason   string `json:"reason,omitempty"`

	State      executor.State `json:"state,omitempty"`
	ExitCode   *int           `json:"exit_code,omitempty"`
	DurationMS *int64         `json:"duration_ms,omitempty"`
	OOMKilled  bool           `json:"oom_killed,omitempty"`
	TimedOut   bool           `json:"timed_out,omitempty"`
	Signal     string         `json:"signal,omitempty"`
	Error      string         `json:"error,omitempty"`
	FinishedAt *time.Time     `json:"finished_at,omitempty"` // when the run ended; time is when this line was written

	Workspace string `json:"workspace,omitempty"`
	Path      string `json:"path,omitempty"` // a file or directory in the workspace

	Node string `json:"node,omitempty"` // a cluster node (node.drain, node.undrain)

	// Secrets names the secrets a run asked for (run.start); Secret is the
	// one stored or deleted (secret.put, secret.delete). Never a value: the
	// egress entries of run.finish say which secret went to which host.
	Secrets []string `json:"secrets,omitempty"`
	Secret  string   `json:"secret,omitempty"`

	// EgressHosts are the hosts a run may reach (run.start); Egress is what
	// its proxy decided for each (run.finish).
	EgressHosts []string               `json:"egress_hosts,omitempty"`
	Egress      []executor.EgressEntry `json:"egress,omitempty"`

	Remote string `json:"remote,omitempty"`
	Token  string `json:"token,omitempty"` // a fingerprint, never the token
}

func openAudit(path string) (*auditLog, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	pendingDir := path + ".pending"
	if err := os.MkdirAll(pendingDir, 0o700); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	return &auditLog{f: f, pendingDir: pendingDir}, nil
}

// pend records that the finish of background job id, of tenant, is owed.
func (a *auditLog) pend(id, tenant string) error {
	return os.WriteFile(filepath.Join(a.pendingDir, id), []byte(tenant), 0o600)
}

// settle records that the finish of job id is written.
func (a *auditLog) settle(id string) error {
	err := os.Remove(filepath.Join(a.pendingDir, id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// pending maps the jobs whose finish is owed to their tenants.
func (a *auditLog) pending() (map[string]string, error) {
	entries, err := os.ReadDir(a.pendingDir)
	owed := make(map[string]string, len(entries))
	for _, e := range entries {
		tenant, rerr := os.ReadFile(filepath.Join(a.pendingDir, e.Name()))
		err = errors.Join(err, rerr)
		owed[e.Name()] = string(tenant)
	}
	return owed, err
}

// write appends ev; a line is written whole or not at all (one write call).
func (a *auditLog) write(ev auditEvent) error {
	if ev.Time.IsZero() {
		ev.Time = time.Now().UTC()
	}
	line, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	_, err = a.f.Write(append(line, '\n'))
	return err
}

func (a *auditLog) close() error { return a.f.Close() }

// specEvent describes what a request asked to run, without env values.
func specEvent(event, tenant string, s executor.Spec) auditEvent {
	return auditEvent{
		Event: event, Tenant: tenant, Command: s.Command, Argv: s.Argv,
		EnvNames: slices.Sorted(maps.Keys(s.Env)), Image: s.Image, Background: s.Background, Workspace: s.Workspace,
		EgressHosts: s.Egress, Secrets: s.Secrets,
	}
}

// withResult adds how a run ended.
func (ev auditEvent) withResult(r executor.Result) auditEvent {
	code, dur := r.ExitCode, r.DurationMS
	ev.ID, ev.State, ev.ExitCode, ev.DurationMS = r.ID, r.State, &code, &dur
	ev.OOMKilled, ev.TimedOut, ev.Signal, ev.Error = r.OOMKilled, r.TimedOut, r.Signal, r.Error
	if !r.FinishedAt.IsZero() {
		ev.FinishedAt = &r.FinishedAt
	}
	if r.Image != "" {
		ev.Image = r.Image
	}
	if r.Blocked {
		ev.Decision, ev.Rule, ev.Reason = "blocked", r.BlockRule, r.BlockReason
	}
	ev.Egress = r.Egress
	return ev
}
