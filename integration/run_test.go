package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
)

func TestExitCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		spec executor.Spec
		code int
	}{
		{"zero", sh("true"), 0},
		{"three", sh("exit 3"), 3},
		{"shell command not found", sh("no-such-program"), 127},
		{"argv not found", executor.Spec{Argv: []string{"no-such-program", "x"}}, 127},
		{"argv not executable", executor.Spec{Argv: []string{"/etc/passwd"}}, 126},
		{"killed by its own signal", sh("kill -KILL $$"), 137},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res := run(t, tc.spec)
			assertState(t, res, executor.StateCompleted, tc.code)
			if res.Success != (tc.code == 0) {
				t.Errorf("success = %v for exit %d", res.Success, tc.code)
			}
		})
	}
}

func TestResultProvenance(t *testing.T) {
	t.Parallel()
	res := run(t, executor.Spec{Command: "echo hi", Labels: map[string]string{"agent": "a1"}})
	assertState(t, res, executor.StateCompleted, 0)
	if res.ID == "" || res.ContainerID == "" || res.Image != "airlock/minimal" || res.Runtime != "runc" || res.Labels["agent"] != "a1" {
		t.Errorf("provenance: id %q container %q image %q runtime %q labels %v", res.ID, res.ContainerID, res.Image, res.Runtime, res.Labels)
	}
	if res.StartedAt.IsZero() || res.FinishedAt.Before(res.StartedAt) || res.DurationMS != res.FinishedAt.Sub(res.StartedAt).Milliseconds() {
		t.Errorf("times: started %v finished %v duration %dms", res.StartedAt, res.FinishedAt, res.DurationMS)
	}
	if res.Stdout != "hi\n" || res.StdoutTail != "hi\n" || res.StdoutBytes != 3 {
		t.Errorf("stdout %q tail %q bytes %d", res.Stdout, res.StdoutTail, res.StdoutBytes)
	}
}

func TestTimeoutKeepsPartialOutput(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	res := run(t, executor.Spec{Command: "echo before; echo err >&2; sleep 100", Timeout: 1})
	assertState(t, res, executor.StateTimedOut, 124)
	if !res.TimedOut || res.Stdout != "before\n" || res.Stderr != "err\n" {
		t.Errorf("timed_out %v stdout %q stderr %q", res.TimedOut, res.Stdout, res.Stderr)
	}
	// sleep dies of SIGTERM at once; the run must end within timeout + grace.
	if d := since(t0); d > 1*time.Second+ex.Config().KillGrace+5*time.Second {
		t.Errorf("a 1s timeout took %s to end", d)
	}
}

func TestSIGTERMIgnoredIsKilledAfterGrace(t *testing.T) {
	t.Parallel()
	res := run(t, executor.Spec{Command: `trap "" TERM; echo ready; while :; do sleep 1; done`, Timeout: 1})
	assertState(t, res, executor.StateTimedOut, 124)
	if res.Signal != "SIGKILL" {
		t.Errorf("signal %q, want SIGKILL (SIGTERM was ignored)", res.Signal)
	}
	grace := ex.Config().KillGrace
	if d := time.Duration(res.DurationMS) * time.Millisecond; d < time.Second+grace-200*time.Millisecond {
		t.Errorf("killed after %s, before the grace period of %s had passed", d, grace)
	}
	if res.Stdout != "ready\n" {
		t.Errorf("stdout %q", res.Stdout)
	}
}

// TestMemoryBalloonIsOOMKilled fills its limit within milliseconds of its start,
// which on a loaded engine can be before the engine's OOM monitor is armed: the
// kill is then known from the kernel's log (executor/kmsg.go).
func TestMemoryBalloonIsOOMKilled(t *testing.T) {
	t.Parallel()
	res := run(t, executor.Spec{Command: `awk 'BEGIN{s="x"; while(1) s=s s}'`, Memory: 32 << 20})
	assertState(t, res, executor.StateKilled, 137)
	if !res.OOMKilled || res.Signal != "SIGKILL" || res.Success {
		t.Errorf("oom_killed %v signal %q success %v", res.OOMKilled, res.Signal, res.Success)
	}
}

