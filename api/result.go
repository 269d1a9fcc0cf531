package api

import (
	"fmt"
	"time"
)

// State is where a run is in its life, or how it ended.
type State string

// The states a run is in, or ended in.
const (
	StateRunning   State = "running"
	StateCompleted State = "completed" // the process exited by itself, whatever its code
	StateTimedOut  State = "timed_out" // airlock ended it at its timeout; exit code 124
	StateKilled    State = "killed"    // ended by a kill: the caller's, or the kernel's OOM killer
	StateBlocked   State = "blocked"   // refused by policy; no container was created
	StateFailed    State = "failed"    // airlock or the engine failed; exit code 125
	StateLost      State = "lost"      // cluster mode: its node died while it ran; exit code 125, not run again
	StateQueued    State = "queued"    // cluster mode: waiting for a node with room
	StateExpired   State = "expired"   // cluster mode: no node had room within its queue_timeout; nothing ran, exit code 125
	// StatePlaced is the cluster's own: a node has claimed the job and not yet
	// started it. The API reports it as StateQueued; no answer carries it.
	StatePlaced State = "placed"
)

// States are the states an answer may carry, in the order the API documents
// them: what a list filters by, and MCP's enum.
var States = []State{StateRunning, StateCompleted, StateTimedOut, StateKilled, StateBlocked, StateFailed,
	StateQueued, StateLost, StateExpired}

// Exit codes with a fixed meaning, as the shell and `docker run` use them.
const (
	ExitTimedOut = 124
	ExitFailed   = 125
	ExitBlocked  = 126
	ExitNotFound = 127
)

