package executor

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/egress"
)

func TestNormalizeSecrets(t *testing.T) {
	c := testConfig()
	c.InitPath = "/init" // secrets need airlock's init
	c.Egress.Allowed = []string{"*.example.com", "api.test"}
	c.Secrets = []Secret{{Name: "API_TOKEN", Value: "server-value-1", Hosts: []string{"api.test"}}}
	tenantA := Caller{Tenant: "a", Secrets: []Secret{
		{Name: "GIT_TOKEN", Value: "a's", Hosts: []string{"git.example.com"}, BasicUser: "git"},
		{Name: "WIDE", Value: "x", Hosts: []string{"elsewhere.org"}},
	}}
	tenantB := Caller{Tenant: "b"}

	s, err := c.normalize(Spec{Command: "true", Secrets: []string{"GIT_TOKEN", "API_TOKEN"}}, tenantA)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"api.test", "git.example.com"}; !slices.Equal(s.Egress, want) {
		t.Errorf("egress %q; want the secrets' hosts %q", s.Egress, want)
	}
	for _, tc := range []struct {
		name   string
		spec   Spec
		caller Caller
		field  string
	}{
		{"another tenant's", Spec{Secrets: []string{"GIT_TOKEN"}}, tenantB, "secrets"},
		{"unknown", Spec{Secrets: []string{"NOPE"}}, tenantA, "secrets"},
		{"twice", Spec{Secrets: []string{"API_TOKEN", "API_TOKEN"}}, tenantA, "secrets"},
		{"also in env", Spec{Secrets: []string{"API_TOKEN"}, Env: map[string]string{"API_TOKEN": "x"}}, tenantA, "env.API_TOKEN"},
		{"hosts out of bounds", Spec{Secrets: []string{"WIDE"}}, tenantA, "secrets.WIDE"},
		{"with a network", Spec{Secrets: []string{"API_TOKEN"}, Network: "bridge"}, tenantA, "egress"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Command = "true"
			_, err := c.normalize(tc.spec, tc.caller)
			var se *SpecError
			if !errors.As(err, &se) || se.Field != tc.field {
				t.Fatalf("err %v; want a SpecError on %s", err, tc.field)
			}
			if strings.Contains(se.Error(), "a's") || strings.Contains(se.Error(), "server-value-1") {
				t.Errorf("the error holds a value: %v", se)
			}
		})
	}
	c.InitPath = EngineInit
	if _, err := c.normalize(Spec{Command: "true", Secrets: []string{"API_TOKEN"}}, tenantA); err == nil {
		t.Error("secrets under the engine's init were admitted")
	}
}

func TestCheckSecret(t *testing.T) {
	ok := Secret{Name: "T", Value: "v", Hosts: []string{"api.test"}}
	if err := checkSecretDef(ok); err != nil {
		t.Fatal(err)
	}
	for field, sec := range map[string]Secret{
		"name":       {Name: "1X", Value: "v", Hosts: []string{"a.test"}},
		"value":      {Name: "T", Value: "a\r\nX-Evil: 1", Hosts: []string{"a.test"}},
		"hosts":      {Name: "T", Value: "v", Hosts: []string{"*.org"}},
		"header":     {Name: "T", Value: "v", Hosts: []string{"a.test"}, Header: "Authorization: Bearer"},
		"basic_user": {Name: "T", Value: "v", Hosts: []string{"a.test"}, BasicUser: "a:b"},
	} {
		var se *SpecError
		if err := checkSecretDef(sec); !errors.As(err, &se) || se.Field != field {
			t.Errorf("%+v: %v; want an error on %s", sec, err, field)
		} else if strings.Contains(err.Error(), "X-Evil") {
			t.Errorf("the error holds the value: %v", err)
		}
	}
}

func TestRedact(t *testing.T) {
	r := runSecrets{{Name: "API_TOKEN", Value: "0123456789abcdefghij", Placeholder: egress.NewPlaceholder()}, {Name: "SHORT", Value: "xyz"}}
	got := r.redact("a 0123456789abcdefghij b xyz")
	if want := "a [secret API_TOKEN]** b ***"; got != want {
		t.Errorf("redact = %q; want %q", got, want)
	}
	if b := r.redactBytes([]byte("0123456789abcdefghij")); len(b) != 20 || strings.Contains(string(b), "0123") {
		t.Errorf("redactBytes = %q; want the mask, as long as the value", b)
	}
	var live strings.Builder
	o, flush := r.live(runOptions{stdout: &live})
	for _, b := range []byte("x 0123456789abcdefghij y") {
		o.stdout.Write([]byte{b}) // a value split across writes is masked too
	}
	flush()
	if want := "x [secret API_TOKEN]** y"; live.String() != want || o.stderr != nil {
		t.Errorf("live output %q; want %q", live.String(), want)
	}
	env := r.env(map[string]string{"A": "1"}, true)
	if env["A"] != "1" || env["API_TOKEN"] != r[0].Placeholder || env["GIT_SSL_CAINFO"] == "" {
		t.Errorf("env %v; want A kept, the placeholder and the trust bundle", env)
	}
}
