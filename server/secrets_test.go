package server

import (
	"bytes"
	"encoding/base64"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/egress"
	"github.com/airlock-sandbox/airlock/internal/enginefake"
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

// TestSecretsOwnKey: a server with no secrets_key_file stores secrets under
// a key it makes in its data dir at the first start (mode 0600), and opens
// them with it at the next; a key file the operator named is never made.
func TestSecretsOwnKey(t *testing.T) {
	h := startHarness(t, func(c *Config) { c.Egress.Allowed = []string{"api.test"} }, enginefake.New(), nil)
	status, data, _ := h.do("PUT", "/v1/secrets/T", tokA, map[string]any{"value": "v", "hosts": []string{"api.test"}})
	if status != 200 {
		t.Fatalf("PUT without a configured key: %d %s; want it stored", status, data)
	}
	keyPath := filepath.Join(h.cfg.DataDir, "secrets.key")
	fi, err := os.Stat(keyPath)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the data dir's key: %v, %v; want a file of mode 0600", fi, err)
	}
	key, _ := os.ReadFile(keyPath)
	if path, made, err := h.cfg.EnsureSecretsKey(); path != keyPath || made || err != nil {
		t.Errorf("EnsureSecretsKey again: %s %v %v; want the same file, not made anew", path, made, err)
	}
	if again, _ := os.ReadFile(keyPath); !bytes.Equal(again, key) {
		t.Error("the key changed")
	}
	// The next start on the data dir opens what the first sealed.
	svc, err := NewService(h.ex, h.cfg, slog.New(slog.DiscardHandler), "test")
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close(t.Context(), false)
	if list, err := svc.Secrets(t.Context(), "alpha"); err != nil || len(list) != 1 || list[0].Name != "T" {
		t.Errorf("the next start's secrets: %+v %v", list, err)
	}
	cfg, _, err := Load("serve", []string{"--data", h.cfg.DataDir}, func(string) string { return "" }, io.Discard)
	if err != nil || cfg.SecretsKeyFile != keyPath {
		t.Errorf("Load: secrets_key_file %q, %v; want %s by default", cfg.SecretsKeyFile, err, keyPath)
	}
	// A key file named elsewhere that is not there is an error, never made.
	c := h.cfg
	c.SecretsKeyFile = filepath.Join(t.TempDir(), "missing.key")
	if _, err := c.SecretsAuthority(); err == nil || !strings.Contains(err.Error(), "secrets_key_file") {
		t.Errorf("a missing key file: %v; want an error naming secrets_key_file", err)
	}
	if _, err := os.Stat(c.SecretsKeyFile); err == nil {
		t.Error("a key file the operator named was made")
	}
}

// TestSecretNames: a name that is no variable name, or longer than 128
// bytes, is a 400 naming the field on every route that takes one; the
// delete of "ops/OPS" by tenant alpha would have been tenant alpha/ops's
// secret; and no tenant name may hold a '/'.
func TestSecretNames(t *testing.T) {
	h := startHarness(t, func(c *Config) { c.Egress.Allowed = []string{"api.test"} }, enginefake.New(), nil)
	long := strings.Repeat("A", 32760)
	for _, c := range []struct{ method, path, want string }{
		{"DELETE", "/v1/secrets/ops%2FOPS", "not a variable name"},
		{"PUT", "/v1/secrets/ops%2FOPS", "not a variable name"},
		{"DELETE", "/v1/secrets/" + long, "at most 128"},
		{"PUT", "/v1/secrets/" + long, "at most 128"},
		{"PUT", "/v1/secrets/" + strings.Repeat("A", 129), "is 129 bytes"},
	} {
		var body any
		if c.method == "PUT" {
			body = map[string]any{"value": "v", "hosts": []string{"api.test"}}
		}
		status, data, _ := h.do(c.method, c.path, tokA, body)
		e := decode[struct{ Error api.Error }](t, data).Error
		if status != 400 || e.Field != "name" || !strings.Contains(e.Message, c.want) || len(data) > 1000 {
			t.Errorf("%s %.40s: %d %.300s; want a short 400 on name saying %q", c.method, c.path, status, data, c.want)
		}
	}
	if status, data, _ := h.do("PUT", "/v1/secrets/"+strings.Repeat("A", 128), tokA, map[string]any{"value": "v", "hosts": []string{"api.test"}}); status != 200 {
		t.Errorf("a name of 128 bytes: %d %s", status, data)
	}
	for _, c := range []struct {
		configure func(*Config)
		want      string
	}{
		{func(c *Config) { c.Tokens = []Token{{"tok-team", "team"}, {"tok-ops", "team/ops"}} }, "tokens[1].tenant"},
		{func(c *Config) { c.Tenants = map[string]Tenant{"team/ops": {}} }, "tenants"},
	} {
		cfg := DefaultConfig()
		cfg.DataDir = t.TempDir()
		c.configure(&cfg)
		if err := cfg.validate(); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "'/'") {
			t.Errorf("a tenant named with a '/': %v; want an error naming %s", err, c.want)
		}
	}
}