// Twenty balloons that die within their first milliseconds, at once: each is
// flagged, from the cgroup's own count that airlock's init reads, not from
// the engine's monitor (which can arm too late) or the host's kernel log.
func TestInstantBalloonsAllFlagged(t *testing.T) {
	t.Parallel()
	var wg sync.WaitGroup
	results := make([]executor.Result, 20)
	for i := range results {
		wg.Go(func() {
			results[i] = run(t, executor.Spec{Command: `awk 'BEGIN{s="x"; while(1) s=s s}'`, Memory: 32 << 20})
		})
	}
	wg.Wait()
	for i, res := range results {
		if !res.OOMKilled || res.ExitCode != 137 || res.State != executor.StateKilled {
			t.Errorf("balloon %d: state %s exit %d oom_killed %v", i, res.State, res.ExitCode, res.OOMKilled)
		}
	}
}

func TestChildOOMWhileMainExitsZero(t *testing.T) {
	t.Parallel()
	res := run(t, executor.Spec{Command: balloon + "; echo survived", Memory: 32 << 20})
	assertState(t, res, executor.StateCompleted, 0)
	if !res.OOMKilled || res.Stdout != "survived\n" {
		t.Errorf("oom_killed %v stdout %q: the engine's flag must report a child's OOM", res.OOMKilled, res.Stdout)
	}
}

func TestForkBombContained(t *testing.T) {
	t.Parallel()
	// The policy refuses the classic bomb; the container must hold it without it.
	res := run(t, executor.Spec{Command: `bomb(){ bomb | bomb & }; bomb`})
	assertState(t, res, executor.StateBlocked, 126)
	if res.BlockRule != "fork-bomb" {
		t.Errorf("block_rule %q, want fork-bomb", res.BlockRule)
	}
	res = runWith(t, unchecked, executor.Spec{Command: `bomb(){ bomb | bomb & }; bomb; sleep 100`, Pids: 64, Timeout: 3})
	assertState(t, res, executor.StateTimedOut, 124)

	// The same limit, counted: 100 background sleeps cannot all start under pids 32.
	res = run(t, executor.Spec{Command: `n=0; for i in $(seq 1 100); do sleep 30 & n=$((n+1)); done 2>/dev/null; ps | wc -l`, Pids: 32, Timeout: 10})
	if !strings.Contains(res.Stderr, "fork") && !strings.Contains(res.Stderr, "Resource temporarily unavailable") {
		// busybox reports "can't fork"; ps may itself fail to start, which is fine.
		var n int
		fmt.Sscan(res.Stdout, &n)
		if n > 33 {
			t.Errorf("%d processes under a pids limit of 32", n)
		}
	}
}

func TestTmpfsFillGivesENOSPC(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{"/tmp", "/workspace", "/dev/shm"} {
		res := run(t, executor.Spec{Command: "dd if=/dev/zero of=" + dir + "/fill bs=1M count=20", TmpfsSize: 8 << 20})
		if res.ExitCode == 0 || !strings.Contains(res.Stderr, "No space left on device") {
			t.Errorf("%s: exit %d stderr %q, want ENOSPC", dir, res.ExitCode, res.Stderr)
		}
	}
}

func TestRootfsIsReadOnly(t *testing.T) {
	t.Parallel()
	res := run(t, sh("touch /etc/x"))
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, "Read-only file system") {
		t.Errorf("exit %d stderr %q, want EROFS", res.ExitCode, res.Stderr)
	}
}

