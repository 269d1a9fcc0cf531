package policy

import (
	"encoding/json"
	"os"
	"testing"
)

// freshRow is a row of testdata/fresh_corpus.json: a command and what a
// policy should make of it. want is "deny" (dangerous and decidable in both
// modes), "strict" (dangerous, but only known when it runs: strict refuses
// it, standard may allow it) or "allow" (harmless in both modes).
type freshRow struct {
	Cmd  string `json:"cmd"`
	Want string `json:"want"`
	Src  string `json:"src"`
}

// freshFigures are a mode's figures over the fresh corpus.
type freshFigures struct {
	dangerous, missed int // the decidable dangerous rows of the mode, and those allowed
	harmless, refused int // the harmless rows, and those refused
	misses, fps       []string
}

func loadFresh(t testing.TB) []freshRow {
	t.Helper()
	data, err := os.ReadFile("testdata/fresh_corpus.json")
	if err != nil {
		t.Fatal(err)
	}
	var rows []freshRow
	if err := json.Unmarshal(data, &rows); err != nil {
		t.Fatalf("testdata/fresh_corpus.json: %v", err)
	}
	return rows
}

func measureFresh(t testing.TB, rows []freshRow, mode Mode) freshFigures {
	t.Helper()
	p, err := New(Config{Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	var f freshFigures
	for _, r := range rows {
		d := p.Check(r.Cmd)
		switch {
		case r.Want == "allow":
			f.harmless++
			if !d.Allowed {
				f.refused++
				f.fps = append(f.fps, r.Src+": "+r.Cmd+" ["+d.Rule+"]")
			}
		case r.Want == "deny" || r.Want == "strict" && mode == ModeStrict:
			f.dangerous++
			if d.Allowed {
				f.missed++
				f.misses = append(f.misses, r.Src+": "+r.Cmd)
			}
		}
	}
	return f
}

// TestFreshCorpus measures the policy on a corpus written apart from the
// code's own tests (package managers' hooks, build tools' wrappers, CI
// steps, shell tricks of public write-ups): standard lets through at most
// 5% of the decidable dangerous rows, strict at most 2%, and neither mode
// refuses more than 1% of the harmless rows.
func TestFreshCorpus(t *testing.T) {
	rows := loadFresh(t)
	if len(rows) < 300 {
		t.Fatalf("the fresh corpus has %d rows, want at least 300", len(rows))
	}
	for _, c := range []struct {
		mode      Mode
		maxMissed float64
	}{{ModeStandard, 0.05}, {ModeStrict, 0.02}} {
		f := measureFresh(t, rows, c.mode)
		missed := float64(f.missed) / float64(f.dangerous)
		refused := float64(f.refused) / float64(f.harmless)
		t.Logf("%s: missed %d of %d dangerous (%.1f%%), refused %d of %d harmless (%.1f%%)",
			c.mode, f.missed, f.dangerous, 100*missed, f.refused, f.harmless, 100*refused)
		for _, m := range f.misses {
			t.Logf("  %s missed: %q", c.mode, m)
		}
		for _, m := range f.fps {
			t.Logf("  %s refused: %q", c.mode, m)
		}
		if missed > c.maxMissed {
			t.Errorf("%s lets through %.1f%% of the decidable dangerous rows, want at most %.0f%%", c.mode, 100*missed, 100*c.maxMissed)
		}
		if refused > 0.01 {
			t.Errorf("%s refuses %.1f%% of the harmless rows, want at most 1%%", c.mode, 100*refused)
		}
	}
}
