package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// ErrInvalidRule is wrapped by every error ParseRule and ParseRules return, so
// that callers map a bad pattern to a 400 without matching on text.
var ErrInvalidRule = errors.New("invalid egress rule")

// Rule is one parsed host pattern: an exact name ("pypi.org"), or a name under a
// leading "*." label ("*.pythonhosted.org"), with an optional port.
//
// A wildcard matches one or more labels in front of its suffix, never the suffix
// itself: "*.pythonhosted.org" matches "files.pythonhosted.org" and
// "a.b.pythonhosted.org", not "pythonhosted.org". Name the apex in a rule of its
// own when it is wanted too. A wildcard's suffix has at least two labels, so
// "*.org" is refused: it would open a whole top-level domain.
//
// Names are lowercase ASCII: an internationalised name is written in its
// punycode form ("xn--…"), which is what clients send. IP addresses are not
// patterns; the operator opens addresses with Policy.AllowCIDRs.
type Rule struct {
	// Host is the lowercase name, without the "*." of a wildcard.
	Host string
	// Wildcard is true when the pattern began with "*.".
	Wildcard bool
	// Port is the one port the rule allows, or 0 for the default ports 80
	// and 443.
	Port uint16
}

// DefaultPorts are the ports a rule without a port allows: plain HTTP (apt)
// and TLS.
var DefaultPorts = []uint16{80, 443}

// String returns the rule as it is written: "*.pythonhosted.org",
// "github.com:443".
func (r Rule) String() string {
	s := r.Host
	if r.Wildcard {
		s = "*." + s
	}
	if r.Port != 0 {
		s += ":" + strconv.Itoa(int(r.Port))
	}
	return s
}

// ports lists the ports the rule allows.
func (r Rule) ports() []uint16 {
	if r.Port == 0 {
		return DefaultPorts
	}
	return []uint16{r.Port}
}

// Match reports whether the rule allows a connection to host (a lowercase
// name, as CanonicalHost returns it) on port.
func (r Rule) Match(host string, port uint16) bool {
	if !r.allowsPort(port) {
		return false
	}
	return r.matchHost(host)
}

func (r Rule) allowsPort(port uint16) bool {
	if r.Port == 0 {
		return port == 80 || port == 443
	}
	return r.Port == port
}

func (r Rule) matchHost(host string) bool {
	if !r.Wildcard {
		return host == r.Host
	}
	// At least one whole label in front: ".x.org" is not a name, and the
	// check on the byte before the suffix keeps "evilpythonhosted.org" out.
	return len(host) > len(r.Host)+1 && strings.HasSuffix(host, r.Host) &&
		host[len(host)-len(r.Host)-1] == '.'
}

// covers reports whether every name and port o allows, r allows too.
func (r Rule) coversHost(o Rule) bool {
	switch {
	case !r.Wildcard:
		return !o.Wildcard && o.Host == r.Host
	case !o.Wildcard:
		return r.matchHost(o.Host)
	default:
		// "*.a.b.org" is inside "*.b.org", and so is "*.b.org" itself.
		return o.Host == r.Host || r.matchHost(o.Host)
	}
}

// ParseRule parses one pattern: a name or "*." and a name, then an optional
// ":port" (1 to 65535). It lowercases the name and drops one trailing dot.
func ParseRule(pattern string) (Rule, error) {
	bad := func(why string) (Rule, error) {
		return Rule{}, fmt.Errorf("%w %q: %s", ErrInvalidRule, pattern, why)
	}
	s := strings.ToLower(strings.TrimSpace(pattern))
	if s == "" {
		return bad("empty")
	}
	var r Rule
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		p := s[i+1:]
		if strings.Contains(s[:i], ":") || strings.HasPrefix(s, "[") {
			return bad("an IP address is not a pattern; the operator opens addresses with egress.allow_cidrs")
		}
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 || p[0] == '+' {
			return bad("port must be a number from 1 to 65535")
		}
		r.Port = uint16(n)
		s = s[:i]
	}
	if rest, ok := strings.CutPrefix(s, "*."); ok {
		r.Wildcard = true
		s = rest
	}
	s = strings.TrimSuffix(s, ".")
	if _, err := netip.ParseAddr(s); err == nil {
		return bad("an IP address is not a pattern; the operator opens addresses with egress.allow_cidrs")
	}
	if why := checkName(s); why != "" {
		return bad(why)
	}
	if r.Wildcard && strings.Count(s, ".") < 1 {
		return bad("a wildcard needs at least two labels after \"*.\" (\"*.example.org\", not \"*.org\")")
	}
	r.Host = s
	return r, nil
}

// ParseRules parses every pattern, in order, and stops at the first invalid
// one. Duplicates are kept out.
func ParseRules(patterns []string) ([]Rule, error) {
	rules := make([]Rule, 0, len(patterns))
	seen := make(map[Rule]bool, len(patterns))
	for _, p := range patterns {
		r, err := ParseRule(p)
		if err != nil {
			return nil, err
		}
		if !seen[r] {
			seen[r] = true
			rules = append(rules, r)
		}
	}
	return rules, nil
}

