package api

import (
	"fmt"
	"time"
)

// CheckRequest is a command to judge: exactly one of Command and Argv.
type CheckRequest struct {
	Command string   `json:"command,omitempty" jsonschema:"a shell command, judged as sh -c would run it"`
	Argv    []string `json:"argv,omitempty" jsonschema:"a program and its arguments, judged without a shell"`
}

// KillRequest is the body of POST /v1/processes/{id}/kill.
type KillRequest struct {
	Signal string `json:"signal,omitempty" jsonschema:"signal name or number (default SIGTERM)"`
	// ForceAfter is seconds before SIGKILL; absent means 10, 0 means never.
	ForceAfter *float64 `json:"force_after,omitempty" jsonschema:"seconds before SIGKILL follows (default 10; 0 = never)"`
}

// ForceAfterDuration is how long after the signal SIGKILL follows: 10 s when
// the request gives none, never when it gives 0.
func (k KillRequest) ForceAfterDuration() time.Duration {
	if k.ForceAfter == nil {
		return DefaultForceAfter
	}
	return Seconds(*k.ForceAfter).Duration()
}

// WaitRequest is the body of POST /v1/processes/{id}/wait.
type WaitRequest struct {
	Timeout Seconds `json:"timeout,omitempty"`
}

// Duration is how long the wait may last: DefaultWait when the request gives
// none, at most MaxWait.
func (q WaitRequest) Duration() (time.Duration, error) {
	switch t := float64(q.Timeout); {
	case t < 0 || t != t:
		return 0, NewError("invalid_request", "timeout", "timeout: must not be negative")
	case t == 0:
		return DefaultWait, nil
	case t > MaxWait.Seconds():
		return 0, NewError("invalid_request", "timeout", fmt.Sprintf("timeout: %gs is greater than the limit of %gs", t, MaxWait.Seconds()))
	}
	return q.Timeout.Duration(), nil
}

// LogsResponse is a page of a job's output. Offsets and sizes count raw bytes;
// with encoding utf8 invalid bytes read as U+FFFD, with base64 they are exact.
type LogsResponse struct {
	ID          string  `json:"id"`
	State       State   `json:"state"`
	Encoding    string  `json:"encoding"`
	Stdout      *string `json:"stdout,omitempty"`
	Stderr      *string `json:"stderr,omitempty"`
	StdoutSize  int64   `json:"stdout_size"`
	StderrSize  int64   `json:"stderr_size"`
	StdoutBytes int64   `json:"stdout_bytes"`
	StderrBytes int64   `json:"stderr_bytes"`
	Truncated   bool    `json:"truncated"`
	StdoutNext  int64   `json:"stdout_next"`
	StderrNext  int64   `json:"stderr_next"`
}

// LogsRequest chooses a page of output, or a follow.
type LogsRequest struct {
	ID       string `json:"id" jsonschema:"the process id"`
	Stream   string `json:"stream,omitempty" jsonschema:"stdout, stderr or both (default both)"`
	Offset   int64  `json:"offset,omitempty" jsonschema:"first byte of each stream to return"`
	Limit    int64  `json:"limit,omitempty" jsonschema:"most bytes per stream (default 1 MiB)"`
	Encoding string `json:"encoding,omitempty" jsonschema:"utf8 (default) or base64 for the exact bytes"`
}

// IDRequest names a background process.
type IDRequest struct {
	ID string `json:"id" jsonschema:"the process id returned by start"`
}

// KillToolRequest is the kill tool's input.
type KillToolRequest struct {
	ID string `json:"id" jsonschema:"the process id"`
	KillRequest
}

// ListRequest filters the list tool.
type ListRequest struct {
	State  State             `json:"state,omitempty" jsonschema:"keep processes in this state (default: all)"`
	Labels map[string]string `json:"labels,omitempty" jsonschema:"keep processes carrying every one of these labels"`
	Limit  int               `json:"limit,omitempty" jsonschema:"most processes returned (default 50, at most 1000)"`
}

// WaitToolRequest is the wait tool's input.
type WaitToolRequest struct {
	ID      string  `json:"id" jsonschema:"the process id returned by start"`
	Timeout Seconds `json:"timeout,omitempty" jsonschema:"seconds to wait at most (default 30, at most 3600); the process goes on if the wait ends first"`
}

// CheckResult is the check tool's answer.
type CheckResult struct {
	Blocked bool   `json:"blocked"`
	Allowed bool   `json:"allowed"`
	Rule    string `json:"rule,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Match   string `json:"match,omitempty"`
	Mode    string `json:"mode"`
}

// StreamChunk is the data of a stdout or stderr event.
type StreamChunk struct {
	Offset int64  `json:"offset"`
	Data   string `json:"data"`
}

// LogsEnd closes a follow: how the job ended.
type LogsEnd struct {
	ID          string `json:"id"`
	State       State  `json:"state"`
	ExitCode    int    `json:"exit_code"`
	Signal      string `json:"signal,omitempty"`
	TimedOut    bool   `json:"timed_out"`
	OOMKilled   bool   `json:"oom_killed"`
	DurationMS  int64  `json:"duration_ms"`
	StdoutBytes int64  `json:"stdout_bytes"`
	StderrBytes int64  `json:"stderr_bytes"`
}

// MaxWait bounds a wait long-poll; DefaultWait is used when none is given.
const (
	MaxWait     = time.Hour
	DefaultWait = 30 * time.Second
)