// TestSecretValueText: a value (or header, or basic_user) that is not
// valid UTF-8, or holds a lone surrogate escape, is a 400 naming the
// field, never stored changed to U+FFFD; a value in any valid text is
// stored as sent.
func TestSecretValueText(t *testing.T) {
	h := startHarness(t, func(c *Config) { c.Egress.Allowed = []string{"api.test"} }, enginefake.New(), nil)
	for _, c := range []struct{ body, field string }{
		{"{\"value\": \"ab\xff\xfecd\", \"hosts\": [\"api.test\"]}", "value"},
		{`{"value": "ab\ud800cd", "hosts": ["api.test"]}`, "value"},
		{`{"value": "ab\udc00", "hosts": ["api.test"]}`, "value"},
		{`{"value": "ab\ud800\u0041", "hosts": ["api.test"]}`, "value"},
		{"{\"value\": \"v\", \"hosts\": [\"api.test\"], \"header\": \"X-Key: \xc3{value}\"}", "header"},
		{"{\"value\": \"v\", \"hosts\": [\"api.test\"], \"basic_user\": \"\xe9t\xe9\"}", "basic_user"},
	} {
		status, data, _ := h.do("PUT", "/v1/secrets/T", tokA, c.body)
		e := decode[struct{ Error api.Error }](t, data).Error
		if status != 400 || e.Field != c.field {
			t.Errorf("PUT %q: %d %s; want a 400 on %s", c.body, status, data, c.field)
		}
	}
	if list, _ := h.svc.Secrets(t.Context(), "alpha"); len(list) != 0 {
		t.Errorf("refused secrets were stored: %+v", list)
	}
	for _, body := range []string{`{"value": "caf\u00e9-\ud83d\ude00-\\ud800", "hosts": ["api.test"]}`, `{"value": "café-😀-\ufffd", "hosts": ["api.test"]}`} {
		if status, data, _ := h.do("PUT", "/v1/secrets/T", tokA, body); status != 200 {
			t.Errorf("PUT %s: %d %s; want it stored", body, status, data)
		}
	}
	stored, err := h.svc.storedSecrets("alpha")
	if err != nil || len(stored) != 1 || stored[0].Value != "café-😀-\ufffd" {
		t.Errorf("stored %+v %v", stored, err)
	}
	// The configuration's secrets, read from its file, likewise.
	for name, data := range map[string]string{
		"bytes.json":     "{\"secrets\": [{\"name\": \"T\", \"value\": \"\xff\", \"hosts\": [\"api.test\"]}]}",
		"surrogate.json": `{"secrets": [{"name": "T", "value": "\udfff", "hosts": ["api.test"]}]}`,
	} {
		p := filepath.Join(t.TempDir(), name)
		os.WriteFile(p, []byte(data), 0o600)
		_, _, err := Load("serve", []string{"--config", p, "--egress-allowed", "api.test"}, func(string) string { return "" }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "config file "+p) {
			t.Errorf("%s: %v; want an error naming the file", name, err)
		}
	}
}

