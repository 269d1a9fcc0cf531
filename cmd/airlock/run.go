package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/junit"
	"github.com/airlock-sandbox/airlock/policy"
)

// runCmd is `airlock run [flags] -- CMD [ARGS...]`: one argument after the flags is
// a shell command, more are an argv executed without a shell.
func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	f, err := parseRunFlags("run", args, stderr)
	if err != nil {
		return 0, err
	}
	b, err := openBackend(f.server, f.policy)
	if err != nil {
		return 0, err
	}
	defer b.Close()

	var tree *hostTree
	if f.workspaceFrom != "" {
		root, err := os.OpenRoot(f.workspaceFrom)
		if err != nil {
			return 0, fmt.Errorf("--workspace-from: %w", err)
		}
		defer root.Close()
		w, err := workspaceFrom(ctx, b, f.workspaceFrom, f.workspaceSize, stderr)
		if w.ID != "" {
			defer func() {
				if err := b.RemoveWorkspace(context.WithoutCancel(ctx), w.ID); err != nil {
					fmt.Fprintf(stderr, "airlock: remove workspace %s: %v\n", w.ID, err)
				}
			}()
		}
		if err != nil {
			return 0, err
		}
		f.spec.Workspace = w.ID
		// One tree for every --copy-back: their links are judged together,
		// so a later copy-back cannot move where an earlier one's links lead.
		tree = newHostTree(root, w.Size, stderr)
	}

	live, liveErr := stdout, stderr
	if f.asJSON {
		live, liveErr = nil, nil
	}
	res, err := b.Run(ctx, f.spec, live, liveErr)
	if err != nil && res.ID == "" {
		return 0, err // nothing ran: an invalid spec, or no answer from the engine or the server
	}
	copied := true
	for _, p := range f.copyBack {
		if err := copyBack(context.WithoutCancel(ctx), b, f.spec.Workspace, tree, p); err != nil {
			fmt.Fprintf(stderr, "airlock: --copy-back %s: %v\n", p, err)
			copied = false
		}
	}
	if tree != nil {
		if err := tree.finish(); err != nil {
			fmt.Fprintf(stderr, "airlock: --copy-back: %v\n", err)
			copied = false
		}
	}
	if f.asJSON {
		if err := printJSON(stdout, res); err != nil {
			return 0, err
		}
	} else {
		explain(stderr, res)
	}
	if !copied && res.ExitCode == 0 {
		return exitUsage, nil // the command passed, but its outputs did not come back
	}
	return res.ExitCode, nil
}

// workspaceFrom creates a workspace of size (0: the default) and uploads the
// host directory dir into it. A returned workspace must be removed even with
// an error.
func workspaceFrom(ctx context.Context, b backend, dir string, size int64, warn io.Writer) (executor.Workspace, error) {
	w, err := b.CreateWorkspace(ctx, executor.WorkspaceSpec{Size: size, Labels: map[string]string{"airlock.from": "run --workspace-from"}})
	if err != nil {
		return executor.Workspace{}, fmt.Errorf("--workspace-from: %w", err)
	}
	archive := packDir(dir, warn)
	defer archive.Close()
	if err := b.PutArchive(ctx, w.ID, ".", archive); err != nil {
		return w, fmt.Errorf("--workspace-from %s: %w", dir, err)
	}
	return w, nil
}

// explain prints what a person at a terminal would otherwise have to guess: why
// the run ended the way it did.
func explain(w io.Writer, r executor.Result) {
	if r.State != executor.StateCompleted || r.OOMKilled {
		fmt.Fprintf(w, "airlock: %s\n", r.Outcome())
	}
	if r.Tests != nil {
		fmt.Fprintf(w, "airlock: %s\n", strings.ReplaceAll(junit.Text(*r.Tests), "\n", "\nairlock: "))
	}
	if r.StdoutTruncated || r.StderrTruncated {
		fmt.Fprintf(w, "airlock: output over --max-output was not kept in the result (stdout %d bytes, stderr %d bytes)\n", r.StdoutBytes, r.StderrBytes)
	}
}

