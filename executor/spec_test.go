package executor

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"
)

// testConfig is DefaultConfig with the engine-derived CPU ceiling fixed at 2, a
// short kill grace and a quiet logger.
func testConfig() Config {
	c := DefaultConfig()
	c.Ceilings.CPUs = 2
	c.KillGrace = 50 * time.Millisecond
	c.Logger = slog.New(slog.DiscardHandler)
	c.InitPath = EngineInit // the fake engine runs no init
	return c
}

func ptr[T any](v T) *T { return &v }

func TestNormalizeRejects(t *testing.T) {
	big := strings.Repeat("x", maxArgLen+1)
	nearMax := strings.Repeat("x", 120<<10)
	tests := []struct {
		name      string
		cfg       func(*Config)
		spec      Spec
		wantField string
	}{
		{name: "neither command nor argv", spec: Spec{}, wantField: "command"},
		{name: "empty argv only", spec: Spec{Argv: []string{}}, wantField: "command"},
		{name: "both command and argv", spec: Spec{Command: "true", Argv: []string{"true"}}, wantField: "command"},
		{name: "blank command", spec: Spec{Command: " \t\n "}, wantField: "command"},
		{name: "NUL in command", spec: Spec{Command: "echo a\x00b"}, wantField: "command"},
		{name: "command over 128KiB-1", spec: Spec{Command: big}, wantField: "command"},
		{name: "argv[0] empty", spec: Spec{Argv: []string{"", "x"}}, wantField: "argv[0]"},
		{name: "NUL in argv[0]", spec: Spec{Argv: []string{"e\x00cho"}}, wantField: "argv[0]"},
		{name: "NUL in argv[2]", spec: Spec{Argv: []string{"echo", "a", "b\x00"}}, wantField: "argv[2]"},
		{name: "argv[1] over 128KiB-1", spec: Spec{Argv: []string{"echo", big}}, wantField: "argv[1]"},
		{name: "env name starts with a digit", spec: Spec{Command: "true", Env: map[string]string{"1A": "x"}}, wantField: "env"},
		{name: "env name with a dash", spec: Spec{Command: "true", Env: map[string]string{"A-B": "x"}}, wantField: "env"},
		{name: "env name empty", spec: Spec{Command: "true", Env: map[string]string{"": "x"}}, wantField: "env"},
		{name: "env name with a space", spec: Spec{Command: "true", Env: map[string]string{"A B": "x"}}, wantField: "env"},
		{name: "env name with =", spec: Spec{Command: "true", Env: map[string]string{"A=B": "x"}}, wantField: "env"},
		{name: "NUL in env value", spec: Spec{Command: "true", Env: map[string]string{"FOO": "a\x00b"}}, wantField: "env.FOO"},
		{name: "env variable over 128KiB-1", spec: Spec{Command: "true", Env: map[string]string{"BIG": big[:maxArgLen-3]}}, wantField: "env.BIG"},
		{
			name:      "argv total over MaxArgBytes",
			spec:      Spec{Argv: []string{"echo", nearMax, nearMax, nearMax, nearMax, nearMax, nearMax, nearMax, nearMax, nearMax}},
			wantField: "argv",
		},
		{
			name:      "command plus env over MaxArgBytes",
			cfg:       func(c *Config) { c.MaxArgBytes = 100 },
			spec:      Spec{Command: strings.Repeat("y", 60), Env: map[string]string{"A": strings.Repeat("z", 40)}},
			wantField: "argv",
		},
		{
			name:      "labels push the total over MaxArgBytes",
			cfg:       func(c *Config) { c.MaxArgBytes = 100 },
			spec:      Spec{Command: strings.Repeat("y", 60), Labels: map[string]string{"agent": strings.Repeat("z", 40)}},
			wantField: "labels",
		},
		{name: "stdin over MaxStdin", cfg: func(c *Config) { c.MaxStdin = 8 }, spec: Spec{Command: "cat", Stdin: ptr("123456789")}, wantField: "stdin"},
		{name: "image with a space", spec: Spec{Command: "true", Image: "alpine latest"}, wantField: "image"},
		{name: "timeout negative", spec: Spec{Command: "true", Timeout: -1}, wantField: "timeout"},
		{name: "timeout NaN", spec: Spec{Command: "true", Timeout: Seconds(math.NaN())}, wantField: "timeout"},
		{name: "timeout over ceiling", spec: Spec{Command: "true", Timeout: 3601}, wantField: "timeout"},
		{name: "timeout +Inf", spec: Spec{Command: "true", Timeout: Seconds(math.Inf(1))}, wantField: "timeout"},
		{name: "timeout below 0.01s", spec: Spec{Command: "true", Timeout: 0.009}, wantField: "timeout"},
		{name: "memory negative", spec: Spec{Command: "true", Memory: -1}, wantField: "memory"},
		{name: "memory over ceiling", spec: Spec{Command: "true", Memory: 8<<30 + 1}, wantField: "memory"},
		{name: "memory below 6MiB", spec: Spec{Command: "true", Memory: 6<<20 - 1}, wantField: "memory"},
		{name: "cpus over ceiling", spec: Spec{Command: "true", CPUs: 2.5}, wantField: "cpus"},
		{name: "cpus negative", spec: Spec{Command: "true", CPUs: -0.5}, wantField: "cpus"},
		{name: "cpus NaN", spec: Spec{Command: "true", CPUs: math.NaN()}, wantField: "cpus"},
		{name: "cpus below 0.01", spec: Spec{Command: "true", CPUs: 0.009}, wantField: "cpus"},
		{name: "pids over ceiling", spec: Spec{Command: "true", Pids: 4097}, wantField: "pids"},
		{name: "pids negative", spec: Spec{Command: "true", Pids: -1}, wantField: "pids"},
		{name: "pids below 2", spec: Spec{Command: "true", Pids: 1}, wantField: "pids"},
		{name: "tmpfs_size over ceiling", spec: Spec{Command: "true", TmpfsSize: 1<<30 + 1}, wantField: "tmpfs_size"},
		{name: "tmpfs_size below 1MiB", spec: Spec{Command: "true", TmpfsSize: 1<<20 - 1}, wantField: "tmpfs_size"},
		{name: "max_output over ceiling", spec: Spec{Command: "true", MaxOutput: 64<<20 + 1}, wantField: "max_output"},
		{name: "max_output negative", spec: Spec{Command: "true", MaxOutput: -1}, wantField: "max_output"},
		{name: "tail_lines negative", spec: Spec{Command: "true", TailLines: -1}, wantField: "tail_lines"},
		{name: "tail_lines too large", spec: Spec{Command: "true", TailLines: 100001}, wantField: "tail_lines"},
		{name: "network not allowed", spec: Spec{Command: "true", Network: "bridge"}, wantField: "network"},
		{name: "network host not allowed", spec: Spec{Command: "true", Network: "host"}, wantField: "network"},
		{name: "runtime not allowed", spec: Spec{Command: "true", Runtime: "kata"}, wantField: "runtime"},
		{name: "user 0", spec: Spec{Command: "true", User: "0"}, wantField: "user"},
		{name: "user root", spec: Spec{Command: "true", User: "root"}, wantField: "user"},
		{name: "user 0:0", spec: Spec{Command: "true", User: "0:0"}, wantField: "user"},
		{name: "user root:nogroup", spec: Spec{Command: "true", User: "root:65534"}, wantField: "user"},
		{name: "user with a space", spec: Spec{Command: "true", User: "no body"}, wantField: "user"},
		{name: "user with empty uid", spec: Spec{Command: "true", User: ":65534"}, wantField: "user"},
		{name: "user with empty gid", spec: Spec{Command: "true", User: "65534:"}, wantField: "user"},
		{name: "user with two colons", spec: Spec{Command: "true", User: "1:2:3"}, wantField: "user"},
		{name: "user negative", spec: Spec{Command: "true", User: "-1"}, wantField: "user"},
		{name: "workdir relative", spec: Spec{Command: "true", Workdir: "workspace/sub"}, wantField: "workdir"},
		{name: "workdir through /proc", spec: Spec{Command: "true", Workdir: "/proc/self/fd/8"}, wantField: "workdir"},
		{name: "workdir through /proc, uncleaned", spec: Spec{Command: "true", Workdir: "/./proc/self/fd/8"}, wantField: "workdir"},
		{name: "workdir //proc", spec: Spec{Command: "true", Workdir: "//proc"}, wantField: "workdir"},
		{name: "workdir /a/../proc", spec: Spec{Command: "true", Workdir: "/a/../proc/1/cwd"}, wantField: "workdir"},
		{name: "workdir /sys", spec: Spec{Command: "true", Workdir: "/sys/fs/cgroup"}, wantField: "workdir"},
		{name: "workdir /dev", spec: Spec{Command: "true", Workdir: "/dev"}, wantField: "workdir"},
		{name: "label with reserved prefix", spec: Spec{Command: "true", Labels: map[string]string{"io.airlock.id": "x"}}, wantField: "labels.io.airlock.id"},
		{name: "label managed reserved", spec: Spec{Command: "true", Labels: map[string]string{LabelManaged: "false"}}, wantField: "labels." + LabelManaged},
		{name: "label name empty", spec: Spec{Command: "true", Labels: map[string]string{"": "x"}}, wantField: "labels"},
		{name: "NUL in label value", spec: Spec{Command: "true", Labels: map[string]string{"agent": "a\x00"}}, wantField: "labels.agent"},
		{name: "queue_timeout negative", spec: Spec{Command: "true", QueueTimeout: -1}, wantField: "queue_timeout"},
		{name: "queue_timeout NaN", spec: Spec{Command: "true", QueueTimeout: Seconds(math.NaN())}, wantField: "queue_timeout"},
		{name: "queue_timeout over an hour", spec: Spec{Command: "true", QueueTimeout: 3601}, wantField: "queue_timeout"},
		{name: "queue_timeout +Inf", spec: Spec{Command: "true", QueueTimeout: Seconds(math.Inf(1))}, wantField: "queue_timeout"},
		{name: "queue_timeout below 0.01s", spec: Spec{Command: "true", QueueTimeout: 0.001}, wantField: "queue_timeout"},
		{name: "retry negative", spec: Spec{Command: "true", Background: true, Retry: -1}, wantField: "retry"},
		{name: "retry over 10", spec: Spec{Command: "true", Background: true, Retry: 11}, wantField: "retry"},
		{name: "retry on a foreground run", spec: Spec{Command: "true", Retry: 1}, wantField: "retry"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			got, err := cfg.normalize(tt.spec, Caller{})
			if err == nil {
				t.Fatalf("normalize accepted the spec (filled: %+v); the user would get no error for an invalid %s", got, tt.wantField)
			}
			if !errors.Is(err, ErrInvalidSpec) {
				t.Errorf("errors.Is(%v, ErrInvalidSpec) = false; the API would not answer 400", err)
			}
			var se *SpecError
			if !errors.As(err, &se) {
				t.Fatalf("error %v (%T) is not a *SpecError; the user would not see which field is wrong", err, err)
			}
			if se.Field != tt.wantField {
				t.Errorf("SpecError.Field = %q, want %q (error: %v)", se.Field, tt.wantField, err)
			}
			if se.Reason == "" {
				t.Errorf("SpecError.Reason is empty; the user would not see why %q is wrong", se.Field)
			}
		})
	}
}