// TestSecretNotPlainHTTP: a secret bound to port 80 is refused, saying
// why: the proxy puts a value only into HTTPS requests.
func TestSecretNotPlainHTTP(t *testing.T) {
	h := startHarness(t, func(c *Config) { c.Egress.Allowed = []string{"api.test"} }, enginefake.New(), nil)
	status, data, _ := h.do("PUT", "/v1/secrets/T", tokA, map[string]any{"value": "v", "hosts": []string{"api.test:443", "api.test:80"}})
	if e := decode[struct{ Error api.Error }](t, data).Error; status != 400 || e.Field != "hosts" || !strings.Contains(e.Message, "api.test:80 is plain HTTP") {
		t.Errorf("PUT bound to port 80: %d %s; want a 400 on hosts saying why", status, data)
	}
	c := DefaultConfig()
	c.DataDir = t.TempDir()
	c.Egress.Allowed = []string{"api.test"}
	c.Tenants = map[string]Tenant{"a": {Secrets: []api.Secret{{Name: "T", Value: "v", Hosts: []string{"api.test:80"}}}}}
	if err := c.validate(); err == nil || !strings.Contains(err.Error(), "tenants.a.secrets[0]") || !strings.Contains(err.Error(), "plain HTTP") {
		t.Errorf("a configured secret bound to port 80: %v", err)
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

// TestSandboxCAFileConfig: sandbox_ca_file (flag, variable or file) is read
// at load: its certificates go to the sandboxes' bundle and join the host's
// roots in the proxy's; a file that is not PEM certificates keeps the server
// from starting, naming the file.
func TestSandboxCAFileConfig(t *testing.T) {
	dir := t.TempDir()
	a, err := egress.NewAuthority("network CA")
	if err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "good.pem")
	os.WriteFile(good, append([]byte("network authority:\n"), a.CertPEM()...), 0o644)
	for _, args := range [][]string{{"--sandbox-ca-file", good}, nil} {
		env := map[string]string{"AIRLOCK_DATA": t.TempDir(), "AIRLOCK_SANDBOX_CA_FILE": good}
		cfg, _, err := Load("serve", args, func(k string) string { return env[k] }, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		ec, err := cfg.ExecutorConfig()
		if err != nil || ec.SandboxCAs != string(a.CertPEM()) || ec.Egress.OriginRoots == nil {
			t.Errorf("%v: %v, SandboxCAs %q; want the certificate alone, and roots for the proxy", args, err, ec.SandboxCAs)
		}
	}
	key, _ := a.KeyPEM()
	for name, data := range map[string]string{
		"empty.pem":     "",
		"text.pem":      "not a certificate\n",
		"key.pem":       string(key),
		"cut.pem":       string(a.CertPEM()[:200]),
		"garbled.pem":   strings.Replace(string(a.CertPEM()), "M", "!", 3),
		"then-bad.pem":  string(a.CertPEM()) + "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
		"notbase64.pem": "-----BEGIN CERTIFICATE-----\n%%%%\n-----END CERTIFICATE-----\n",
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(data), 0o644)
		_, _, err := Load("serve", []string{"--data", t.TempDir(), "--sandbox-ca-file", p}, func(string) string { return "" }, io.Discard)
		if err == nil || !strings.Contains(err.Error(), "sandbox_ca_file "+p) {
			t.Errorf("%s: %v; want an error naming sandbox_ca_file and the file", name, err)
		}
	}
	missing := filepath.Join(dir, "missing.pem")
	if _, _, err := Load("serve", []string{"--sandbox-ca-file", missing}, func(string) string { return "" }, io.Discard); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("a missing file: %v", err)
	}
}
