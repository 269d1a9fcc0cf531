package integration

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/docker/docker/api/types/container"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/image"

	"github.com/airlock-sandbox/airlock/executor"
)

var (
	cliOnce sync.Once
	cliPath string
	cliErr  error
)

// airlockCLI builds cmd/airlock once, static as `make build` builds it.
func airlockCLI(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		dir, err := os.MkdirTemp("", "airlock-cli-")
		if err != nil {
			cliErr = err
			return
		}
		cliPath = filepath.Join(dir, "airlock")
		cmd := exec.Command("go", "build", "-o", cliPath, "../cmd/airlock")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			cliErr = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if cliErr != nil {
		t.Fatal(cliErr)
	}
	return cliPath
}

// airlock runs the CLI and returns its stdout, stderr and exit code.
func airlock(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	return airlockEnv(t, nil, stdin, args...)
}

// airlockEnv is airlock with env added to the test's environment.
func airlockEnv(t *testing.T, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), airlockCLI(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr, cmd.Stdin = &stdout, &stderr, strings.NewReader(stdin)
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("airlock %v: %v", args, err)
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

// TestCLIBuildsImageOnFirstUse removes the sandbox image and runs a command: the
// image is rebuilt offline, and the CLI says so on stderr. It does not run in
// parallel, so no other test sees the image missing.
func TestCLIBuildsImageOnFirstUse(t *testing.T) {
	// Forced: the suite's warm sandboxes use the image; they keep it by its id.
	if _, err := docker.ImageRemove(t.Context(), "airlock/minimal", image.RemoveOptions{Force: true, PruneChildren: true}); err != nil {
		t.Fatalf("remove image: %v", err)
	}
	stdout, stderr, code := airlock(t, "", "run", "--", "echo", "hi")
	if stdout != "hi\n" || code != 0 {
		t.Fatalf("stdout %q exit %d\nstderr: %s", stdout, code, stderr)
	}
	if !strings.Contains(stderr, "building it from its recipe") {
		t.Errorf("stderr does not say the image was built:\n%s", stderr)
	}
	stdout, _, _ = airlock(t, "", "images", "ls")
	if !strings.Contains(stdout, "airlock/minimal:latest") || !strings.Contains(stdout, "minimal") {
		t.Errorf("images ls:\n%s", stdout)
	}
}

func TestCLIRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	input := filepath.Join(dir, "input")
	os.WriteFile(input, []byte("from a file\n"), 0o644)
	for _, tc := range []struct {
		name           string
		args           []string
		stdout, stderr string // substrings
		code           int
	}{
		{"one argument is a shell command", []string{"run", "--", "echo a; exit 3"}, "a\n", "", 3},
		{"more arguments are argv", []string{"run", "--", "echo", "$HOME", "'x'"}, "$HOME 'x'\n", "", 0},
		{"flags in docker's units", []string{"run", "--memory", "64m", "--cpus", "0.5", "--pids", "32", "--tmpfs-size", "8m", "--",
			"cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/pids/pids.max; df -k /tmp | tail -n 1 | awk '{print $2}'"},
			"67108864\n32\n8192\n", "", 0},
		{"env, workdir and user", []string{"run", "--env", "A=1", "--env", "B=two words", "--workdir", "/tmp", "--user", "1000:1000", "--", `echo "$A $B"; pwd; id -u`},
			"1 two words\n/tmp\n1000\n", "", 0},
		{"a uid alone does not get the root group", []string{"run", "--user", "1234", "--", "id -u; id -g"}, "1234\n1234\n", "", 0},
		{"stdin from a file", []string{"run", "--stdin-file", input, "--", "cat"}, "from a file\n", "", 0},
		{"timeout as seconds", []string{"run", "--timeout", "1", "--", "sleep 30"}, "", "timed out", 124},
		{"timeout as a duration", []string{"run", "--timeout", "1500ms", "--", "sleep 30"}, "", "timed out", 124},
		{"oom is explained", []string{"run", "--memory", "32m", "--", balloon}, "", "out of memory", 137},
		{"bad size names the flag", []string{"run", "--memory", "lots", "--", "true"}, "", "--memory", 125},
		{"over a ceiling names the field", []string{"run", "--memory", "100g", "--", "true"}, "", "memory:", 125},
		{"bad timeout names the flag", []string{"run", "--timeout", "soon", "--", "true"}, "", "--timeout", 125},
		{"bad env names the flag", []string{"run", "--env", "NOVALUE", "--", "true"}, "", "-env", 125},
		{"no command", []string{"run"}, "", "no command", 125},
		{"unknown subcommand", []string{"fly"}, "", "unknown command", 125},
		{"version", []string{"version"}, "airlock ", "", 0},
		{"run refused by policy", []string{"run", "--", "echo hi; curl -s https://x | sh"}, "", "blocked by policy [fetch-pipe-shell]", 126},
		{"run with policy off", []string{"run", "--policy-mode", "off", "--", "echo r''m -rf /"}, "rm -rf /\n", "", 0},
		{"check allowed", []string{"check", "--", "grep -rn 'rm -rf /' src"}, "allowed", "", 0},
		{"check blocked", []string{"check", "--", `$'\x72\x6d' -rf /`}, "[rm-root]", "", 1},
		{"check strict", []string{"check", "--mode", "strict", "--", "cat x | sh"}, "[pipe-to-interpreter]", "", 1},
		{"check bad mode", []string{"check", "--mode", "lax", "--", "ls"}, "", "mode", 2},
		{"check no command", []string{"check"}, "", "no command", 2},
		{"check rules", []string{"check", "--rules"}, "fork-bomb", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := airlock(t, "", tc.args...)
			if code != tc.code || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("airlock %q: exit %d, stdout %q, stderr %q; want exit %d, stdout ~%q, stderr ~%q",
					tc.args, code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
			}
		})
	}
}

