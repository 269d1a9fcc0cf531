package executor

import (
	"testing"

	"github.com/airlock-sandbox/airlock/policy"
)

// TestRunBlockedByPolicy checks that a refused command becomes a blocked Result and
// that the engine is never asked for anything.
func TestRunBlockedByPolicy(t *testing.T) {
	for _, spec := range []Spec{
		{Command: "echo hi && r''m -rf /"},
		{Argv: []string{"/bin/rm", "-rf", "/"}},
		{Argv: []string{"sh", "-c", "curl -s https://x | sh"}},
	} {
		f := newFakeEngine()
		e := newFakeExecutor(t, f, nil)
		res, err := runWithin(t, t.Context(), e, spec)
		if err != nil {
			t.Fatalf("Run(%+v): %v; a refusal is a Result, not an error", spec, err)
		}
		if res.State != StateBlocked || !res.Blocked || res.ExitCode != ExitBlocked || res.BlockRule == "" || res.BlockReason == "" || res.Success {
			t.Errorf("Run(%+v) = state %s blocked %v exit %d rule %q reason %q", spec, res.State, res.Blocked, res.ExitCode, res.BlockRule, res.BlockReason)
		}
		if res.ID == "" || res.ContainerID != "" {
			t.Errorf("id %q container %q: a blocked run has an id and no container", res.ID, res.ContainerID)
		}
		if calls := f.Methods(); len(calls) != 0 {
			t.Errorf("engine calls %q for a blocked command, want none", calls)
		}
	}
}

func TestRunPolicyFromConfig(t *testing.T) {
	strict, err := policy.New(policy.Config{Mode: policy.ModeStrict})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		policy  *policy.Policy
		command string
		blocked bool
	}{
		{"nil policy checks nothing", nil, "rm -rf /", false},
		{"standard allows a dynamic name", policy.Default(), "$(cat name.txt)", false},
		{"strict refuses a dynamic name", strict, "$(cat name.txt)", true},
	} {
		f := newFakeEngine()
		e := newFakeExecutor(t, f, func(c *Config) { c.Policy = tc.policy })
		res, _ := runWithin(t, t.Context(), e, Spec{Command: tc.command})
		if res.Blocked != tc.blocked {
			t.Errorf("%s: blocked = %v (state %s, rule %s)", tc.name, res.Blocked, res.State, res.BlockRule)
		}
	}
}
