// Command airlock runs untrusted shell commands in throw-away, locked-down
// containers. This file wires subcommands to the executor; behaviour lives there.
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/executor"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `airlock runs commands in throw-away, locked-down containers.

Usage:
  airlock run [flags] -- CMD [ARGS...]   run one command and exit with its code
  airlock start [flags] -- CMD [ARGS...] start a background job; prints its id
  airlock ps [--all --state S --label K=V --json]
                                         list background jobs, most recent first
  airlock logs [-f] [--stream S] ID      print a job's output (-f: as it comes)
  airlock kill [--signal S --force-after D] ID
                                         end a job: signal, then SIGKILL after D
  airlock wait ID                        wait for a job; exit with its exit code
  airlock rm ID... | --older-than D      delete ended jobs' records and logs
  airlock check [flags] -- 'CMD'         judge a command with the policy; runs nothing
  airlock workspace create|ls|rm|put|get|ls-files
                                         workspaces: the user's files, kept across runs
  airlock run --workspace-from DIR [--copy-back PATH]... -- CMD
                                         CI in one line: DIR's files in, CMD, PATHs back
  airlock serve [--listen ADDR ...]      the HTTP API and /mcp (airlock serve -h)
  airlock mcp                            the MCP tools over stdio, for an agent
  airlock images build [NAME...]         build the sandbox images (offline)
  airlock images ls                      list the sandbox images in the engine
  airlock nodes [--json] | drain ID | undrain ID
                                         cluster mode: the nodes, through --server
  airlock version                        print the client and engine versions

Run 'airlock run -h' for the run flags (start takes the same). Background jobs
live in $AIRLOCK_DATA (default ~/.local/share/airlock): any airlock command sees
every job, and jobs outlive the airlock process that started them.

run, start, ps, logs, kill, wait, rm, check and workspace act through an airlock server
instead of the local engine with --server URL (or $AIRLOCK_SERVER), as the
tenant of the token in $AIRLOCK_TOKEN; the server's policy and ceilings apply.
`

// exitUsage is the exit code of airlock's own failures (bad flags, engine down),
// as docker run uses it, so that it is not confused with the command's code.
const exitUsage = executor.ExitFailed

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run dispatches a command line and returns the process exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	var err error
	code := 0
	switch args[0] {
	case "run":
		code, err = runCmd(ctx, args[1:], stdout, stderr)
	case "workspace":
		err = workspaceCmd(ctx, args[1:], stdout, stderr)
	case "start":
		code, err = startCmd(ctx, args[1:], stdout, stderr)
	case "ps":
		err = psCmd(ctx, args[1:], stdout, stderr)
	case "logs":
		err = logsCmd(ctx, args[1:], stdout, stderr)
	case "kill":
		err = killCmd(ctx, args[1:], stdout, stderr)
	case "wait":
		code, err = waitCmd(ctx, args[1:], stdout, stderr)
	case "rm":
		err = rmCmd(ctx, args[1:], stdout, stderr)
	case "serve":
		err = serveCmd(ctx, args[1:], stdout, stderr)
	case "mcp":
		err = mcpCmd(ctx, args[1:], stdout, stderr)
	case "check":
		return checkCmd(ctx, args[1:], stdout, stderr)
	case "images":
		err = imagesCmd(ctx, args[1:], stdout, stderr)
	case "nodes":
		err = nodesCmd(ctx, args[1:], stdout, stderr)
	case "version", "--version":
		err = versionCmd(stdout)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "airlock: unknown command %q\n\n%s", args[0], usage)
		return exitUsage
	}
	if err != nil {
		if !errors.Is(err, errReported) {
			fmt.Fprintln(stderr, "airlock:", err)
		}
		if e := (*api.Error)(nil); errors.As(err, &e) && e.Status == http.StatusUnauthorized {
			fmt.Fprintln(stderr, "airlock: the token sent is $AIRLOCK_TOKEN's")
		}
		return exitUsage
	}
	return code
}

// errReported means the message was already printed (e.g. by the flag package).
var errReported = errors.New("reported")

func versionCmd(w io.Writer) error {
	fmt.Fprintf(w, "airlock %s (%s, %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	ex, err := executor.New()
	if err != nil {
		fmt.Fprintf(w, "engine: %v\n", err)
		return nil
	}
	defer ex.Close()
	v, api := ex.EngineVersion()
	fmt.Fprintf(w, "engine: docker %s (API %s), runtimes: %v\n", v, api, ex.EngineRuntimes())
	runc, runcVersion := ex.RuncRuntime()
	fmt.Fprintf(w, "runc sandboxes run under: %s (version %s)\n", runc, cmp.Or(runcVersion, "unknown"))
	return nil
}
