package executor

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"

	"github.com/airlock-sandbox/airlock/internal/egress"
	"github.com/airlock-sandbox/airlock/internal/initproto"
)

// A run that names secrets (Spec.Secrets) never sees their values. Each
// becomes a variable holding a placeholder made for this run alone, and the
// secret's hosts join the run's egress; the run's proxy session puts the
// value into requests to those hosts only, terminating their TLS with the
// executor's authority (internal/egress, intercept.go). airlock's init writes
// a trust bundle, the image's own authorities and airlock's, in the sandbox's
// /tmp before the command starts, and the usual variables name it. Output
// that carries a value (an origin that echoes a header) is redacted in the
// Result and in a job's logs. docs/DESIGN.md, "Secrets". The operator's
// Config.SandboxCAs join that bundle in every run, secrets or not.

// trustVars name the bundle for the clients that read one: OpenSSL, Go and
// Python's ssl (SSL_CERT_FILE), Python's requests, pip, Node, git and curl.
var trustVars = []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "PIP_CERT", "NODE_EXTRA_CA_CERTS", "GIT_SSL_CAINFO", "CURL_CA_BUNDLE"}

// ParseCertificates parses data, one or more PEM certificates and nothing
// else (blank lines and text between blocks aside, as bundles have).
func ParseCertificates(data []byte) ([]*x509.Certificate, error) {
	var certs []*x509.Certificate
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			if bytes.Contains(rest, []byte("-----BEGIN")) {
				return nil, fmt.Errorf("certificate %d is not valid PEM", len(certs)+1)
			}
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("block %d is a %s, not a CERTIFICATE", len(certs)+1, block.Type)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certificate %d: %v", len(certs)+1, err)
		}
		certs = append(certs, c)
	}
	if len(certs) == 0 {
		return nil, fmt.Errorf("holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
	}
	return certs, nil
}

// CheckSecret reports the first invalid field of sec, named as in its JSON:
// its definition, then its hosts within the Config's egress bounds and the
// caller's. A server checks its configuration's secrets and a tenant's
// stored ones with it.
func (c *Config) CheckSecret(sec Secret, caller Caller) error {
	if err := checkSecretDef(sec); err != nil {
		return err
	}
	_, err := c.normalizeEgress(sec.Hosts, caller)
	if se := (*SpecError)(nil); errors.As(err, &se) {
		return &SpecError{Field: "hosts", Reason: se.Reason}
	}
	return err
}

// MaxSecretName bounds a secret's name, in bytes.
const MaxSecretName = 128

// CheckSecretName reports whether name can name a secret: a variable name
// of at most MaxSecretName bytes. A server checks the name of every route
// that takes one, so that no name reaches into another tenant's secrets.
func CheckSecretName(name string) error {
	switch {
	case len(name) > MaxSecretName:
		return &SpecError{Field: "name", Reason: fmt.Sprintf("is %d bytes; a secret's name is at most %d", len(name), MaxSecretName)}
	case !envName.MatchString(name):
		return &SpecError{Field: "name", Reason: fmt.Sprintf("%q is not a variable name (letters, digits and _, not starting with a digit)", name)}
	}
	return nil
}

