package server

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/executor"
)

func TestLoadPrecedence(t *testing.T) {
	file := filepath.Join(t.TempDir(), "airlock.json")
	os.WriteFile(file, []byte(`{
		"listen": "127.0.0.1:7000",
		"ceilings": {"memory": 1073741824, "pids": 500, "timeout": 600},
		"tokens": [{"token": "file-token", "tenant": "filed"}],
		"tenants": {"filed": {"max_concurrent": 3, "allowed_images": ["airlock/minimal"]}}
	}`), 0o600)
	env := map[string]string{
		"AIRLOCK_CONFIG":      file,
		"AIRLOCK_MAX_PIDS":    "300",
		"AIRLOCK_LISTEN":      "127.0.0.1:7001",
		"AIRLOCK_DATA":        "/srv/airlock",
		"AIRLOCK_RUNTIMES":    "runc",
		"AIRLOCK_NETWORKS":    "bridge",
		"AIRLOCK_TOKENS":      "env-token:envied",
		"AIRLOCK_POLICY_MODE": "strict",
	}
	cfg, printCfg, err := Load("serve", []string{"--listen", "127.0.0.1:7002", "--max-timeout", "2m"}, func(k string) string { return env[k] }, io.Discard)
	if err != nil || printCfg {
		t.Fatal(err, printCfg)
	}
	switch {
	case cfg.Listen != "127.0.0.1:7002": // flag over env over file
		t.Errorf("listen %q", cfg.Listen)
	case cfg.Ceilings.Pids != 300 || cfg.Ceilings.Memory != 1<<30 || cfg.Ceilings.Timeout != 120:
		t.Errorf("ceilings %+v", cfg.Ceilings)
	case cfg.DataDir != "/srv/airlock" || cfg.AuditLog != "/srv/airlock/audit.log":
		t.Errorf("data %q audit %q", cfg.DataDir, cfg.AuditLog)
	case len(cfg.Tokens) != 1 || cfg.Tokens[0].Tenant != "envied": // env replaces the file's list
		t.Errorf("tokens %+v", cfg.Tokens)
	case cfg.Tenants["filed"].MaxConcurrent != 3:
		t.Errorf("tenants %+v", cfg.Tenants)
	}
	ec, err := cfg.ExecutorConfig()
	if err != nil {
		t.Fatal(err)
	}
	if ec.DefaultRuntime != "runc" || strings.Join(ec.Networks, ",") != "none,bridge" || ec.Policy.Mode() != "strict" ||
		ec.Defaults.Pids != 256 || ec.Defaults.Timeout.Seconds() != 60 || ec.Pull != executor.PullNever {
		t.Errorf("executor config %+v", ec)
	}
	if r := cfg.Redacted(); strings.Contains(r.Tokens[0].Token, "env-token") || cfg.Tokens[0].Token != "env-token" {
		t.Errorf("redacted %+v, original %+v", r.Tokens, cfg.Tokens)
	}
}

func TestLoadRefusesBadSettings(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"ceilings": {"memroy": 5}}`), 0o600)
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--max-memory", "lots"}, nil, "--max-memory"},
		{[]string{"--max-timeout", "-5"}, nil, "--max-timeout"},
		{[]string{"--listen", "8080"}, nil, "listen"},
		{nil, map[string]string{"AIRLOCK_TOKENS": "a:b,c"}, "AIRLOCK_TOKENS"},
		{nil, map[string]string{"AIRLOCK_TOKENS": "same:x,same:y"}, "tokens[1]"},
		{nil, map[string]string{"AIRLOCK_MAX_CONCURRENT": "0"}, "AIRLOCK_MAX_CONCURRENT"},
		{nil, map[string]string{"AIRLOCK_POLICY_MODE": "lax"}, "policy.mode"},
		{nil, map[string]string{"AIRLOCK_CONFIG": bad}, "memroy"},
		{nil, map[string]string{"AIRLOCK_CONFIG": filepath.Join(dir, "missing.json")}, "config file"},
		{nil, map[string]string{"AIRLOCK_MAX_PIDS": "1"}, "ceilings.pids"},
		{[]string{"extra"}, nil, "unexpected argument"},
		{nil, map[string]string{"AIRLOCK_PULL": "always"}, "pull"},
	}
	for _, c := range cases {
		_, _, err := Load("serve", c.args, func(k string) string { return c.env[k] }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %v: error %v, want one naming %q", c.args, c.env, err, c.want)
		}
	}
	if _, _, err := Load("serve", []string{"--nope"}, func(string) string { return "" }, io.Discard); !errors.Is(err, ErrUsage) {
		t.Errorf("unknown flag: %v", err)
	}
}

// FuzzDecodeSpec feeds arbitrary bodies to the request decoder: it never panics,
// and refuses what it cannot take with a 400 or 413 that names a field.
func FuzzDecodeSpec(f *testing.F) {
	for _, seed := range []string{
		`{"command":"echo hi"}`, `{"argv":["a","b"],"env":{"A":"1"},"timeout":1.5}`, `{"memory":"1g"}`,
		`{"labels":{"a":1}}`, `[]`, `{"command":"x"} trailing`, `{"unknown":true}`, ``, `{"stdin":"\u0000"}`, `{"timeout":1e400}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r := newRequest(body)
		var spec executor.Spec
		err := readJSON(discardWriter{}, r, &spec, 1<<16, false)
		if err == nil {
			return
		}
		e, ok := err.(*api.Error)
		if !ok || (e.Status != 400 && e.Status != 413) || e.Field == "" || !strings.HasPrefix(e.Message, e.Field) {
			t.Fatalf("body %q: error %#v", body, err)
		}
	})
}

func newRequest(body []byte) *http.Request {
	r := httptest.NewRequest("POST", "/v1/processes", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	return r
}

type discardWriter struct{}

func (discardWriter) Header() http.Header         { return http.Header{} }
func (discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (discardWriter) WriteHeader(int)             {}

func TestLoadPull(t *testing.T) {
	cfg, _, err := Load("serve", []string{"--pull", "missing"}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if ec, err := cfg.ExecutorConfig(); err != nil || ec.Pull != executor.PullMissing {
		t.Fatalf("--pull missing: %v, %v", ec.Pull, err)
	}
}

// A switch's flag alone turns it on, =false turns it off, and the next
// argument stays an argument of its own.
func TestLoadSwitches(t *testing.T) {
	none := func(string) string { return "" }
	cfg, _, err := Load("serve", []string{"--data", t.TempDir(), "--kill-jobs-on-shutdown", "--skip-image-builds", "--max-pids", "300"}, none, io.Discard)
	if err != nil || !cfg.KillJobsOnShutdown || !cfg.SkipImageBuilds || cfg.Ceilings.Pids != 300 {
		t.Fatalf("switches alone: %v; kill %v skip %v pids %d", err, cfg.KillJobsOnShutdown, cfg.SkipImageBuilds, cfg.Ceilings.Pids)
	}
	cfg, _, err = Load("serve", []string{"--data", t.TempDir(), "--skip-image-builds=false"}, none, io.Discard)
	if err != nil || cfg.SkipImageBuilds {
		t.Fatalf("--skip-image-builds=false: %v, %v", err, cfg.SkipImageBuilds)
	}
	for name := range switches {
		if !slices.ContainsFunc(settings, func(s setting) bool { return s.name == name }) {
			t.Errorf("switch %q is no setting", name)
		}
	}
}
