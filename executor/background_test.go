package executor

import (
	"errors"
	"strings"
	"testing"
)

// newFakeJobExecutor is newFakeExecutor with a data dir of the test's own.
func newFakeJobExecutor(t *testing.T, f *fakeEngine) *Executor {
	t.Helper()
	dir := t.TempDir()
	return newFakeExecutor(t, f, func(c *Config) { c.DataDir = dir })
}

func TestStartBlockedByPolicyIsRecordedAndRunsNothing(t *testing.T) {
	f := newFakeEngine()
	e := newFakeJobExecutor(t, f)
	p, err := e.Start(t.Context(), Spec{Command: "rm -rf /"})
	if err != nil {
		t.Fatalf("Start: %v; a refusal is an answer, not an error", err)
	}
	if p.State != StateBlocked || !p.Blocked || p.BlockRule != "rm-root" || p.ExitCode == nil || *p.ExitCode != ExitBlocked {
		t.Errorf("Start = %+v, want blocked by rm-root with 126", p)
	}
	if calls := f.Methods(); len(calls) != 0 {
		t.Errorf("engine calls %q for a refused job, want none", calls)
	}
	r, err := e.Get(t.Context(), p.ID)
	if err != nil || r.State != StateBlocked || r.BlockRule != "rm-root" {
		t.Errorf("Get of the refused job: %+v, %v", r, err)
	}
}

func TestStartEngineFailuresAreRecorded(t *testing.T) {
	for _, tc := range []struct {
		name    string
		breakIt func(*fakeEngine)
		spec    Spec
		want    string
	}{
		{"runtime absent", func(f *fakeEngine) {}, Spec{Command: "true", Runtime: "runsc"}, `runtime "runsc" is not installed`},
		{"create fails", func(f *fakeEngine) { f.CreateErrs = []error{errFake} }, Spec{Command: "true"}, "create container"},
		{"start fails", func(f *fakeEngine) { f.StartErr = errFake }, Spec{Command: "true"}, "start container"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeEngine()
			tc.breakIt(f)
			e := newFakeJobExecutor(t, f)
			p, err := e.Start(t.Context(), tc.spec)
			if !errors.Is(err, ErrEngine) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start: %v, want an engine error saying %q", err, tc.want)
			}
			if p.State != StateFailed || p.ExitCode == nil || *p.ExitCode != ExitFailed || !strings.Contains(p.Error, tc.want) {
				t.Errorf("Start = %+v, want failed with 125 and the reason", p)
			}
			l, err := e.List(t.Context(), ListOptions{State: StateFailed})
			if err != nil || l.Total != 1 || l.Processes[0].ID != p.ID {
				t.Errorf("List of failed jobs = %+v, %v; want the failed start recorded", l, err)
			}
		})
	}
}
