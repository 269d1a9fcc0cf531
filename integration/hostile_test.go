package integration

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/airlock-sandbox/airlock/executor"
)

// The hostile battery: workloads a command nobody reviewed might run, each run
// through the real executor on the real engine, under every runtime the engine
// offers, with what must come of it asserted on the Result and on the host.
//
//	go test -run TestHostile ./integration/
//
// Every row runs in a container labelled rowLabel=<row id>, so the host checks
// look at that row's containers only: other tests on the same engine have
// airlock containers of their own running.

// rowLabel is the label that ties a container to its row.
const rowLabel = "hostile.row"

// hostileRuntimes are the runtimes the battery runs under. runc must be in the
// engine; runsc (gVisor) is installed by .ci/install-runsc.
var hostileRuntimes = []string{"runc", "runsc"}

// hostileRow is one hostile workload and what must come of it.
type hostileRow struct {
	name string
	// spec is the workload; Runtime, Labels and Env["MARKER"] are set per run.
	spec executor.Spec
	// policyOff runs the workload with no policy: the container must hold it alone.
	policyOff bool
	// runscPids replaces spec.Pids under gVisor, which counts its own threads and
	// about ten host tasks per process of the sandbox against the pids limit.
	runscPids int64
	// probe runs the probe (integration/probe) with these arguments as the
	// workload, its binary fed through stdin; spec gives the limits.
	probe string
	// alone rows measure time or CPU and run after the others, one at a time.
	alone bool
	// check asserts the Result under runtime rt.
	check func(t *testing.T, rt string, res executor.Result)
	// do replaces spec and check for rows that run several sandboxes; it runs them
	// through r.run, which labels them as the row's.
	do func(t *testing.T, r *rowRun)
}

// rowRun is one row under one runtime.
type rowRun struct {
	rt     string
	id     string // the value of rowLabel on every container of the row
	marker string // a file name no host directory may end up holding
}

// spec fills in what ties a run to its row.
func (r *rowRun) spec(s executor.Spec) executor.Spec {
	s.Runtime = r.rt
	s.Labels = map[string]string{rowLabel: r.id}
	env := map[string]string{"MARKER": r.marker}
	for k, v := range s.Env {
		env[k] = v
	}
	s.Env = env
	return s
}

// run executes s as part of the row.
func (r *rowRun) run(t *testing.T, e *executor.Executor, s executor.Spec) executor.Result {
	t.Helper()
	return runWith(t, e, r.spec(s))
}

// TestHostile is not parallel: the battery runs with no other test of the suite
// beside it, so its floods compete only with each other and its "alone" rows, which
// measure CPU, are truly alone on the machine.
func TestHostile(t *testing.T) {
	// A secret in the test process' environment, as an operator's host would have;
	// no sandbox may see it.
	os.Setenv(hostSecretName, hostSecret)
	obs := startHostObserver(t)
	if rows := hostileRows(); len(rows) < 40 {
		t.Fatalf("the battery has %d rows; it must attack every control", len(rows))
	}
	// Most rows run concurrently, both runtimes at once: they wait on the engine
	// far more than they compute. The rows that measure CPU run afterwards, alone.
	t.Run("concurrent", func(t *testing.T) {
		for _, rt := range hostileRuntimes {
			t.Run(rt, func(t *testing.T) {
				t.Parallel()
				requireRuntime(t, rt)
				runRows(t, rt, obs, false)
			})
		}
	})
	t.Run("alone", func(t *testing.T) {
		for _, rt := range hostileRuntimes {
			t.Run(rt, func(t *testing.T) {
				requireRuntime(t, rt)
				runRows(t, rt, obs, true)
			})
		}
	})
}

// eachRuntime runs fn as a subtest under each runtime the battery covers
// (requireRuntime says what happens when the engine lacks one).
func eachRuntime(t *testing.T, fn func(t *testing.T, rt string)) {
	for _, rt := range hostileRuntimes {
		t.Run(rt, func(t *testing.T) {
			requireRuntime(t, rt)
			fn(t, rt)
		})
	}
}

// requireRuntime fails when the engine lacks runc, and skips when it lacks runsc:
// the one skip the battery allows (.ci/install-runsc installs and registers it).
func requireRuntime(t *testing.T, rt string) {
	t.Helper()
	if slices.Contains(ex.EngineRuntimes(), rt) {
		return
	}
	if rt == "runc" {
		t.Fatalf("the engine does not offer runc (it offers %v)", ex.EngineRuntimes())
	}
	t.Skipf("the engine does not offer %s (it offers %v); run .ci/install-runsc", rt, ex.EngineRuntimes())
}

// runRows runs the rows under one runtime that are alone (one at a time) or not
// (four at a time).
func runRows(t *testing.T, rt string, obs *hostObserver, alone bool) {
	sem := make(chan struct{}, 4)
	if alone {
		sem = make(chan struct{}, 1)
	}
	var wg sync.WaitGroup
	for _, row := range hostileRows() {
		if row.alone != alone {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			t.Run(row.name, func(t *testing.T) { runRow(t, rt, row, obs) })
		}()
	}
	wg.Wait()
}

// runRow runs one row and then checks the host.
func runRow(t *testing.T, rt string, row hostileRow, obs *hostObserver) {
	r := &rowRun{rt: rt, id: rt + "-" + randomHex(8), marker: "airlock-hostile-marker-" + randomHex(8)}
	t.Logf("row %s", r.id)
	defer hostChecks(t, r, obs)
	if row.do != nil {
		row.do(t, r)
		return
	}
	s := row.spec
	if row.probe != "" {
		s.Command = "cat > /tmp/probe && chmod +x /tmp/probe && exec /tmp/probe " + row.probe
		s.Stdin = probeBinary(t)
	}
	if rt == "runsc" && row.runscPids != 0 {
		s.Pids = row.runscPids
	}
	if s.Timeout == 0 {
		s.Timeout = 60
	}
	e := ex
	if row.policyOff {
		e = unchecked
	}
	res := r.run(t, e, s)
	if res.Runtime != rt {
		t.Errorf("runtime %q, want %q", res.Runtime, rt)
	}
	row.check(t, rt, res)
}