func TestNetworkEgressFails(t *testing.T) {
	t.Parallel()
	res := run(t, sh(`nc -w 2 1.1.1.1 53 </dev/null; echo "nc=$?"; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '`))
	if !strings.Contains(res.Stdout, "nc=1") || !strings.Contains(res.Stderr, "Network is unreachable") {
		t.Errorf("stdout %q stderr %q: egress must fail", res.Stdout, res.Stderr)
	}
	if ifaces := strings.Fields(strings.SplitN(res.Stdout, "\n", 2)[1]); len(ifaces) != 1 || ifaces[0] != "lo" {
		t.Errorf("interfaces %v, want only lo", ifaces)
	}
}

// TestLoopbackWithoutNetwork: a sandbox without a network has no endpoint in
// the engine's network stack (docs/DESIGN.md, "No network"), yet its own
// loopback works and localhost resolves, as a project's tests expect, under
// each runtime.
func TestLoopbackWithoutNetwork(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt string) {
		// The client tries until the server listens; the server prints
		// what it got and ends with the connection.
		// The exchange is tried again if busybox's nc let a connection end
		// with nothing said (seen once in a loaded CI run).
		spec := sh(`for try in 1 2 3; do (for i in $(seq 50); do echo hello | nc localhost 8080 && break; sleep 0.1; done) & nc -l -p 8080 | sed 's/^/got /' > /tmp/out; wait; [ -s /tmp/out ] && break; done; cat /tmp/out; hostname`)
		spec.Runtime, spec.Timeout = rt, 20
		res := run(t, spec)
		if res.ExitCode != 0 || res.Stdout != "got hello\nsandbox\n" {
			t.Fatalf("a server on localhost inside the sandbox: exit %d stdout %q stderr %q", res.ExitCode, res.Stdout, res.Stderr)
		}
		p := start(t, ex, executor.Spec{Argv: []string{"sleep", "30"}, Runtime: rt, Background: true})
		list, err := docker.ContainerList(t.Context(), container.ListOptions{Filters: filters.NewArgs(filters.Arg("label", executor.LabelID+"="+p.ID))})
		if err != nil || len(list) != 1 {
			t.Fatalf("the job's container: %v, %v", list, err)
		}
		c, err := docker.ContainerInspect(t.Context(), list[0].ID)
		if err != nil {
			t.Fatal(err)
		}
		if c.NetworkSettings != nil && len(c.NetworkSettings.Networks) != 0 {
			t.Errorf("the sandbox has endpoints in the engine's networks: %v", c.NetworkSettings.Networks)
		}
		if !c.Config.NetworkDisabled {
			t.Errorf("the sandbox's network is not disabled in the engine")
		}
	})
}

// TestSandboxCannotReadItsContainerID: nothing a run can read names the
// container: not /etc/hostname, /etc/hosts, the mount table, nor the cgroup
// paths, in a run and in a job, under each runtime.
func TestSandboxCannotReadItsContainerID(t *testing.T) {
	t.Parallel()
	const look = `cat /etc/hostname /etc/hosts /proc/self/mountinfo /proc/self/cgroup /proc/1/mountinfo /proc/1/cgroup 2>&1; hostname`
	eachRuntime(t, func(t *testing.T, rt string) {
		spec := sh(look)
		spec.Runtime = rt
		res := run(t, spec)
		if res.ExitCode != 0 || !strings.HasPrefix(res.Stdout, "sandbox\n") || res.ContainerID == "" {
			t.Fatalf("exit %d, stdout %q", res.ExitCode, res.Stdout)
		}
		if strings.Contains(res.Stdout, res.ContainerID[:12]) {
			t.Errorf("a run reads its container id %s:\n%s", res.ContainerID[:12], res.Stdout)
		}
		job := start(t, ex, executor.Spec{Command: look, Runtime: rt, Background: true})
		done, err := ex.Wait(t.Context(), job.ID)
		if err != nil {
			t.Fatal(err)
		}
		out, err := ex.Logs(t.Context(), job.ID, executor.LogsOptions{Stream: "stdout"})
		if err != nil || done.ContainerID == "" {
			t.Fatalf("the job's logs: %v, %+v", err, done)
		}
		if !strings.HasPrefix(string(out.Stdout), "sandbox\n") || strings.Contains(string(out.Stdout), done.ContainerID[:12]) {
			t.Errorf("a job reads its container id %s:\n%s", done.ContainerID[:12], out.Stdout)
		}
	})
}

