package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
)

// The background job commands: start, ps, logs, kill, wait, rm. They work on the
// data dir ($AIRLOCK_DATA) directly, so that any of them, in any terminal, sees
// every job; each also takes over the copying of output for jobs no other airlock
// process watches while it runs.

// startCmd is `airlock start [run flags] -- CMD`: it prints the job's id and
// returns once the container has started.
func startCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	f, err := parseRunFlags("start", args, stderr)
	if err != nil {
		return 0, err
	}
	b, err := openBackend(f.server, f.policy)
	if err != nil {
		return 0, err
	}
	defer b.Close()
	p, err := b.Start(ctx, f.spec)
	if errors.Is(err, executor.ErrInvalidSpec) || p.ID == "" {
		return 0, err
	}
	if f.asJSON {
		printJSON(stdout, p)
	} else {
		fmt.Fprintln(stdout, p.ID)
	}
	switch {
	case p.Blocked:
		fmt.Fprintf(stderr, "airlock: blocked by policy [%s]: %s (nothing ran)\n", p.BlockRule, p.BlockReason)
		return executor.ExitBlocked, nil
	case err != nil:
		return 0, err
	}
	return 0, nil
}

// psCmd is `airlock ps`: the running jobs, or with --all every job, most recent first.
func psCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("ps", "", stderr)
	all := fs.Bool("all", false, "show jobs in every state, not only running ones")
	state := fs.String("state", "", "show only jobs in this state (running, completed, timed_out, killed, blocked, failed)")
	limit := fs.Int("limit", 0, "show at most this many jobs (default 50)")
	asJSON := fs.Bool("json", false, "print the list as JSON")
	server := serverFlag(fs)
	labels := kvFlag{}
	fs.Var(&labels, "label", "show only jobs with label K=V (repeatable)")
	if err := parseFlags(fs, args, 0); err != nil {
		return err
	}
	opts := executor.ListOptions{State: executor.State(*state), Labels: labels, Limit: *limit}
	if opts.State == "" && !*all {
		opts.State = executor.StateRunning
	}
	b, err := openBackend(*server, nil)
	if err != nil {
		return err
	}
	defer b.Close()
	list, err := b.List(ctx, opts)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, list)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tEXIT\tSTARTED\tDURATION\tCOMMAND")
	for _, p := range list.Processes {
		exit := "-"
		if p.ExitCode != nil {
			exit = fmt.Sprint(*p.ExitCode)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.ID, p.State, exit, p.StartedAt.Local().Format(time.DateTime),
			(time.Duration(p.DurationMS) * time.Millisecond).Round(100*time.Millisecond), commandLine(p))
	}
	tw.Flush()
	if shown := len(list.Processes); shown < list.Total {
		fmt.Fprintf(stdout, "(%d of %d shown; --limit shows more)\n", shown, list.Total)
	}
	return nil
}

// logsCmd is `airlock logs [-f] ID`: the job's stdout to stdout and its stderr to
// stderr, byte for byte.
func logsCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("logs", " ID", stderr)
	follow := fs.Bool("f", false, "follow: print output as the job writes it, until it ends")
	stream := fs.String("stream", "both", "stdout, stderr or both")
	offset := fs.Int64("offset", 0, "first byte of each stream to print")
	limit := fs.String("limit", "", "most bytes of each stream to print, e.g. 4m (default 1m; not with -f)")
	server := serverFlag(fs)
	if err := parseFlags(fs, args, 1); err != nil {
		return err
	}
	lim, err := parseBytes("limit", *limit)
	if err != nil {
		return err
	}
	b, err := openBackend(*server, nil)
	if err != nil {
		return err
	}
	defer b.Close()
	opts := executor.LogsOptions{Stream: *stream, Offset: *offset, Limit: lim}
	if *follow {
		opts.Follow = func(c executor.LogChunk) error {
			w := stdout
			if c.Stream == "stderr" {
				w = stderr
			}
			_, err := w.Write(c.Data)
			return err
		}
	}
	l, err := b.Logs(ctx, fs.Arg(0), opts)
	if err != nil {
		return err
	}
	stdout.Write(l.Stdout)
	stderr.Write(l.Stderr)
	if l.Truncated {
		fmt.Fprintf(stderr, "airlock: the job wrote more than is kept (stdout %d of %d bytes kept, stderr %d of %d)\n",
			l.StdoutSize, l.StdoutBytes, l.StderrSize, l.StderrBytes)
	}
	return nil
}