func TestNormalizeDefaults(t *testing.T) {
	cfg := testConfig()
	for _, spec := range []Spec{
		{Command: "echo hi"},
		{Argv: []string{"echo", "hi"}},
	} {
		got, err := cfg.normalize(spec, Caller{})
		if err != nil {
			t.Fatalf("normalize(%+v): %v; a minimal valid request was refused", spec, err)
		}
		want := spec
		want.Image = "airlock/minimal"
		want.Workdir = "/workspace"
		want.User = "65534:65534"
		want.Memory = 512 << 20
		want.CPUs = 1
		want.Pids = 256
		want.TmpfsSize = 64 << 20
		want.MaxOutput = 1 << 20
		want.TailLines = 100
		want.Network = "none"
		want.Runtime = "runc"
		want.Timeout = 60
		assertSpec(t, got, want)
	}
}

// assertSpec compares the scalar fields of two specs, naming each difference.
func assertSpec(t *testing.T, got, want Spec) {
	t.Helper()
	check := func(field string, g, w any) {
		if g != w {
			t.Errorf("normalized %s = %v, want %v", field, g, w)
		}
	}
	check("command", got.Command, want.Command)
	check("argv", strings.Join(got.Argv, "\x00"), strings.Join(want.Argv, "\x00"))
	check("image", got.Image, want.Image)
	check("workdir", got.Workdir, want.Workdir)
	check("user", got.User, want.User)
	check("memory", got.Memory, want.Memory)
	check("cpus", got.CPUs, want.CPUs)
	check("pids", got.Pids, want.Pids)
	check("tmpfs_size", got.TmpfsSize, want.TmpfsSize)
	check("max_output", got.MaxOutput, want.MaxOutput)
	check("tail_lines", got.TailLines, want.TailLines)
	check("network", got.Network, want.Network)
	check("runtime", got.Runtime, want.Runtime)
	check("timeout", got.Timeout, want.Timeout)
	check("background", got.Background, want.Background)
}

