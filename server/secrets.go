package server

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/egress"
	"github.com/airlock-sandbox/airlock/store"
)

// Secrets that never enter the sandbox (docs/server.md, "Secrets"). The
// operator's are in the configuration (secrets, for every tenant;
// tenants.NAME.secrets, for one). A tenant stores its own with PUT
// /v1/secrets/{name}; no route reads a value back. Stored secrets, and the
// key of the authority with which the proxy terminates TLS for their hosts,
// are sealed with AES-256-GCM under the key in secrets_key_file: the
// database holds no value in the clear. By default that file is the data
// dir's own secrets.key, made at the first start; an operator who keeps the
// key off the data dir (so that a copy of the data dir opens nothing) names
// another.

// vault seals what the server keeps in its store's vault.
type vault struct {
	st   *store.Store
	aead cipher.AEAD
}

// defaultKeyFile is the name of the secrets key in the data dir, when the
// operator names no secrets_key_file.
const defaultKeyFile = "secrets.key"

// secretsKeyPath is the file of the secrets key: secrets_key_file, or the
// data dir's own.
func (c *Config) secretsKeyPath() string {
	if c.SecretsKeyFile != "" {
		return c.SecretsKeyFile
	}
	return filepath.Join(c.DataDir, defaultKeyFile)
}

// EnsureSecretsKey returns the file of the secrets key, and makes it (32
// random bytes in base64, mode 0600) when it is the data dir's own and is
// not there yet; made says it did. A file the operator named elsewhere is
// never made: a missing one is an error, since a new key opens none of
// what the old one sealed.
func (c *Config) EnsureSecretsKey() (path string, made bool, err error) {
	path = c.secretsKeyPath()
	if path != filepath.Join(c.DataDir, defaultKeyFile) {
		return path, false, nil
	}
	if _, err := os.Stat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return path, false, nil // there, or readSecretsKey says why not
	}
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return path, false, fmt.Errorf("make the secrets key: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return path, false, nil // another process on the data dir made it first
	}
	if err != nil {
		return path, false, fmt.Errorf("make the secrets key: %w", err)
	}
	key := make([]byte, 32)
	rand.Read(key)
	_, err = f.WriteString(base64.StdEncoding.EncodeToString(key) + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return path, false, fmt.Errorf("make the secrets key %s: %w", path, err)
	}
	return path, true, nil
}

// openVault opens the vault of c's data dir, sealed with the secrets key.
func openVault(c *Config) (*vault, error) {
	path, _, err := c.EnsureSecretsKey()
	if err != nil {
		return nil, err
	}
	key, err := readSecretsKey(path)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	st, err := store.Open(c.DataDir)
	if err != nil {
		return nil, err
	}
	return &vault{st: st, aead: aead}, nil
}

// readSecretsKey reads 32 bytes, written in base64 or hex, from path.
func readSecretsKey(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("secrets_key_file: %w", err)
	}
	text := strings.TrimSpace(string(b))
	if k, err := base64.StdEncoding.DecodeString(text); err == nil && len(k) == 32 {
		return k, nil
	}
	if k, err := hex.DecodeString(text); err == nil && len(k) == 32 {
		return k, nil
	}
	return nil, fmt.Errorf("secrets_key_file %s: want 32 random bytes in base64 or hex (head -c 32 /dev/urandom | base64)", path)
}

// put seals plain under key; key is the associated data, so that nothing
// sealed can be moved to another key (another tenant's name).
func (v *vault) put(key string, plain []byte) error {
	nonce := make([]byte, v.aead.NonceSize())
	rand.Read(nonce)
	return v.st.PutSealed(key, v.aead.Seal(nonce, nonce, plain, []byte(key)))
}

// get opens what is sealed under key; store.ErrNotFound when nothing is.
func (v *vault) get(key string) ([]byte, error) {
	sealed, err := v.st.GetSealed(key)
	if err != nil {
		return nil, err
	}
	n := v.aead.NonceSize()
	if len(sealed) < n {
		return nil, fmt.Errorf("vault %s: cut short", key)
	}
	plain, err := v.aead.Open(nil, sealed[:n], sealed[n:], []byte(key))
	if err != nil {
		return nil, fmt.Errorf("vault %s: sealed with another secrets key, or changed", key)
	}
	return plain, nil
}

// secretKey is where a tenant's secret is sealed: a name holds no '/', so
// the tenant's part ends at the last one.
func secretKey(tenant, name string) string { return "secret/" + tenant + "/" + name }

// authorityKey is where the server's authority is sealed.
const authorityKey = "authority"

// authorityRenewal is how long before its end the authority is replaced, at
// a start.
const authorityRenewal = 30 * 24 * time.Hour

