package egress

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/textproto"
	"strings"
)

// Secret is a credential the proxy puts into a run's requests to its hosts,
// and only there: the sandbox holds a Placeholder, worthless anywhere else.
// The proxy sees the requests of a secret's hosts only when it terminates
// their TLS (Policy.Authority); it never puts a value into plain HTTP.
type Secret struct {
	// Name is what the run asked for ("GIT_TOKEN"); the report and the logs
	// name the secret by it, never by its value.
	Name  string
	Value string
	// Placeholder stands for Value in the sandbox: in a request to one of
	// Rules's hosts, every header that carries it (Basic credentials
	// included, decoded) gets Value in its place.
	Placeholder string
	// Rules are the hosts the secret is for.
	Rules []Rule
	// Header, when set, is "Name: template", set on every request to the
	// hosts, with {value} in the template replaced by Value:
	// "Authorization: Bearer {value}".
	Header string
	// BasicUser, when set, sets "Authorization: Basic" of BasicUser:Value on
	// every request to the hosts (git's user and token).
	BasicUser string
}

// PlaceholderPrefix begins every placeholder.
const PlaceholderPrefix = "airlock-secret-"

// NewPlaceholder returns a new placeholder, random, for one secret of one
// run.
func NewPlaceholder() string {
	b := make([]byte, 16)
	rand.Read(b)
	return PlaceholderPrefix + hex.EncodeToString(b)
}

// CheckSecretHeader reports whether h is a header template as Secret.Header
// takes it: "Name: template", the template holding {value}. Its errors
// never quote the template, where a value written by mistake would be.
func CheckSecretHeader(h string) error {
	name, tmpl, ok := strings.Cut(h, ":")
	name = strings.TrimSpace(name)
	switch {
	case !ok || name == "" || strings.ContainsAny(name, " \t\r\n") || textproto.CanonicalMIMEHeaderKey(name) == "":
		return fmt.Errorf("is not Name: template")
	case !strings.Contains(tmpl, "{value}"):
		return fmt.Errorf("the template of %s has no {value}: write {value} where the secret's value goes, never the value", name)
	case strings.ContainsAny(tmpl, "\r\n\x00"):
		return fmt.Errorf("the template of %s spans lines", name)
	}
	for _, hop := range hopHeaders {
		if strings.EqualFold(name, hop) {
			return fmt.Errorf("%s is a header of one hop, which never reaches the origin", name)
		}
	}
	return nil
}

// binds reports whether the secret is for host on port.
func (sec *Secret) binds(host string, port uint16) bool {
	for _, r := range sec.Rules {
		if r.Match(host, port) {
			return true
		}
	}
	return false
}

// apply puts the secret into h, a request's headers for one of its hosts,
// and reports whether it did.
func (sec *Secret) apply(h http.Header) bool {
	applied := false
	if sec.Placeholder != "" {
		for name, vals := range h {
			for i, v := range vals {
				if nv := sec.replaceIn(v); nv != v {
					h[name][i], applied = nv, true
				}
			}
		}
	}
	if sec.Header != "" {
		name, tmpl, _ := strings.Cut(sec.Header, ":")
		h.Set(strings.TrimSpace(name), strings.TrimSpace(strings.ReplaceAll(tmpl, "{value}", sec.Value)))
		applied = true
	}
	if sec.BasicUser != "" {
		h.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(sec.BasicUser+":"+sec.Value)))
		applied = true
	}
	return applied
}

// replaceIn returns v with the placeholder replaced by the value, in Basic
// credentials too (git sends a URL's user:token so).
func (sec *Secret) replaceIn(v string) string {
	v = strings.ReplaceAll(v, sec.Placeholder, sec.Value)
	scheme, cred, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "basic") {
		return v
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	if err != nil || !strings.Contains(string(raw), sec.Placeholder) {
		return v
	}
	return scheme + " " + base64.StdEncoding.EncodeToString([]byte(strings.ReplaceAll(string(raw), sec.Placeholder, sec.Value)))
}

// hide replaces the value by the placeholder in h, a response's headers, so
// that an origin that echoes a header back does not hand the value to the
// sandbox there; a header whose name carries the value is dropped (names
// come case-folded, so they are compared so). A body is scrubbed as it
// passes (scrubber).
func (sec *Secret) hide(h http.Header) {
	lower := strings.ToLower(sec.Value)
	for name, vals := range h {
		if strings.Contains(strings.ToLower(name), lower) {
			delete(h, name)
			continue
		}
		for i, v := range vals {
			if strings.Contains(v, sec.Value) {
				h[name][i] = strings.ReplaceAll(v, sec.Value, sec.Placeholder)
			}
		}
	}
}