func TestSandboxControls(t *testing.T) {
	t.Parallel()
	res := run(t, sh(`grep -E "^(CapEff|NoNewPrivs|Seccomp):" /proc/self/status; id -u; id -g; ulimit -n;
tr "\0\n" "  " </proc/1/cmdline; echo; wc -c </proc/interrupts; df -k /tmp /workspace /dev/shm | tail -n +2 | awk '{print $2}'; pwd`))
	want := "CapEff:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\n65534\n65534\n1024\n"
	if !strings.HasPrefix(res.Stdout, want) {
		t.Fatalf("controls:\n%s\nwant prefix:\n%s", res.Stdout, want)
	}
	rest := strings.Split(strings.TrimPrefix(res.Stdout, want), "\n")
	if !strings.HasPrefix(rest[0], "/.airlock/init ") {
		t.Errorf("PID 1 is %q, want airlock's init", rest[0])
	}
	if rest[1] != "0" {
		t.Errorf("/proc/interrupts has %s bytes, want it masked", rest[1])
	}
	for i, dir := range []string{"/tmp", "/workspace", "/dev/shm"} {
		if rest[2+i] != "65536" {
			t.Errorf("%s is %s KiB, want 65536", dir, rest[2+i])
		}
	}
	if rest[5] != "/workspace" {
		t.Errorf("working directory %q", rest[5])
	}
}

// TestStdoutFloodIsCappedWithBoundedMemory: a 1 GiB flood of stdout is
// counted whole and kept to its caps, and the process's heap stays bounded.
// Not parallel: the heap is the whole process's, and a parallel test's
// downloads (the egress tests move megabytes through the proxy) grew it by
// 80 MiB beside this one in CI.
func TestStdoutFloodIsCappedWithBoundedMemory(t *testing.T) {
	var peak uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
		}
	}()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)

	res := run(t, executor.Spec{Command: "dd if=/dev/zero bs=1M count=1024 2>/dev/null; echo end >&2", Timeout: 300})
	close(stop)
	wg.Wait()

	assertState(t, res, executor.StateCompleted, 0)
	if res.StdoutBytes != 1<<30 || !res.StdoutTruncated || len(res.Stdout) != 1<<20 {
		t.Errorf("stdout_bytes %d truncated %v kept %d, want %d true %d", res.StdoutBytes, res.StdoutTruncated, len(res.Stdout), 1<<30, 1<<20)
	}
	if res.Stderr != "end\n" || res.StderrTruncated {
		t.Errorf("stderr %q truncated %v", res.Stderr, res.StderrTruncated)
	}
	// The head (1 MiB) and the tail ring (1 MiB) are all a capture keeps.
	if grown := int64(peak) - int64(before.HeapInuse); grown > 64<<20 {
		t.Errorf("heap grew by %d MiB during a 1 GiB flood", grown>>20)
	}
}

func TestOutputCapsPerStreamAndTails(t *testing.T) {
	t.Parallel()
	res := run(t, executor.Spec{Command: `seq 1 5000; seq 1 3 >&2`, MaxOutput: 100, TailLines: 3})
	if len(res.Stdout) != 100 || !res.StdoutTruncated || !strings.HasPrefix(res.Stdout, "1\n2\n3\n") {
		t.Errorf("stdout %q truncated %v", res.Stdout, res.StdoutTruncated)
	}
	if res.StdoutTail != "4998\n4999\n5000\n" {
		t.Errorf("stdout_tail %q: the tail is of the whole stream, not of what was kept", res.StdoutTail)
	}
	if res.Stderr != "1\n2\n3\n" || res.StderrTruncated || res.StderrBytes != 6 {
		t.Errorf("stderr %q truncated %v bytes %d", res.Stderr, res.StderrTruncated, res.StderrBytes)
	}
}