// hostileRows is the battery. Expected outcomes that differ under gVisor say so.
func hostileRows() []hostileRow {
	rows := []hostileRow{
		// ---- processes and memory
		{
			name: "fork bomb refused by policy",
			spec: executor.Spec{Command: `bomb(){ bomb | bomb & }; bomb`},
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateBlocked, 126)
				if res.BlockRule != "fork-bomb" || res.ContainerID != "" {
					t.Errorf("block_rule %q container %q", res.BlockRule, res.ContainerID)
				}
			},
		},
		{
			name: "fork bomb with the policy off", policyOff: true,
			spec: executor.Spec{Command: `echo go; bomb(){ bomb | bomb & }; bomb; sleep 100`, Pids: 64, Timeout: 5},
			// gVisor cannot even start under 64 pids (its own threads count): give it
			// the default, which still holds only ~20 processes of the sandbox.
			runscPids: 256,
			check: func(t *testing.T, rt string, res executor.Result) {
				if rt == "runc" {
					// The pids limit refuses forks; the timeout then ends the run.
					assertState(t, res, executor.StateTimedOut, 124)
					if !strings.Contains(res.Stderr, "can't fork") {
						t.Errorf("stderr %.200q: the pids limit must refuse forks", res.Stderr)
					}
					return
				}
				// gVisor: when the host refuses the sandbox a task, the whole sandbox
				// exits with code 2 and no message (the gVisor kernel itself dies).
				assertEndedUnsuccessfully(t, res, 5*time.Second)
			},
		},
		{
			name: "thread bomb", policyOff: true,
			probe:     "threads",
			spec:      executor.Spec{Pids: 64, Timeout: 20},
			runscPids: 256,
			check: func(t *testing.T, rt string, res executor.Result) {
				if rt == "runc" {
					assertState(t, res, executor.StateCompleted, 2)
					if !strings.Contains(res.Stderr, "failed to create new OS thread") {
						t.Errorf("stderr %.300q: the pids limit must refuse the 65th thread", res.Stderr)
					}
					return
				}
				// gVisor: guest threads cost the sandbox host threads and memory; the
				// sandbox is OOM-killed or exits 2 when the host refuses it a thread.
				assertEndedUnsuccessfully(t, res, 20*time.Second)
			},
		},
		{
			name: "memory balloon",
			spec: executor.Spec{Command: balloon, Memory: 32 << 20},
			check: func(t *testing.T, rt string, res executor.Result) {
				if rt == "runsc" {
					assertGVisorOOM(t, res)
					return
				}
				assertState(t, res, executor.StateKilled, 137)
				if !res.OOMKilled || res.Signal != "SIGKILL" || res.Success {
					t.Errorf("oom_killed %v signal %q success %v", res.OOMKilled, res.Signal, res.Success)
				}
			},
		},
		{
			name: "OOM of a child while PID 1 exits 0",
			// The pause: the engine sets its OOM flag from an event that, under load,
			// can come after the container's exit; a run that ends within
			// milliseconds of the OOM may then report oom_killed false.
			spec: executor.Spec{Command: balloon + "; sleep 1; echo survived", Memory: 32 << 20},
			check: func(t *testing.T, rt string, res executor.Result) {
				if rt == "runsc" {
					// The whole sandbox dies of a child's OOM under gVisor.
					assertGVisorOOM(t, res)
					return
				}
				if !res.OOMKilled {
					t.Errorf("oom_killed false: the engine's flag must report a child's OOM")
				}
				if rt == "runc" {
					assertState(t, res, executor.StateCompleted, 0)
					if res.Stdout != "survived\n" {
						t.Errorf("stdout %q", res.Stdout)
					}
					return
				}
				// gVisor: the sandbox's memory is the gVisor kernel's, one host process;
				// the host OOM killer kills that, so the whole run dies of the OOM.
				assertState(t, res, executor.StateKilled, 137)
			},
		},
		{
			name: "zombie farm",
			spec: executor.Spec{Command: `sh -c 'for i in $(seq 1 100); do true & done; exec sleep 1'; sleep 0.5;
ls /proc | grep -c '^[0-9]'; grep -l '^State:.Z' /proc/[0-9]*/status 2>/dev/null | wc -l`},
			runscPids: 2048,
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateCompleted, 0)
				// Once their parent is gone, the init reaps all 100 zombies.
				f := strings.Fields(res.Stdout)
				if len(f) != 2 || atoi(f[0]) > 8 || f[1] != "0" {
					t.Errorf("processes and zombies left after the farm: %q", res.Stdout)
				}
			},
		},
		{
			name: "orphaned children",
			spec: executor.Spec{Command: `sleep 991 & sleep 991 & echo started`},
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateCompleted, 0)
				assertNoHostProcess(t, rt, "sleep\x00991\x00")
			},
		},
		{
			name: "setsid child",
			spec: executor.Spec{Command: `setsid sleep 992 & echo started`},
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateCompleted, 0)
				assertNoHostProcess(t, rt, "sleep\x00992\x00")
			},
		},
		{
			name: "double-fork daemon",
			spec: executor.Spec{Command: `(sh -c 'sleep 993 & exit 0' &); sleep 0.2; echo started`},
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateCompleted, 0)
				assertNoHostProcess(t, rt, "sleep\x00993\x00")
			},
		},
		{
			name: "shell as PID 1",
			// The shell would ignore SIGTERM as PID 1; the init is PID 1 instead,
			// so the shell gets the signal and dies of it.
			spec: executor.Spec{Argv: []string{"/bin/sh", "-c", `echo "pid $$ ppid $PPID"; while :; do sleep 1; done`}, Timeout: 1},
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateTimedOut, 124)
				if !strings.HasPrefix(res.Stdout, "pid ") || strings.HasPrefix(res.Stdout, "pid 1 ") {
					t.Errorf("stdout %q: the command must not be PID 1", res.Stdout)
				}
				assertEndedWithin(t, res, 1*time.Second+ex.Config().KillGrace)
			},
		},
		{
			name: "sleep forever",
			spec: executor.Spec{Command: `echo sleeping; sleep 100000`, Timeout: 2},
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateTimedOut, 124)
				if !res.TimedOut || res.Stdout != "sleeping\n" {
					t.Errorf("timed_out %v stdout %q", res.TimedOut, res.Stdout)
				}
				assertEndedWithin(t, res, 2*time.Second+ex.Config().KillGrace)
			},
		},
		{
			name: "SIGTERM ignored",
			spec: executor.Spec{Command: `trap "" TERM; echo ready; while :; do sleep 1; done`, Timeout: 1},
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateTimedOut, 124)
				if res.Signal != "SIGKILL" || res.Stdout != "ready\n" {
					t.Errorf("signal %q stdout %q, want SIGKILL after the grace period", res.Signal, res.Stdout)
				}
				assertEndedWithin(t, res, 1*time.Second+ex.Config().KillGrace)
			},
		},
		{
			name:  "fd exhaustion",
			probe: "fds",
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateCompleted, 0)
				var n int
				fmt.Sscanf(res.Stdout[strings.Index(res.Stdout, "opened"):], "opened %d files", &n)
				if n < 900 || n > 1024 || !strings.Contains(res.Stdout, "too many open files") {
					t.Errorf("stdout %q: nofile 1024 must stop the opens", res.Stdout)
				}
			},
		},

		// ---- file systems
		{
			name:  "tmpfs fill",
			spec:  executor.Spec{Command: `dd if=/dev/zero of=/tmp/fill bs=1M count=64`, TmpfsSize: 8 << 20},
			check: expectENOSPC,
		},
		{
			name:  "workspace fill",
			spec:  executor.Spec{Command: `dd if=/dev/zero of=/workspace/fill bs=1M count=64`, TmpfsSize: 8 << 20},
			check: expectENOSPC,
		},
		{
			name:  "/dev/shm fill",
			spec:  executor.Spec{Command: `dd if=/dev/zero of=/dev/shm/fill bs=1M count=64`, TmpfsSize: 8 << 20},
			check: expectENOSPC,
		},
		{
			name:  "oversized sparse file",
			spec:  executor.Spec{Command: `truncate -s 100G /tmp/sparse && dd if=/dev/zero of=/tmp/sparse bs=1M count=64 conv=notrunc`, TmpfsSize: 8 << 20},
			check: expectENOSPC,
		},
		{
			name: "inode exhaustion",
			spec: executor.Spec{Command: `i=0; while [ $i -lt 100000 ] && true > /tmp/f$i; do i=$((i+1)); done; echo "files $i"`,
				TmpfsSize: 8 << 20, Timeout: 30},
			check: func(t *testing.T, rt string, res executor.Result) {
				if rt == "runc" {
					// nr_inodes = one per 4 KiB page: 2048 files in an 8 MiB tmpfs.
					assertState(t, res, executor.StateCompleted, 0)
					if res.Stdout != "files 2047\n" || !strings.Contains(res.Stderr, "No space left on device") {
						t.Errorf("stdout %q stderr %.200q: the inode limit must end the fill", res.Stdout, res.Stderr)
					}
					return
				}
				// gVisor ignores nr_inodes: its tmpfs lives in the sandbox's memory,
				// under the memory limit; the fill runs until the file count or the
				// timeout ends it.
				if res.State != executor.StateCompleted && res.State != executor.StateTimedOut {
					t.Errorf("state %s exit %d", res.State, res.ExitCode)
				}
				if res.ResourceUsage.MemoryPeakBytes > 512<<20 {
					t.Errorf("memory peak %d beyond the 512 MiB limit", res.ResourceUsage.MemoryPeakBytes)
				}
			},
		},
		{
			name: "/dev/mqueue fill",
			spec: executor.Spec{Command: `i=0; while [ $i -lt 10000 ] && true > /dev/mqueue/q$i; do i=$((i+1)); done; echo "queues $i"`},
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateCompleted, 0)
				var n int
				fmt.Sscanf(res.Stdout, "queues %d", &n)
				if rt == "runc" {
					// The IPC namespace's queues_max (256) or the per-user message
					// queue rlimit stops it; the queues die with the namespace.
					if n == 0 || n > 256 {
						t.Errorf("stdout %q stderr %.200q: the mqueue limits must stop the fill", res.Stdout, res.Stderr)
					}
					return
				}
				// gVisor has no /dev/mqueue at all.
				if n != 0 {
					t.Errorf("stdout %q: gVisor sandboxes have no /dev/mqueue", res.Stdout)
				}
			},
		},
		{
			name: "rootfs writes",
			spec: executor.Spec{Command: `for f in /etc/$MARKER /bin/$MARKER /$MARKER /usr/$MARKER; do touch $f 2>&1 && echo "wrote $f"; done; true`},
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateCompleted, 0)
				refusal := "Read-only file system"
				if rt == "runsc" {
					// gVisor checks the user's permission before the mount's
					// read-only flag, so nobody hears EACCES first.
					refusal = "Permission denied"
				}
				if strings.Contains(res.Stdout, "wrote") || strings.Count(res.Stdout, refusal) != 4 {
					t.Errorf("stdout %q: every rootfs write must fail (%s)", res.Stdout, refusal)
				}
			},
		},
		{
			name: "image VOLUMEs filled",
			do: func(t *testing.T, r *rowRun) {
				res := r.run(t, ex, executor.Spec{Image: volumeImage(t), Command: volumeFill, TmpfsSize: 8 << 20, Timeout: 60})
				assertState(t, res, executor.StateCompleted, 1)
				assertVolumesBounded(t, res.Stdout, res.Stderr)
			},
		},
		{
			name: "persistence between runs",
			do: func(t *testing.T, r *rowRun) {
				first := r.run(t, ex, executor.Spec{Command: `for d in /tmp /workspace /dev/shm $HOME; do echo x > $d/$MARKER || exit 1; done`, Timeout: 30})
				assertState(t, first, executor.StateCompleted, 0)
				next := r.run(t, ex, executor.Spec{Command: `for d in /tmp /workspace /dev/shm $HOME; do test ! -e $d/$MARKER || echo "$d/$MARKER survived"; done`, Timeout: 30})
				assertState(t, next, executor.StateCompleted, 0)
				if next.Stdout != "" || next.ContainerID == first.ContainerID {
					t.Errorf("the next run saw the first one's files: %q (containers %s, %s)", next.Stdout, first.ContainerID, next.ContainerID)
				}
			},
		},

		// ---- CPU
		{
			name: "CPU hog throttled to its quota", alone: true,
			// Two busy loops for 6 s at a quota of half a CPU: 3 s of CPU, not 12.
			spec: executor.Spec{Command: `time sh -c 'timeout 6 sh -c "while :; do :; done" & timeout 6 sh -c "while :; do :; done" & wait'; sleep 1.5`, CPUs: 0.5},
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateCompleted, 0)
				// The upper bound is the point; the lower one proves the measure
				// works, with room for other tests' load on a small machine.
				const want = 3000 // ms: 0.5 CPU × 6 s
				if u := res.ResourceUsage; u.CPUMS < want/2 || u.CPUMS > want*13/10 {
					t.Errorf("engine measured %d ms of CPU, want %d (-50%%, +30%%) (%+v)", u.CPUMS, want, u)
				}
				if rt == "runc" {
					if got := busyboxCPUTime(res.Stderr); got < want/2 || got > want*115/100 {
						t.Errorf("the sandbox measured %d ms of CPU (%q), want %d (-50%%, +15%%)", got, res.Stderr, want)
					}
				}
				// gVisor: `time` inside the sandbox counts the gVisor kernel's view,
				// which does not see the host's throttling; only the engine's
				// figure is the real CPU time there.
			},
		},

		// ---- output
		{
			name: "1 GiB stdout flood",
			spec: executor.Spec{Command: `dd if=/dev/zero bs=1M count=1024 2>/dev/null; echo end >&2`, Timeout: 300},
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateCompleted, 0)
				if res.StdoutBytes != 1<<30 || !res.StdoutTruncated || len(res.Stdout) != 1<<20 || res.Stderr != "end\n" {
					t.Errorf("stdout_bytes %d truncated %v kept %d stderr %q", res.StdoutBytes, res.StdoutTruncated, len(res.Stdout), res.Stderr)
				}
			},
		},
		{
			name: "one endless line",
			spec: executor.Spec{Command: `dd if=/dev/zero bs=1M count=256 2>/dev/null | tr '\0' x`, Timeout: 300},
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateCompleted, 0)
				if res.StdoutBytes != 256<<20 || len(res.Stdout) != 1<<20 || len(res.StdoutTail) > 1<<20 || len(res.StdoutTail) == 0 {
					t.Errorf("stdout_bytes %d kept %d tail %d: the tail of one endless line must stay bounded", res.StdoutBytes, len(res.Stdout), len(res.StdoutTail))
				}
			},
		},
		{
			name: "separate stderr flood",
			spec: executor.Spec{Command: `dd if=/dev/zero bs=1M count=256 >&2 2>/dev/null; echo out; dd if=/dev/zero bs=1M count=256 1>&2`, Timeout: 300},
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateCompleted, 0)
				if res.Stdout != "out\n" || res.StdoutTruncated || !res.StderrTruncated || len(res.Stderr) != 1<<20 || res.StderrBytes < 256<<20 {
					t.Errorf("stdout %q stderr_bytes %d kept %d truncated %v", res.Stdout, res.StderrBytes, len(res.Stderr), res.StderrTruncated)
				}
			},
		},
		{
			name: "binary, NUL and terminal escapes",
			spec: executor.Spec{Command: `printf 'ok\377\376\000\033]0;pwned\007\033[2J\033[31mred\r\n'; head -c 4096 /dev/urandom >&2`},
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateCompleted, 0)
				if res.Stdout != "ok\xff\xfe\x00\x1b]0;pwned\a\x1b[2J\x1b[31mred\r\n" || res.StderrBytes != 4096 {
					t.Errorf("stdout %q stderr_bytes %d: bytes must come back as written", res.Stdout, res.StderrBytes)
				}
				b, err := json.Marshal(res)
				if err != nil || !json.Valid(b) {
					t.Errorf("the result is not valid JSON: %v", err)
				}
			},
		},

		// ---- input and arguments
		{
			name: "huge argv",
			spec: executor.Spec{Argv: hugeArgv()},
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateCompleted, 0)
				if res.Stdout != "7001 131071\n" {
					t.Errorf("stdout %q, want 7001 arguments, the first 131071 bytes long", res.Stdout)
				}
			},
		},
		{
			name: "argv over the limits",
			do: func(t *testing.T, r *rowRun) {
				for field, argv := range map[string][]string{
					"argv[2]": {"sh", "-c", strings.Repeat("x", 128<<10)},
					"argv":    append([]string{"true"}, slices.Repeat([]string{strings.Repeat("y", 100<<10)}, 11)...),
				} {
					res, err := ex.Run(t.Context(), r.spec(executor.Spec{Argv: argv}))
					var se *executor.SpecError
					if !errors.As(err, &se) || se.Field != field || res.ContainerID != "" {
						t.Errorf("%s: err %v container %q, want a SpecError on %s and nothing started", field, err, res.ContainerID, field)
					}
				}
			},
		},
		{
			name: "huge stdin, slow reader",
			spec: executor.Spec{Command: `sleep 2; wc -c`, Stdin: ptr(strings.Repeat("0123456789abcdef", 1<<20))},
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateCompleted, 0)
				if strings.TrimSpace(res.Stdout) != "16777216" {
					t.Errorf("16 MiB of stdin behind a 2 s pause: wc says %q", res.Stdout)
				}
			},
		},
		{
			name: "stdin over the limit",
			do: func(t *testing.T, r *rowRun) {
				res, err := ex.Run(t.Context(), r.spec(executor.Spec{Command: "wc -c", Stdin: ptr(strings.Repeat("x", 16<<20+1))}))
				var se *executor.SpecError
				if !errors.As(err, &se) || se.Field != "stdin" || res.ContainerID != "" {
					t.Errorf("err %v container %q, want a SpecError on stdin and nothing started", err, res.ContainerID)
				}
			},
		},
		{name: "100 parallel runs killed mid-run", do: parallelKills},

		// ---- time, identity, host
		{
			name: "clock change",
			spec: executor.Spec{Command: `date -s "2000-01-01 00:00:00"; date +%Y`},
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateCompleted, 0)
				year := strings.TrimSpace(res.Stdout[strings.LastIndex(strings.TrimSpace(res.Stdout), "\n")+1:])
				if !strings.Contains(res.Stderr, "Operation not permitted") || year == "2000" {
					t.Errorf("stdout %q stderr %q: setting the clock must fail", res.Stdout, res.Stderr)
				}
				if time.Now().Year() < 2024 {
					t.Errorf("the host clock says %d", time.Now().Year())
				}
			},
		},
		{
			name: "hostname change",
			spec: executor.Spec{Command: `hostname pwned; hostname`},
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateCompleted, 0)
				if res.Stdout != "sandbox\n" || !strings.Contains(res.Stderr, "Operation not permitted") {
					t.Errorf("stdout %q stderr %q", res.Stdout, res.Stderr)
				}
				if h, _ := os.Hostname(); h == "pwned" {
					t.Errorf("the host's hostname changed")
				}
			},
		},
		{
			name: "host environment and secrets",
			spec: executor.Spec{Command: `env; tr '\0' '\n' </proc/1/environ; tr '\0' '\n' </proc/self/environ`},
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateCompleted, 0)
				for _, leak := range []string{hostSecret, hostSecretName, "DOCKER_HOST", "TESTCONTAINERS", "GOPATH", "AIRLOCK_DATA"} {
					if strings.Contains(res.Stdout, leak) {
						t.Errorf("%q from the host is visible in the sandbox", leak)
					}
				}
			},
		},
		{
			name: "PID 1 stopped",
			spec: executor.Spec{Command: `kill -STOP 1; echo done`, Timeout: 3},
			check: func(t *testing.T, rt string, res executor.Result) {
				if rt == "runc" {
					// The kernel ignores SIGSTOP to a namespace's init from inside it.
					assertState(t, res, executor.StateCompleted, 0)
					if res.Stdout != "done\n" {
						t.Errorf("stdout %q", res.Stdout)
					}
				} else {
					// gVisor delivers it: the stopped init neither reaps the shell nor
					// passes on its output, and the host's backstop ends the run
					// (SECURITY.md). The sandbox harmed only itself.
					assertState(t, res, executor.StateTimedOut, 124)
					if res.Stdout != "" && res.Stdout != "done\n" {
						t.Errorf("stdout %q", res.Stdout)
					}
				}
			},
		},
		{
			name: "PID 1 killed",
			spec: executor.Spec{Command: `kill -KILL 1; echo done`, Timeout: 30},
			check: func(t *testing.T, rt string, res executor.Result) {
				if rt == "runc" {
					assertState(t, res, executor.StateCompleted, 0)
					return
				}
				// Under gVisor the sandbox ends at once, by the signal it sent itself.
				assertState(t, res, executor.StateCompleted, 137)
			},
		},
		{
			name: "own container id",
			spec: executor.Spec{Command: `cat /proc/self/cgroup /proc/1/cgroup; grep -h cgroup /proc/self/mountinfo; true`},
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateCompleted, 0)
				// A private cgroup namespace: the sandbox sees its cgroup as the root.
				if strings.Contains(res.Stdout, res.ContainerID) {
					t.Errorf("the sandbox can read its container id:\n%s", res.Stdout)
				}
			},
		},
		{
			name: "Docker socket",
			spec: executor.Spec{Command: `for s in /var/run/docker.sock /run/docker.sock /run/containerd/containerd.sock; do test -e $s && echo "found $s"; done; true`},
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateCompleted, 0)
				if res.Stdout != "" {
					t.Errorf("engine sockets in the sandbox: %q", res.Stdout)
				}
			},
		},
		{
			name: "setuid binaries", policyOff: true, // the policy refuses su
			spec: executor.Spec{Command: `find / -xdev -perm /6000 -type f 2>/dev/null; su -c id root 2>&1; id -u`},
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateCompleted, 0)
				if !strings.HasSuffix(res.Stdout, "\n65534\n") || strings.Contains(res.Stdout, "uid=0") {
					t.Errorf("stdout %q: no setuid file, no way to root", res.Stdout)
				}
			},
		},
		{
			name: "mknod",
			spec: executor.Spec{Command: `mknod /tmp/mem c 1 1; mknod /tmp/sda b 8 0; mkfifo /tmp/fifo && echo fifo`},
			check: func(t *testing.T, rt string, res executor.Result) {
				// Device nodes fail by seccomp under both runtimes (gVisor checks
				// neither CAP_MKNOD nor nodev); FIFOs still work.
				assertState(t, res, executor.StateCompleted, 0)
				if res.Stdout != "fifo\n" || strings.Count(res.Stderr, "Operation not permitted") != 2 {
					t.Errorf("stdout %q stderr %q", res.Stdout, res.Stderr)
				}
			},
		},
		{
			name: "kernel files", policyOff: true, // the policy refuses some of these writes
			spec: executor.Spec{Command: `echo c > /proc/sysrq-trigger; echo '|/tmp/x' > /proc/sys/kernel/core_pattern;
echo 1 > /sys/fs/cgroup/pids/pids.max; echo 1 > /sys/fs/cgroup/pids.max; mkdir /sys/fs/cgroup/x;
echo "kcore $(head -c 64 /proc/kcore 2>/dev/null | wc -c) interrupts $(wc -c </proc/interrupts 2>/dev/null || echo 0)"`},
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateCompleted, 0)
				if res.Stdout != "kcore 0 interrupts 0\n" || strings.Count(res.Stderr, "\n") < 5 {
					t.Errorf("stdout %q stderr %q: host kernel files must be unwritable and masked", res.Stdout, res.Stderr)
				}
			},
		},

		// ---- network
		{
			name:  "TCP egress",
			spec:  executor.Spec{Command: `nc -w 2 1.1.1.1 80 </dev/null`},
			check: expectNoNetwork,
		},
		{
			name:  "UDP egress",
			spec:  executor.Spec{Command: `nslookup example.com 1.1.1.1`}, // a DNS query is a UDP datagram
			check: expectNoNetwork,
		},
		{
			name:  "ICMP egress",
			spec:  executor.Spec{Command: `ping -c 1 -W 2 1.1.1.1`},
			check: expectNoNetwork,
		},
		{
			name:  "DNS",
			spec:  executor.Spec{Command: `nslookup example.com`},
			check: expectNoNetwork,
		},
		{
			name: "cloud metadata address",
			// nc, not wget: this busybox's static wget crashes (SIGSEGV) in a sandbox.
			spec:  executor.Spec{Command: `nc -w 2 169.254.169.254 80 </dev/null`},
			check: expectNoNetwork,
		},
		{
			name: "only loopback",
			spec: executor.Spec{Command: `tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '`},
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateCompleted, 0)
				if res.Stdout != "lo\n" {
					t.Errorf("interfaces %q, want only lo", res.Stdout)
				}
			},
		},

		// ---- the kernel surface, syscall by syscall
		{name: "probe", do: probeRow},
	}

	// The blocklist-bypass spellings of `rm -rf /`, with the policy off: the
	// container must contain each, whether or not the policy would refuse it.
	for _, spelling := range []struct{ command, policyRule string }{
		{`rm -rf /`, "rm-root"},
		{`/bin/rm -r -f /*`, "rm-root"},
		{`x=rm; $x -rf /*`, "rm-root"},
		{`'r''m' -fr /`, "rm-root"},
		{`busybox rm -rf /`, "rm-root"},
		{`find / -mindepth 1 -maxdepth 1 -exec rm -rf {} +`, "find-delete-root"},
		{`cd / && rm -rf *`, ""},                        // the policy allows it
		{`eval "$(echo cm0gLXJmIC8K | base64 -d)"`, ""}, // dynamic: only strict mode refuses it
	} {
		rows = append(rows, hostileRow{
			name: "policy off: " + spelling.command, policyOff: true,
			spec: executor.Spec{Command: `echo keep > /tmp/own; ` + spelling.command + `; test -x /bin/busybox && test -s /etc/passwd && echo intact`},
			check: func(t *testing.T, rt string, res executor.Result) {
				assertState(t, res, executor.StateCompleted, 0)
				if res.Stdout != "intact\n" || !strings.Contains(res.Stderr, "Read-only file system") && !strings.Contains(res.Stderr, "Permission denied") {
					t.Errorf("stdout %q stderr %.300q: the read-only root must survive", res.Stdout, res.Stderr)
				}
				if _, err := os.Stat(hostCanary); err != nil {
					t.Errorf("the host canary is gone: %v", err)
				}
				// And with the policy on:
				d, err := ex.Run(t.Context(), executor.Spec{Command: spelling.command, Runtime: rt})
				switch {
				case spelling.policyRule == "" && err == nil && d.State == executor.StateBlocked:
					t.Logf("the policy now refuses %q too (%s)", spelling.command, d.BlockRule)
				case spelling.policyRule != "" && (err != nil || d.BlockRule != spelling.policyRule):
					t.Errorf("policy on: state %s rule %q err %v, want rule %s", d.State, d.BlockRule, err, spelling.policyRule)
				}
				assertGone(t, d)
			},
		})
	}
	return rows
}

