package integration

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/executor"
)

// A run may send PID 1 any signal and fill the sandbox's memory: neither may
// end airlock's init, or the run's report (its exit code, its output, its OOM
// kill) is lost with it (docs/DESIGN.md, "The init").

// pid1Signal is a signal that ends a Go program sent by kill(2) unless the
// program handles it, and what the init does with it.
type pid1Signal struct {
	name      string
	forwarded bool // passed on to every process of the sandbox; else ignored
}

// pid1Signals are all the signals the Go runtime treats as fatal when they
// come from another process: SIGHUP, SIGINT and SIGTERM end the program, the
// others crash it with a dump of its goroutines.
var pid1Signals = []pid1Signal{
	{"SIGSEGV", false}, {"SIGBUS", false}, {"SIGFPE", false}, {"SIGILL", false},
	{"SIGTRAP", false}, {"SIGABRT", false}, {"SIGSYS", false}, {"SIGSTKFLT", false},
	{"SIGQUIT", true}, {"SIGHUP", true}, {"SIGINT", true}, {"SIGTERM", true},
}

// goCrash is what a Go program's crash writes on its stderr.
var goCrash = []string{"goroutine ", "runtime.", "PC=", "[signal "}

// command sends the signal to PID 1 from inside the sandbox and then exits 3
// by itself. A forwarded signal comes back to the shell, which traps it, and
// to its sleep, which it ends.
func (s pid1Signal) command() string {
	n := int(unix.SignalNum(s.name))
	if s.forwarded {
		return fmt.Sprintf(`trap 'echo caught' %d; echo before; kill -%d 1; sleep 10; echo after; exit 3`, n, n)
	}
	return fmt.Sprintf(`echo before; kill -%d 1; sleep 0.5; echo after; exit 3`, n)
}

// check asserts that the init lived to report the command's own end.
func (s pid1Signal) check(t *testing.T, what string, res executor.Result) {
	t.Helper()
	want := "before\nafter\n"
	if s.forwarded {
		want = "before\ncaught\nafter\n"
	}
	if res.State != executor.StateCompleted || res.ExitCode != 3 || res.Stdout != want {
		t.Errorf("%s: state %s exit %d stdout %q stderr %.300q; want completed, exit 3, stdout %q",
			what, res.State, res.ExitCode, res.Stdout, res.Stderr, want)
	}
	for _, m := range goCrash {
		if strings.Contains(res.Stderr, m) {
			t.Errorf("%s: stderr holds a Go crash dump (%q): %.500q", what, m, res.Stderr)
			break
		}
	}
	if !s.forwarded && res.Stderr != "" {
		t.Errorf("%s: stderr %.300q, want none: the signal is ignored", what, res.Stderr)
	}
	if res.ResourceUsage.MemoryPeakBytes <= 0 && res.Runtime == "runc" {
		t.Errorf("%s: usage %+v: want the init's measure", what, res.ResourceUsage)
	}
}

// Every signal Go treats as fatal, sent to PID 1 by kill(2) from a run and
// from a background job, under each runtime: the init lives on, ignores it
// or passes it on, and reports the command's own exit and output.
func TestInitSurvivesSignalsToPID1(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt string) {
		// What the init ignores stays its own: the command starts with each
		// at its default, so a shell it starts dies of it.
		var faults, want []string
		for _, sig := range pid1Signals {
			if n := int(unix.SignalNum(sig.name)); !sig.forwarded {
				faults, want = append(faults, strconv.Itoa(n)), append(want, strconv.Itoa(128+n))
			}
		}
		res := run(t, executor.Spec{Argv: []string{"sh", "-c", `for s in ` + strings.Join(faults, " ") + `; do sh -c 'kill -$0 $$; exit 0' $s; echo $?; done`}, Runtime: rt})
		if res.Stdout != strings.Join(want, "\n")+"\n" {
			t.Errorf("the command's shells exit %q by the signals, want %q: the command must not inherit the init's ignoring", res.Stdout, want)
		}
		for _, sig := range pid1Signals {
			t.Run(sig.name, func(t *testing.T) {
				t.Parallel()
				spec := executor.Spec{Command: sig.command(), Runtime: rt, Timeout: 30}
				sig.check(t, "run", run(t, spec))
				p := start(t, ex, spec)
				sig.check(t, "job", waitJob(t, ex, p.ID))
			})
		}
	})
}

// sigqueue(3) sends a signal with si_code SI_QUEUE, which the Go runtime
// takes for a fault of the program's own even when the program asked for the
// signal: only a signal ignored by the kernel keeps the init alive.
func TestInitSurvivesQueuedSignals(t *testing.T) {
	t.Parallel()
	var names []string
	for _, sig := range pid1Signals {
		if !sig.forwarded {
			names = append(names, sig.name)
		}
	}
	eachRuntime(t, func(t *testing.T, rt string) {
		t.Parallel()
		res := run(t, executor.Spec{
			Command: `cat > /tmp/probe && chmod +x /tmp/probe && /tmp/probe sigqueue 1 ` + strings.Join(names, " ") + `; sleep 0.5; echo after; exit 3`,
			Stdin:   probeBinary(t), Runtime: rt, Timeout: 30,
		})
		want := "sent " + strings.Join(names, "\nsent ") + "\nafter\n"
		if res.State != executor.StateCompleted || res.ExitCode != 3 || res.Stdout != want || res.Stderr != "" {
			t.Errorf("state %s exit %d stdout %q stderr %.500q; want completed, exit 3, stdout %q", res.State, res.ExitCode, res.Stdout, res.Stderr, want)
		}
	})
}

