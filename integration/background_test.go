package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
)

// start starts spec in the background on ex, failing the test on an error; the
// job is killed at the end of the test if it still runs.
func start(t *testing.T, e *executor.Executor, spec executor.Spec) executor.Process {
	t.Helper()
	p, err := e.Start(t.Context(), spec)
	if err != nil {
		t.Fatalf("Start(%q): %v", spec.Command, err)
	}
	if p.State != executor.StateRunning || p.ID == "" || p.StartedAt.IsZero() {
		t.Fatalf("Start returned %+v, want an id, state running and started_at", p)
	}
	t.Cleanup(func() {
		e.Kill(context.Background(), p.ID, "SIGKILL", 0)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		e.Wait(ctx, p.ID)
	})
	return p
}

// waitJob waits at most a minute for a job to end.
func waitJob(t *testing.T, e *executor.Executor, id string) executor.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r, err := e.Wait(ctx, id)
	if err != nil {
		t.Fatalf("Wait(%s): %v (state %s)", id, err, r.State)
	}
	assertGone(t, r)
	return r
}

// numbers is "1\n2\n...n\n", what `seq 1 n` prints.
func numbers(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.String()
}

func TestBackgroundFollowDeliversEveryLineInOrder(t *testing.T) {
	p := start(t, ex, executor.Spec{Command: `for i in $(seq 1 50); do echo $i; sleep 0.1; done`})
	var got bytes.Buffer
	var chunks int
	l, err := ex.Logs(t.Context(), p.ID, executor.LogsOptions{Stream: "stdout", Follow: func(c executor.LogChunk) error {
		if c.Stream != "stdout" || c.Offset != int64(got.Len()) {
			t.Errorf("chunk of %s at offset %d, want stdout at %d", c.Stream, c.Offset, got.Len())
		}
		chunks++
		got.Write(c.Data)
		return nil
	}})
	if err != nil {
		t.Fatalf("Logs follow: %v", err)
	}
	if got.String() != numbers(50) {
		t.Fatalf("followed output = %q, want 1..50 in order", got.String())
	}
	if chunks < 5 {
		t.Errorf("output came in %d chunks: a follow should deliver lines as they are written over 5 s", chunks)
	}
	if l.State != executor.StateCompleted || l.StdoutNext != int64(got.Len()) {
		t.Errorf("follow ended with %+v", l)
	}
	r := waitJob(t, ex, p.ID)
	assertState(t, r, executor.StateCompleted, 0)
	if r.Stdout != numbers(50) || r.StdoutTail != numbers(50) {
		t.Errorf("result stdout %q tail %q, want 1..50", r.Stdout, r.StdoutTail)
	}
}