// SecretsAuthority is the server's authority for the hosts of secrets: the
// one sealed in its vault, or a new one made and sealed there when there is
// none, when it ends within 30 days, or when rotate_authority asks for it.
func (c *Config) SecretsAuthority() (*egress.Authority, error) {
	v, err := openVault(c)
	if err != nil {
		return nil, err
	}
	type sealedAuthority struct{ Cert, Key []byte }
	var sa sealedAuthority
	plain, err := v.get(authorityKey)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return nil, fmt.Errorf("the secrets authority: %w", err)
	default:
		if err := json.Unmarshal(plain, &sa); err != nil {
			return nil, fmt.Errorf("the secrets authority: %w", err)
		}
		a, err := egress.ParseAuthority(sa.Cert, sa.Key)
		if err != nil {
			return nil, err
		}
		if !c.RotateAuthority && time.Until(a.NotAfter()) > authorityRenewal {
			return a, nil
		}
	}
	a, err := egress.NewAuthority("airlock secrets " + time.Now().UTC().Format("2006-01-02"))
	if err != nil {
		return nil, err
	}
	sa.Cert = a.CertPEM()
	if sa.Key, err = a.KeyPEM(); err != nil {
		return nil, err
	}
	plain, _ = json.Marshal(sa)
	if err := v.put(authorityKey, plain); err != nil {
		return nil, fmt.Errorf("store the secrets authority: %w", err)
	}
	return a, nil
}

func infoOf(sec api.Secret) api.SecretInfo {
	return api.SecretInfo{Name: sec.Name, Hosts: sec.Hosts, Header: sec.Header, BasicUser: sec.BasicUser}
}

// PutSecret stores the tenant's secret name, replacing one of that name.
func (s *Service) PutSecret(_ context.Context, tenant, name string, sec api.Secret) (api.SecretInfo, error) {
	if s.vault == nil {
		return api.SecretInfo{}, api.ErrNoSecretsKey
	}
	t, err := s.tenant(tenant)
	if err != nil {
		return api.SecretInfo{}, err
	}
	sec.Name = name
	ec := s.ex.Config()
	if err := ec.CheckSecret(sec, t.caller); err != nil {
		return api.SecretInfo{}, err
	}
	plain, _ := json.Marshal(sec)
	if err := s.vault.put(secretKey(tenant, name), plain); err != nil {
		return api.SecretInfo{}, fmt.Errorf("%w: %v", executor.ErrStore, err)
	}
	s.write(auditEvent{Event: "secret.put", Tenant: tenant, Secret: name, EgressHosts: sec.Hosts})
	return infoOf(sec), nil
}

// DeleteSecret removes the tenant's stored secret name; one that is not
// there is not an error.
func (s *Service) DeleteSecret(_ context.Context, tenant, name string) error {
	// As on PUT: a name with a '/' would reach another tenant's key
	// (secretKey), one too long the store's bound.
	if err := executor.CheckSecretName(name); err != nil {
		return err
	}
	if s.vault == nil {
		return api.ErrNoSecretsKey
	}
	if err := s.vault.st.DeleteSealed(secretKey(tenant, name)); err != nil {
		return fmt.Errorf("%w: %v", executor.ErrStore, err)
	}
	s.write(auditEvent{Event: "secret.delete", Tenant: tenant, Secret: name})
	return nil
}

// Secrets lists the secrets the tenant may name: its stored ones, then the
// configuration's, without their values.
func (s *Service) Secrets(_ context.Context, tenant string) ([]api.SecretInfo, error) {
	t, err := s.tenant(tenant)
	if err != nil {
		return nil, err
	}
	stored, err := s.storedSecrets(tenant)
	if err != nil {
		return nil, err
	}
	out := []api.SecretInfo{}
	for _, list := range [][]api.Secret{stored, t.limits.Secrets, s.cfg.Secrets} {
		for _, sec := range list {
			if !slices.ContainsFunc(out, func(i api.SecretInfo) bool { return i.Name == sec.Name }) {
				out = append(out, infoOf(sec))
			}
		}
	}
	return out, nil
}

// storedSecrets opens every secret the tenant stored.
func (s *Service) storedSecrets(tenant string) ([]api.Secret, error) {
	if s.vault == nil {
		return nil, nil
	}
	prefix := secretKey(tenant, "")
	keys, err := s.vault.st.SealedKeys(prefix)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", executor.ErrStore, err)
	}
	var out []api.Secret
	for _, k := range keys {
		if strings.Contains(k[len(prefix):], "/") {
			continue // another tenant's, whose name begins with this one's and a '/'
		}
		sec, err := s.storedSecret(k)
		if err != nil {
			return nil, err
		}
		out = append(out, sec)
	}
	return out, nil
}

func (s *Service) storedSecret(key string) (api.Secret, error) {
	plain, err := s.vault.get(key)
	if err != nil {
		return api.Secret{}, fmt.Errorf("%w: %w", executor.ErrStore, err)
	}
	var sec api.Secret
	err = json.Unmarshal(plain, &sec)
	return sec, err
}

// callerFor is the tenant's Caller for a request that names secrets: with
// the secrets of those names the tenant stored, then the configuration's
// for the tenant. Another tenant's are never among them.
func (s *Service) callerFor(t *tenantState, names []string) (executor.Caller, error) {
	c := t.caller
	if len(names) == 0 {
		return c, nil
	}
	c.Secrets = slices.Clone(t.limits.Secrets)
	if s.vault == nil {
		return c, nil
	}
	for _, name := range names {
		if !strings.Contains(name, "/") {
			sec, err := s.storedSecret(secretKey(t.name, name))
			if errors.Is(err, store.ErrNotFound) {
				continue
			}
			if err != nil {
				return c, err
			}
			c.Secrets = append([]api.Secret{sec}, c.Secrets...)
		}
	}
	return c, nil
}