func TestStderrSeparateFromStdout(t *testing.T) {
	t.Parallel()
	res := run(t, sh("echo out1; echo err1 >&2; echo out2; echo err2 >&2"))
	if res.Stdout != "out1\nout2\n" || res.Stderr != "err1\nerr2\n" {
		t.Errorf("stdout %q stderr %q", res.Stdout, res.Stderr)
	}
}

func TestBinaryOutputIsValidJSON(t *testing.T) {
	t.Parallel()
	res := run(t, sh(`printf 'ok\377\376\000end\033[31m'`))
	if res.Stdout != "ok\xff\xfe\x00end\x1b[31m" {
		t.Errorf("raw stdout %q: the library keeps the bytes as written", res.Stdout)
	}
	b, err := json.Marshal(res)
	if err != nil || !json.Valid(b) {
		t.Fatalf("result is not valid JSON: %v", err)
	}
	var back struct{ Stdout string }
	json.Unmarshal(b, &back)
	if back.Stdout != "ok\uFFFD\uFFFD\x00end\x1b[31m" {
		t.Errorf("stdout through JSON %q: invalid bytes must become U+FFFD, NUL survive", back.Stdout)
	}
}

func TestStdinFedAndClosed(t *testing.T) {
	t.Parallel()
	in := "hello\nworld\n"
	res := run(t, executor.Spec{Command: "cat; echo done", Stdin: &in})
	if res.Stdout != "hello\nworld\ndone\n" {
		t.Errorf("stdout %q", res.Stdout)
	}
	big := strings.Repeat("x", 4<<20)
	res = run(t, executor.Spec{Command: "wc -c", Stdin: &big})
	if strings.TrimSpace(res.Stdout) != "4194304" {
		t.Errorf("4 MiB of stdin: wc says %q", res.Stdout)
	}
}

func TestNoStdinEndsAtOnce(t *testing.T) {
	t.Parallel()
	res := run(t, executor.Spec{Command: "cat; read x; echo end", Timeout: 10})
	assertState(t, res, executor.StateCompleted, 0)
	if res.Stdout != "end\n" {
		t.Errorf("stdout %q", res.Stdout)
	}
}

func TestBackgroundChildrenDieWithTheRun(t *testing.T) {
	t.Parallel()
	res := run(t, sh("sleep 997 & sleep 997 & setsid sleep 997 & echo started"))
	assertState(t, res, executor.StateCompleted, 0)
	// Container processes are host processes: none may outlive the run.
	matches, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range matches {
		b, _ := os.ReadFile(p)
		if string(b) == "sleep\x00997\x00" {
			t.Errorf("%s: a child of the run is still alive on the host", p)
		}
	}
}

func TestRunsDoNotShareFiles(t *testing.T) {
	t.Parallel()
	run(t, sh("echo secret > /workspace/marker; echo secret > /tmp/marker; echo secret > /dev/shm/marker"))
	res := run(t, sh("ls -A /workspace /tmp /dev/shm; test ! -e /workspace/marker && test ! -e /tmp/marker && test ! -e /dev/shm/marker"))
	assertState(t, res, executor.StateCompleted, 0)
}

func TestEnvDoesNotLeakHostVariables(t *testing.T) {
	t.Setenv("AIRLOCK_HOST_SECRET", "s3cret")
	res := run(t, executor.Spec{Command: "env", Env: map[string]string{"GREETING": "hello world", "EMPTY": ""}})
	if strings.Contains(res.Stdout, "s3cret") || strings.Contains(res.Stdout, "AIRLOCK_HOST_SECRET") {
		t.Errorf("host variable leaked into the sandbox:\n%s", res.Stdout)
	}
	for _, want := range []string{"GREETING=hello world\n", "EMPTY=\n", "PATH=", "HOME=/tmp\n"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("env lacks %q:\n%s", want, res.Stdout)
		}
	}
}

