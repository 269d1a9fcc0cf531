package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/client"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/server"
)

// Exit codes of `airlock check`.
const (
	checkAllowed  = 0
	checkBlocked  = 1
	checkBadInput = 2
)

// checkCmd is `airlock check [--policy FILE --mode M --json] 'CMD'`: one argument
// is a shell command, more are an argv, as with run. It runs nothing.
func checkCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("airlock check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("policy", "", "policy file (JSON): mode, allow/deny patterns and programs, allowlist, workspace roots")
	mode := fs.String("mode", "", "off, standard or strict (default: the file's, else standard)")
	asJSON := fs.Bool("json", false, "print the decision as JSON")
	rules := fs.Bool("rules", false, "list the rule ids and their reasons, and exit")
	explain := fs.Bool("explain", false, "print each simple command the checker saw (after unwrapping and expansion) and the rule that judged it")
	server := serverFlag(fs)
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
	rest := fs.Args()
	if len(rest) == 0 {
		fmt.Fprintln(stderr, "airlock check: no command: airlock check [flags] -- 'CMD'")
		return checkBadInput
	}
	if *explain {
		return explainCheck(stdout, stderr, *server, *file, *mode, rest)
	}
	d, err := decide(ctx, *server, *file, *mode, rest)
	if err != nil {
		fmt.Fprintln(stderr, "airlock check:", err)
		return checkBadInput
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

// decide judges a command (one argument) or an argv (more) with the policy built
// from file and mode, or with the server's policy for $AIRLOCK_TOKEN.
func decide(ctx context.Context, serverURL, file, mode string, args []string) (api.CheckResult, error) {
	command, argv := "", args
	if len(args) == 1 {
		command, argv = args[0], nil
	}
	if serverURL != "" {
		if file != "" || mode != "" {
			return api.CheckResult{}, errServerPolicy
		}
		c, err := client.New(serverURL, os.Getenv("AIRLOCK_TOKEN"))
		if err != nil {
			return api.CheckResult{}, err
		}
		return c.Check(ctx, command, argv)
	}
	p, err := loadPolicy(file, mode)
	if err != nil {
		return api.CheckResult{}, err
	}
	if argv == nil {
		return server.CheckResultOf(p.Check(command)), nil
	}
	return server.CheckResultOf(p.CheckArgv(argv)), nil
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

// explainCheck is check --explain: the steps of the local policy's judgement.
func explainCheck(stdout, stderr io.Writer, serverURL, file, mode string, args []string) int {
	if serverURL != "" {
		fmt.Fprintln(stderr, "airlock check: --explain judges with a local policy (--policy, --mode); a server's check answers only its decision")
		return checkBadInput
	}
	p, err := loadPolicy(file, mode)
	if err != nil {
		fmt.Fprintln(stderr, "airlock check:", err)
		return checkBadInput
	}
	d, steps := p.ExplainArgv(args)
	if len(args) == 1 {
		d, steps = p.Explain(args[0])
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	for _, st := range steps {
		verdict := "allowed"
		if st.Rule != "" {
			verdict = fmt.Sprintf("refused [%s]: %s", st.Rule, st.Reason)
		}
		if st.Via != "" {
			verdict += "\t(judged as code by the table of programs: " + st.Via + ")"
		}
		fmt.Fprintf(tw, "  %s\t%s\n", st.Command, verdict)
	}
	tw.Flush()
	if d.Allowed {
		fmt.Fprintf(stdout, "allowed (%s mode): %d simple command(s) judged\n", d.Mode, len(steps))
		return checkAllowed
	}
	fmt.Fprintf(stdout, "blocked [%s]: %s\n", d.Rule, d.Reason)
	return checkBlocked
}