// ---- row helpers

const hostSecretName = "AIRLOCK_HOSTILE_SECRET"

// hostSecret is in the test process' environment during the battery; hostCanary
// is a host file the rm rows must not reach.
var (
	hostSecret = "s3cret-" + randomHex(8)
	hostCanary = filepath.Join(os.TempDir(), "airlock-hostile-canary-"+randomHex(4))
)

func expectENOSPC(t *testing.T, rt string, res executor.Result) {
	t.Helper()
	assertState(t, res, executor.StateCompleted, 1)
	if !strings.Contains(res.Stderr, "No space left on device") {
		t.Errorf("stderr %q, want ENOSPC", res.Stderr)
	}
}

// expectNoNetwork: the command fails because there is no route out.
func expectNoNetwork(t *testing.T, rt string, res executor.Result) {
	t.Helper()
	if res.State != executor.StateCompleted || res.ExitCode == 0 {
		t.Errorf("state %s exit %d stdout %q: egress must fail", res.State, res.ExitCode, res.Stdout)
	}
	if !regexp.MustCompile(`(?i)unreachable|no route|bad address|can't connect|timed out|sendto|connection refused|permission denied|operation not permitted`).MatchString(res.Stderr + res.Stdout) {
		t.Errorf("stderr %q: want a network error", res.Stderr)
	}
	if res.DurationMS > 10_000 && res.State == executor.StateCompleted {
		t.Logf("egress took %d ms to fail", res.DurationMS)
	}
}