// killCmd is `airlock kill ID`: it signals the job and waits, a little past the
// escalation, for it to end.
func killCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("kill", " ID", stderr)
	sig := fs.String("signal", "SIGTERM", "signal to send first (name or number)")
	force := durationFlag(fs, "force-after", executor.DefaultForceAfter, "send SIGKILL after this long if the job still runs (0: never)")
	server := serverFlag(fs)
	if err := parseFlags(fs, args, 1); err != nil {
		return err
	}
	b, err := openBackend(*server, nil)
	if err != nil {
		return err
	}
	defer b.Close()
	k, err := b.Kill(ctx, fs.Arg(0), *sig, *force)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, k.Message)
	if k.AlreadyEnded {
		return nil
	}
	patience := 5 * time.Second
	if *force > 0 {
		patience += *force
	}
	wctx, cancel := context.WithTimeout(ctx, patience)
	defer cancel()
	r, err := b.Wait(wctx, k.Process.ID)
	if errors.Is(err, context.DeadlineExceeded) {
		fmt.Fprintf(stdout, "process %s is still running after %s\n", r.ID, patience)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "process %s %s\n", r.ID, r.Outcome())
	return nil
}

// waitCmd is `airlock wait ID`: it blocks until the job ends and exits with its
// exit code, as `airlock run` would have.
func waitCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := newFlagSet("wait", " ID", stderr)
	timeout := durationFlag(fs, "timeout", 0, "give up after this long (exit 125; the job goes on); 0 waits as long as it takes")
	asJSON := fs.Bool("json", false, "print the job's result as JSON")
	server := serverFlag(fs)
	if err := parseFlags(fs, args, 1); err != nil {
		return 0, err
	}
	b, err := openBackend(*server, nil)
	if err != nil {
		return 0, err
	}
	defer b.Close()
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	r, err := b.Wait(ctx, fs.Arg(0))
	if err != nil {
		if r.State == executor.StateRunning {
			return 0, fmt.Errorf("process %s is still running: %w", r.ID, err)
		}
		return 0, err
	}
	if *asJSON {
		printJSON(stdout, r)
	} else {
		fmt.Fprintf(stderr, "airlock: process %s %s\n", r.ID, r.Outcome())
	}
	return r.ExitCode, nil
}

// rmCmd is `airlock rm ID...` or `airlock rm --older-than 24h`: it deletes ended
// jobs' records and logs.
func rmCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("rm", " [ID...]", stderr)
	olderThan := durationFlag(fs, "older-than", 0, "remove every job that ended longer ago than this (not with --server)")
	server := serverFlag(fs)
	if err := parseFlags(fs, args, -1); err != nil {
		return err
	}
	if fs.NArg() == 0 && *olderThan == 0 {
		return errors.New("rm: give job ids, or --older-than")
	}
	if *olderThan > 0 && *server != "" {
		return errors.New("--older-than: a server forgets ended jobs one id at a time (airlock rm ID...)")
	}
	b, err := openBackend(*server, nil)
	if err != nil {
		return err
	}
	defer b.Close()
	for _, id := range fs.Args() {
		if err := b.Remove(ctx, id); err != nil {
			return err
		}
		fmt.Fprintln(stdout, id)
	}
	if *olderThan > 0 {
		ids, err := b.(local).Prune(ctx, *olderThan)
		for _, id := range ids {
			fmt.Fprintln(stdout, id)
		}
		return err
	}
	return nil
}

func commandLine(p executor.Process) string {
	c := p.Command
	if c == "" {
		c = strings.Join(p.Argv, " ")
	}
	c = strings.ReplaceAll(c, "\n", " ")
	if len(c) > 60 {
		c = c[:57] + "..."
	}
	return c
}

func newFlagSet(cmd, operands string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("airlock "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: airlock %s [flags]%s\n\nFlags:\n", cmd, operands)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args and checks the number of operands (-1: any).
func parseFlags(fs *flag.FlagSet, args []string, operands int) error {
	if err := fs.Parse(args); err != nil {
		return errReported
	}
	if operands >= 0 && fs.NArg() != operands {
		fs.Usage()
		return fmt.Errorf("%s: want %d argument(s), got %d", fs.Name(), operands, fs.NArg())
	}
	return nil
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