func TestConcurrentRuns(t *testing.T) {
	t.Parallel()
	const n = 30
	results := make([]executor.Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := ex.Run(t.Context(), executor.Spec{Command: `echo "$N"; sleep 0.2`, Env: map[string]string{"N": fmt.Sprint(i)}, Timeout: 120})
			if err != nil {
				t.Errorf("run %d: %v", i, err)
			}
			results[i] = res
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, res := range results {
		if res.Stdout != fmt.Sprintf("%d\n", i) || res.ExitCode != 0 {
			t.Errorf("run %d: stdout %q exit %d state %s", i, res.Stdout, res.ExitCode, res.State)
		}
		if seen[res.ContainerID] {
			t.Errorf("run %d shares container %s", i, res.ContainerID)
		}
		seen[res.ContainerID] = true
		assertGone(t, res)
	}
}

func TestResourceUsageMeasured(t *testing.T) {
	t.Parallel()
	res := run(t, sh(`timeout 3 sh -c 'while :; do :; done'; dd if=/dev/zero of=/tmp/f bs=1M count=16 2>/dev/null; sleep 1.5`))
	u := res.ResourceUsage
	// Measured by the init inside the sandbox: the whole run, not samples of it
	// (the loop gets less than its 3 s of CPU on an engine the suite loads).
	if u.CPUMS < 500 || u.CPUMS > 3500 || u.MemoryPeakBytes < 16<<20 {
		t.Errorf("a 4s run burning 3s of CPU and writing 16 MiB to its tmpfs reports %+v", u)
	}
}

// A run of a few milliseconds is measured too: the engine's samples, once a
// second, would have none.
func TestResourceUsageOfAShortRun(t *testing.T) {
	t.Parallel()
	res := run(t, sh(`i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done`))
	u := res.ResourceUsage
	// The loop needs some 20 ms of CPU; on a loaded engine its wall clock is longer.
	if res.DurationMS > 5000 || u.CPUMS < 5 || u.CPUMS > int64(res.DurationMS)+20 || u.MemoryPeakBytes < 1<<20 {
		t.Errorf("a %d ms CPU loop reports %+v", res.DurationMS, u)
	}
}

func TestCallerCancelKillsTheRun(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	// Cancel once the command is seen running, not after a fixed delay: on a loaded
	// engine the start alone can take longer than any delay, and a cancel during
	// the start is a different outcome (failed, nothing ran).
	live := executor.WithLiveOutput(cancelOnWrite(cancel, 100*time.Millisecond), io.Discard)
	res, err := ex.Run(ctx, executor.Spec{Command: "echo started; sleep 100"}, live)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	assertState(t, res, executor.StateKilled, 143)
	if res.Stdout != "started\n" {
		t.Errorf("stdout %q: output before the cancel must be kept", res.Stdout)
	}
	assertGone(t, res)
}

func TestEngineFailuresAreFailedResults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, mention string
		spec          executor.Spec
	}{
		{"missing image", "airlock/does-not-exist:v1", executor.Spec{Command: "true", Image: "airlock/does-not-exist:v1"}},
		// A runtime the operator allows but the engine surely lacks: runsc itself is
		// registered wherever .ci/install-runsc ran.
		{"runtime absent from the engine", absentRuntime, executor.Spec{Command: "true", Runtime: absentRuntime}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := withAbsentRuntime(t).Run(t.Context(), tc.spec)
			if !errors.Is(err, executor.ErrEngine) {
				t.Errorf("err = %v, want ErrEngine", err)
			}
			assertState(t, res, executor.StateFailed, 125)
			if !strings.Contains(res.Error, tc.mention) {
				t.Errorf("error %q does not name %q", res.Error, tc.mention)
			}
			// The host's internals (its DNS resolver's address, say) stay in the log.
			if addr := regexp.MustCompile(`\d+\.\d+\.\d+\.\d+`).FindString(res.Error); addr != "" {
				t.Errorf("error %q shows the address %s", res.Error, addr)
			}
			assertGone(t, res)
		})
	}
}