// assertGVisorOOM: under gVisor the host OOM killer kills the whole sandbox (one
// host process holds all its memory), so the run ends with SIGKILL. The engine's
// OOM flag comes from an event that then often arrives after the exit, so a run
// may say completed/137 with oom_killed false: a gap of this engine with gVisor,
// logged rather than failed.
func assertGVisorOOM(t *testing.T, res executor.Result) {
	t.Helper()
	if res.ExitCode != 137 || res.Signal != "SIGKILL" || res.Success {
		t.Errorf("state %s exit %d signal %q: the OOM must end the sandbox with SIGKILL", res.State, res.ExitCode, res.Signal)
	}
	if !res.OOMKilled {
		t.Logf("state %s, oom_killed false: the engine missed the OOM event (gVisor)", res.State)
	}
}

// assertEndedUnsuccessfully: the run ended on its own or by airlock, failed, and
// no later than its timeout plus the kill grace.
func assertEndedUnsuccessfully(t *testing.T, res executor.Result, timeout time.Duration) {
	t.Helper()
	if res.Success || res.State == executor.StateFailed || res.ExitCode == 0 {
		t.Errorf("state %s exit %d success %v error %q", res.State, res.ExitCode, res.Success, res.Error)
	}
	assertEndedWithin(t, res, timeout+ex.Config().KillGrace)
}

