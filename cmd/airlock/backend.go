package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/client"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/server"
)

// backend is where the job commands act: the engine on this machine, through an
// executor, or an airlock server (--server), through its HTTP API.
type backend interface {
	// Run runs in the foreground, copying the output to stdout and stderr as it
	// comes unless they are nil.
	Run(ctx context.Context, spec executor.Spec, stdout, stderr io.Writer) (executor.Result, error)
	Start(ctx context.Context, spec executor.Spec) (executor.Process, error)
	List(ctx context.Context, opts executor.ListOptions) (executor.ProcessList, error)
	Logs(ctx context.Context, id string, opts executor.LogsOptions) (executor.Logs, error)
	Kill(ctx context.Context, id, signal string, forceAfter time.Duration) (executor.KillResult, error)
	Wait(ctx context.Context, id string) (executor.Result, error)
	Remove(ctx context.Context, id string) error

	CreateWorkspace(ctx context.Context, spec executor.WorkspaceSpec) (executor.Workspace, error)
	Workspace(ctx context.Context, id string) (executor.Workspace, error)
	Workspaces(ctx context.Context) ([]executor.Workspace, error)
	RemoveWorkspace(ctx context.Context, id string) error
	PutFile(ctx context.Context, id, p string, mode fs.FileMode, content io.Reader) error
	PutArchive(ctx context.Context, id, dir string, archive io.Reader) error
	OpenFile(ctx context.Context, id, p string) (io.ReadCloser, executor.FileInfo, error)
	OpenArchive(ctx context.Context, id, dir string) (io.ReadCloser, error)
	ListFiles(ctx context.Context, id, dir string) (executor.FileList, error)
	RemoveFile(ctx context.Context, id, p string) error

	Close() error
}

// local is the engine on this machine.
type local struct{ *executor.Executor }

func (l local) Run(ctx context.Context, spec executor.Spec, stdout, stderr io.Writer) (executor.Result, error) {
	var opts []executor.RunOption
	if stdout != nil || stderr != nil {
		opts = append(opts, executor.WithLiveOutput(stdout, stderr))
	}
	return l.Executor.Run(ctx, spec, opts...)
}

// The local engine's workspaces are the library caller's (no tenant).

func (l local) CreateWorkspace(ctx context.Context, spec executor.WorkspaceSpec) (executor.Workspace, error) {
	return l.Executor.CreateWorkspace(ctx, spec, executor.Caller{})
}

func (l local) Workspace(ctx context.Context, id string) (executor.Workspace, error) {
	return l.Executor.Workspace(ctx, id, executor.Caller{})
}

func (l local) Workspaces(ctx context.Context) ([]executor.Workspace, error) {
	return l.Executor.Workspaces(ctx, executor.Caller{})
}

func (l local) RemoveWorkspace(ctx context.Context, id string) error {
	return l.Executor.RemoveWorkspace(ctx, id, executor.Caller{})
}

func (l local) PutFile(ctx context.Context, id, p string, mode fs.FileMode, content io.Reader) error {
	return l.Executor.PutFile(ctx, id, p, mode, content, executor.Caller{})
}

func (l local) PutArchive(ctx context.Context, id, dir string, archive io.Reader) error {
	return l.Executor.PutArchive(ctx, id, dir, archive, executor.Caller{})
}

func (l local) OpenFile(ctx context.Context, id, p string) (io.ReadCloser, executor.FileInfo, error) {
	return l.Executor.OpenFile(ctx, id, p, executor.Caller{})
}

func (l local) OpenArchive(ctx context.Context, id, dir string) (io.ReadCloser, error) {
	return l.Executor.OpenArchive(ctx, id, dir, executor.Caller{})
}

func (l local) ListFiles(ctx context.Context, id, dir string) (executor.FileList, error) {
	return l.Executor.ListFiles(ctx, id, dir, executor.Caller{})
}

func (l local) RemoveFile(ctx context.Context, id, p string) error {
	return l.Executor.RemoveFile(ctx, id, p, executor.Caller{})
}

// remote is an airlock server, as the tenant of $AIRLOCK_TOKEN.
type remote struct{ *client.Client }

func (remote) Close() error { return nil }

func (r remote) Run(ctx context.Context, spec executor.Spec, stdout, stderr io.Writer) (executor.Result, error) {
	last := ""
	building := client.Building(func(b api.ImageBuild) {
		if line := fmt.Sprintf("airlock: the server is building %s (%s, %d%%); the run starts once it is built\n", b.Image, b.Stage, b.Percent); line != last {
			last = line
			os.Stderr.WriteString(line)
		}
	})
	return r.Client.Run(ctx, spec, stdout, stderr, building)
}

// serverFlag adds --server to a job command's flags.
func serverFlag(fs *flag.FlagSet) *string {
	return fs.String("server", os.Getenv("AIRLOCK_SERVER"),
		"act through the airlock server at this URL, as the tenant of $AIRLOCK_TOKEN, instead of the local engine (default $AIRLOCK_SERVER)")
}

// errServerPolicy refuses a local policy for a command sent to a server.
var errServerPolicy = errors.New("--policy and --policy-mode judge commands on this machine; a server judges them with its own policy for your token (drop them, or --server)")

// openBackend opens the server at serverURL, or when it is empty the local engine,
// whose executor judges commands with pol (nil: the default policy).
func openBackend(serverURL string, pol *policy.Policy) (backend, error) {
	if serverURL != "" {
		if pol != nil {
			return nil, errServerPolicy
		}
		c, err := client.New(serverURL, os.Getenv("AIRLOCK_TOKEN"))
		if err != nil {
			return nil, err
		}
		return remote{c}, nil
	}
	cfg := executor.DefaultConfig()
	if pol != nil {
		cfg.Policy = pol
	}
	// The authorities of a network that re-signs TLS, as a server takes them.
	if file := os.Getenv("AIRLOCK_SANDBOX_CA_FILE"); file != "" {
		if err := server.LoadSandboxCAs(file, &cfg); err != nil {
			return nil, err
		}
	}
	ex, err := executor.New(executor.WithConfig(cfg))
	if err != nil {
		return nil, err
	}
	// A job command answers for the data dir while it runs: it adopts the jobs
	// nobody watches and clears what crashed processes left.
	if err := reconcile(ex); err != nil {
		ex.Close()
		return nil, err
	}
	// It also removes the workspaces whose ttl has passed (a server does so
	// periodically); one a run still uses stays.
	if _, err := ex.ReapWorkspaces(context.Background()); err != nil {
		ex.Close()
		return nil, err
	}
	return local{ex}, nil
}

// reconcile runs ex.Reconcile with the time it may take on a loaded engine.
func reconcile(ex *executor.Executor) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return ex.Reconcile(ctx)
}