func TestNormalizeAccepts(t *testing.T) {
	atMax := strings.Repeat("x", maxArgLen)
	tests := []struct {
		name  string
		cfg   func(*Config)
		spec  Spec
		check func(t *testing.T, s Spec) // extra assertions on the normalized spec
	}{
		{name: "argument of exactly 128KiB-1", spec: Spec{Argv: []string{"echo", atMax}}},
		{name: "command of exactly 128KiB-1", spec: Spec{Command: atMax}},
		{name: "env variable of exactly 128KiB-1", spec: Spec{Command: "true", Env: map[string]string{"BIG": atMax[:maxArgLen-4]}}},
		{name: "empty argument after argv[0]", spec: Spec{Argv: []string{"printf", ""}}},
		{name: "valid env names", spec: Spec{Command: "true", Env: map[string]string{"A": "", "_": "x", "lower_1": "y", "PATH": "/bin", "A1_B2": "z"}}},
		{name: "stdin at MaxStdin", cfg: func(c *Config) { c.MaxStdin = 8 }, spec: Spec{Command: "cat", Stdin: ptr("12345678")}},
		{name: "empty stdin", spec: Spec{Command: "cat", Stdin: ptr("")}},
		{
			name: "timeout at ceiling", spec: Spec{Command: "true", Timeout: 3600},
			check: func(t *testing.T, s Spec) { wantEq(t, "timeout", s.Timeout, Seconds(3600)) },
		},
		{
			name: "timeout at minimum", spec: Spec{Command: "true", Timeout: 0.01},
			check: func(t *testing.T, s Spec) { wantEq(t, "timeout", s.Timeout, Seconds(0.01)) },
		},
		{
			name: "zero timeout means the configured default", cfg: func(c *Config) { c.Defaults.Timeout = 90 * time.Second },
			spec:  Spec{Command: "true"},
			check: func(t *testing.T, s Spec) { wantEq(t, "timeout", s.Timeout, Seconds(90)) },
		},
		{
			name: "memory at floor", spec: Spec{Command: "true", Memory: 6 << 20},
			check: func(t *testing.T, s Spec) { wantEq(t, "memory", s.Memory, int64(6<<20)) },
		},
		{
			name: "memory at ceiling", spec: Spec{Command: "true", Memory: 8 << 30},
			check: func(t *testing.T, s Spec) { wantEq(t, "memory", s.Memory, int64(8<<30)) },
		},
		{
			name: "cpus fraction", spec: Spec{Command: "true", CPUs: 0.01},
			check: func(t *testing.T, s Spec) { wantEq(t, "cpus", s.CPUs, 0.01) },
		},
		{
			name: "cpus at ceiling", spec: Spec{Command: "true", CPUs: 2},
			check: func(t *testing.T, s Spec) { wantEq(t, "cpus", s.CPUs, 2.0) },
		},
		{
			name: "pids at floor and ceiling of others", spec: Spec{Command: "true", Pids: 2, TmpfsSize: 1 << 30, MaxOutput: 64 << 20},
			check: func(t *testing.T, s Spec) {
				wantEq(t, "pids", s.Pids, int64(2))
				wantEq(t, "tmpfs_size", s.TmpfsSize, int64(1<<30))
				wantEq(t, "max_output", s.MaxOutput, int64(64<<20))
			},
		},
		{
			name: "tail_lines at limit", spec: Spec{Command: "true", TailLines: 100000},
			check: func(t *testing.T, s Spec) { wantEq(t, "tail_lines", s.TailLines, 100000) },
		},
		{
			name: "network allowed by the operator", cfg: func(c *Config) { c.Networks = []string{"none", "bridge"} },
			spec:  Spec{Command: "true", Network: "bridge"},
			check: func(t *testing.T, s Spec) { wantEq(t, "network", s.Network, "bridge") },
		},
		{
			name: "runtime runsc allowed", spec: Spec{Command: "true", Runtime: "runsc"},
			check: func(t *testing.T, s Spec) { wantEq(t, "runtime", s.Runtime, "runsc") },
		},
		{name: "user 0 with AllowRoot", cfg: func(c *Config) { c.AllowRoot = true }, spec: Spec{Command: "true", User: "0"}},
		{name: "user root with AllowRoot", cfg: func(c *Config) { c.AllowRoot = true }, spec: Spec{Command: "true", User: "root"}},
		{name: "user 0:0 with AllowRoot", cfg: func(c *Config) { c.AllowRoot = true }, spec: Spec{Command: "true", User: "0:0"}},
		{
			name: "user uid:gid", spec: Spec{Command: "true", User: "1000:1000"},
			check: func(t *testing.T, s Spec) { wantEq(t, "user", s.User, "1000:1000") },
		},
		{
			name: "numeric uid alone gets the same gid, not the engine's gid 0", spec: Spec{Command: "true", User: "1234"},
			check: func(t *testing.T, s Spec) { wantEq(t, "user", s.User, "1234:1234") },
		},
		{name: "user name", spec: Spec{Command: "true", User: "nobody"}},
		{name: "user name:group", spec: Spec{Command: "true", User: "www-data:www-data"}},
		{
			name: "workdir absolute", spec: Spec{Command: "true", Workdir: "/tmp/x"},
			check: func(t *testing.T, s Spec) { wantEq(t, "workdir", s.Workdir, "/tmp/x") },
		},
		{
			name: "image given", spec: Spec{Command: "true", Image: "alpine:3.20"},
			check: func(t *testing.T, s Spec) { wantEq(t, "image", s.Image, "alpine:3.20") },
		},
		{
			name: "caller labels kept", spec: Spec{Command: "true", Labels: map[string]string{"agent": "a1", "io.example/x": ""}},
			check: func(t *testing.T, s Spec) {
				wantEq(t, "labels.agent", s.Labels["agent"], "a1")
				wantEq(t, "len(labels)", len(s.Labels), 2)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			got, err := cfg.normalize(tt.spec, Caller{})
			if err != nil {
				t.Fatalf("normalize refused a valid request: %v", err)
			}
			if tt.check != nil {
				tt.check(t, got)
			}
		})
	}
}

