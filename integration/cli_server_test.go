package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
)

const (
	cliTokenAlpha = "cli-token-alpha-0123456789"
	cliTokenBeta  = "cli-token-beta-9876543210"
)

// TestCLIThroughServer drives the CLI with --server (AIRLOCK_SERVER) against a
// real `airlock serve`, as a tenant: every command acts through the API, none
// on the local data dir, which stays empty. The server's policy, ceilings and
// tenant isolation apply; output streams live and exact; failures are explained.
func TestCLIThroughServer(t *testing.T) {
	t.Parallel()
	srv := startServe(t, freePort(t), t.TempDir(),
		"AIRLOCK_TOKENS="+cliTokenAlpha+":alpha,"+cliTokenBeta+":beta", "AIRLOCK_MAX_MEMORY=256m")
	localData := t.TempDir()
	as := func(token string) []string {
		return []string{"AIRLOCK_SERVER=" + srv.url, "AIRLOCK_TOKEN=" + token, "AIRLOCK_DATA=" + localData}
	}
	alpha, beta := as(cliTokenAlpha), as(cliTokenBeta)
	input := filepath.Join(t.TempDir(), "input")
	os.WriteFile(input, []byte("from a file\n"), 0o644)
	// killLater kills a job once the test is over, whatever became of it.
	killLater := func(t *testing.T, id string) {
		t.Cleanup(func() {
			cmd := exec.Command(airlockCLI(t), "kill", "--signal", "KILL", id)
			cmd.Env = append(cmd.Environ(), alpha...)
			cmd.Run()
		})
	}

	for _, tc := range []struct {
		name           string
		env            []string
		args           []string
		stdout, stderr string // substrings; stdout exact when exact is set
		exact          bool
		code           int
	}{
		{"exit code and streams apart", alpha, []string{"run", "--", "echo out; printf '\\377\\n' >&2; exit 3"}, "out\n", "\xff\n", true, 3},
		{"argv without a shell", alpha, []string{"run", "--", "echo", "$HOME"}, "$HOME\n", "", true, 0},
		{"stdin from a file", alpha, []string{"run", "--stdin-file", input, "--", "cat"}, "from a file\n", "", true, 0},
		{"timeout explained", alpha, []string{"run", "--timeout", "1", "--", "echo started; sleep 30"}, "started\n", "timed out", true, 124},
		{"oom explained", alpha, []string{"run", "--memory", "32m", "--", balloon}, "", "out of memory", false, 137},
		{"the server's policy refuses", alpha, []string{"run", "--", "curl -s https://x | sh"}, "", "blocked by policy [fetch-pipe-shell]", false, 126},
		{"the server's ceiling names the field", alpha, []string{"run", "--memory", "1g", "--", "true"}, "", "memory:", false, 125},
		{"a local policy is refused", alpha, []string{"run", "--policy-mode", "off", "--", "true"}, "", "--policy", false, 125},
		{"check with the server's policy", alpha, []string{"check", "--", "sudo ls"}, "[privilege-escalation]", "", false, 1},
		{"check allowed", alpha, []string{"check", "--", "ls"}, "allowed", "", false, 0},
		{"no token", as(""), []string{"run", "--", "true"}, "", "bearer token", false, 125},
		{"wrong token", as("not-a-token"), []string{"ps"}, "", "$AIRLOCK_TOKEN", false, 125},
		{"flag beats env", alpha, []string{"run", "--server", "http://127.0.0.1:1", "--", "true"}, "", "127.0.0.1:1", false, 125},
		{"bad server URL", alpha, []string{"ps", "--server", "localhost:8080"}, "", "server URL", false, 125},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := airlockEnv(t, tc.env, "", tc.args...)
			okOut := strings.Contains(stdout, tc.stdout)
			if tc.exact {
				okOut = stdout == tc.stdout
			}
			if code != tc.code || !okOut || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("airlock %q: exit %d, stdout %q, stderr %q; want exit %d, stdout %q, stderr ~%q",
					tc.args, code, stdout, stderr, tc.code, tc.stdout, tc.stderr)
			}
		})
	}

	t.Run("json result is the tenant's", func(t *testing.T) {
		t.Parallel()
		stdout, stderr, code := airlockEnv(t, alpha, "", "run", "--json", "--label", "k=v", "--", "echo hi; exit 4")
		var r executor.Result
		if err := json.Unmarshal([]byte(stdout), &r); err != nil || code != 4 {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
		if r.Tenant != "alpha" || r.Stdout != "hi\n" || r.ExitCode != 4 || r.Labels["k"] != "v" || r.ContainerID == "" {
			t.Errorf("result %+v", r)
		}
		assertGone(t, r)
	})

	t.Run("output streams live", func(t *testing.T) {
		t.Parallel()
		assertStreamsLive(t, alpha)
	})

	t.Run("background job", func(t *testing.T) {
		t.Parallel()
		out, stderr, code := airlockEnv(t, alpha, "", "start", "--label", "who=cli-server", "--",
			`trap 'echo bye; exit 3' TERM; for i in 1 2 3; do echo tick $i; done; echo warn >&2; while :; do sleep 0.1; done`)
		id := strings.TrimSpace(out)
		if code != 0 || len(id) != 24 {
			t.Fatalf("start: exit %d, stdout %q, stderr %q; want the job id", code, out, stderr)
		}
		killLater(t, id)

		out, _, code = airlockEnv(t, alpha, "", "ps")
		if code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "running") {
			t.Errorf("ps: exit %d\n%s\nwant the running job", code, out)
		}
		// Another tenant neither sees nor touches it.
		if out, _, _ := airlockEnv(t, beta, "", "ps", "--all"); strings.Contains(out, id) {
			t.Errorf("beta's ps lists alpha's job:\n%s", out)
		}
		for _, args := range [][]string{{"logs", id}, {"kill", id}, {"wait", id}, {"rm", id}} {
			if _, stderr, code := airlockEnv(t, beta, "", args...); code != 125 || !strings.Contains(stderr, "no such process") {
				t.Errorf("beta: airlock %v: exit %d, stderr %q; want not found", args, code, stderr)
			}
		}
		// Nothing is on the local data dir: every command went to the server.
		if out, _, _ := airlockEnv(t, []string{"AIRLOCK_DATA=" + localData}, "", "ps", "--all"); strings.Contains(out, id) {
			t.Errorf("the local data dir has the job:\n%s", out)
		}

		follow := exec.Command(airlockCLI(t), "logs", "-f", id)
		follow.Env = append(follow.Environ(), alpha...)
		var fout, ferr strings.Builder
		follow.Stdout, follow.Stderr = &fout, &ferr
		if err := follow.Start(); err != nil {
			t.Fatal(err)
		}
		out, stderr, code = airlockEnv(t, alpha, "", "kill", "--force-after", "5s", id)
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
		out, _, _ = airlockEnv(t, alpha, "", "logs", "--stream", "stdout", "--offset", "7", id)
		if out != "tick 2\ntick 3\nbye\n" {
			t.Errorf("logs from offset 7: %q", out)
		}
		out, _, _ = airlockEnv(t, alpha, "", "ps", "--all", "--label", "who=cli-server")
		if !strings.Contains(out, id) || !strings.Contains(out, "killed") {
			t.Errorf("ps --all --label: want the job as killed:\n%s", out)
		}
		_, stderr, code = airlockEnv(t, alpha, "", "wait", id)
		if code != 3 || !strings.Contains(stderr, "killed (exit 3)") {
			t.Errorf("wait: exit %d, stderr %q; want the job's code 3", code, stderr)
		}
		if _, stderr, code = airlockEnv(t, alpha, "", "rm", "--older-than", "1h"); code != 125 || !strings.Contains(stderr, "--older-than") {
			t.Errorf("rm --older-than: exit %d, stderr %q", code, stderr)
		}
		if _, _, code = airlockEnv(t, alpha, "", "rm", id); code != 0 {
			t.Errorf("rm: exit %d", code)
		}
		_, stderr, code = airlockEnv(t, alpha, "", "logs", id)
		if code != 125 || !strings.Contains(stderr, id) || !strings.Contains(stderr, "no such process") {
			t.Errorf("logs of a removed job: exit %d, stderr %q", code, stderr)
		}
	})

	t.Run("wait gives up at its timeout", func(t *testing.T) {
		t.Parallel()
		out, _, _ := airlockEnv(t, alpha, "", "start", "--", "sleep 30")
		id := strings.TrimSpace(out)
		killLater(t, id)
		t0 := time.Now()
		_, stderr, code := airlockEnv(t, alpha, "", "wait", "--timeout", "1500ms", id)
		if code != 125 || !strings.Contains(stderr, "still running") || time.Since(t0) > 10*time.Second {
			t.Errorf("wait --timeout: exit %d after %s, stderr %q", code, time.Since(t0), stderr)
		}
	})
}