// assertEndedWithin bounds how long the container ran.
func assertEndedWithin(t *testing.T, res executor.Result, d time.Duration) {
	t.Helper()
	slack := 3 * time.Second
	if res.Runtime == "runsc" {
		// gVisor's sandbox can take seconds to die after SIGKILL when it runs
		// thousands of threads on a busy host (seen: 5 s for the thread bomb in CI).
		slack = 10 * time.Second
	}
	if took := res.FinishedAt.Sub(res.StartedAt); took > d+slack {
		t.Errorf("the run took %s, want at most %s", took, d)
	}
}

// assertNoHostProcess fails when a process with exactly this command line (NUL
// separated) lives on the host. Container processes of runc are host processes.
//
// Under runsc the sandbox's processes live inside gVisor, never on the host, and a
// host process with this command line is the runc run of the same row (both
// runtimes run at once): the check is runc's alone, and for gVisor the host checks
// after every row look for any host process naming the container.
func assertNoHostProcess(t *testing.T, rt, cmdline string) {
	t.Helper()
	if rt != "runc" {
		return
	}
	matches, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range matches {
		if b, _ := os.ReadFile(p); string(b) == cmdline {
			t.Errorf("%s: a child of the run is still alive on the host (%q)", p, cmdline)
		}
	}
}