func TestCLIJSONResult(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := airlock(t, "", "run", "--json", "--label", "session=s1", "--", "echo out; echo err >&2; exit 4")
	if code != 4 {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, stdout)
	}
	for field, want := range map[string]any{
		"state": "completed", "exit_code": 4.0, "success": false, "stdout": "out\n", "stderr": "err\n",
		"timed_out": false, "oom_killed": false, "stdout_bytes": 4.0, "image": "airlock/minimal", "runtime": "runc",
	} {
		if res[field] != want {
			t.Errorf("%s = %v, want %v", field, res[field], want)
		}
	}
	for _, field := range []string{"id", "container_id", "started_at", "finished_at", "duration_ms", "resource_usage", "stdout_tail", "labels"} {
		if _, ok := res[field]; !ok {
			t.Errorf("field %s missing", field)
		}
	}
}

// TestCLIStreamsLive checks that output reaches the terminal while the command runs.
func TestCLIStreamsLive(t *testing.T) {
	t.Parallel()
	assertStreamsLive(t, nil)
}

// assertStreamsLive runs `airlock run` with env added and checks that its first
// line arrives well before the command ends: output is streamed, not buffered.
func assertStreamsLive(t *testing.T, env []string) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), airlockCLI(t), "run", "--", "echo first; sleep 2; echo second")
	cmd.Env = append(cmd.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	first, _ := r.ReadString('\n')
	firstAt := time.Now()
	second, _ := r.ReadString('\n')
	cmd.Wait()
	if first != "first\n" || second != "second\n" {
		t.Fatalf("output %q %q", first, second)
	}
	if d := time.Since(firstAt); d < time.Second {
		t.Errorf("the first line arrived only %s before the end: output is not streamed", d)
	}
}

func TestCLICheckPolicyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "policy.json")
	os.WriteFile(good, []byte(`{"mode": "standard", "deny_programs": [{"program": "git", "args": "^push"}],
		"allowlist": [{"program": "git"}, {"program": "ls"}], "workspace_roots": ["/workspace"]}`), 0o644)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"mode": "standard", "deny_program": []}`), 0o644)
	for _, tc := range []struct {
		args   []string
		stdout string
		stderr string
		code   int
	}{
		{[]string{"check", "--policy", good, "--", "git status && ls sub"}, "allowed", "", 0},
		{[]string{"check", "--policy", good, "--", "env git push origin"}, "[deny-program]", "", 1},
		{[]string{"check", "--policy", good, "--", "git status; make"}, "[not-allowlisted]", "", 1},
		{[]string{"check", "--policy", good, "--", "ls /etc"}, "[path-outside-workspace]", "", 1},
		{[]string{"check", "--policy", good, "--mode", "off", "--", "make"}, "allowed", "", 0},
		{[]string{"check", "--policy", bad, "--", "ls"}, "", "deny_program", 2},
		{[]string{"check", "--policy", filepath.Join(dir, "missing.json"), "--", "ls"}, "", "--policy", 2},
		{[]string{"run", "--policy", good, "--", "make"}, "", "not-allowlisted", 126},
	} {
		stdout, stderr, code := airlock(t, "", tc.args...)
		if code != tc.code || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("airlock %q: exit %d, stdout %q, stderr %q; want exit %d, stdout ~%q, stderr ~%q",
				tc.args, code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
		}
	}
}

// TestCLIBackgroundJob drives a job through the CLI as a person would: start,
// ps, logs -f, kill, ps --all, wait, rm; each command a process of its own.
func TestCLIBackgroundJob(t *testing.T) {
	t.Setenv("AIRLOCK_DATA", t.TempDir())
	out, stderr, code := airlock(t, "", "start", "--label", "who=cli-test", "--", `trap 'echo bye; exit 3' TERM; for i in 1 2 3; do echo tick $i; done; echo warn >&2; while :; do sleep 0.1; done`)
	id := strings.TrimSpace(out)
	if code != 0 || len(id) != 24 {
		t.Fatalf("start: exit %d, stdout %q, stderr %q; want the job id", code, out, stderr)
	}
	t.Cleanup(func() { exec.Command(airlockCLI(t), "kill", "--signal", "KILL", id).Run() })

	out, _, code = airlock(t, "", "ps")
	if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "running") {
		t.Errorf("ps: exit %d\n%s\nwant the running job", code, out)
	}

	// logs -f follows until the job ends; the kill below ends it.
	follow := exec.Command(airlockCLI(t), "logs", "-f", id)
	var fout, ferr strings.Builder
	follow.Stdout, follow.Stderr = &fout, &ferr
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)

	out, stderr, code = airlock(t, "", "kill", "--force-after", "5s", id)
	if code != 0 || !strings.Contains(out, "sent SIGTERM") || !strings.Contains(out, "killed (exit 3)") {
		t.Errorf("kill: exit %d\n%s%s", code, out, stderr)
	}
	if err := follow.Wait(); err != nil {
		t.Errorf("logs -f: %v (stderr %q)", err, ferr.String())
	}
	// A kill signals every process of the sandbox: the shell may add a
	// word on its sleep's death after the job's own "warn".
	if fout.String() != "tick 1\ntick 2\ntick 3\nbye\n" || !strings.HasPrefix(ferr.String(), "warn\n") {
		t.Errorf("logs -f: stdout %q stderr %q", fout.String(), ferr.String())
	}

	out, _, _ = airlock(t, "", "ps")
	if strings.Contains(out, id) {
		t.Errorf("ps lists the killed job as running:\n%s", out)
	}
	out, _, _ = airlock(t, "", "ps", "--all", "--label", "who=cli-test")
	if !strings.Contains(out, id) || !strings.Contains(out, "killed") {
		t.Errorf("ps --all --label: want the job as killed:\n%s", out)
	}
	_, stderr, code = airlock(t, "", "wait", id)
	if code != 3 || !strings.Contains(stderr, "killed (exit 3)") {
		t.Errorf("wait: exit %d, stderr %q; want the job's code 3", code, stderr)
	}
	out, _, code = airlock(t, "", "kill", id)
	if code != 0 || !strings.Contains(out, "already ended") {
		t.Errorf("kill of an ended job: exit %d, %q", code, out)
	}
	if _, _, code = airlock(t, "", "rm", id); code != 0 {
		t.Errorf("rm: exit %d", code)
	}
	_, stderr, code = airlock(t, "", "logs", id)
	if code != 125 || !strings.Contains(stderr, id) || !strings.Contains(stderr, "no such process") {
		t.Errorf("logs of a removed job: exit %d, stderr %q; want not found naming the id", code, stderr)
	}
	_, stderr, code = airlock(t, "", "kill", "--signal", "NOPE", id)
	if code != 125 || !strings.Contains(stderr, "signal") {
		t.Errorf("kill --signal NOPE: exit %d, stderr %q", code, stderr)
	}
}

// TestCLIStartDeliversAllOfStdin: `airlock start --stdin-file` returns the id
// while the job still reads, and the CLI's process waits until the job has taken
// the whole file before it exits: nothing of it is lost with the process.
func TestCLIStartDeliversAllOfStdin(t *testing.T) {
	t.Setenv("AIRLOCK_DATA", t.TempDir())
	input := filepath.Join(t.TempDir(), "big.txt")
	data := bytes.Repeat([]byte("0123456789abcdef"), 8<<20/16) // 8 MiB
	if err := os.WriteFile(input, data, 0o644); err != nil {
		t.Fatal(err)
	}
	// The job reads slowly at first, so that most of the file is still to be
	// written when Start has returned.
	out, stderr, code := airlock(t, "", "start", "--stdin-file", input, "--", "sleep 1; cat >/tmp/in; wc -c </tmp/in; sha256sum - </tmp/in")
	id := strings.TrimSpace(out)
	if code != 0 || len(id) != 24 {
		t.Fatalf("start: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	_, _, code = airlock(t, "", "wait", id)
	out, stderr, _ = airlock(t, "", "logs", id)
	sum := sha256.Sum256(data)
	want := fmt.Sprintf("%d\n%x  -\n", len(data), sum)
	if code != 0 || out != want {
		t.Fatalf("the job read %q (exit %d, stderr %q), want %q", out, code, stderr, want)
	}
}

// TestInitInstalledOrRefused installs the CLI as `go install` does (cgo on, no
// init beside it): it refuses to run, saying how to get the init, instead of
// running with the engine's init and reporting zero usage; an init built with
// cgo is refused too. Once a static init is installed beside it, a run of a
// few milliseconds has its usage measured.
func TestInitInstalledOrRefused(t *testing.T) {
	bin, home := t.TempDir(), t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AIRLOCK_INIT=") && !strings.HasPrefix(kv, "GOBIN=") && !strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	install := func(pkg string, cgo string) {
		cmd := exec.Command("go", "install", pkg)
		cmd.Env = append(env, "GOBIN="+bin, "PATH="+os.Getenv("PATH"), "CGO_ENABLED="+cgo)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go install %s: %v\n%s", pkg, err, out)
		}
	}
	run := func() (string, string, int) {
		cmd := exec.CommandContext(t.Context(), filepath.Join(bin, "airlock"), "run", "--json", "--", "echo hi")
		// No airlock-init on $PATH or in Go's install directories but bin.
		cmd.Env = append(env, "PATH=/usr/bin:/bin", "HOME="+home, "GOPATH="+home)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Run()
		return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
	}
	install("../cmd/airlock", "1")
	out, errOut, code := run()
	if code == 0 || !strings.Contains(errOut, "CGO_ENABLED=0 go install github.com/airlock-sandbox/airlock/cmd/airlock-init@") || strings.Contains(out, `"state"`) {
		t.Fatalf("without an init: exit %d, stdout %q, stderr %q; want a refusal that says how to get the init", code, out, errOut)
	}
	// An init built with cgo would not start in an image without a C library.
	install("../cmd/airlock-init", "1")
	if out, errOut, code = run(); code == 0 || !strings.Contains(errOut, "dynamically linked") {
		t.Fatalf("with a cgo-built init: exit %d, stdout %q, stderr %q; want a refusal naming it", code, out, errOut)
	}
	install("../cmd/airlock-init", "0")
	out, errOut, code = run()
	var r executor.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil || code != 0 {
		t.Fatalf("with the init installed: exit %d, %v, stdout %q, stderr %q", code, err, out, errOut)
	}
	if r.Stdout != "hi\n" || r.ResourceUsage.MemoryPeakBytes == 0 {
		t.Fatalf("with the init installed: stdout %q, usage %+v; want the usage measured", r.Stdout, r.ResourceUsage)
	}
}

// TestCLIJobKilledFromOutside: a job whose container is killed outside
// airlock, with no airlock process watching it, is `killed` as soon as anyone
// looks (not `running` until someone waits, nor `completed` with 137), and the
// answer says who killed it.
func TestCLIJobKilledFromOutside(t *testing.T) {
	t.Parallel()
	env := []string{"AIRLOCK_DATA=" + t.TempDir()}
	out, stderr, code := airlockEnv(t, env, "", "start", "--", "sleep 300")
	id := strings.TrimSpace(out)
	if code != 0 || len(id) != 24 {
		t.Fatalf("start: exit %d, stdout %q, stderr %q; want the job id", code, out, stderr)
	}
	t.Cleanup(func() {
		kill := exec.Command(airlockCLI(t), "kill", "--signal", "KILL", id)
		kill.Env = append(os.Environ(), env...)
		kill.Run()
	})
	cids := managedContainers(t.Context(), id)
	if len(cids) != 1 {
		t.Fatalf("containers of %s: %v", id, cids)
	}
	cid := strings.Fields(cids[0])[0]
	if err := docker.ContainerKill(t.Context(), cid, "KILL"); err != nil {
		t.Fatal(err)
	}
	waited, errs := docker.ContainerWait(t.Context(), cid, container.WaitConditionNotRunning)
	select {
	case <-waited:
	case err := <-errs:
		t.Fatal(err)
	}
	out, _, _ = airlockEnv(t, env, "", "ps")
	if strings.Contains(out, id) {
		t.Errorf("ps lists the job killed from outside as running:\n%s", out)
	}
	out, _, _ = airlockEnv(t, env, "", "ps", "--all")
	if !strings.Contains(out, id) || !strings.Contains(out, "killed") {
		t.Errorf("ps --all: want the job as killed:\n%s", out)
	}
	out, stderr, code = airlockEnv(t, env, "", "wait", "--json", id)
	var r struct {
		State, Signal, Error string
		ExitCode             int `json:"exit_code"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("wait --json: exit %d, %v\n%s%s", code, err, out, stderr)
	}
	if r.State != "killed" || r.ExitCode != 137 || r.Signal != "SIGKILL" || !strings.Contains(r.Error, "outside airlock") {
		t.Errorf("wait: %+v; want killed, 137, SIGKILL, and the reason", r)
	}
}

// TestCLISandboxCAFileChecked: the CLI with no server takes the authorities
// of a network that re-signs TLS from $AIRLOCK_SANDBOX_CA_FILE, as a server
// takes sandbox_ca_file, and a file that holds no certificate is refused,
// named, before anything runs.
func TestCLISandboxCAFileChecked(t *testing.T) {
	t.Parallel()
	bad := filepath.Join(t.TempDir(), "network-ca.pem")
	os.WriteFile(bad, []byte("not a certificate\n"), 0o644)
	_, stderr, code := airlockEnv(t, []string{"AIRLOCK_SANDBOX_CA_FILE=" + bad}, "", "run", "--", "echo", "hi")
	if code != 125 || !strings.Contains(stderr, "sandbox_ca_file "+bad) {
		t.Errorf("run with a bad CA file: exit %d, stderr %q; want 125 naming the file", code, stderr)
	}
}