func TestBackgroundLogsPageExactly(t *testing.T) {
	// 3000 bytes of stdout, a binary stderr, and a line longer than the engine's
	// 16 KiB message size, which it splits into pieces.
	p := start(t, ex, executor.Spec{Command: `i=0; while [ $i -lt 300 ]; do printf '%09d\n' $i; i=$((i+1)); done; printf '\000\377\033[31m' >&2; head -c 40000 /dev/zero | tr '\0' x`})
	r := waitJob(t, ex, p.ID)
	assertState(t, r, executor.StateCompleted, 0)
	var want strings.Builder
	for i := range 300 {
		fmt.Fprintf(&want, "%09d\n", i)
	}
	want.WriteString(strings.Repeat("x", 40000))

	var paged []byte
	for off := int64(0); ; {
		l, err := ex.Logs(t.Context(), p.ID, executor.LogsOptions{Stream: "stdout", Offset: off, Limit: 777})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Stdout) > 777 || l.Stderr != nil {
			t.Fatalf("page at %d: %d stdout bytes, stderr %q; want at most 777 and no stderr", off, len(l.Stdout), l.Stderr)
		}
		if l.StdoutSize != 43000 || l.StdoutBytes != 43000 || l.Truncated {
			t.Fatalf("sizes %d/%d truncated %v, want 43000 kept of 43000", l.StdoutSize, l.StdoutBytes, l.Truncated)
		}
		if len(l.Stdout) == 0 {
			break
		}
		paged = append(paged, l.Stdout...)
		if l.StdoutNext != off+int64(len(l.Stdout)) {
			t.Fatalf("stdout_next %d after %d bytes from %d", l.StdoutNext, len(l.Stdout), off)
		}
		off = l.StdoutNext
	}
	if string(paged) != want.String() {
		t.Fatalf("paged output differs from what the job wrote (%d bytes, want %d)", len(paged), want.Len())
	}
	l, err := ex.Logs(t.Context(), p.ID, executor.LogsOptions{Stream: "stderr"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(l.Stderr, []byte("\x00\xff\x1b[31m")) {
		t.Errorf("stderr = %q, want the raw bytes \\x00\\xff\\x1b[31m", l.Stderr)
	}
	l, _ = ex.Logs(t.Context(), p.ID, executor.LogsOptions{Offset: 42990, Limit: 5})
	if string(l.Stdout) != "xxxxx" || l.Stderr != nil {
		t.Errorf("both streams from 42990, limit 5: stdout %q stderr %q", l.Stdout, l.Stderr)
	}
}

func TestBackgroundOutputPastTheCapIsCountedNotKept(t *testing.T) {
	cfg := executor.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.LogCap = 1 << 20
	e, err := executor.New(executor.WithConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// 8 MiB of stdout, each line numbered, then a last line: the tail comes from
	// past the cap.
	p := start(t, e, executor.Spec{Command: `seq -w 1 1048576 | head -c 8388608; echo; echo the-end`})
	r := waitJob(t, e, p.ID)
	assertState(t, r, executor.StateCompleted, 0)
	const total = 8388608 + 1 + 8
	if r.StdoutBytes != total || !r.StdoutTruncated {
		t.Errorf("stdout_bytes %d truncated %v, want %d and truncated", r.StdoutBytes, r.StdoutTruncated, total)
	}
	if !strings.HasSuffix(r.StdoutTail, "\nthe-end\n") {
		t.Errorf("tail %q: want the stream's real last lines, past the cap", r.StdoutTail[max(0, len(r.StdoutTail)-80):])
	}
	l, err := e.Logs(t.Context(), p.ID, executor.LogsOptions{Stream: "stdout", Limit: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if l.StdoutSize != 1<<20 || len(l.Stdout) != 1<<20 || l.StdoutBytes != total || !l.Truncated {
		t.Errorf("logs: size %d (%d returned) of %d, truncated %v; want the first 1 MiB kept", l.StdoutSize, len(l.Stdout), l.StdoutBytes, l.Truncated)
	}
	if !bytes.HasPrefix(l.Stdout, []byte("0000001\n0000002\n")) {
		t.Errorf("kept bytes start %q, want the first lines", l.Stdout[:32])
	}
}

func TestBackgroundKill(t *testing.T) {
	t.Run("a job that traps SIGTERM is killed after force_after", func(t *testing.T) {
		t.Parallel()
		p := start(t, ex, executor.Spec{Command: `trap 'echo term ignored' TERM; echo ready; while :; do sleep 0.1; done`})
		waitForOutput(t, ex, p.ID, "ready")
		t0 := time.Now()
		k, err := ex.Kill(t.Context(), p.ID, "", 1500*time.Millisecond)
		if err != nil || k.Signal != "SIGTERM" || k.AlreadyEnded {
			t.Fatalf("Kill = %+v, %v", k, err)
		}
		r := waitJob(t, ex, p.ID)
		assertState(t, r, executor.StateKilled, 137)
		if r.Signal != "SIGKILL" || !strings.Contains(r.Stdout, "term ignored") {
			t.Errorf("signal %q stdout %q: want SIGKILL after the trapped SIGTERM", r.Signal, r.Stdout)
		}
		if d := since(t0); d < 1400*time.Millisecond || d > 6*time.Second {
			t.Errorf("ended %s after the kill, want about force_after (1.5s)", d)
		}
	})
	t.Run("a job that exits on SIGTERM reports 143", func(t *testing.T) {
		t.Parallel()
		p := start(t, ex, executor.Spec{Command: `echo ready; sleep 1000`})
		waitForOutput(t, ex, p.ID, "ready")
		if _, err := ex.Kill(t.Context(), p.ID, "TERM", 0); err != nil {
			t.Fatal(err)
		}
		r := waitJob(t, ex, p.ID)
		assertState(t, r, executor.StateKilled, 143)
		if r.Signal != "SIGTERM" || r.Stdout != "ready\n" {
			t.Errorf("signal %q stdout %q", r.Signal, r.Stdout)
		}
	})
	t.Run("killing a finished job is a clean no-op", func(t *testing.T) {
		t.Parallel()
		p := start(t, ex, executor.Spec{Command: `exit 5`})
		waitJob(t, ex, p.ID)
		k, err := ex.Kill(t.Context(), p.ID, "SIGKILL", 0)
		if err != nil {
			t.Fatalf("Kill of a finished job: %v, want no error", err)
		}
		if !k.AlreadyEnded || k.Signal != "" || *k.Process.ExitCode != 5 || !strings.Contains(k.Message, "already ended") {
			t.Errorf("Kill = %+v, want already_ended with the job's exit code 5", k)
		}
	})
	t.Run("a background timeout ends the job as timed_out", func(t *testing.T) {
		t.Parallel()
		p := start(t, ex, executor.Spec{Command: `echo started; sleep 1000`, Timeout: 1})
		r := waitJob(t, ex, p.ID)
		assertState(t, r, executor.StateTimedOut, 124)
		if !r.TimedOut || r.Stdout != "started\n" || r.DurationMS < 900 || r.DurationMS > 6000 {
			t.Errorf("timed_out %v stdout %q duration %dms", r.TimedOut, r.Stdout, r.DurationMS)
		}
	})
}

// waitForOutput polls a job's stdout until it contains s.
func waitForOutput(t *testing.T, e *executor.Executor, id, s string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		l, err := e.Logs(t.Context(), id, executor.LogsOptions{Stream: "stdout"})
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(l.Stdout, []byte(s)) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("job %s never printed %q", id, s)
}

func TestBackgroundGetMonitorsARunningJob(t *testing.T) {
	p := start(t, ex, executor.Spec{Command: `echo hi; echo oops >&2; while :; do :; done`, Labels: map[string]string{"agent": "a1"}})
	waitForOutput(t, ex, p.ID, "hi")
	time.Sleep(2500 * time.Millisecond) // the engine samples usage once a second
	r, err := ex.Get(t.Context(), p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r.State != executor.StateRunning || r.DurationMS < 2000 || r.Stdout != "hi\n" || r.Stderr != "oops\n" || r.Labels["agent"] != "a1" {
		t.Errorf("Get = state %s duration %dms stdout %q stderr %q labels %v", r.State, r.DurationMS, r.Stdout, r.Stderr, r.Labels)
	}
	if r.ResourceUsage.Samples == 0 || r.ResourceUsage.CPUMS < 500 {
		t.Errorf("resource usage of a job spinning for 2.5 s: %+v", r.ResourceUsage)
	}
	ex.Kill(t.Context(), p.ID, "SIGKILL", 0)
	started := r.StartedAt
	r = waitJob(t, ex, p.ID)
	assertState(t, r, executor.StateKilled, 137)
	// What the monitor said of the start stays true once the job has ended.
	if !r.StartedAt.Equal(started) || !r.StartedAt.Equal(p.StartedAt) {
		t.Errorf("started_at %s after the end, %s while running, %s at start", r.StartedAt, started, p.StartedAt)
	}
}

func TestBackgroundList(t *testing.T) {
	cfg := executor.DefaultConfig()
	cfg.DataDir = t.TempDir()
	e, err := executor.New(executor.WithConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	done1 := start(t, e, executor.Spec{Command: "true", Labels: map[string]string{"session": "s1"}})
	waitJob(t, e, done1.ID)
	done2 := start(t, e, executor.Spec{Command: "exit 2", Labels: map[string]string{"session": "s2"}})
	waitJob(t, e, done2.ID)
	run1 := start(t, e, executor.Spec{Command: "sleep 1000", Labels: map[string]string{"session": "s1"}})
	run2 := start(t, e, executor.Spec{Command: "sleep 1000", Labels: map[string]string{"session": "s2", "agent": "x"}})

	ids := func(l executor.ProcessList) []string {
		var s []string
		for _, p := range l.Processes {
			s = append(s, p.ID)
		}
		return s
	}
	for _, tc := range []struct {
		name  string
		opts  executor.ListOptions
		want  []string
		total int
	}{
		{"all, most recent first", executor.ListOptions{}, []string{run2.ID, run1.ID, done2.ID, done1.ID}, 4},
		{"running", executor.ListOptions{State: executor.StateRunning}, []string{run2.ID, run1.ID}, 2},
		{"completed", executor.ListOptions{State: executor.StateCompleted}, []string{done2.ID, done1.ID}, 2},
		{"by label", executor.ListOptions{Labels: map[string]string{"session": "s1"}}, []string{run1.ID, done1.ID}, 2},
		{"by two labels", executor.ListOptions{Labels: map[string]string{"session": "s2", "agent": "x"}}, []string{run2.ID}, 1},
		{"state and label", executor.ListOptions{State: executor.StateRunning, Labels: map[string]string{"session": "s1"}}, []string{run1.ID}, 1},
		{"limit keeps the total", executor.ListOptions{Limit: 3}, []string{run2.ID, run1.ID, done2.ID}, 4},
		{"no match", executor.ListOptions{Labels: map[string]string{"session": "nope"}}, nil, 0},
	} {
		l, err := e.List(t.Context(), tc.opts)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := ids(l); !slices.Equal(got, tc.want) || l.Total != tc.total {
			t.Errorf("%s: %v total %d, want %v total %d", tc.name, got, l.Total, tc.want, tc.total)
		}
	}
	for _, id := range []string{run1.ID, run2.ID} {
		e.Kill(t.Context(), id, "SIGKILL", 0)
		waitJob(t, e, id)
	}
	if err := e.Remove(t.Context(), done1.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Get(t.Context(), done1.ID); !errors.Is(err, executor.ErrNotFound) {
		t.Errorf("Get after Remove: %v, want ErrNotFound", err)
	}
	pruned, err := e.Prune(t.Context(), 0)
	if err != nil || len(pruned) != 3 {
		t.Errorf("Prune(0) removed %v, %v; want the 3 ended jobs", pruned, err)
	}
}

func TestBackgroundFiftyConcurrentJobs(t *testing.T) {
	const n = 50
	procs := make([]executor.Process, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			procs[i] = start(t, ex, executor.Spec{
				Command: fmt.Sprintf(`echo job %d; sleep 2; echo done %d >&2; exit %d`, i, i, i%7),
				Labels:  map[string]string{"batch": t.Name()},
			})
		}()
	}
	wg.Wait()
	l, err := ex.List(t.Context(), executor.ListOptions{Labels: map[string]string{"batch": t.Name()}, Limit: 100})
	if err != nil || l.Total != n {
		t.Fatalf("List of the batch: total %d, %v; want %d", l.Total, err, n)
	}
	for i, p := range procs {
		r := waitJob(t, ex, p.ID)
		assertState(t, r, executor.StateCompleted, i%7)
		if r.Stdout != fmt.Sprintf("job %d\n", i) || r.Stderr != fmt.Sprintf("done %d\n", i) {
			t.Errorf("job %d: stdout %q stderr %q", i, r.Stdout, r.Stderr)
		}
	}
}

func TestBackgroundStdin(t *testing.T) {
	in := strings.Repeat("line of input\n", 10000)
	p := start(t, ex, executor.Spec{Command: "wc -l; cat >/dev/null", Stdin: &in})
	r := waitJob(t, ex, p.ID)
	assertState(t, r, executor.StateCompleted, 0)
	if strings.TrimSpace(r.Stdout) != "10000" {
		t.Errorf("stdout %q, want 10000 lines counted", r.Stdout)
	}
}

func TestBackgroundRefusedByPolicy(t *testing.T) {
	p, err := ex.Start(t.Context(), executor.Spec{Command: "rm -rf /"})
	if err != nil {
		t.Fatal(err)
	}
	if p.State != executor.StateBlocked || !p.Blocked || p.BlockRule != "rm-root" || *p.ExitCode != 126 {
		t.Errorf("Start of rm -rf / = %+v, want blocked by rm-root with 126", p)
	}
	if left := managedContainers(t.Context(), p.ID); len(left) > 0 {
		t.Errorf("a refused job created containers: %v", left)
	}
	r, err := ex.Get(t.Context(), p.ID)
	if err != nil || r.State != executor.StateBlocked {
		t.Errorf("Get of the refused job: %s, %v", r.State, err)
	}
}

func TestBackgroundBadInput(t *testing.T) {
	p := start(t, ex, executor.Spec{Command: "true"})
	waitJob(t, ex, p.ID)
	for _, tc := range []struct {
		name  string
		call  func() error
		field string
	}{
		{"unknown id", func() error { _, err := ex.Get(t.Context(), "0123456789abcdef01234567"); return err }, ""},
		{"bad signal", func() error { _, err := ex.Kill(t.Context(), p.ID, "SIGFOO", 0); return err }, "signal"},
		{"negative force_after", func() error { _, err := ex.Kill(t.Context(), p.ID, "", -time.Second); return err }, "force_after"},
		{"negative offset", func() error { _, err := ex.Logs(t.Context(), p.ID, executor.LogsOptions{Offset: -1}); return err }, "offset"},
		{"limit too big", func() error { _, err := ex.Logs(t.Context(), p.ID, executor.LogsOptions{Limit: 1 << 40}); return err }, "limit"},
		{"bad stream", func() error { _, err := ex.Logs(t.Context(), p.ID, executor.LogsOptions{Stream: "stdin"}); return err }, "stream"},
		{"list limit", func() error { _, err := ex.List(t.Context(), executor.ListOptions{Limit: -1}); return err }, "limit"},
		{"list state", func() error { _, err := ex.List(t.Context(), executor.ListOptions{State: "dead"}); return err }, "state"},
		{"timeout over 24h", func() error {
			_, err := ex.Start(t.Context(), executor.Spec{Command: "true", Timeout: 86401})
			return err
		}, "timeout"},
	} {
		err := tc.call()
		var se *executor.SpecError
		switch {
		case tc.field == "":
			if !errors.Is(err, executor.ErrNotFound) || !strings.Contains(err.Error(), "0123456789abcdef01234567") {
				t.Errorf("%s: %v, want not found naming the id", tc.name, err)
			}
		case !errors.As(err, &se) || se.Field != tc.field:
			t.Errorf("%s: %v, want an invalid %s", tc.name, err, tc.field)
		}
	}
	if err := ex.Remove(t.Context(), "nope"); !errors.Is(err, executor.ErrNotFound) {
		t.Errorf("Remove of an unknown id: %v", err)
	}
}

// TestJobSIGKILLUnderEachRuntime: a SIGKILL ends a job at once under each
// runtime, exit 137. Under runsc the init's own kill signal is refused (gVisor
// knows no real-time signals) and the engine's SIGKILL goes instead.
func TestJobSIGKILLUnderEachRuntime(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt string) {
		p := start(t, ex, executor.Spec{Argv: []string{"sleep", "60"}, Runtime: rt, Background: true})
		if _, err := ex.Kill(t.Context(), p.ID, "SIGKILL", 0); err != nil {
			t.Fatalf("SIGKILL: %v", err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		r, err := ex.Wait(ctx, p.ID)
		if err != nil || r.State != executor.StateKilled || r.ExitCode != 137 {
			t.Fatalf("the job after SIGKILL: state %s exit %d, %v; want killed, 137, within 10 s", r.State, r.ExitCode, err)
		}
	})
}
