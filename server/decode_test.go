package server

import (
	"errors"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/executor"
)

func TestDecodeJSON(t *testing.T) {
	cases := []struct {
		name, body string
		field      string // "" when the body is taken
		check      func(executor.Spec) bool
	}{
		{"plain", `{"command":"ls","memory":1073741824}`, "", func(s executor.Spec) bool { return s.Memory == 1<<30 }},
		{"exponent integer", `{"command":"ls","memory":1e9}`, "", func(s executor.Spec) bool { return s.Memory == 1e9 }},
		{"integral with a point", `{"command":"ls","memory":1073741824.0}`, "", func(s executor.Spec) bool { return s.Memory == 1<<30 }},
		{"large exponent", `{"command":"ls","pids":2.56E2}`, "", func(s executor.Spec) bool { return s.Pids == 256 }},
		{"fractional seconds", `{"command":"ls","timeout":1.5}`, "", func(s executor.Spec) bool { return s.Timeout == 1.5 }},
		{"byte order mark", "\uFEFF" + `{"command":"ls"}`, "", func(s executor.Spec) bool { return s.Command == "ls" }},
		{"null field", `{"command":"ls","env":null}`, "", func(s executor.Spec) bool { return s.Env == nil }},
		{"nested names", `{"argv":["a","b"],"env":{"A":"1"},"labels":{"k":"v"}}`, "", func(s executor.Spec) bool { return s.Env["A"] == "1" }},
		{"another case", `{"command":"a","COMMAND":"b"}`, "COMMAND", nil},
		{"only another case", `{"Command":"rm"}`, "Command", nil},
		{"duplicate key", `{"command":"a","command":"b"}`, "command", nil},
		{"duplicate env name", `{"command":"a","env":{"A":"1","A":"2"}}`, "env.A", nil},
		{"fraction for an integer", `{"command":"ls","memory":1.5}`, "memory", nil},
		{"integer out of range", `{"command":"ls","memory":1e30}`, "memory", nil},
		{"int field too large for int", `{"command":"ls","tail_lines":1e19}`, "tail_lines", nil},
		{"string for an integer", `{"command":"ls","memory":"1g"}`, "memory", nil},
		{"number for a string", `{"command":5}`, "command", nil},
		{"object in argv", `{"argv":["a",{}]}`, "argv[1]", nil},
		{"number in env", `{"command":"ls","env":{"A":1}}`, "env.A", nil},
		{"array at the top", `[]`, "body", nil},
		{"trailing data", `{"command":"ls"} {}`, "body", nil},
		{"cut short", `{"command":"ls"`, "body", nil},
		{"not json", `command=ls`, "body", nil},
		{"empty key", `{"":1}`, "body", nil},
		{"infinite seconds", `{"command":"ls","timeout":1e400}`, "timeout", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var spec executor.Spec
			err := decodeJSON([]byte(c.body), &spec)
			if c.field == "" {
				if err != nil || !c.check(spec) {
					t.Fatalf("decode %s: %+v, %v", c.body, spec, err)
				}
				return
			}
			var e *api.Error
			if !errors.As(err, &e) || e.Status != 400 || e.Field != c.field {
				t.Fatalf("decode %s: %#v, want a 400 naming %q", c.body, err, c.field)
			}
			// The message speaks JSON, never Go, and names its field once.
			if strings.Contains(e.Message, "executor.") || strings.Contains(e.Message, "int64") ||
				strings.Contains(e.Message, "json:") || strings.Count(e.Message, e.Field+": ") != 1 {
				t.Fatalf("message %q", e.Message)
			}
		})
	}
}

// TestCheckBoundsItsInput: a command larger than any run could take is refused
// before the policy parses it, naming the field or the body and the limit.
func TestCheckBoundsItsInput(t *testing.T) {
	h := newHarness(t, nil)
	huge := `{"command":"` + strings.Repeat("echo x; ", 30<<20/8) + `"}`
	status, data, _ := h.do("POST", "/v1/check", tokA, huge)
	wantError(t, status, data, 413, "too_large", "body")
	if !strings.Contains(string(data), "limit of") {
		t.Fatalf("no limit named: %s", data)
	}
	big := `{"command":"` + strings.Repeat("echo x; ", 200<<10/8) + `"}`
	status, data, _ = h.do("POST", "/v1/check", tokA, big)
	wantError(t, status, data, 400, "invalid_request", "command")
	if !strings.Contains(string(data), "131071") {
		t.Fatalf("no limit named: %s", data)
	}
}