// checkSecretDef reports the first invalid field of a secret's definition.
func checkSecretDef(sec Secret) error {
	bad := func(field, format string, args ...any) error {
		return &SpecError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if err := CheckSecretName(sec.Name); err != nil {
		return err
	}
	switch {
	case sec.Value == "":
		return bad("value", "is empty")
	case strings.ContainsAny(sec.Value, "\r\n\x00"):
		return bad("value", "holds a line break or a NUL byte, which no header can carry")
	case len(sec.Hosts) == 0:
		return bad("hosts", "is empty: a secret is for named hosts")
	case sec.Header != "" && sec.BasicUser != "":
		return bad("header", "give header or basic_user, not both")
	case strings.ContainsAny(sec.BasicUser, ":\r\n\x00"):
		return bad("basic_user", "holds a colon, a line break or a NUL byte")
	}
	rules, err := egress.ParseRules(sec.Hosts)
	if err != nil {
		return bad("hosts", "%v", err)
	}
	for _, r := range rules {
		if r.Port == 80 {
			return bad("hosts", "%s is plain HTTP: the proxy puts a secret only into HTTPS requests, never into clear text the network reads; name the host's HTTPS port, or no port (443)", r)
		}
	}
	if sec.Header != "" {
		if err := egress.CheckSecretHeader(sec.Header); err != nil {
			return bad("header", "%v", err)
		}
	}
	return nil
}

// findSecret returns the secret name, the caller's (a tenant's) before the
// Config's.
func (c *Config) findSecret(name string, caller Caller) (Secret, bool) {
	for _, list := range [][]Secret{caller.Secrets, c.Secrets} {
		if i := slices.IndexFunc(list, func(s Secret) bool { return s.Name == name }); i >= 0 {
			return list[i], true
		}
	}
	return Secret{}, false
}

// normalizeSecrets checks a Spec's Secrets and returns their hosts, each
// secret's within the operator's and the caller's egress bounds.
func (c *Config) normalizeSecrets(s Spec, caller Caller) ([]string, error) {
	bad := func(field, format string, args ...any) ([]string, error) {
		return nil, &SpecError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	if len(s.Secrets) > 0 && c.InitPath == EngineInit {
		return bad("secrets", "need airlock's init, which writes the sandbox's trust bundle; the server runs the engine's")
	}
	var hosts []string
	for i, name := range s.Secrets {
		if slices.Contains(s.Secrets[:i], name) {
			return bad("secrets", "%q is named twice", name)
		}
		sec, ok := c.findSecret(name, caller)
		if !ok {
			return bad("secrets", "no secret named %q: neither the operator nor the caller has one by this name", name)
		}
		if _, ok := s.Env[name]; ok {
			return bad("env."+name, "is also a secret the run asks for: airlock sets its variable")
		}
		h, err := c.normalizeEgress(sec.Hosts, caller)
		if se := (*SpecError)(nil); errors.As(err, &se) {
			return bad("secrets."+name, "its hosts: %s", se.Reason)
		} else if err != nil {
			return nil, err
		}
		hosts = append(hosts, h...)
	}
	return hosts, nil
}

// runSecrets are a run's secrets, each with its placeholder.
type runSecrets []egress.Secret

// bindSecrets makes the placeholders of an admitted run's secrets, and the
// authority their hosts' TLS is terminated with when there is none yet.
func (e *Executor) bindSecrets(a Admitted) (runSecrets, error) {
	if len(a.spec.Secrets) == 0 {
		return nil, nil
	}
	if _, err := e.authority(); err != nil {
		return nil, fmt.Errorf("%w: make the authority for secrets: %v", ErrEngine, err)
	}
	var out runSecrets
	for _, name := range a.spec.Secrets {
		sec, _ := e.cfg.findSecret(name, a.caller) // the gate found it
		rules, _ := egress.ParseRules(sec.Hosts)
		out = append(out, egress.Secret{Name: sec.Name, Value: sec.Value, Placeholder: egress.NewPlaceholder(),
			Rules: rules, Header: sec.Header, BasicUser: sec.BasicUser})
	}
	return out, nil
}

// env returns env with the secrets' placeholders, and the trust variables
// when the run has a trust bundle (Executor.trustPEM).
func (r runSecrets) env(env map[string]string, trust bool) map[string]string {
	if len(r) == 0 && !trust {
		return env
	}
	out := make(map[string]string, len(env)+len(r)+len(trustVars))
	for k, v := range env {
		out[k] = v
	}
	for _, sec := range r {
		out[sec.Name] = sec.Placeholder
	}
	for _, k := range trustVars {
		out[k] = initproto.TrustBundlePath
	}
	return out
}

// masker replaces every value of r by its mask, in a stream.
func (r runSecrets) masker() *egress.Masker {
	var values, masks []string
	for _, sec := range r {
		values, masks = append(values, sec.Value), append(masks, mask(sec))
	}
	return egress.NewMasker(values, masks)
}

// redact replaces every value in s by its mask.
func (r runSecrets) redact(s string) string {
	if len(r) == 0 {
		return s
	}
	m := r.masker()
	return string(append(m.Feed([]byte(s)), m.Flush()...))
}

// redactBytes is redact for a piece of a job's output, as it is copied. A
// value split between two pieces (the engine's log splits lines past 16
// KiB) is not masked there.
func (r runSecrets) redactBytes(p []byte) []byte {
	if len(r) == 0 {
		return p
	}
	m := r.masker()
	return append(m.Feed(p), m.Flush()...)
}

// mask stands for a secret's value in output: "[secret NAME]" padded with
// stars or cut to the value's length, so that redacting changes no count of
// bytes (a job's log agrees with what its init counted).
func mask(sec egress.Secret) string {
	m := "[secret " + sec.Name + "]"
	if n := len(sec.Value); len(m) > n {
		return strings.Repeat("*", n)
	} else {
		return m + strings.Repeat("*", n-len(m))
	}
}

// liveOutput masks the values of r in what it passes on to w, a caller's
// live view of a run's output; flush passes on what it held back.
type liveOutput struct {
	mu sync.Mutex
	w  io.Writer
	m  *egress.Masker
}

func (l *liveOutput) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if out := l.m.Feed(p); len(out) > 0 {
		if _, err := l.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (l *liveOutput) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if out := l.m.Flush(); len(out) > 0 {
		l.w.Write(out)
	}
}

// live wraps a run's live writers so that no value reaches them; the
// returned func passes on the last bytes once the run's output has ended.
func (r runSecrets) live(o runOptions) (runOptions, func()) {
	if len(r) == 0 {
		return o, func() {}
	}
	var flushes []func()
	for _, w := range []*io.Writer{&o.stdout, &o.stderr} {
		if *w != nil {
			l := &liveOutput{w: *w, m: r.masker()}
			*w, flushes = l, append(flushes, l.flush)
		}
	}
	return o, func() {
		for _, f := range flushes {
			f()
		}
	}
}

// redactResult redacts what the command wrote that a Result carries: its
// output, and the failures of its test reports.
func (r runSecrets) redactResult(res *Result) {
	out := []*string{&res.Stdout, &res.Stderr, &res.StdoutTail, &res.StderrTail, &res.Error}
	if res.Tests != nil {
		for i := range res.Tests.Failures {
			f := &res.Tests.Failures[i]
			out = append(out, &f.Name, &f.File, &f.Message)
		}
	}
	for _, p := range out {
		*p = r.redact(*p)
	}
}

// authority is the executor's certificate authority for secrets:
// EgressConfig.Authority, or one made for this process on first use.
func (e *Executor) authority() (*egress.Authority, error) {
	if a := e.cfg.Egress.Authority; a != nil {
		return a, nil
	}
	return processAuthority()
}

var processAuthority = sync.OnceValues(func() (*egress.Authority, error) {
	return egress.NewAuthority("airlock secrets (this process)")
})

// trustPEM is what a run trusts besides its image's authorities: the
// operator's SandboxCAs, and airlock's authority for a run with secrets
// (bindSecrets has made it); "" for a run with neither.
func (e *Executor) trustPEM(s Spec) string {
	var b strings.Builder
	if cas := e.cfg.SandboxCAs; cas != "" {
		b.WriteString(cas)
		if !strings.HasSuffix(cas, "\n") {
			b.WriteByte('\n')
		}
	}
	if len(s.Secrets) > 0 {
		if a, err := e.authority(); err == nil {
			b.Write(a.CertPEM())
		}
	}
	return b.String()
}

// authorityFor is the authority of a run's session: nil for a run without
// secrets, which intercepts nothing.
func (e *Executor) authorityFor(r runSecrets) *egress.Authority {
	if len(r) == 0 {
		return nil
	}
	a, _ := e.authority() // bindSecrets made it
	return a
}
