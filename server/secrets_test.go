package server

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/executor"
)

// keyFile writes a secrets key in dir and returns its path.
func keyFile(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "secrets.key")
	if err := os.WriteFile(p, []byte(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Secrets over the API: a tenant stores one and never reads its value back;
// another tenant can neither see nor name it; the data dir and the audit log
// never hold the value; a run that names it sees a placeholder.
func TestSecretsThroughTheAPI(t *testing.T) {
	const value = "the-value-of-alpha-0123456789"
	h := startHarness(t, func(c *Config) {
		c.SecretsKeyFile = keyFile(t, t.TempDir())
		c.Egress.Allowed = []string{"api.test"}
	}, nil, nil)

	status, data, _ := h.do("PUT", "/v1/secrets/API_TOKEN", tokA, map[string]any{"value": value, "hosts": []string{"api.test"}, "header": "Authorization: Bearer {value}"})
	if status != 200 || bytes.Contains(data, []byte(value)) {
		t.Fatalf("PUT: %d %s", status, data)
	}
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"value": value, "hosts": []string{"elsewhere.test"}}, "hosts"},
		{map[string]any{"value": "", "hosts": []string{"api.test"}}, "value"},
		{map[string]any{"value": value, "hosts": []string{"api.test"}, "header": "Authorization: Bearer"}, "header"},
		{map[string]any{"name": "OTHER", "value": value, "hosts": []string{"api.test"}}, "name"},
	} {
		status, data, _ := h.do("PUT", "/v1/secrets/API_TOKEN", tokA, c.body)
		e := decode[struct{ Error api.Error }](t, data).Error
		if status != 400 || e.Field != c.field || bytes.Contains(data, []byte(value)) {
			t.Errorf("PUT %v: %d %s; want a 400 on %s", c.body, status, data, c.field)
		}
	}
	status, data, _ = h.do("GET", "/v1/secrets", tokA, nil)
	if list := decode[api.SecretList](t, data); status != 200 || len(list.Secrets) != 1 || list.Secrets[0].Name != "API_TOKEN" || bytes.Contains(data, []byte(value)) {
		t.Errorf("GET as alpha: %d %s", status, data)
	}
	status, data, _ = h.do("GET", "/v1/secrets", tokB, nil)
	if list := decode[api.SecretList](t, data); status != 200 || len(list.Secrets) != 0 {
		t.Errorf("GET as beta: %d %s; want none", status, data)
	}
	status, data, _ = h.do("POST", "/v1/processes", tokB, map[string]any{"command": "true", "secrets": []string{"API_TOKEN"}})
	if e := decode[struct{ Error api.Error }](t, data).Error; status != 400 || e.Field != "secrets" {
		t.Errorf("beta names alpha's secret: %d %s; want a 400 on secrets", status, data)
	}
	status, data, _ = h.do("POST", "/v1/processes", tokA, map[string]any{"command": `echo "$API_TOKEN"`, "secrets": []string{"API_TOKEN"}})
	if r := decode[executor.Result](t, data); status != 200 || !strings.HasPrefix(r.Stdout, "airlock-secret-") {
		t.Errorf("a run with the secret: %d %s; want its placeholder", status, data)
	}
	cs, err := h.mcpSession(tokA)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"command": `echo "$API_TOKEN"`, "secrets": []string{"API_TOKEN"}}})
	if err != nil || !strings.Contains(textOf(res), "airlock-secret-") {
		t.Errorf("MCP's run with the secret: %v\n%s", err, textOf(res))
	}
	status, _, _ = h.do("DELETE", "/v1/secrets/API_TOKEN", tokA, nil)
	if status != 204 {
		t.Errorf("DELETE: %d", status)
	}
	status, data, _ = h.do("POST", "/v1/processes", tokA, map[string]any{"command": "true", "secrets": []string{"API_TOKEN"}})
	if status != 400 {
		t.Errorf("a deleted secret: %d %s; want a 400", status, data)
	}
	audit, _ := os.ReadFile(h.cfg.AuditLog)
	for _, want := range []string{`"event":"secret.put","tenant":"alpha"`, `"secrets":["API_TOKEN"]`, `"event":"secret.delete"`} {
		if !strings.Contains(string(audit), want) {
			t.Errorf("the audit log lacks %s:\n%s", want, audit)
		}
	}
	for _, p := range []string{filepath.Join(h.cfg.DataDir, "airlock.db"), h.cfg.AuditLog} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(value)) {
			t.Errorf("%s holds the value", p)
		}
	}
	if strings.Contains(h.logs.String(), value) {
		t.Errorf("the server's log holds the value")
	}
}

func TestSecretsWithoutKey(t *testing.T) {
	h := startHarness(t, nil, nil, nil)
	status, data, _ := h.do("PUT", "/v1/secrets/T", tokA, map[string]any{"value": "v", "hosts": []string{"api.test"}})
	if e := decode[struct{ Error api.Error }](t, data).Error; status != 501 || e.Code != "no_secrets_key" {
		t.Errorf("PUT without a key: %d %s; want 501", status, data)
	}
}

// The authority is sealed in the vault, kept across starts, and replaced on
// demand; its key is never in the database in the clear.
func TestSecretsAuthority(t *testing.T) {
	c := DefaultConfig()
	c.DataDir = t.TempDir()
	c.SecretsKeyFile = keyFile(t, t.TempDir())
	a, err := c.SecretsAuthority()
	if err != nil {
		t.Fatal(err)
	}
	b, err := c.SecretsAuthority()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.CertPEM(), b.CertPEM()) {
		t.Error("a second start made another authority")
	}
	key, _ := a.KeyPEM()
	db, _ := os.ReadFile(filepath.Join(c.DataDir, "airlock.db"))
	if bytes.Contains(db, key) || bytes.Contains(db, []byte("PRIVATE KEY")) {
		t.Error("the authority's key is in the database in the clear")
	}
	c.RotateAuthority = true
	if r, err := c.SecretsAuthority(); err != nil || bytes.Equal(r.CertPEM(), a.CertPEM()) {
		t.Errorf("rotate: %v; want a new authority", err)
	}
	c.SecretsKeyFile = keyFile(t, t.TempDir())
	os.WriteFile(c.SecretsKeyFile, []byte(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{8}, 32))), 0o600)
	c.RotateAuthority = false
	if _, err := c.SecretsAuthority(); err == nil {
		t.Error("another key opened the sealed authority")
	}
}

func TestConfigSecrets(t *testing.T) {
	c := DefaultConfig()
	c.Egress.Allowed = []string{"api.test"}
	c.Secrets = []api.Secret{{Name: "T", Value: "the-value", Hosts: []string{"api.test"}}}
	c.Tenants = map[string]Tenant{"a": {Secrets: []api.Secret{{Name: "U", Value: "v", Hosts: []string{"other.test"}}}}}
	if err := c.validate(); err == nil || !strings.Contains(err.Error(), "tenants.a.secrets[0]") {
		t.Errorf("a tenant's secret outside the bounds: %v", err)
	}
	c.Tenants = nil
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	if r := c.Redacted(); r.Secrets[0].Value != "redacted" || c.Secrets[0].Value != "the-value" {
		t.Errorf("Redacted: %+v, and the original %+v", r.Secrets, c.Secrets)
	}
}