// Result is the outcome of one run. A command that fails is a Result, not an error.
type Result struct {
	ID       string `json:"id"`
	State    State  `json:"state"`
	Success  bool   `json:"success"`
	ExitCode int    `json:"exit_code"`
	// Signal names the signal that ended the process (exit code 128+n), if any.
	Signal    string `json:"signal,omitempty"`
	TimedOut  bool   `json:"timed_out"`
	OOMKilled bool   `json:"oom_killed"`
	Blocked   bool   `json:"blocked"`

	BlockReason string `json:"block_reason,omitempty"`
	BlockRule   string `json:"block_rule,omitempty"`
	// Error is the infrastructure failure behind a failed run.
	Error string `json:"error,omitempty"`

	// Stdout and Stderr hold the first MaxOutput bytes of each stream. Invalid UTF-8
	// becomes U+FFFD when they are encoded as JSON.
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StderrTruncated bool   `json:"stderr_truncated"`
	// StdoutBytes and StderrBytes count every byte the process wrote, kept or not.
	StdoutBytes int64 `json:"stdout_bytes"`
	StderrBytes int64 `json:"stderr_bytes"`
	// StdoutTail and StderrTail are the last TailLines lines of each whole stream.
	StdoutTail string `json:"stdout_tail"`
	StderrTail string `json:"stderr_tail"`

	StartedAt     time.Time     `json:"started_at"`
	FinishedAt    time.Time     `json:"finished_at,omitzero"`
	DurationMS    int64         `json:"duration_ms"`
	ResourceUsage ResourceUsage `json:"resource_usage"`

	ContainerID string            `json:"container_id,omitempty"`
	Image       string            `json:"image,omitempty"`
	Runtime     string            `json:"runtime,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Workspace   string            `json:"workspace,omitempty"`
	// Tests summarises the run's JUnit reports (Spec.Report).
	Tests *TestReport `json:"tests,omitempty"`
	// Egress is what the run's connections through airlock's proxy did, one
	// entry per host and port (Spec.Egress).
	Egress []EgressEntry `json:"egress,omitempty"`
	// Tenant is the owner a server recorded for the run (see Spec.Tenant).
	Tenant string `json:"tenant,omitempty"`
	// Node is, in cluster mode, the node that ran the run or job.
	Node string `json:"node,omitempty"`
}

// Process is the run's job as Start, List and Kill report it, with the
// command it runs: the one conversion, for a job on this host and one in a
// cluster alike.
func (r Result) Process(command string, argv []string) Process {
	p := Process{
		ID: r.ID, State: r.State, Command: command, Argv: argv, Image: r.Image, Runtime: r.Runtime,
		Labels: r.Labels, Workspace: r.Workspace, Tenant: r.Tenant, Node: r.Node, StartedAt: r.StartedAt,
		DurationMS: r.DurationMS, Signal: r.Signal, TimedOut: r.TimedOut, OOMKilled: r.OOMKilled, Blocked: r.Blocked,
		BlockRule: r.BlockRule, BlockReason: r.BlockReason, Error: r.Error, StdoutBytes: r.StdoutBytes, StderrBytes: r.StderrBytes,
	}
	if r.State != StateRunning && r.State != StateQueued { // ended
		finished, code := r.FinishedAt, r.ExitCode
		p.FinishedAt, p.ExitCode = &finished, &code
	}
	return p
}

// ResourceUsage is what the sandbox consumed, read from the engine's statistics.
type ResourceUsage struct {
	CPUMS           int64 `json:"cpu_ms"`
	MemoryPeakBytes int64 `json:"memory_peak_bytes"`
	IOReadBytes     int64 `json:"io_read_bytes"`
	IOWriteBytes    int64 `json:"io_write_bytes"`
	// Samples is how many engine samples the figures come from. The engine samples
	// about once a second, so a run that ends sooner may have none: then the figures
	// are zero because they were not measured, not because nothing was used.
	Samples int `json:"samples"`
}

// Outcome says in one line how the run ended, or that it runs: what a person
// at a terminal, or an LLM reading a tool's answer, would otherwise have to
// work out from the fields.
func (r Result) Outcome() string {
	d := time.Duration(r.DurationMS) * time.Millisecond
	switch {
	case r.State == StateRunning:
		return fmt.Sprintf("is running (%s so far)", d)
	case r.Blocked:
		return fmt.Sprintf("blocked by policy [%s]: %s; nothing ran (exit %d)", r.BlockRule, r.BlockReason, r.ExitCode)
	case r.TimedOut:
		return fmt.Sprintf("timed out after %s and was killed (exit %d)", d, r.ExitCode)
	case r.OOMKilled:
		return fmt.Sprintf("ran out of memory: the kernel killed it (exit %d)", r.ExitCode)
	case r.State == StateFailed:
		return fmt.Sprintf("could not run: %s (exit %d)", r.Error, r.ExitCode)
	case r.State == StateLost:
		return fmt.Sprintf("lost: %s (exit %d)", r.Error, r.ExitCode)
	case r.State == StateKilled && r.Signal == "":
		return fmt.Sprintf("killed (exit %d)", r.ExitCode)
	case r.State == StateKilled:
		return fmt.Sprintf("killed (exit %d, %s)", r.ExitCode, r.Signal)
	case r.Signal != "":
		return fmt.Sprintf("completed with exit code %d in %s (%s)", r.ExitCode, d, r.Signal)
	}
	return fmt.Sprintf("completed with exit code %d in %s", r.ExitCode, d)
}

// EgressEntry is what a run's proxy did for one host and port: allowed or
// denied, why, how many connections, and the bytes each way.
type EgressEntry struct {
	Host        string `json:"host"`
	Port        int    `json:"port"`
	Decision    string `json:"decision"` // allowed or denied
	Reason      string `json:"reason,omitempty"`
	Connections int64  `json:"connections"`
	Refused     int64  `json:"refused"`   // connections refused
	BytesIn     int64  `json:"bytes_in"`  // from the host to the run
	BytesOut    int64  `json:"bytes_out"` // from the run to the host
	// Secrets names the secrets put into requests to the host, never their
	// values.
	Secrets []string `json:"secrets,omitempty"`
}