func wantEq[T comparable](t *testing.T, field string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("normalized %s = %v, want %v", field, got, want)
	}
}

// TestNormalizeRefusesRootAliases documents a bug: the engine resolves a numeric
// user with strconv.Atoi (github.com/moby/sys/user.GetExecUser), so "00" is uid 0,
// yet isRoot compares the string with "0" and lets it through without AllowRoot.
func TestNormalizeRefusesRootAliases(t *testing.T) {
	for _, user := range []string{"00", "000:0", "0000:65534"} {
		cfg := testConfig()
		if _, err := cfg.normalize(Spec{Command: "id", User: user}, Caller{}); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("user %q (uid 0 to the engine) was accepted without AllowRoot: err = %v", user, err)
		}
	}
}

// TestNormalizeHugeTimeoutReason documents a bug: a timeout too large for a
// time.Duration overflows to a negative Duration on amd64, so the user is told it
// is too short instead of over the server's limit.
func TestNormalizeHugeTimeoutReason(t *testing.T) {
	cfg := testConfig()
	_, err := cfg.normalize(Spec{Command: "true", Timeout: 1e10}, Caller{})
	var se *SpecError
	if !errors.As(err, &se) || !strings.Contains(se.Reason, "greater than") {
		t.Errorf("timeout 1e10s: error %v, want a reason saying it is over the server's limit", err)
	}
}