// busyboxCPUTime reads user+sys in ms from busybox time's report.
func busyboxCPUTime(report string) int64 {
	var total float64
	for _, m := range regexp.MustCompile(`(?m)^(?:user|sys)\s+(\d+)m\s*([\d.]+)s`).FindAllStringSubmatch(report, -1) {
		minutes, _ := strconv.ParseFloat(m[1], 64)
		seconds, _ := strconv.ParseFloat(m[2], 64)
		total += minutes*60 + seconds
	}
	return int64(total * 1000)
}

// hugeArgv is 7001 arguments after the script: one of 131071 bytes (the most the
// kernel takes in one argument) and 7000 of 100 bytes, 831 KiB in all.
func hugeArgv() []string {
	argv := []string{"/bin/sh", "-c", `echo "$# $(printf %s "$1" | wc -c)"`, "--", strings.Repeat("a", 128<<10-1)}
	return append(argv, slices.Repeat([]string{strings.Repeat("b", 100)}, 7000)...)
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func ptr[T any](v T) *T { return &v }

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// parallelKills starts 100 runs at once and ends each mid-run: even ones by the
// caller's cancel once they have written, odd ones by a 3 s timeout.
func parallelKills(t *testing.T, r *rowRun) {
	const n = 100
	results := make([]executor.Result, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spec := r.spec(executor.Spec{Command: `echo started; exec sleep 1000`, Timeout: 120})
			ctx := t.Context()
			var opts []executor.RunOption
			if i%2 == 0 {
				c, cancel := context.WithCancel(ctx)
				defer cancel()
				ctx = c
				opts = append(opts, executor.WithLiveOutput(cancelOnWrite(cancel, 200*time.Millisecond), nil))
			} else {
				spec.Timeout = 3
			}
			results[i], errs[i] = ex.Run(ctx, spec, opts...)
		}()
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, res := range results {
		want, code := executor.StateTimedOut, 124
		if i%2 == 0 {
			want, code = executor.StateKilled, 143
			if !errors.Is(errs[i], context.Canceled) {
				t.Errorf("run %d: err %v, want context.Canceled", i, errs[i])
			}
		} else if errs[i] != nil {
			t.Errorf("run %d: %v", i, errs[i])
		}
		if res.State != want || res.ExitCode != code || res.Stdout != "started\n" {
			t.Errorf("run %d: state %s exit %d stdout %q error %q, want %s %d", i, res.State, res.ExitCode, res.Stdout, res.Error, want, code)
		}
		if seen[res.ContainerID] {
			t.Errorf("run %d shares container %s", i, res.ContainerID)
		}
		seen[res.ContainerID] = true
		assertGone(t, res)
	}
}

// ---- the probe

var (
	probeOnce sync.Once
	probeBin  string
	probeErr  error
)

// probeBinary builds integration/probe once, static and stripped, as `make probe`
// does, and returns its bytes: they reach each sandbox through stdin, since
// sandboxes have no bind mounts and the rootfs is read-only.
func probeBinary(t *testing.T) *string {
	probeOnce.Do(func() {
		dir, err := os.MkdirTemp("", "airlock-probe-")
		if err != nil {
			probeErr = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "probe")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", out, "./probe")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := cmd.CombinedOutput(); err != nil {
			probeErr = fmt.Errorf("go build ./probe: %v\n%s", err, b)
			return
		}
		b, err := os.ReadFile(out)
		probeBin, probeErr = string(b), err
	})
	if probeErr != nil {
		t.Fatal(probeErr)
	}
	return &probeBin
}