// TestMissingImageWithPullNever: with the server's pull policy (never), an
// image the engine lacks fails the run at once, naming the image and what the
// operator can do; nothing is pulled and no container is made.
func TestMissingImageWithPullNever(t *testing.T) {
	t.Parallel()
	cfg := ex.Config()
	cfg.Pull = executor.PullNever
	e, err := executor.New(executor.WithConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	res, err := e.Run(t.Context(), executor.Spec{Command: "true", Image: "python:3.12-slim"})
	if !errors.Is(err, executor.ErrEngine) {
		t.Errorf("err = %v, want ErrEngine", err)
	}
	assertState(t, res, executor.StateFailed, 125)
	if !strings.Contains(res.Error, `image "python:3.12-slim" is not on the engine`) || !strings.Contains(res.Error, "--pull missing") {
		t.Errorf("error %q", res.Error)
	}
	if res.ContainerID != "" {
		t.Errorf("a container was made: %s", res.ContainerID)
	}
	assertGone(t, res)
}

// absentRuntime is a runtime name no engine offers.
const absentRuntime = "airlock-absent-runtime"

// withAbsentRuntime is an executor whose operator allows absentRuntime.
func withAbsentRuntime(t *testing.T) *executor.Executor {
	t.Helper()
	cfg := ex.Config()
	cfg.Runtimes = append(slices.Clone(cfg.Runtimes), absentRuntime)
	e, err := executor.New(executor.WithConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func TestInvalidSpecNamesTheField(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("x", 200<<10)
	for _, tc := range []struct {
		field string
		spec  executor.Spec
	}{
		{"command", executor.Spec{}},
		{"command", executor.Spec{Command: "true", Argv: []string{"true"}}},
		{"memory", executor.Spec{Command: "true", Memory: 1 << 40}},
		{"cpus", executor.Spec{Command: "true", CPUs: 1000}},
		{"pids", executor.Spec{Command: "true", Pids: 1 << 20}},
		{"timeout", executor.Spec{Command: "true", Timeout: 7200}},
		{"env", executor.Spec{Command: "true", Env: map[string]string{"BAD-NAME": "x"}}},
		{"env.X", executor.Spec{Command: "true", Env: map[string]string{"X": "a\x00b"}}},
		{"network", executor.Spec{Command: "true", Network: "bridge"}},
		{"user", executor.Spec{Command: "true", User: "root"}},
		{"user", executor.Spec{Command: "true", User: "00"}},
		{"user", executor.Spec{Command: "true", User: "65534:0"}},
		{"command", executor.Spec{Command: huge}},
	} {
		_, err := ex.Run(t.Context(), tc.spec)
		var se *executor.SpecError
		if !errors.As(err, &se) || se.Field != tc.field {
			t.Errorf("spec %+.80v: err %v, want a SpecError on %q", tc.spec, err, tc.field)
		}
	}
}

func TestPolicyRefusalCreatesNothing(t *testing.T) {
	t.Parallel()
	res, err := ex.Run(t.Context(), executor.Spec{Command: `echo ok; x=rm; $x -rf /`})
	if err != nil {
		t.Fatal(err)
	}
	assertState(t, res, executor.StateBlocked, 126)
	if !res.Blocked || res.BlockRule != "rm-root" || !strings.Contains(res.BlockReason, "rm -rf /") || res.ContainerID != "" || res.Stdout != "" {
		t.Errorf("blocked %v rule %q reason %q container %q stdout %q", res.Blocked, res.BlockRule, res.BlockReason, res.ContainerID, res.Stdout)
	}
	assertGone(t, res)
}