func TestConfigCheck(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		want   string // a word the error must contain; "" means valid
	}{
		{name: "test config is valid", change: func(*Config) {}},
		{name: "KillGrace zero is valid", change: func(c *Config) { c.KillGrace = 0 }},
		{name: "default memory over ceiling", change: func(c *Config) { c.Defaults.Memory = c.Ceilings.Memory + 1 }, want: "memory"},
		{name: "default memory below floor", change: func(c *Config) { c.Defaults.Memory = minMemory - 1 }, want: "memory"},
		{name: "default cpus over ceiling", change: func(c *Config) { c.Defaults.CPUs = 3 }, want: "cpus"},
		{name: "cpu ceiling not filled in", change: func(c *Config) { c.Ceilings.CPUs = 0 }, want: "cpus"},
		{name: "default cpus zero", change: func(c *Config) { c.Defaults.CPUs = 0 }, want: "cpus"},
		{name: "default pids over ceiling", change: func(c *Config) { c.Defaults.Pids = c.Ceilings.Pids + 1 }, want: "pids"},
		{name: "default tmpfs over ceiling", change: func(c *Config) { c.Defaults.TmpfsSize = c.Ceilings.TmpfsSize + 1 }, want: "tmpfs"},
		{name: "default timeout over ceiling", change: func(c *Config) { c.Defaults.Timeout = c.Ceilings.Timeout + time.Second }, want: "timeout"},
		{name: "default timeout zero", change: func(c *Config) { c.Defaults.Timeout = 0 }, want: "timeout"},
		{name: "default max output over ceiling", change: func(c *Config) { c.Defaults.MaxOutput = c.Ceilings.MaxOutput + 1 }, want: "output"},
		{name: "empty default image", change: func(c *Config) { c.DefaultImage = "" }, want: "DefaultImage"},
		{name: "negative tail lines", change: func(c *Config) { c.DefaultTailLines = -1 }, want: "DefaultTailLines"},
		{name: "negative kill grace", change: func(c *Config) { c.KillGrace = -time.Second }, want: "KillGrace"},
		{name: "bad default user", change: func(c *Config) { c.DefaultUser = "no body" }, want: "DefaultUser"},
		{name: "default runtime not allowed", change: func(c *Config) { c.DefaultRuntime = "kata" }, want: "DefaultRuntime"},
		{name: "nil logger", change: func(c *Config) { c.Logger = nil }, want: "Logger"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			tt.change(&cfg)
			err := cfg.check()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("check refused a valid config: %v", err)
			case tt.want != "" && err == nil:
				t.Fatalf("check accepted a config the operator got wrong (%s)", tt.name)
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Errorf("check error %q does not name %q; the operator would not know what to fix", err, tt.want)
			}
		})
	}
}

func TestSpecErrorMessage(t *testing.T) {
	err := error(&SpecError{Field: "memory", Reason: "must not be negative"})
	if got, want := err.Error(), "memory: must not be negative"; got != want {
		t.Errorf("SpecError.Error() = %q, want %q", got, want)
	}
	if errors.Is(err, ErrEngine) {
		t.Errorf("a SpecError matches ErrEngine; an invalid request would be reported as an engine failure")
	}
	if !errors.Is(fmt.Errorf("run: %w", err), ErrInvalidSpec) {
		t.Errorf("a wrapped SpecError no longer matches ErrInvalidSpec")
	}
}

func TestFormatBytes(t *testing.T) {
	for _, tt := range []struct {
		n    int64
		want string
	}{
		{512 << 20, "512MiB"}, {8 << 30, "8GiB"}, {1536 << 10, "1536KiB"}, {1<<20 + 1, "1048577 bytes"}, {0, "0 bytes"},
	} {
		if got := formatBytes(tt.n); got != tt.want {
			t.Errorf("formatBytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}
