package main

import (
	"io"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/executor"
)

func TestParseRunFlags(t *testing.T) {
	f, err := parseRunFlags("run", []string{
		"--memory", "512m", "--cpus", "0.5", "--pids", "64", "--tmpfs-size", "1g", "--timeout", "2m",
		"--max-output", "64k", "--env", "A=1", "--env", "B=x=y", "--label", "agent=a1", "--json",
		"--server", "http://127.0.0.1:8080", "--", "make", "test",
	}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	spec, asJSON := f.spec, f.asJSON
	want := executor.Spec{Argv: []string{"make", "test"}, Memory: 512 << 20, CPUs: 0.5, Pids: 64, TmpfsSize: 1 << 30,
		Timeout: 120, MaxOutput: 64 << 10}
	if !asJSON || spec.Memory != want.Memory || spec.CPUs != want.CPUs || spec.Pids != want.Pids || spec.TmpfsSize != want.TmpfsSize ||
		spec.Timeout != want.Timeout || spec.MaxOutput != want.MaxOutput || strings.Join(spec.Argv, " ") != "make test" ||
		spec.Env["A"] != "1" || spec.Env["B"] != "x=y" || spec.Labels["agent"] != "a1" {
		t.Errorf("parsed %+v json=%v", spec, asJSON)
	}
	if f.server != "http://127.0.0.1:8080" || f.policy != nil {
		t.Errorf("server %q, policy %v: want the server and no local policy", f.server, f.policy)
	}

	f, err = parseRunFlags("run", []string{"--", "echo hi | wc -c"}, io.Discard)
	if spec := f.spec; err != nil || spec.Command != "echo hi | wc -c" || spec.Argv != nil {
		t.Errorf("one argument must be a shell command: %+v %v", f.spec, err)
	}
}

func TestParseRunFlagsErrorsNameTheFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--memory", "big", "--", "true"}, "--memory"},
		{[]string{"--tmpfs-size", "-1", "--", "true"}, "--tmpfs-size"},
		{[]string{"--max-output", "x", "--", "true"}, "--max-output"},
		{[]string{"--timeout", "soon", "--", "true"}, "--timeout"},
		{[]string{"--stdin-file", "/no/such/file", "--", "cat"}, "--stdin-file"},
		{[]string{}, "no command"},
	} {
		_, err := parseRunFlags("run", tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want it to name %s", tc.args, err, tc.want)
		}
	}
}

func TestParseSeconds(t *testing.T) {
	for in, want := range map[string]executor.Seconds{"": 0, "30": 30, "1.5": 1.5, "30s": 30, "2m": 120, "250ms": 0.25} {
		if got, err := parseSeconds("timeout", in); err != nil || got != want {
			t.Errorf("parseSeconds(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}

func TestCheckExplain(t *testing.T) {
	var out, errb strings.Builder
	code := checkCmd(t.Context(), []string{"--explain", "cd / && echo go; rm -rf *"}, &out, &errb)
	if code != checkBlocked || !strings.Contains(out.String(), "echo go") || !strings.Contains(out.String(), "rm -rf *") ||
		!strings.Contains(out.String(), "refused [rm-root]") {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	code = checkCmd(t.Context(), []string{"--explain", "cpulimit -l 50 -f reboot"}, &out, &errb)
	if code != checkBlocked || !strings.Contains(out.String(), "cpulimit operand 1: a program and its arguments") {
		t.Fatalf("the table's entry is not named: exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := checkCmd(t.Context(), []string{"--explain", "--server", "http://127.0.0.1:1", "ls"}, &out, &errb); code != checkBadInput {
		t.Fatalf("--explain with --server: exit %d", code)
	}
}
