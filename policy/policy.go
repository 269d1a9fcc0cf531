package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Mode is how strict a Policy is.
type Mode string

// The modes: off judges nothing, standard refuses what a rule matches, strict
// also refuses what no static check can decide.
const (
	ModeOff      Mode = "off"      // allow everything
	ModeStandard Mode = "standard" // refuse what a rule matches
	ModeStrict   Mode = "strict"   // also refuse what a static check cannot decide
)

// Config is the operator's policy.
type Config struct {
	// Mode defaults to standard.
	Mode Mode `json:"mode,omitempty"`
	// AllowPatterns are regular expressions over one simple command, as its words
	// joined by spaces after normalisation ("git push origin main"). A match excuses
	// that simple command from every other layer; other commands in the same string
	// are still judged.
	AllowPatterns []string `json:"allow_patterns,omitempty"`
	// DenyPatterns are regular expressions over one simple command, as above.
	DenyPatterns []string `json:"deny_patterns,omitempty"`
	// DenyPrograms refuses programs by name, optionally only with matching arguments.
	DenyPrograms []ProgramRule `json:"deny_programs,omitempty"`
	// Allowlist, when not empty, is the only programs that may run (allowlist mode).
	Allowlist []ProgramRule `json:"allowlist,omitempty"`
	// WorkspaceRoots, when not empty, confine path arguments and redirect targets:
	// absolute paths outside every root and relative paths that climb out of the
	// first root (the working directory) are refused.
	WorkspaceRoots []string `json:"workspace_roots,omitempty"`
	// DenyWritePaths are globs of paths no command may write, by a redirect or
	// by any program the checker knows writes a file (tee, dd of=, cp, curl -o,
	// ...): * and ? within a path component, ** across components, ~ for the
	// home directory ("~/.bash_history", "/etc/**"). A relative entry
	// (".env") is read from the working directory: the first workspace root,
	// else DefaultWorkdir.
	DenyWritePaths []string `json:"deny_write_paths,omitempty"`
}

// ProgramRule names a program, with optional constraints on its arguments.
type ProgramRule struct {
	// Program is a command name ("git"); paths are reduced to their base name.
	Program string `json:"program"`
	// Args (deny rules) is a regular expression over the arguments joined by
	// spaces; empty means any arguments.
	Args string `json:"args,omitempty"`
	// Subcommands (allowlist) are the permitted leading arguments, e.g. "status"
	// or "log --oneline"; empty means any arguments.
	Subcommands []string `json:"subcommands,omitempty"`
}

// Decision is the verdict on one command.
type Decision struct {
	Allowed bool `json:"allowed"`
	// Rule is the stable id of the rule that refused the command (see Rules).
	Rule string `json:"rule,omitempty"`
	// Reason says in plain words why the command was refused.
	Reason string `json:"reason,omitempty"`
	// Match is the simple command that was refused, normalised ("rm -rf /").
	Match string `json:"match,omitempty"`
	// Mode is the mode the decision was made in.
	Mode Mode `json:"mode"`
}

// MarshalJSON adds "blocked", the field name the is_blocked tools of other
// agent platforms use.
func (d Decision) MarshalJSON() ([]byte, error) {
	type plain Decision
	return json.Marshal(struct {
		plain
		Blocked bool `json:"blocked"`
	}{plain(d), !d.Allowed})
}

// Policy judges commands. It is immutable and safe for concurrent use.
type Policy struct {
	mode          Mode
	allowPatterns []*regexp.Regexp
	denyPatterns  []*regexp.Regexp
	denyPrograms  map[string][]*regexp.Regexp // program -> argument patterns (nil: any)
	allowlist     map[string][][]string       // program -> permitted leading words (nil: any)
	roots         []string
	denyWrite     []*regexp.Regexp
	denyGlobs     []string // the globs of denyWrite, to meet a glob target
	// onScript, when not nil, is called with every script the checker is
	// about to judge: tests make it panic to see the check fail closed.
	onScript func(src string)
}