// probeOpenExpected are the probe's checks that get through by design, by
// runtime, with why that is no hole.
var probeOpenExpected = map[string]map[string]string{
	"runc": {
		// ptrace is allowed (debuggers work in a sandbox) and the sandbox's init
		// runs as the same unprivileged user with no capabilities: attaching to it
		// gains nothing the command did not have. The host's kill does not go
		// through the init, so a stopped init cannot keep a run alive.
		"ptrace-pid1": "same uid, no capabilities: nothing to gain",
	},
	"runsc": {},
}

// probeRow runs the probe and makes each of its checks a subtest.
func probeRow(t *testing.T, r *rowRun) {
	res := r.run(t, ex, executor.Spec{Command: "cat > /tmp/probe && chmod +x /tmp/probe && /tmp/probe", Stdin: probeBinary(t), Timeout: 60})
	assertState(t, res, executor.StateCompleted, 0)
	sc := bufio.NewScanner(strings.NewReader(res.Stdout))
	checks := 0
	for sc.Scan() {
		verdict, rest, _ := strings.Cut(sc.Text(), " ")
		name, detail, _ := strings.Cut(rest, ": ")
		checks++
		t.Run(name, func(t *testing.T) {
			why, allowed := probeOpenExpected[r.rt][name]
			switch {
			case verdict == "blocked":
				if allowed {
					t.Logf("blocked (%s), though %s allows it: %s", detail, r.rt, why)
				}
			case verdict == "OPEN" && allowed:
				t.Logf("OPEN by design under %s (%s): %s", r.rt, why, detail)
			default:
				t.Errorf("%s %s: %s", verdict, name, detail)
			}
		})
	}
	if checks < 50 {
		t.Errorf("the probe reported %d checks:\n%s\nstderr: %s", checks, res.Stdout, res.Stderr)
	}
}

