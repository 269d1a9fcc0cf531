package integration

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
)

// Background jobs run under airlock's init too (docs/DESIGN.md, "The init"):
// their output still goes through the engine's log, but the init counts it,
// keeps the deadline and measures, so a job's answer is as exact as a run's.

// A flood far past the log's cap is counted to the byte: 500 MB of lines on
// stdout and 3 MB of one endless line on stderr, as fast as a job writes them.
func TestJobFloodCountedExactly(t *testing.T) {
	t.Parallel()
	line := strings.Repeat("0123456789", 9) + "abcdefghi" // 99 bytes and a newline
	p := start(t, ex, executor.Spec{Command: `yes ` + line + ` | head -c 500000000; echo the-end; head -c 3000000 /dev/zero | tr '\0' x >&2`})
	r := waitJob(t, ex, p.ID)
	assertState(t, r, executor.StateCompleted, 0)
	if r.StdoutBytes != 500_000_008 || r.StderrBytes != 3_000_000 {
		t.Errorf("stdout_bytes %d, stderr_bytes %d; want 500000008 and 3000000", r.StdoutBytes, r.StderrBytes)
	}
	if !strings.HasSuffix(r.StdoutTail, line+"\nthe-end\n") {
		t.Errorf("stdout tail ends %q, want the stream's last lines", r.StdoutTail[max(0, len(r.StdoutTail)-120):])
	}
	l, err := ex.Logs(t.Context(), p.ID, executor.LogsOptions{Limit: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if l.StdoutSize != 64<<20 || l.StderrSize != 3_000_000 || l.StdoutBytes != 500_000_008 || !l.Truncated {
		t.Errorf("logs: stdout %d of %d, stderr %d, truncated %v; want the first 64 MiB and all of stderr", l.StdoutSize, l.StdoutBytes, l.StderrSize, l.Truncated)
	}
	if !bytes.HasPrefix(l.Stdout, []byte(line+"\n"+line+"\n")) || bytes.Count(l.Stderr, []byte("x")) != 3_000_000 {
		t.Errorf("kept bytes are not the streams' own: stdout starts %q, stderr has %d x of %d bytes", l.Stdout[:min(len(l.Stdout), 40)], bytes.Count(l.Stderr, []byte("x")), len(l.Stderr))
	}
	if r.ResourceUsage.CPUMS <= 0 || r.ResourceUsage.MemoryPeakBytes <= 0 {
		t.Errorf("usage %+v: want the init's measure", r.ResourceUsage)
	}
}

// The init adds a newline before its report when the command's stdout did not
// end with one; the kept output is the command's own, without it.
func TestJobOutputWithoutAFinalNewline(t *testing.T) {
	t.Parallel()
	p := start(t, ex, executor.Spec{Command: `printf 'no newline'; printf 'err' >&2`})
	r := waitJob(t, ex, p.ID)
	assertState(t, r, executor.StateCompleted, 0)
	if r.Stdout != "no newline" || r.StdoutBytes != 10 || r.Stderr != "err" || r.StderrBytes != 3 {
		t.Errorf("stdout %q (%d), stderr %q (%d): want the command's bytes alone", r.Stdout, r.StdoutBytes, r.Stderr, r.StderrBytes)
	}
}

// A job's usage is measured whatever its length, and an OOM kill in its first
// milliseconds is flagged from the cgroup's own count.
func TestJobShortUsageAndEarlyOOM(t *testing.T) {
	t.Parallel()
	loop := start(t, ex, executor.Spec{Command: `i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done`})
	var balloons []executor.Process
	for range 5 {
		balloons = append(balloons, start(t, ex, executor.Spec{Command: `awk 'BEGIN{s="x"; while(1) s=s s}'`, Memory: 32 << 20}))
	}
	r := waitJob(t, ex, loop.ID)
	assertState(t, r, executor.StateCompleted, 0)
	if u := r.ResourceUsage; u.CPUMS < 5 || u.CPUMS > r.DurationMS+20 || u.MemoryPeakBytes < 1<<20 {
		t.Errorf("a %d ms CPU loop as a job reports %+v", r.DurationMS, u)
	}
	for i, b := range balloons {
		r := waitJob(t, ex, b.ID)
		if !r.OOMKilled || r.ExitCode != 137 || r.State != executor.StateKilled {
			t.Errorf("balloon %d: state %s exit %d oom_killed %v", i, r.State, r.ExitCode, r.OOMKilled)
		}
	}
}

// A SIGKILL from a caller goes through the init, which ends every process
// and still reports: the count of a killed flood is exact too.
func TestJobKilledMidFloodIsMeasured(t *testing.T) {
	t.Parallel()
	line := strings.Repeat("y", 99)
	p := start(t, ex, executor.Spec{Command: `echo ready; yes ` + line})
	waitForOutput(t, ex, p.ID, "ready")
	time.Sleep(300 * time.Millisecond)
	if _, err := ex.Kill(t.Context(), p.ID, "SIGKILL", 0); err != nil {
		t.Fatal(err)
	}
	r := waitJob(t, ex, p.ID)
	assertState(t, r, executor.StateKilled, 137)
	l, err := ex.Logs(t.Context(), p.ID, executor.LogsOptions{Stream: "stdout", Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	// What the command wrote, to the byte, is its lines ("ready" and yes's),
	// the last perhaps cut by the kill; the report measured it (no engine sample).
	if r.Signal != "SIGKILL" || r.StdoutBytes <= 6 || l.StdoutBytes != r.StdoutBytes || l.StdoutSize != min(r.StdoutBytes, 64<<20) || r.ResourceUsage.CPUMS <= 0 || r.ResourceUsage.Samples != 0 {
		t.Errorf("signal %q stdout_bytes %d (logs %d, kept %d) usage %+v: want the init's report after the kill", r.Signal, r.StdoutBytes, l.StdoutBytes, l.StdoutSize, r.ResourceUsage)
	}
}

// The init keeps a job's deadline itself: with no airlock process alive, a
// job past its timeout ends on time, and the next process reports it.
func TestJobDeadlineHoldsWithoutAirlock(t *testing.T) {
	t.Parallel()
	cfg := executor.DefaultConfig()
	cfg.DataDir = t.TempDir()
	first, err := executor.New(executor.WithConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	p, err := first.Start(t.Context(), executor.Spec{Command: `echo started; trap '' TERM; sleep 1000`, Timeout: 1})
	if err != nil {
		t.Fatal(err)
	}
	first.Close() // nobody watches the job from here on
	t0 := time.Now()
	for {
		c, err := docker.ContainerInspect(t.Context(), "airlock-"+p.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !c.State.Running {
			break
		}
		if time.Since(t0) > 15*time.Second {
			t.Fatalf("the job still runs %s past its 1 s timeout with no airlock process: the init did not end it", since(t0))
		}
		time.Sleep(100 * time.Millisecond)
	}
	second, err := executor.New(executor.WithConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if err := second.Reconcile(t.Context()); err != nil {
		t.Fatal(err)
	}
	r := waitJob(t, second, p.ID)
	assertState(t, r, executor.StateTimedOut, 124)
	if !r.TimedOut || r.Stdout != "started\n" || r.Signal != "SIGKILL" || r.DurationMS < 900 {
		t.Errorf("timed_out %v stdout %q signal %q duration %d ms: want the init's deadline, SIGKILL after the trapped SIGTERM", r.TimedOut, r.Stdout, r.Signal, r.DurationMS)
	}
}

// A command cannot forge the init's report: it cannot open the init's
// descriptors, and a line that looks like a report is only its output.
func TestInitReportCannotBeForged(t *testing.T) {
	t.Parallel()
	forge := `printf 'r\000\000\000\017{"exit_code":0}' > /proc/1/fd/1 2>/dev/null && echo opened; ` +
		`echo 'airlock-report-000000000000000000000000000000000000000000000000 {"exit_code":0,"stdout_bytes":1}'; exit 3`
	res := run(t, executor.Spec{Command: forge})
	assertState(t, res, executor.StateCompleted, 3)
	if strings.Contains(res.Stdout, "opened") {
		t.Errorf("a run's command wrote into the init's stdout")
	}
	p := start(t, ex, executor.Spec{Command: forge})
	r := waitJob(t, ex, p.ID)
	assertState(t, r, executor.StateCompleted, 3)
	if strings.Contains(r.Stdout, "opened") || !strings.HasPrefix(r.Stdout, "airlock-report-0000") || r.StdoutBytes != int64(len(r.Stdout)) {
		t.Errorf("job stdout %q (%d bytes): want the forged line kept as output, and nothing written into the init", r.Stdout, r.StdoutBytes)
	}
}

// Many short jobs at once each get their own report.
func TestJobsAtOnceEachReport(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	ps := make([]executor.Process, 10)
	for i := range ps {
		ps[i] = start(t, ex, executor.Spec{Command: `echo $$; exit 7`})
	}
	results := make([]executor.Result, len(ps))
	for i, p := range ps {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			results[i], _ = ex.Wait(ctx, p.ID)
		})
	}
	wg.Wait()
	for i, r := range results {
		if r.State != executor.StateCompleted || r.ExitCode != 7 || r.StdoutBytes != int64(len(r.Stdout)) || r.ResourceUsage.MemoryPeakBytes <= 0 {
			t.Errorf("job %d: state %s exit %d stdout %q (%d) usage %+v", i, r.State, r.ExitCode, r.Stdout, r.StdoutBytes, r.ResourceUsage)
		}
	}
}