// checkName returns why s is not a DNS name in ASCII, or "".
func checkName(s string) string {
	if s == "" {
		return "no host name"
	}
	if len(s) > 253 {
		return "name longer than 253 characters"
	}
	labels := strings.Split(s, ".")
	for _, l := range labels {
		if l == "" {
			return "empty label"
		}
		if len(l) > 63 {
			return "label longer than 63 characters"
		}
		if l[0] == '-' || l[len(l)-1] == '-' {
			return "label begins or ends with '-'"
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if c == '*' {
				return "'*' only as the whole first label (\"*.example.org\")"
			}
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				if c >= 0x80 {
					return "not ASCII; write an internationalised name in punycode (xn--…)"
				}
				return fmt.Sprintf("character %q not allowed in a host name", c)
			}
		}
	}
	// A numeric last label is what inet_aton reads as an address ("10.1",
	// "0x7f.1"): such a name would be an IP literal in disguise.
	last := labels[len(labels)-1]
	if strings.Trim(last, "0123456789") == "" || strings.HasPrefix(last, "0x") {
		return "last label is numeric, which reads as an IP address"
	}
	return ""
}

// BoundsError says that a requested pattern is outside the rules that bound it.
// Callers answer it with a 400.
type BoundsError struct {
	// Host is the requested pattern, as written.
	Host string
	// Bound names the setting that bounds it ("egress.allowed").
	Bound string
	// Rules are the bounding rules.
	Rules []Rule
}

func (e *BoundsError) Error() string {
	if len(e.Rules) == 0 {
		return fmt.Sprintf("egress host %q is not allowed: %s is empty", e.Host, e.Bound)
	}
	names := make([]string, len(e.Rules))
	for i, r := range e.Rules {
		names[i] = r.String()
	}
	return fmt.Sprintf("egress host %q is outside %s (%s)", e.Host, e.Bound, strings.Join(names, ", "))
}

// Within checks that each requested rule allows nothing the allowed rules do
// not: every name it matches on every port it opens is matched by one of
// allowed. The first rule outside is a *BoundsError naming it and bound (the
// setting allowed came from, "egress.allowed").
func Within(requested, allowed []Rule, bound string) error {
	for _, r := range requested {
		for _, port := range r.ports() {
			if !coveredOn(r, port, allowed) {
				return &BoundsError{Host: r.String(), Bound: bound, Rules: allowed}
			}
		}
	}
	return nil
}

func coveredOn(r Rule, port uint16, allowed []Rule) bool {
	for _, a := range allowed {
		if a.allowsPort(port) && a.coversHost(r) {
			return true
		}
	}
	return false
}

// Bounds are what an operator allows runs to ask for: the server's, or a
// tenant's narrowed inside the server's with Narrow.
type Bounds struct {
	// Allowed are the patterns a request may use at all (egress.allowed).
	Allowed []Rule
	// Default applies when a request names no host (egress.default); it lies
	// within Allowed. Empty means no network.
	Default []Rule
	// AllowCIDRs are the private ranges the operator opens on purpose
	// (egress.allow_cidrs).
	AllowCIDRs []netip.Prefix
}

// Check reports whether the bounds are consistent: Default within Allowed.
func (b Bounds) Check() error {
	return Within(b.Default, b.Allowed, "egress.allowed")
}

// Narrow returns the tenant's bounds after checking that they lie inside b: a
// tenant can only narrow the server's. A nil Allowed or AllowCIDRs in tenant
// takes the server's; a nil Default takes the server's when that lies within
// the tenant's Allowed, and none otherwise.
func (b Bounds) Narrow(tenant Bounds) (Bounds, error) {
	out := tenant
	if out.Allowed == nil {
		out.Allowed = b.Allowed
	} else if err := Within(out.Allowed, b.Allowed, "the server's egress.allowed"); err != nil {
		return Bounds{}, err
	}
	if out.Default == nil && Within(b.Default, out.Allowed, "") == nil {
		out.Default = b.Default
	}
	if err := out.Check(); err != nil {
		return Bounds{}, err
	}
	if out.AllowCIDRs == nil {
		out.AllowCIDRs = b.AllowCIDRs
	} else {
		for _, p := range out.AllowCIDRs {
			if !prefixWithin(p, b.AllowCIDRs) {
				return Bounds{}, fmt.Errorf("%w: egress.allow_cidrs %s is outside the server's", ErrInvalidRule, p)
			}
		}
	}
	return out, nil
}

func prefixWithin(p netip.Prefix, outer []netip.Prefix) bool {
	for _, o := range outer {
		if o.Bits() <= p.Bits() && o.Contains(p.Addr()) {
			return true
		}
	}
	return false
}

// Admit turns a request's egress patterns into the rules of its run: the
// Default when it names none, else the parsed patterns, each within Allowed. An
// invalid pattern wraps ErrInvalidRule; one outside the bounds is a
// *BoundsError.
func (b Bounds) Admit(patterns []string) ([]Rule, error) {
	if len(patterns) == 0 {
		return b.Default, nil
	}
	rules, err := ParseRules(patterns)
	if err != nil {
		return nil, err
	}
	if err := Within(rules, b.Allowed, "egress.allowed"); err != nil {
		return nil, err
	}
	return rules, nil
}