// ---- host checks

// hostChecks runs after every row: nothing of the row is left on the host, the
// engine kept no log of it, and the test process stayed small.
func hostChecks(t *testing.T, r *rowRun, obs *hostObserver) {
	ctx := context.Background()
	list, err := docker.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", rowLabel+"="+r.id))})
	if err != nil {
		t.Errorf("list the row's containers: %v", err)
	}
	for _, c := range list {
		t.Errorf("container %s of the row is left (%s)", c.ID[:12], c.State)
	}
	for _, c := range obs.containersOf(r.id) {
		if c.logType != "none" || c.logPath != "" || c.maxLogBytes > 0 {
			t.Errorf("container %.12s kept an engine log: driver %q path %q, log files reached %d bytes", c.id, c.logType, c.logPath, c.maxLogBytes)
		}
		assertNoHostProcessMentions(t, c.id)
	}
	if hwm := peakRSS(); hwm > maxTestRSS {
		t.Errorf("the test process' peak RSS is %d MiB, over %d MiB", hwm>>20, maxTestRSS>>20)
	}
	for _, dir := range []string{"/", "/tmp", "/workspace", "/var/tmp", "/dev/shm", "/root", "/etc", os.TempDir()} {
		if _, err := os.Lstat(filepath.Join(dir, r.marker)); err == nil {
			t.Errorf("marker %s found on the host in %s", r.marker, dir)
		}
	}
}

// maxTestRSS bounds the test process: the battery holds at most a few MiB per
// run (capped output, the probe binary, 16 MiB of stdin), never a flood. The race
// detector multiplies memory, hence the margin.
const maxTestRSS = 1536 << 20

// peakRSS is the test process' resident high-water mark.
func peakRSS() int64 { return peakRSSOf("self") }

// peakRSSOf is the peak resident memory of process pid ("self", or a
// number), in bytes.
func peakRSSOf(pid string) int64 {
	b, _ := os.ReadFile("/proc/" + pid + "/status")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return int64(atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))) << 10
		}
	}
	return 0
}

// assertNoHostProcessMentions fails when a host process (a runc shim, a gVisor
// sandbox or gofer) still names the container, a few seconds after the run.
func assertNoHostProcessMentions(t *testing.T, containerID string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var left []string
		matches, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range matches {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), containerID) {
				left = append(left, p+" "+strings.ReplaceAll(string(b), "\x00", " "))
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("host processes of container %.12s outlived the run: %.300q", containerID, left)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// hostObserver watches the battery's containers from outside while they exist:
// their log configuration and the size of their directory in the engine's data
// root, where a json-file log would grow.
type hostObserver struct {
	mu         sync.Mutex
	containers map[string]*seenContainer
	rootDir    string
}

type seenContainer struct {
	id, row          string
	logType, logPath string
	maxLogBytes      int64 // of the files named *log* in its directory
}

func startHostObserver(t *testing.T) *hostObserver {
	info, err := docker.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	o := &hostObserver{containers: map[string]*seenContainer{}, rootDir: filepath.Join(info.DockerRootDir, "containers")}
	if err := os.WriteFile(hostCanary, []byte("still here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := dirBytes(o.rootDir)
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			o.look(ctx)
			select {
			case <-ctx.Done():
			case <-time.After(150 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() {
		stop()
		<-done
		// Other tests' containers come and go meanwhile; a log of a flood would
		// be hundreds of MiB.
		if grown := dirBytes(o.rootDir) - before; grown > 64<<20 {
			t.Errorf("the engine's containers directory grew by %d MiB during the battery", grown>>20)
		}
		os.Unsetenv(hostSecretName)
		os.Remove(hostCanary)
	})
	return o
}

func (o *hostObserver) look(ctx context.Context) {
	list, err := docker.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", rowLabel))})
	if err != nil {
		return
	}
	for _, c := range list {
		o.mu.Lock()
		seen := o.containers[c.ID]
		o.mu.Unlock()
		if seen == nil {
			in, err := docker.ContainerInspect(ctx, c.ID)
			if err != nil {
				continue // already gone
			}
			seen = &seenContainer{id: c.ID, row: c.Labels[rowLabel], logType: in.HostConfig.LogConfig.Type, logPath: in.LogPath}
		}
		size := logBytes(filepath.Join(o.rootDir, c.ID))
		o.mu.Lock()
		seen.maxLogBytes = max(seen.maxLogBytes, size)
		o.containers[c.ID] = seen
		o.mu.Unlock()
	}
}

func (o *hostObserver) containersOf(row string) []seenContainer {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []seenContainer
	for _, c := range o.containers {
		if c.row == row {
			out = append(out, *c)
		}
	}
	return out
}

// dirBytes is the size of the regular files under dir (0 when unreadable).
func dirBytes(dir string) int64 { return filesBytes(dir, func(string) bool { return true }) }

// logBytes is the size of the engine's log files under a container's directory
// (json-file's <id>-json.log*, local's container.log*).
func logBytes(dir string) int64 {
	return filesBytes(dir, func(name string) bool { return strings.Contains(name, ".log") })
}

func filesBytes(dir string, match func(name string) bool) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && match(d.Name()) {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}
