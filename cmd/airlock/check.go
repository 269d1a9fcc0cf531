package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/airlock-sandbox/airlock/policy"
)

// Exit codes of `airlock check`.
const (
	checkAllowed  = 0
	checkBlocked  = 1
	checkBadInput = 2
)

// checkCmd is `airlock check [--policy FILE --mode M --json] 'CMD'`: one argument
// is a shell command, more are an argv, as with run. It runs nothing.
func checkCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("airlock check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("policy", "", "policy file (JSON): mode, allow/deny patterns and programs, allowlist, workspace roots")
	mode := fs.String("mode", "", "off, standard or strict (default: the file's, else standard)")
	asJSON := fs.Bool("json", false, "print the decision as JSON")
	rules := fs.Bool("rules", false, "list the rule ids and their reasons, and exit")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: airlock check [flags] -- 'CMD' | CMD ARGS...\n\nExit status: 0 allowed, 1 blocked, 2 bad input.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return checkBadInput
	}
	if *rules {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		for _, r := range policy.Rules() {
			fmt.Fprintf(tw, "%s\t%s\n", r.ID, r.Reason)
		}
		tw.Flush()
		return checkAllowed
	}
	p, err := loadPolicy(*file, *mode)
	if err != nil {
		fmt.Fprintln(stderr, "airlock check:", err)
		return checkBadInput
	}
	var d policy.Decision
	switch rest := fs.Args(); len(rest) {
	case 0:
		fmt.Fprintln(stderr, "airlock check: no command: airlock check [flags] -- 'CMD'")
		return checkBadInput
	case 1:
		d = p.Check(rest[0])
	default:
		d = p.CheckArgv(rest)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		enc.Encode(d)
	} else if d.Allowed {
		fmt.Fprintf(stdout, "allowed (%s mode)\n", d.Mode)
	} else {
		fmt.Fprintf(stdout, "blocked: %s [%s]\n  command: %s\n", d.Reason, d.Rule, d.Match)
	}
	if !d.Allowed {
		return checkBlocked
	}
	return checkAllowed
}

// loadPolicy builds the policy from an optional JSON file and an optional mode
// that overrides the file's.
func loadPolicy(file, mode string) (*policy.Policy, error) {
	var cfg policy.Config
	if file != "" {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--policy: %w", err)
		}
		if cfg, err = policy.ParseConfig(data); err != nil {
			return nil, fmt.Errorf("--policy %s: %w", file, err)
		}
	}
	if mode != "" {
		cfg.Mode = policy.Mode(mode)
	}
	p, err := policy.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	return p, nil
}
