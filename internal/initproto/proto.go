// Package initproto is the protocol between airlock and its init, PID 1 of a
// sandbox (cmd/airlock-init): the request airlock writes on the init's stdin,
// and the frames the init writes on its stdout. Both sides import it, so they
// cannot disagree. docs/DESIGN.md, "The init", says why there is an init.
package initproto

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Request is the one command an init runs: a JSON line on its stdin, followed
// by the command's stdin when Stdin is set (until EOF).
type Request struct {
	Argv []string `json:"argv"`
	// Env is added to the init's own environment (the image's).
	Env []string `json:"env,omitempty"`
	Dir string   `json:"dir,omitempty"`
	// Stdin: the bytes after the request line are the command's stdin;
	// otherwise its stdin is /dev/null.
	Stdin bool `json:"stdin,omitempty"`
	// TimeoutMS, when set, has the init end everything in the sandbox that long
	// after the start: SIGTERM, and SIGKILL GraceMS later.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
	GraceMS   int64 `json:"grace_ms,omitempty"`
	// Keep, when set, is a background job's mode: the engine's log keeps the
	// output, so the command's stdout and stderr go out unframed on the init's
	// own stdout and stderr, each up to Keep bytes. Past Keep the init only
	// counts, and keeps the stream's last TailBytes for the report. The report
	// follows on stdout, at the start of a line, after Marker: a secret of the
	// host's that the command never sees, so it cannot forge a report.
	Keep   int64  `json:"keep,omitempty"`
	Marker string `json:"marker,omitempty"`
	// TrustPEM, when set, is an authority the command's TLS clients must
	// trust (airlock's, for a run's secrets): before the command starts,
	// the init writes the image's own bundle followed by it to
	// TrustBundlePath, which the request's Env names.
	TrustPEM string `json:"trust_pem,omitempty"`
}

// TrustBundlePath is where the init writes the trust bundle of
// Request.TrustPEM: the sandbox's /tmp, its own tmpfs, writable whatever
// its image.
const TrustBundlePath = "/tmp/.airlock/ca-bundle.pem"

// TailBytes is how much of the end of a stream past Keep the report carries.
const TailBytes = 64 << 10

// ForceKill is the signal that has the init end every process of the sandbox
// with SIGKILL and report, as it does at the deadline's end: the host's
// SIGKILL would end the init too, and with it the report. It is SIGRTMAX,
// which the init never passes on.
const ForceKill = 64

// WarmArg is the init's argument in a sandbox started ahead of its run (the
// pool's): it has time to warm the kernel's caches before its request comes.
const WarmArg = "--warm"

// HoldArg is the init's argument as PID 1 of a workspace's holder, which only
// keeps the workspace mounted; FilesArg, followed by an operation, runs the
// file agent there (internal/fileagent), exec'd by airlock.
const (
	HoldArg  = "--hold"
	FilesArg = "files"
)

// LingerAfterReport is how long a warm sandbox's init waits, after its
// report, for the host's SIGTERM before it exits by itself: the host removes
// used sandboxes when no run is in flight, and an init whose host died goes
// on its own.
const LingerAfterReport = 10 * time.Second

// MaxRequest bounds the request line (argv and env are bounded well below it).
const MaxRequest = 8 << 20

// Frame kinds on the init's stdout: the command's stdout and stderr, in the
// order the init read them, and last the Report.
const (
	Stdout byte = 'o'
	Stderr byte = 'e'
	Result byte = 'r'
	// Error is a failure of the init itself (the command could not start).
	Error byte = 'x'
)

// Report is how the command ended, measured inside the sandbox.
type Report struct {
	ExitCode int    `json:"exit_code"`
	Signal   string `json:"signal,omitempty"` // the signal that ended the command
	TimedOut bool   `json:"timed_out,omitempty"`
	// Started and Ended are the command's start and end, Unix nanoseconds.
	Started int64 `json:"started"`
	Ended   int64 `json:"ended"`
	// CPU time of every process of the sandbox but the init (getrusage of the
	// reaped children), in nanoseconds.
	CPUUserNS   int64 `json:"cpu_user_ns"`
	CPUSystemNS int64 `json:"cpu_system_ns"`
	// MemoryPeak is the sandbox cgroup's peak, or the largest child's RSS
	// where the cgroup does not say.
	MemoryPeak int64 `json:"memory_peak"`
	IORead     int64 `json:"io_read"`
	IOWrite    int64 `json:"io_write"`
	// OOMKills is how many processes the kernel's OOM killer ended in the
	// sandbox's cgroup during the command; -1 when the cgroup does not say.
	OOMKills    int64 `json:"oom_kills"`
	StdoutBytes int64 `json:"stdout_bytes"`
	StderrBytes int64 `json:"stderr_bytes"`
	// In a job's mode (Request.Keep): the last TailBytes of each stream that
	// outgrew Keep, and whether the init ended the command's last line on stdout
	// ("\n") so that the marker starts a line of its own.
	StdoutTail   []byte `json:"stdout_tail,omitempty"`
	StderrTail   []byte `json:"stderr_tail,omitempty"`
	NewlineAdded bool   `json:"newline_added,omitempty"`
}

// WriteFrame writes one frame: its kind, its length (4 bytes, big endian) and
// its payload.
func WriteFrame(w io.Writer, kind byte, payload []byte) error {
	var h [5]byte
	h[0] = kind
	binary.BigEndian.PutUint32(h[1:], uint32(len(payload)))
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

// MaxFrame bounds one frame's payload.
const MaxFrame = 1 << 20

// ReadFrames reads frames from r until EOF, passing each to fn; the payload is
// only valid during the call.
func ReadFrames(r io.Reader, fn func(kind byte, payload []byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	buf := make([]byte, 0, 64<<10)
	var h [5]byte
	for {
		if _, err := io.ReadFull(br, h[:]); err != nil {
			if err == io.EOF {
				return nil
			}
			return fmt.Errorf("init frame header: %w", err)
		}
		n := binary.BigEndian.Uint32(h[1:])
		if n > MaxFrame {
			return fmt.Errorf("init frame of %d bytes, over %d", n, MaxFrame)
		}
		if cap(buf) < int(n) {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(br, buf); err != nil {
			return fmt.Errorf("init frame: %w", err)
		}
		if err := fn(h[0], buf); err != nil {
			return err
		}
	}
}

// ReadRequest reads the request line from r; the rest of r is the command's stdin.
func ReadRequest(r *bufio.Reader) (Request, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > MaxRequest {
			return Request{}, errors.New("request line too long")
		}
		if err == nil {
			break
		}
		if err != bufio.ErrBufferFull {
			return Request{}, fmt.Errorf("read request: %w", err)
		}
	}
	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		return Request{}, fmt.Errorf("request: %w", err)
	}
	if len(req.Argv) == 0 {
		return Request{}, errors.New("request: empty argv")
	}
	if req.Keep > 0 && req.Marker == "" {
		return Request{}, errors.New("request: a job's mode needs a marker")
	}
	return req, nil
}