// runFlags is the command line of `airlock run` or `airlock start`.
type runFlags struct {
	spec   executor.Spec
	asJSON bool
	policy *policy.Policy // nil unless --policy or --policy-mode: the default
	server string
	// workspaceFrom is a host directory copied into a fresh workspace for the
	// run, removed after it; copyBack are paths brought back into it.
	workspaceFrom string
	workspaceSize int64
	copyBack      []string
}

// parseRunFlags turns the command line of `airlock run` or `airlock start` into a
// Spec. Sizes take docker's units (512m, 1g), the timeout a duration (30s) or
// plain seconds (30).
func parseRunFlags(cmd string, args []string, stderr io.Writer) (f runFlags, err error) {
	var (
		memory, tmpfsSize, maxOutput string
		timeout, stdinFile           string
		policyFile, policyMode       string
		env, labels                  = kvFlag{}, kvFlag{}
		spec                         = &f.spec
	)
	fs := flag.NewFlagSet("airlock "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: airlock %s [flags] -- CMD [ARGS...]\n\nOne argument after -- is a shell command (sh -c); more are run directly.\n\nFlags:\n", cmd)
		fs.PrintDefaults()
	}
	fs.StringVar(&spec.Image, "image", "", "sandbox image (default airlock/minimal)")
	fs.StringVar(&memory, "memory", "", "memory limit, e.g. 512m (no swap on top)")
	fs.Float64Var(&spec.CPUs, "cpus", 0, "CPU quota in cores, e.g. 0.5")
	fs.Int64Var(&spec.Pids, "pids", 0, "maximum number of processes and threads")
	fs.StringVar(&tmpfsSize, "tmpfs-size", "", "size of /tmp, /workspace and /dev/shm, e.g. 64m")
	timeoutHelp := "wall-clock limit: 30s, 2m, or seconds (default 60)"
	if cmd == "start" {
		timeoutHelp = "wall-clock limit: 30s, 2h, or seconds (default none, at most 24h)"
	}
	fs.StringVar(&timeout, "timeout", "", timeoutHelp)
	fs.StringVar(&spec.Workdir, "workdir", "", "working directory in the sandbox (default /workspace)")
	fs.Var(&env, "env", "environment variable K=V (repeatable)")
	fs.StringVar(&spec.User, "user", "", "uid[:gid] to run as (default 65534:65534)")
	fs.StringVar(&spec.Network, "network", "", "network to join (default none)")
	fs.Var((*listFlag)(&spec.Egress), "allow-host", "HOST[:PORT] the command may reach over HTTP(S) through airlock's proxy: a name or *.domain, ports 80 and 443 by default (repeatable); nothing else is reachable")
	fs.Var((*listFlag)(&spec.Secrets), "secret", "NAME of a secret the server stores for your token (with --server): the command sees a placeholder in $NAME, and the server's proxy puts the value into requests to the secret's hosts (repeatable)")
	fs.StringVar(&spec.Runtime, "runtime", "", "OCI runtime: runc or runsc")
	fs.StringVar(&stdinFile, "stdin-file", "", "file fed to the command's stdin ('-' for this terminal's stdin)")
	fs.StringVar(&maxOutput, "max-output", "", "bytes of each stream kept in the result, e.g. 1m")
	fs.IntVar(&spec.TailLines, "tail-lines", 0, "lines in the result's stdout_tail/stderr_tail (default 100)")
	fs.Var(&labels, "label", "label K=V echoed in the result (repeatable)")
	fs.BoolVar(&f.asJSON, "json", false, "print the result as JSON instead of streaming the output")
	fs.StringVar(&policyFile, "policy", "", "policy file (JSON), as for airlock check")
	fs.StringVar(&policyMode, "policy-mode", "", "policy mode: off, standard or strict (default standard)")
	fs.StringVar(&spec.Workspace, "workspace", "", "id of a workspace to mount at /workspace (airlock workspace create)")
	if cmd == "run" {
		fs.StringVar(&spec.Report, "report", "", "JUnit XML reports the command writes in the workspace, e.g. junit:reports/*.xml: their summary is printed")
	}
	var workspaceSize string
	var copyBack listFlag
	if cmd == "run" {
		fs.StringVar(&f.workspaceFrom, "workspace-from", "", "copy this host directory into a fresh workspace for the run, and remove it after")
		fs.StringVar(&workspaceSize, "workspace-size", "", "size of the --workspace-from workspace, e.g. 1g (default 256m)")
		fs.Var(&copyBack, "copy-back", "with --workspace-from: after the run, copy this path of the workspace back into the directory (repeatable)")
	}
	server := serverFlag(fs)
	if err := fs.Parse(args); err != nil {
		return f, errReported
	}
	f.server, f.copyBack = *server, copyBack
	if f.workspaceSize, err = parseBytes("workspace-size", workspaceSize); err != nil {
		return f, err
	}
	switch {
	case f.workspaceFrom != "" && spec.Workspace != "":
		return f, fmt.Errorf("--workspace-from makes a workspace of its own: drop --workspace")
	case f.workspaceFrom == "" && (len(f.copyBack) > 0 || workspaceSize != ""):
		return f, fmt.Errorf("--copy-back and --workspace-size go with --workspace-from DIR")
	}
	for _, p := range f.copyBack {
		if _, err := hostPath(filepath.ToSlash(p)); err != nil {
			return f, fmt.Errorf("--copy-back %s: %w", p, err)
		}
	}
	if policyFile != "" || policyMode != "" {
		if f.policy, err = loadPolicy(policyFile, policyMode); err != nil {
			return f, err
		}
	}
	if spec.Memory, err = parseBytes("memory", memory); err != nil {
		return f, err
	}
	if spec.TmpfsSize, err = parseBytes("tmpfs-size", tmpfsSize); err != nil {
		return f, err
	}
	if spec.MaxOutput, err = parseBytes("max-output", maxOutput); err != nil {
		return f, err
	}
	if spec.Timeout, err = parseSeconds("timeout", timeout); err != nil {
		return f, err
	}
	if len(env) > 0 {
		spec.Env = env
	}
	if len(labels) > 0 {
		spec.Labels = labels
	}
	switch stdinFile {
	case "":
	case "-":
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return f, fmt.Errorf("--stdin-file: %w", err)
		}
		s := string(b)
		spec.Stdin = &s
	default:
		b, err := os.ReadFile(stdinFile)
		if err != nil {
			return f, fmt.Errorf("--stdin-file: %w", err)
		}
		s := string(b)
		spec.Stdin = &s
	}
	switch rest := fs.Args(); len(rest) {
	case 0:
		return f, fmt.Errorf("no command: airlock %s [flags] -- CMD [ARGS...]", cmd)
	case 1:
		spec.Command = rest[0]
	default:
		spec.Argv = rest
	}
	return f, nil
}

