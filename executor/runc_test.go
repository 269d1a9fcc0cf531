package executor

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"testing"
)

func TestParseRuncVersion(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" when it names no version
	}{
		{"1.1.5+ds1-1+deb12u1", "1.1.5"}, // Debian 12's, as the engine reports it
		{"v1.1.12-0-g51d5e94", "1.1.12"}, // git describe: Docker's own packages
		{"1.1.12-0ubuntu2~22.04.1", "1.1.12"},
		{"v1.2.8", "1.2.8"},
		{"1.4.0-rc.3", "1.4.0-rc.3"},
		{"1.0.0-rc93", "1.0.0-rc.93"},
		{" 1.5.3\n", "1.5.3"},
		{"", ""},
		{"N/A", ""},
		{"51d5e94601ceffbbd85688df1c928ecccbfa4685", ""}, // a bare commit
		{"1.2", ""},
		{"1.99999999999999999999.0", ""},
	}
	for _, tt := range tests {
		v, ok := parseRuncVersion(tt.in)
		got := ""
		if ok {
			got = v.String()
		}
		if got != tt.want {
			t.Errorf("parseRuncVersion(%q) = %q (%t), want %q", tt.in, got, ok, tt.want)
		}
	}
}

func TestRuncVersionOrder(t *testing.T) {
	order := []string{"1.0.0-rc.93", "1.0.0", "1.1.5", "1.1.12", "1.2.0-rc.1", "1.2.0-rc.3", "1.2.0", "1.2.8", "1.10.0"}
	for i := range order {
		for j := range order {
			a, b := rv(order[i]), rv(order[j])
			if got, want := sign(a.compare(b)), sign(i-j); got != want {
				t.Errorf("compare(%s, %s) = %d, want %d", a, b, got, want)
			}
		}
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

// The November 2025 advisories, fixed in 1.2.8, 1.3.3 and 1.4.0-rc.3, at
// each edge of each line.
func TestRuncAffectedNovember2025(t *testing.T) {
	nov := []string{"CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881"}
	tests := []struct {
		version  string
		affected bool
	}{
		{"1.0.0", true},
		{"1.1.5", true}, // Debian 12's engine
		{"1.1.15", true},
		{"1.2.0-rc.1", true},
		{"1.2.7", true},
		{"1.2.8", false},
		{"1.2.9", false},
		{"1.3.0-rc.1", true},
		{"1.3.0", true},
		{"1.3.2", true},
		{"1.3.3", false},
		{"1.3.7", false},
		{"1.4.0-rc.1", true},
		{"1.4.0-rc.2", true},
		{"1.4.0-rc.3", false},
		{"1.4.0", false},
		{"1.5.3", false},
		{"1.6.0-rc.1", false},
		{"2.0.0", false},
	}
	for _, tt := range tests {
		got := runcAffected(rv(tt.version))
		for _, id := range nov {
			if slices.Contains(got, id) != tt.affected {
				t.Errorf("runc %s: affected by %s = %t, want %t (all: %q)", tt.version, id, !tt.affected, tt.affected, got)
			}
		}
	}
}

func TestRuncAffectedAll(t *testing.T) {
	tests := []struct {
		version string
		want    []string
	}{
		{"1.1.5", []string{"CVE-2024-21626", "CVE-2024-45310", "CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881", "CVE-2026-41579"}},
		{"1.1.12", []string{"CVE-2024-45310", "CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881", "CVE-2026-41579"}},
		{"1.1.14", []string{"CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881", "CVE-2026-41579"}},
		{"1.2.0-rc.2", []string{"CVE-2024-45310", "CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881", "CVE-2026-41579"}},
		{"1.2.8", []string{"CVE-2026-41579"}}, // the 1.2 line never got that fix
		{"1.3.5", []string{"CVE-2026-41579"}},
		{"1.3.6", nil},
		{"1.4.2", []string{"CVE-2026-41579"}},
		{"1.4.3", nil},
		{"1.5.0-rc.2", []string{"CVE-2026-41579"}},
		{"1.5.0-rc.3", nil},
		{"1.5.3", nil}, // what make runc builds
	}
	for _, tt := range tests {
		if got := runcAffected(rv(tt.version)); !slices.Equal(got, tt.want) {
			t.Errorf("runcAffected(%s) = %q, want %q", tt.version, got, tt.want)
		}
	}
}

func TestPathVersion(t *testing.T) {
	tests := []struct{ path, want string }{
		{"/usr/local/lib/airlock/runc/1.5.3/runc", "1.5.3"}, // .ci/install-runc's
		{"/opt/runc-v1.4.0-rc.3/bin/runc", "1.4.0-rc.3"},
		{"/opt/v1.2.8/runc", "1.2.8"},
		{"/usr/local/lib/airlock/runc/runc", ""},
		{"/opt/1.5.3-custom/runc", ""}, // not a version alone
		{"runc", ""},
		{"", ""},
	}
	for _, tt := range tests {
		got, ok := pathVersion(tt.path)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("pathVersion(%q) = %q, %t; want %q", tt.path, got, ok, tt.want)
		}
	}
}

// debianEngine is what Debian 12's Docker 20.10 engine says of itself.
func debianEngine(runtimes ...string) engineInfo {
	info := engineInfo{Runtimes: append([]string{"runc"}, runtimes...), DefaultRuntime: "runc", RuncCommit: "1.1.5+ds1-1+deb12u1",
		RuntimePaths: map[string]string{"runc": "runc", "runsc": "/usr/bin/runsc"}}
	for _, r := range runtimes {
		if r == PatchedRunc {
			info.RuntimePaths[r] = "/usr/local/lib/airlock/runc/1.5.3/runc"
		}
	}
	return info
}

func TestChooseRunc(t *testing.T) {
	nov := []string{"CVE-2024-21626", "CVE-2024-45310", "CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881", "CVE-2026-41579"}
	tests := []struct {
		name    string
		info    engineInfo
		patched string
		want    runcChoice
	}{
		{"the engine's own, affected", debianEngine("runsc"), PatchedRunc, runcChoice{"runc", "1.1.5+ds1-1+deb12u1", nov}},
		{"the patched one when offered", debianEngine("runsc", PatchedRunc), PatchedRunc, runcChoice{PatchedRunc, "1.5.3", nil}},
		{"the patched one turned off", debianEngine(PatchedRunc), "", runcChoice{"runc", "1.1.5+ds1-1+deb12u1", nov}},
		{"a patched runc of an affected version", engineInfo{Runtimes: []string{"runc", PatchedRunc}, DefaultRuntime: "runc", RuncCommit: "v1.2.8",
			RuntimePaths: map[string]string{PatchedRunc: "/usr/local/lib/airlock/runc/1.3.1/runc"}}, PatchedRunc,
			runcChoice{PatchedRunc, "1.3.1", []string{"CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881", "CVE-2026-41579"}}},
		{"a patched runc in a path with no version", engineInfo{Runtimes: []string{"runc", PatchedRunc}, DefaultRuntime: "runc", RuncCommit: "1.1.5",
			RuntimePaths: map[string]string{PatchedRunc: "/opt/runc"}}, PatchedRunc, runcChoice{PatchedRunc, "", nil}},
		{"the engine's default is the patched one", engineInfo{Runtimes: []string{"runc", PatchedRunc}, DefaultRuntime: PatchedRunc, RuncCommit: "v1.5.3",
			RuntimePaths: map[string]string{PatchedRunc: "/opt/runc"}}, PatchedRunc, runcChoice{PatchedRunc, "v1.5.3", nil}},
		// RuncCommit is the default runtime's: it says nothing of runc's.
		{"the engine's default is another", engineInfo{Runtimes: []string{"runc", "crun"}, DefaultRuntime: "crun", RuncCommit: "1.1.5"}, PatchedRunc,
			runcChoice{"runc", "", nil}},
		{"an engine that could not ask runc", engineInfo{Runtimes: []string{"runc"}, RuncCommit: "N/A"}, PatchedRunc, runcChoice{"runc", "", nil}},
		{"an engine of Docker's packages", engineInfo{Runtimes: []string{"runc"}, RuncCommit: "v1.1.12-0-g51d5e94"}, PatchedRunc,
			runcChoice{"runc", "v1.1.12-0-g51d5e94", nov[1:]}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := chooseRunc(tt.info, tt.patched)
			if got.Runtime != tt.want.Runtime || got.Version != tt.want.Version || !slices.Equal(got.Affected, tt.want.Affected) {
				t.Errorf("chooseRunc = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestRuncWarning(t *testing.T) {
	logged := func(c runcChoice) string {
		var buf bytes.Buffer
		c.warn(slog.New(slog.NewTextHandler(&buf, nil)), PatchedRunc)
		return buf.String()
	}
	out := logged(chooseRunc(debianEngine(), PatchedRunc))
	for _, want := range []string{"level=WARN", "runc 1.1.5+ds1-1+deb12u1", "CVE-2025-31133", "CVE-2025-52565", "CVE-2025-52881", "make runc", PatchedRunc} {
		if !strings.Contains(out, want) {
			t.Errorf("the warning for Debian's runc lacks %q:\n%s", want, out)
		}
	}
	if out := logged(chooseRunc(debianEngine(PatchedRunc), PatchedRunc)); out != "" {
		t.Errorf("a patched runc present logged a warning:\n%s", out)
	}
	if out := logged(runcChoice{Runtime: "runc"}); out != "" {
		t.Errorf("a runc of unknown version logged a warning:\n%s", out)
	}
	out = logged(runcChoice{Runtime: PatchedRunc, Version: "1.3.1", Affected: []string{"CVE-2025-31133"}})
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "rebuild") {
		t.Errorf("a patched runc of an affected version is not warned of:\n%s", out)
	}
}

// A run asking runc, or nothing, goes to the engine under the patched runc
// when the engine offers it; its Result still says runc. runsc is untouched.
func TestRunUsesPatchedRunc(t *testing.T) {
	tests := []struct {
		name     string
		runtimes []string
		patched  string
		spec     string // the Spec's runtime
		want     string // the plan's
	}{
		{"runc, patched offered", []string{"runc", "runsc", PatchedRunc}, PatchedRunc, "runc", PatchedRunc},
		{"no runtime, patched offered", []string{"runc", PatchedRunc}, PatchedRunc, "", PatchedRunc},
		{"runsc, patched offered", []string{"runc", "runsc", PatchedRunc}, PatchedRunc, "runsc", "runsc"},
		{"runc, patched absent", []string{"runc"}, PatchedRunc, "runc", "runc"},
		{"runc, patched turned off", []string{"runc", PatchedRunc}, "", "runc", "runc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeEngine()
			f.Runtimes = tt.runtimes
			e := newFakeExecutor(t, f, func(c *Config) { c.PatchedRunc = tt.patched })
			res, err := runWithin(t, t.Context(), e, Spec{Command: "true", Runtime: tt.spec})
			if err != nil || res.State != StateCompleted {
				t.Fatalf("Run = state %q, error %q, %v; want completed", res.State, res.Error, err)
			}
			if got := f.CreatedPlans(); len(got) != 1 || got[0].Runtime != tt.want {
				t.Errorf("the engine was asked for runtime %+v, want %s", got, tt.want)
			}
			wantRes := tt.spec
			if wantRes == "" {
				wantRes = "runc"
			}
			if res.Runtime != wantRes {
				t.Errorf("Result.runtime = %q, want %q: the caller's word, not the engine's", res.Runtime, wantRes)
			}
		})
	}
}

// New warns once, at start, of an engine whose runc is affected and offers
// no patched one, and says nothing when it offers one.
func TestNewWarnsOfAffectedRunc(t *testing.T) {
	for _, tt := range []struct {
		name     string
		runtimes []string
		warns    bool
	}{
		{"no patched runc", []string{"runc"}, true},
		{"a patched runc", []string{"runc", PatchedRunc}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeEngine()
			f.Runtimes, f.DefaultRuntime, f.RuncCommit = tt.runtimes, "runc", "1.1.5+ds1-1+deb12u1"
			f.RuntimePaths = map[string]string{"runc": "runc", PatchedRunc: "/usr/local/lib/airlock/runc/1.5.3/runc"}
			var buf bytes.Buffer
			e := newFakeExecutor(t, f, func(c *Config) { c.Logger = slog.New(slog.NewTextHandler(&buf, nil)) })
			if got := strings.Contains(buf.String(), "CVE-2025-52881"); got != tt.warns {
				t.Errorf("New warned: %t, want %t; its log:\n%s", got, tt.warns, buf.String())
			}
			rt, v := e.RuncRuntime()
			if tt.warns && (rt != "runc" || v != "1.1.5+ds1-1+deb12u1") || !tt.warns && (rt != PatchedRunc || v != "1.5.3") {
				t.Errorf("RuncRuntime = %q, %q", rt, v)
			}
		})
	}
}

func TestConfigPatchedRunc(t *testing.T) {
	for _, name := range []string{"runsc", "-x", "a b", "runc\n"} {
		c := testConfig()
		c.PatchedRunc = name
		if err := c.check(); err == nil || !strings.Contains(err.Error(), "PatchedRunc") {
			t.Errorf("PatchedRunc %q: check = %v, want an error naming PatchedRunc", name, err)
		}
	}
	for _, name := range []string{"", "runc", PatchedRunc, "runc-1.5"} {
		c := testConfig()
		c.PatchedRunc = name
		if err := c.check(); err != nil {
			t.Errorf("PatchedRunc %q: check = %v, want none", name, err)
		}
	}
}
