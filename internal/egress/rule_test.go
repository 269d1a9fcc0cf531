package egress

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestParseRule(t *testing.T) {
	tests := []struct {
		in      string
		want    Rule
		wantErr string
	}{
		{in: "pypi.org", want: Rule{Host: "pypi.org"}},
		{in: "PyPI.org.", want: Rule{Host: "pypi.org"}},
		{in: "*.pythonhosted.org", want: Rule{Host: "pythonhosted.org", Wildcard: true}},
		{in: "github.com:443", want: Rule{Host: "github.com", Port: 443}},
		{in: "*.Example.com:8080", want: Rule{Host: "example.com", Wildcard: true, Port: 8080}},
		{in: "xn--bcher-kva.example", want: Rule{Host: "xn--bcher-kva.example"}},
		{in: "localhost", want: Rule{Host: "localhost"}},
		{in: "", wantErr: "empty"},
		{in: "*", wantErr: "'*'"},
		{in: "*.org", wantErr: "at least two labels"},
		{in: "a.*.example.com", wantErr: "'*'"},
		{in: "**.example.com", wantErr: "'*'"},
		{in: "*example.com", wantErr: "'*'"},
		{in: "bücher.example", wantErr: "punycode"},
		{in: "exa_mple.com", wantErr: "character"},
		{in: "-bad.example.com", wantErr: "begins or ends"},
		{in: "a..b", wantErr: "empty label"},
		{in: "github.com:0", wantErr: "port"},
		{in: "github.com:65536", wantErr: "port"},
		{in: "github.com:+1", wantErr: "port"},
		{in: "github.com:", wantErr: "port"},
		{in: "10.0.0.1", wantErr: "IP address"},
		{in: "10.0.0.1:443", wantErr: "IP address"},
		{in: "[::1]:443", wantErr: "IP address"},
		{in: "::1", wantErr: "IP address"},
		{in: "10.1", wantErr: "numeric"},
		{in: "0x7f.1", wantErr: "numeric"},
		{in: strings.Repeat("a", 64) + ".com", wantErr: "63"},
		{in: strings.Repeat("abcdefghi.", 26) + "com", wantErr: "253"},
	}
	for _, tt := range tests {
		got, err := ParseRule(tt.in)
		if tt.wantErr != "" {
			if err == nil || !errors.Is(err, ErrInvalidRule) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseRule(%q) = %v, %v; want an ErrInvalidRule saying %q", tt.in, got, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseRule(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}

func TestRuleString(t *testing.T) {
	for _, s := range []string{"pypi.org", "*.pythonhosted.org", "github.com:443", "*.a.example:22"} {
		r, err := ParseRule(s)
		if err != nil || r.String() != s {
			t.Errorf("ParseRule(%q).String() = %q, %v", s, r.String(), err)
		}
	}
}

func mustRules(t testing.TB, patterns ...string) []Rule {
	t.Helper()
	rs, err := ParseRules(patterns)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestRuleMatch(t *testing.T) {
	tests := []struct {
		rule string
		host string
		port uint16
		want bool
	}{
		{"pypi.org", "pypi.org", 443, true},
		{"pypi.org", "pypi.org", 80, true},
		{"pypi.org", "pypi.org", 8080, false},
		{"pypi.org", "www.pypi.org", 443, false},
		{"pypi.org", "xpypi.org", 443, false},
		{"github.com:443", "github.com", 443, true},
		{"github.com:443", "github.com", 80, false},
		{"*.pythonhosted.org", "files.pythonhosted.org", 443, true},
		{"*.pythonhosted.org", "a.b.pythonhosted.org", 443, true},
		{"*.pythonhosted.org", "pythonhosted.org", 443, false},
		{"*.pythonhosted.org", "evilpythonhosted.org", 443, false},
		{"*.pythonhosted.org", ".pythonhosted.org", 443, false},
		{"*.pythonhosted.org", "files.pythonhosted.org.evil.com", 443, false},
		{"*.example.com:22", "git.example.com", 22, true},
		{"*.example.com:22", "git.example.com", 443, false},
	}
	for _, tt := range tests {
		r := mustRules(t, tt.rule)[0]
		if got := r.Match(tt.host, tt.port); got != tt.want {
			t.Errorf("%s.Match(%s, %d) = %v", tt.rule, tt.host, tt.port, got)
		}
	}
}

func TestWithin(t *testing.T) {
	allowed := mustRules(t, "pypi.org", "*.pythonhosted.org", "github.com:443", "*.example.com:8080", "deb.debian.org:80", "deb.debian.org:443")
	tests := []struct {
		req  string
		want bool
	}{
		{"pypi.org", true},
		{"pypi.org:443", true},
		{"pypi.org:22", false},
		{"files.pythonhosted.org", true},
		{"*.pythonhosted.org", true},
		{"*.files.pythonhosted.org:443", true},
		{"pythonhosted.org", false},
		{"github.com:443", true},
		{"github.com", false}, // asks for port 80 too
		{"*.example.com:8080", true},
		{"a.example.com:8080", true},
		{"a.example.com", false},
		{"deb.debian.org", true}, // 80 and 443 from two rules
		{"evil.com", false},
		{"*.org", false},
	}
	for _, tt := range tests {
		r, err := ParseRule(tt.req)
		if err != nil {
			if tt.want {
				t.Errorf("ParseRule(%q): %v", tt.req, err)
			}
			continue
		}
		err = Within([]Rule{r}, allowed, "egress.allowed")
		if (err == nil) != tt.want {
			t.Errorf("Within(%s) = %v, want allowed %v", tt.req, err, tt.want)
		}
		var be *BoundsError
		if err != nil && (!errors.As(err, &be) || be.Host != r.String() || !strings.Contains(err.Error(), "egress.allowed") || !strings.Contains(err.Error(), tt.req)) {
			t.Errorf("Within(%s) error %v should be a *BoundsError naming the host and the bound", tt.req, err)
		}
	}
}

func TestBoundsAdmit(t *testing.T) {
	b := Bounds{Allowed: mustRules(t, "pypi.org", "*.pythonhosted.org"), Default: mustRules(t, "pypi.org")}
	if err := b.Check(); err != nil {
		t.Fatal(err)
	}
	got, err := b.Admit(nil)
	if err != nil || len(got) != 1 || got[0].Host != "pypi.org" {
		t.Errorf("Admit(nil) = %v, %v; want the default", got, err)
	}
	if _, err := b.Admit([]string{"pypi.org", "evil.com"}); err == nil || !strings.Contains(err.Error(), `"evil.com"`) {
		t.Errorf("Admit(evil.com) = %v; want a bounds error naming it", err)
	}
	if _, err := b.Admit([]string{"bad host"}); !errors.Is(err, ErrInvalidRule) {
		t.Errorf("Admit(bad host) = %v; want ErrInvalidRule", err)
	}
	if err := (Bounds{Allowed: mustRules(t, "pypi.org"), Default: mustRules(t, "evil.com")}).Check(); err == nil {
		t.Error("a default outside the allowed rules passed Check")
	}
	none := Bounds{}
	if _, err := none.Admit([]string{"pypi.org"}); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Errorf("Admit with nothing allowed = %v", err)
	}
}

func TestBoundsNarrow(t *testing.T) {
	server := Bounds{
		Allowed:    mustRules(t, "pypi.org", "*.pythonhosted.org", "github.com"),
		Default:    mustRules(t, "pypi.org"),
		AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
	}
	got, err := server.Narrow(Bounds{Allowed: mustRules(t, "files.pythonhosted.org")})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Default) != 0 {
		t.Errorf("the server's default (pypi.org) is outside the tenant's allowed but was kept: %v", got.Default)
	}
	if len(got.AllowCIDRs) != 1 {
		t.Errorf("AllowCIDRs = %v, want the server's", got.AllowCIDRs)
	}
	got, err = server.Narrow(Bounds{})
	if err != nil || len(got.Allowed) != 3 || len(got.Default) != 1 {
		t.Errorf("an empty tenant should take the server's bounds: %+v, %v", got, err)
	}
	if _, err := server.Narrow(Bounds{Allowed: mustRules(t, "evil.com")}); err == nil || !strings.Contains(err.Error(), "server's egress.allowed") {
		t.Errorf("a tenant widening the server's allowed: %v", err)
	}
	if _, err := server.Narrow(Bounds{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16")}}); err == nil {
		t.Error("a tenant opened a range the server did not")
	}
	if _, err := server.Narrow(Bounds{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")}}); err != nil {
		t.Errorf("a narrower range: %v", err)
	}
	if _, err := server.Narrow(Bounds{AllowCIDRs: []netip.Prefix{netip.MustParsePrefix("0.0.0.0/0")}}); err == nil {
		t.Error("a tenant widened 10/8 to everything")
	}
}