// parseBytes reads a size flag (api.ParseSize); "" means the default (0).
func parseBytes(flagName, v string) (int64, error) {
	if v == "" {
		return 0, nil
	}
	n, err := api.ParseSize(v)
	if err != nil {
		return 0, fmt.Errorf("--%s: %w", flagName, err)
	}
	return n, nil
}

// parseSeconds reads a duration flag (api.ParseDuration); "" means the default (0).
func parseSeconds(flagName, v string) (executor.Seconds, error) {
	if v == "" {
		return 0, nil
	}
	d, err := api.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("--%s: %w", flagName, err)
	}
	return executor.Seconds(d.Seconds()), nil
}

// durationFlag defines a duration flag read by api.ParseDuration, so that
// every duration of the CLI takes "30", "1.5" and "30s" alike.
func durationFlag(fs *flag.FlagSet, name string, value time.Duration, usage string) *time.Duration {
	d := value
	if value != 0 {
		usage = fmt.Sprintf("%s (default %s)", usage, value)
	}
	fs.Func(name, usage+"; 30 means seconds, or 30s, 2m", func(v string) error {
		var err error
		d, err = api.ParseDuration(v)
		return err
	})
	return &d
}

// listFlag collects a repeated flag.
type listFlag []string

func (f *listFlag) String() string     { return strings.Join(*f, ",") }
func (f *listFlag) Set(v string) error { *f = append(*f, v); return nil }

// kvFlag collects repeated K=V flags.
type kvFlag map[string]string

func (f kvFlag) String() string { return "" }

func (f kvFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q is not K=V", v)
	}
	f[k] = val
	return nil
}