// The command and whatever it starts are the OOM killer's first choice, not
// the init: each has an oom_score_adj above the init's. The init raises its
// own while it starts the command and puts it back once the start returns
// (cmd/airlock-init/oom.go), which under gVisor can be after the command's
// first instructions: the command looks at the init's a moment later, as the
// OOM killer would, once the run is under way.
func TestInitOOMScoreBelowTheCommand(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt string) {
		t.Parallel()
		spec := executor.Spec{Command: `sleep 0.2; cat /proc/1/oom_score_adj /proc/self/oom_score_adj; sh -c 'cat /proc/self/oom_score_adj'`, Runtime: rt}
		res := run(t, spec)
		p := start(t, ex, spec)
		job := waitJob(t, ex, p.ID)
		for what, r := range map[string]executor.Result{"run": res, "job": job} {
			assertState(t, r, executor.StateCompleted, 0)
			if r.Stdout != "0\n1000\n1000\n" {
				t.Errorf("%s: oom_score_adj of the init, the command and its child: %q, want 0, 1000, 1000", what, r.Stdout)
			}
		}
	})
}

// A tmpfs filled past the memory limit holds pages no process owns, so the
// OOM killer weighs the processes by their own memory alone, and the init's
// is the largest. A sandbox from the warm pool and a cold one both report
// the command killed by the OOM killer, with its output and usage.
func TestPooledTmpfsOOMFlaggedLikeCold(t *testing.T) {
	t.Parallel()
	// Under runsc a run with a memory limit of its own never comes from the
	// pool (gVisor cannot change a running sandbox's limits), and its OOM
	// kill ends the whole sandbox, init included (docs/DESIGN.md, "The
	// init"): the memory balloon rows of the hostile battery cover it.
	// A run of the suite's executor first: the init's volume may still be
	// filling when a new executor finds it, and a warm start that fails then
	// is not tried again.
	run(t, sh("true"))
	e := pooledExecutor(t, 1, false)
	for _, dir := range []string{"/tmp", "/dev/shm"} {
		spec := executor.Spec{Command: `echo filling; dd if=/dev/zero of=` + dir + `/fill bs=1M count=64`, Memory: 32 << 20, Timeout: 30}
		waitWarm(t, e, "airlock/minimal", 1)
		hits := poolHits(e)
		warm := runWith(t, e, spec)
		if poolHits(e) != hits+1 {
			t.Fatalf("%s: the run did not come from the pool: %+v", dir, e.PoolStats())
		}
		cold := runWith(t, unchecked, spec)
		for what, res := range map[string]executor.Result{"pooled": warm, "cold": cold} {
			if res.State != executor.StateKilled || res.ExitCode != 137 || !res.OOMKilled || res.Signal != "SIGKILL" || res.Stdout != "filling\n" {
				t.Errorf("%s %s: state %s exit %d oom_killed %v signal %q stdout %q stderr %.300q; want killed, 137, oom_killed, SIGKILL, the output",
					what, dir, res.State, res.ExitCode, res.OOMKilled, res.Signal, res.Stdout, res.Stderr)
			}
			if res.ResourceUsage.MemoryPeakBytes < 16<<20 {
				t.Errorf("%s %s: usage %+v: want the init's measure of the fill", what, dir, res.ResourceUsage)
			}
		}
	}
}

// poolHits is how many runs e's pool has served.
func poolHits(e *executor.Executor) int64 {
	var n int64
	for _, st := range e.PoolStats() {
		n += st.Hits
	}
	return n
}

// Under gVisor an OOM kill ends the whole sandbox, init included: its memory
// is one host process, the one the host's OOM killer picks. A warm sandbox,
// which the engine removes as it stops, is flagged from the kernel's log, as
// a cold one is from the engine's record. (A warm gVisor sandbox keeps the
// default limits, so the balloon fills the default 512 MiB.)
func TestPooledOOMUnderGVisorFlagged(t *testing.T) {
	t.Parallel()
	requireRuntime(t, "runsc")
	run(t, sh("true")) // see TestPooledTmpfsOOMFlaggedLikeCold
	cfg := executor.DefaultConfig()
	cfg.DataDir = t.TempDir()
	e, err := executor.New(executor.WithConfig(cfg), executor.WithPool(map[string]int{"airlock/minimal@runsc": 1}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	waitWarm(t, e, "airlock/minimal", 1)
	hits := poolHits(e)
	res := runWith(t, e, executor.Spec{Command: `echo filling; awk 'BEGIN{s="x"; while(1) s=s s}'`, Runtime: "runsc", Timeout: 60})
	if poolHits(e) != hits+1 {
		t.Fatalf("the run did not come from the pool: %+v", e.PoolStats())
	}
	if res.State != executor.StateKilled || res.ExitCode != 137 || !res.OOMKilled || res.Signal != "SIGKILL" {
		t.Errorf("state %s exit %d oom_killed %v signal %q stdout %q; want killed, 137, oom_killed, SIGKILL", res.State, res.ExitCode, res.OOMKilled, res.Signal, res.Stdout)
	}
}