// plainRefusal refuses a plain-HTTP request to k when one of the session's
// secrets is bound to k: the proxy never puts a value into clear text, which
// the network reads, and a request passed on without it would fail at the
// origin for a reason the run could not see. nil when no secret is bound.
func (s *Session) plainRefusal(k hostPort) *refusal {
	secrets := s.secretsFor(k.host, k.port)
	if len(secrets) == 0 {
		return nil
	}
	return &refusal{http.StatusForbidden, k, "refused",
		fmt.Sprintf("secret %s is bound to it, and a secret goes only into HTTPS requests, never into plain HTTP: use https://", secrets[0].Name)}
}

// hideResponse hides the secrets' values in resp's status line and headers.
func hideResponse(resp *http.Response, secrets []*Secret) {
	resp.Status = hideText(resp.Status, secrets)
	for _, sec := range secrets {
		sec.hide(resp.Header)
	}
}

// hideText replaces each secret's value in s by its placeholder.
func hideText(s string, secrets []*Secret) string {
	for _, sec := range secrets {
		s = strings.ReplaceAll(s, sec.Value, sec.Placeholder)
	}
	return s
}

// secretsFor returns the session's secrets bound to host on port.
func (s *Session) secretsFor(host string, port uint16) []*Secret {
	var out []*Secret
	for i := range s.p.Secrets {
		if sec := &s.p.Secrets[i]; sec.Value != "" && sec.binds(host, port) {
			out = append(out, sec)
		}
	}
	return out
}

// noteSecret records, once per host, that a secret was put into a request
// to k; the log names the secret, never its value.
func (s *Session) noteSecret(k hostPort, name string) {
	s.mu.Lock()
	t := s.tallyLocked(k)
	first := t.secrets == nil || !t.secrets[name]
	if t.secrets == nil {
		t.secrets = map[string]bool{}
	}
	t.secrets[name] = true
	s.mu.Unlock()
	if first {
		s.log.Info("egress secret applied", "secret", name, "host", k.host, "port", k.port)
	}
}

// scrubber is a response body with every secret's value replaced by as many
// stars, so that an origin that echoes a request back does not hand the
// value to the sandbox, and the body's length stays what the origin said.
// At the body's end, before it says so, it hides the values in the
// response's trailers, which net/http has read by then and writes after the
// body.
type scrubber struct {
	resp    *http.Response
	r       io.ReadCloser
	secrets []*Secret
	m       *Masker
	buf     []byte
	ready   []byte // masked, to pass on
	err     error  // the body's end, once read
}

func newScrubber(resp *http.Response, secrets []*Secret) *scrubber {
	var values, masks []string
	for _, sec := range secrets {
		values, masks = append(values, sec.Value), append(masks, strings.Repeat("*", len(sec.Value)))
	}
	return &scrubber{resp: resp, r: resp.Body, secrets: secrets, m: NewMasker(values, masks)}
}

func (s *scrubber) Read(p []byte) (int, error) {
	for len(s.ready) == 0 {
		if s.err != nil {
			if s.ready = s.m.Flush(); len(s.ready) == 0 {
				for _, sec := range s.secrets {
					sec.hide(s.resp.Trailer)
				}
				return 0, s.err
			}
			break
		}
		if s.buf == nil {
			s.buf = make([]byte, 32<<10)
		}
		var n int
		n, s.err = s.r.Read(s.buf)
		s.ready = s.m.Feed(s.buf[:n])
	}
	n := copy(p, s.ready)
	s.ready = s.ready[n:]
	return n, nil
}

func (s *scrubber) Close() error { return s.r.Close() }

// Masker replaces values in a stream that comes in pieces, a value split
// between two of them included: it holds back the last bytes it was fed,
// fewer than the longest value, until it knows no value begins in them.
// Each value's mask should be as long as it, so that counts of bytes hold.
type Masker struct {
	values, masks [][]byte
	keep          int
	held          []byte
}

// NewMasker returns a Masker that replaces values[i] by masks[i]; empty
// values are left out.
func NewMasker(values, masks []string) *Masker {
	m := &Masker{}
	for i, v := range values {
		if v != "" {
			m.values, m.masks = append(m.values, []byte(v)), append(m.masks, []byte(masks[i]))
			m.keep = max(m.keep, len(v)-1)
		}
	}
	return m
}

// Feed takes the stream's next piece and returns what may be passed on.
func (m *Masker) Feed(p []byte) []byte {
	if len(m.values) == 0 {
		return p
	}
	m.held = append(m.held, p...)
	for i, v := range m.values {
		if bytes.Contains(m.held, v) {
			m.held = bytes.ReplaceAll(m.held, v, m.masks[i])
		}
	}
	if len(m.held) <= m.keep {
		return nil
	}
	cut := len(m.held) - m.keep
	out := bytes.Clone(m.held[:cut])
	m.held = append(m.held[:0:0], m.held[cut:]...)
	return out
}

// Flush returns what Feed held back, at the stream's end.
func (m *Masker) Flush() []byte {
	out := m.held
	m.held = nil
	return out
}
