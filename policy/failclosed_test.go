package policy

import (
	"strings"
	"testing"
)

// A panic inside the checker refuses the command as internal-error: it neither
// allows it nor ends the process, and the checkers of later calls are sound.
func TestCheckFailsClosed(t *testing.T) {
	for _, mode := range []Mode{ModeStandard, ModeStrict} {
		p, err := New(Config{Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		p.onScript = func(src string) {
			if strings.Contains(src, "boom") {
				panic("injected")
			}
		}
		want := Decision{Rule: RuleInternalError.ID, Reason: RuleInternalError.Reason, Mode: mode}
		for _, cmd := range []string{`echo boom`, `echo hi; sh -c 'echo boom'`, `trap 'boom' EXIT`} {
			if d := p.Check(cmd); d != want {
				t.Errorf("[%s] Check(%q) = %+v, want %+v", mode, cmd, d, want)
			}
			d, steps := p.Explain(cmd)
			if d != want || len(steps) == 0 || steps[len(steps)-1].Rule != RuleInternalError.ID {
				t.Errorf("[%s] Explain(%q) = %+v %+v, want %+v and a last step refused by it", mode, cmd, d, steps, want)
			}
		}
		argv := []string{"sh", "-c", "echo boom"}
		if d := p.CheckArgv(argv); d != want {
			t.Errorf("[%s] CheckArgv(%q) = %+v, want %+v", mode, argv, d, want)
		}
		if d, _ := p.ExplainArgv(argv); d != want {
			t.Errorf("[%s] ExplainArgv(%q) = %+v, want %+v", mode, argv, d, want)
		}
		if d := p.Check(`rm -rf /`); d.Rule != RuleRmRoot.ID {
			t.Errorf("[%s] after a failed check, rm -rf / = %+v", mode, d)
		}
		if d := p.Check(`echo hi`); !d.Allowed {
			t.Errorf("[%s] after a failed check, echo hi = %+v", mode, d)
		}
	}
}