// New compiles cfg. An invalid pattern or mode is an error naming the field.
func New(cfg Config) (*Policy, error) {
	p := &Policy{mode: cfg.Mode}
	switch cfg.Mode {
	case "":
		p.mode = ModeStandard
	case ModeOff, ModeStandard, ModeStrict:
	default:
		return nil, fmt.Errorf("mode: %q is not off, standard or strict", cfg.Mode)
	}
	var err error
	if p.allowPatterns, err = compileAll("allow_patterns", cfg.AllowPatterns); err != nil {
		return nil, err
	}
	if p.denyPatterns, err = compileAll("deny_patterns", cfg.DenyPatterns); err != nil {
		return nil, err
	}
	p.denyPrograms = map[string][]*regexp.Regexp{}
	for i, r := range cfg.DenyPrograms {
		name := commandName(r.Program)
		if name == "" {
			return nil, fmt.Errorf("deny_programs[%d].program: empty", i)
		}
		if r.Args == "" {
			p.denyPrograms[name] = append(p.denyPrograms[name], nil)
			continue
		}
		re, err := regexp.Compile(r.Args)
		if err != nil {
			return nil, fmt.Errorf("deny_programs[%d].args: %v", i, err)
		}
		p.denyPrograms[name] = append(p.denyPrograms[name], re)
	}
	if len(cfg.Allowlist) > 0 {
		p.allowlist = map[string][][]string{}
		for i, r := range cfg.Allowlist {
			name := commandName(r.Program)
			if name == "" {
				return nil, fmt.Errorf("allowlist[%d].program: empty", i)
			}
			if len(r.Subcommands) == 0 {
				p.allowlist[name] = append(p.allowlist[name], nil)
			}
			for _, sub := range r.Subcommands {
				words := strings.Fields(sub)
				if len(words) == 0 {
					return nil, fmt.Errorf("allowlist[%d].subcommands: an entry is empty", i)
				}
				p.allowlist[name] = append(p.allowlist[name], words)
			}
		}
	}
	for i, root := range cfg.WorkspaceRoots {
		if !strings.HasPrefix(root, "/") {
			return nil, fmt.Errorf("workspace_roots[%d]: %q is not an absolute path", i, root)
		}
		p.roots = append(p.roots, cleanPath(root))
	}
	for i, g := range cfg.DenyWritePaths {
		g = homeToTilde(g)
		if g != "" && !strings.HasPrefix(g, "/") && !strings.HasPrefix(g, "~") {
			g = p.workdir() + "/" + g // relative: from the working directory
		}
		re, err := globRegexp(g)
		if err != nil {
			return nil, fmt.Errorf("deny_write_paths[%d]: %v", i, err)
		}
		p.denyWrite = append(p.denyWrite, re)
		if !strings.HasPrefix(g, "~") {
			g = cleanPath(g)
		}
		p.denyGlobs = append(p.denyGlobs, g)
	}
	return p, nil
}

// DefaultWorkdir is the sandbox's working directory when the policy has no
// workspace roots: relative paths (a write target, a relative
// deny_write_paths entry) are read from it.
const DefaultWorkdir = "/workspace"

// workdir is the directory relative paths are read from: the first
// workspace root, else DefaultWorkdir.
func (p *Policy) workdir() string {
	if len(p.roots) > 0 {
		return p.roots[0]
	}
	return DefaultWorkdir
}

// Default returns the standard policy with no operator rules.
func Default() *Policy {
	p, _ := New(Config{})
	return p
}

// Mode returns the policy's mode.
func (p *Policy) Mode() Mode { return p.mode }

func compileAll(field string, patterns []string) ([]*regexp.Regexp, error) {
	var out []*regexp.Regexp
	for i, s := range patterns {
		re, err := regexp.Compile(s)
		if err != nil {
			return nil, fmt.Errorf("%s[%d]: %v", field, i, err)
		}
		out = append(out, re)
	}
	return out, nil
}

// ParseConfig reads a Config from JSON. Unknown fields are errors, so that a
// misspelt rule is not silently ignored.
func ParseConfig(data []byte) (Config, error) {
	var cfg Config
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return Config{}, fmt.Errorf("policy config: %w", err)
	}
	return cfg, nil
}

// globRegexp compiles a path glob: * and ? stay within a component, ** spans
// components, [...] is a class; a leading $HOME is ~.
func globRegexp(g string) (*regexp.Regexp, error) {
	g = homeToTilde(g)
	if g == "" || !strings.HasPrefix(g, "/") && !strings.HasPrefix(g, "~") {
		return nil, fmt.Errorf("%q is not an absolute path or one under ~", g)
	}
	if !strings.HasPrefix(g, "~") {
		g = cleanPath(g)
	}
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(g); i++ {
		switch ch := g[i]; {
		case ch == '*' && i+1 < len(g) && g[i+1] == '*':
			b.WriteString(".*")
			i++
		case ch == '*':
			b.WriteString("[^/]*")
		case ch == '?':
			b.WriteString("[^/]")
		case ch == '[':
			j := strings.IndexByte(g[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("%q: unclosed [", g)
			}
			b.WriteString(strings.Replace(g[i:i+j+1], "[!", "[^", 1))
			i += j
		default:
			b.WriteString(regexp.QuoteMeta(string(ch)))
		}
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}
