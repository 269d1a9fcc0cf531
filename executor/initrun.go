package executor

import (
	"encoding/json"
	"io"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/internal/initproto"
)

// The host's side of a run under airlock's init: the request on the init's
// stdin, and its frames demultiplexed into the run's captures.

// initRequest is the command of s for the init, with its environment and
// working directory (a warm sandbox was started without them).
func (e *Executor) initRequest(s Spec, argv, env []string, dir string) initproto.Request {
	return initproto.Request{
		Argv:      argv,
		Env:       env,
		Dir:       dir,
		Stdin:     s.Stdin != nil,
		TimeoutMS: s.Timeout.Duration().Milliseconds(),
		GraceMS:   e.cfg.KillGrace.Milliseconds(),
		TrustPEM:  e.trustPEM(s),
	}
}

// sendRequest writes the request line and then the command's stdin, if any,
// and closes the init's stdin.
func sendRequest(att *attachment, req initproto.Request, stdin *string) {
	line, _ := json.Marshal(req)
	line = append(line, '\n')
	if _, err := att.Stdin.Write(line); err == nil && stdin != nil {
		io.WriteString(att.Stdin, *stdin) // fails only when the process is gone
	}
	att.CloseStdin()
}

// initOutput is the writer of the init's stdout: it reads the frames and
// passes the command's output on to stdout and stderr, keeping the report.
type initOutput struct {
	pw   *io.PipeWriter
	done chan struct{}
	// reported closes when the report has come: every frame of the output is
	// in by then (the init writes the report last).
	reported chan struct{}

	mu     sync.Mutex
	report *initproto.Report
	failed string // the init's own failure (an Error frame, or a broken stream)
}

func newInitOutput(stdout, stderr io.Writer) *initOutput {
	pr, pw := io.Pipe()
	o := &initOutput{pw: pw, done: make(chan struct{}), reported: make(chan struct{})}
	go func() {
		defer close(o.done)
		err := initproto.ReadFrames(pr, func(kind byte, p []byte) error {
			switch kind {
			case initproto.Stdout:
				stdout.Write(p)
			case initproto.Stderr:
				stderr.Write(p)
			case initproto.Result:
				var r initproto.Report
				if err := json.Unmarshal(p, &r); err != nil {
					return err
				}
				o.mu.Lock()
				first := o.report == nil
				o.report = &r
				o.mu.Unlock()
				if first {
					close(o.reported)
				}
			case initproto.Error:
				o.mu.Lock()
				o.failed = string(p)
				o.mu.Unlock()
			}
			return nil
		})
		if err != nil {
			o.mu.Lock()
			o.failed = err.Error()
			o.mu.Unlock()
		}
		pr.CloseWithError(err)
	}()
	return o
}

func (o *initOutput) Write(p []byte) (int, error) { return o.pw.Write(p) }

// finish ends the stream and returns the report (nil when the init was killed
// before it could write one) and the init's own failure, if any.
func (o *initOutput) finish() (*initproto.Report, string) {
	o.pw.Close()
	<-o.done
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.report, o.failed
}

// applyReport puts what the init measured into the engine's record of the
// container: the command's own exit, times and OOM kills.
func applyReport(st *containerState, r *initproto.Report) {
	st.ExitCode = r.ExitCode
	st.OOMKilled = st.OOMKilled || r.OOMKills > 0
	st.StartedAt, st.FinishedAt = time.Unix(0, r.Started).UTC(), time.Unix(0, r.Ended).UTC()
}

// usageOf is the init's measure of what the sandbox used.
func usageOf(r *initproto.Report) ResourceUsage {
	return ResourceUsage{
		CPUMS:           (r.CPUUserNS + r.CPUSystemNS) / 1e6,
		MemoryPeakBytes: r.MemoryPeak,
		IOReadBytes:     r.IORead,
		IOWriteBytes:    r.IOWrite,
	}
}

// ownKernel says whether a runtime runs the sandbox on a kernel of its own
// (gVisor): what the init measures there is that kernel's view, and a running
// sandbox's limits cannot be changed.
func ownKernel(runtime string) bool { return runtime == "runsc" }

// hostCPU is the init's measure u, with the CPU time of the engine's samples
// when the runtime has a kernel of its own: gVisor's clock does not see the
// host's CPU quota, so its figure can be twice what the host gave.
func hostCPU(u, sampled ResourceUsage, runtime string) ResourceUsage {
	if ownKernel(runtime) && sampled.Samples > 0 {
		u.CPUMS, u.Samples = sampled.CPUMS, sampled.Samples
	}
	return u
}

// logWriter logs what airlock's init writes on its own stderr (a crash).
type logWriter struct {
	log interface{ Warn(string, ...any) }
	id  string
}

func (l *logWriter) Write(p []byte) (int, error) {
	l.log.Warn("airlock's init wrote on stderr", "id", l.id, "text", string(p))
	return len(p), nil
}
