// Package engine is the boundary between airlock and the container engine: the
// Engine interface names everything the executor asks of it, with the types
// that cross it. The executor's one real implementation is over the Docker SDK
// (executor/docker.go); internal/enginefake is the fake that unit tests of the
// executor and the server use instead.
package engine

import (
	"context"
	"errors"
	"io"
	"time"
)

// Engine is everything airlock asks of the container engine. Only docker.go knows
// the Docker SDK; a move to another SDK or engine touches that file alone, and unit
// tests replace the engine with a fake to reach error paths a real one rarely takes.
type Engine interface {
	// Info pings the engine and reports what it offers.
	Info(ctx context.Context) (Info, error)

	// InspectImage reports the image ref names, and whether the engine has it.
	InspectImage(ctx context.Context, ref string) (img Image, found bool, err error)
	RemoveImage(ctx context.Context, id string) error
	BuildImage(ctx context.Context, tag string, buildContext io.Reader, labels map[string]string, progress io.Writer) error
	PullImage(ctx context.Context, ref string) error
	// ListImages lists the images airlock built (labelled images.Label).
	ListImages(ctx context.Context) ([]Image, error)

	Create(ctx context.Context, p Plan) (containerID string, err error)
	// Attach connects to the container's streams; call it before start so that no
	// byte is written before anyone listens.
	Attach(ctx context.Context, id string, stdin bool) (*Attachment, error)
	// Wait arms a wait for the container's exit: its next exit (arm it before
	// Start), or with nextExit false, for it not to be running (at once if it has
	// stopped already). The channel yields once: the exit code, or the error of
	// a wait that broke.
	Wait(ctx context.Context, id string, nextExit bool) <-chan Exit
	Start(ctx context.Context, id string) error
	Kill(ctx context.Context, id, signal string) error
	// Update sets the limits of a running container: memory (and as much swap:
	// none), CPU quota in nano-CPUs, and pids.
	Update(ctx context.Context, id string, memory, nanoCPUs, pids int64) error
	Inspect(ctx context.Context, id string) (State, error)
	// Stats calls sample with each resource sample the engine reports, until the
	// container stops or ctx ends.
	Stats(ctx context.Context, id string, sample func(UsageSample)) error
	// Remove deletes the container and its anonymous volumes; a container that is
	// already gone is not an error.
	Remove(ctx context.Context, id string) error
	// Rename gives the container (created, running or stopped) another name;
	// ErrNoContainer when it is gone.
	Rename(ctx context.Context, id, name string) error

	// Logs reads what the engine's log driver kept of a container's output (only
	// for containers created with a LogCap): every message stamped at or after
	// since, in order, one call of frame per message. With follow it goes on until
	// the container stops.
	Logs(ctx context.Context, id string, since time.Time, follow bool, frame func(LogFrame) error) error
	// List lists the containers, running or not, that carry the label (k=v).
	List(ctx context.Context, label string) ([]ContainerSummary, error)

	// Exec runs cmd as user in the running container id, feeding it stdin (nil:
	// closed at once) and copying its output, and returns its exit code.
	Exec(ctx context.Context, id, user string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (exitCode int, err error)

	// CreateVolume creates a named volume of the local driver with its mount
	// options (opts: type, device, o) and labels.
	CreateVolume(ctx context.Context, name string, opts, labels map[string]string) error
	// CopyTo extracts a tar archive into dir of a container (created or
	// running); dir must be on one of its volumes when its root is read-only.
	CopyTo(ctx context.Context, id, dir string, archive io.Reader) error
	// RemoveVolume deletes a volume; one already gone is not an error.
	RemoveVolume(ctx context.Context, name string) error
	// ListVolumes lists the volumes that carry the label (k=v).
	ListVolumes(ctx context.Context, label string) ([]Volume, error)
}

// InitDir is where a sandbox sees airlock's init volume, and InitPath the init.
const (
	InitDir  = "/.airlock"
	InitPath = InitDir + "/init"
)

// Volume is one named volume as the engine lists it.
type Volume struct {
	Name   string
	Labels map[string]string
	// Mountpoint is where the volume's files are on the engine's host.
	Mountpoint string
}

// LogFrame is one message of a container's log: a line, or a piece of one.
type LogFrame struct {
	Stderr bool
	Time   time.Time // the engine's stamp; pieces of one long line share it
	Data   []byte
}

// ContainerSummary is one container as the engine lists it.
type ContainerSummary struct {
	ID      string
	Name    string // without the engine's leading slash
	Labels  map[string]string
	Running bool
	// State is the engine's word for it: created, running, paused,
	// restarting, removing, exited or dead.
	State string
}

// Info is what the engine says of itself.
type Info struct {
	// ID is the engine's own identity, kept in its data root: two engines on
	// one host have different ones.
	ID       string
	Version  string
	APIVer   string
	CPUs     int
	Runtimes []string
	// RuntimeArgs are the arguments the engine passes each runtime.
	RuntimeArgs map[string][]string
	// RuntimePaths are the runtimes' binaries as the engine's configuration
	// names them ("runc", "/usr/bin/runsc").
	RuntimePaths map[string]string
	// DefaultRuntime is the runtime of a container that names none; RuncCommit
	// is what its binary says of its version ("1.1.5+ds1-1+deb12u1",
	// "v1.1.12-0-g51d5e94"), "" or "N/A" when the engine could not ask it.
	DefaultRuntime string
	RuncCommit     string
}

// Image is one sandbox image present in the engine.
type Image struct {
	Ref    string `json:"ref"`
	ID     string `json:"id"`
	Recipe string `json:"recipe,omitempty"`
	// RecipeDigest identifies the exact build context the image was built from.
	RecipeDigest string    `json:"recipe_digest,omitempty"`
	Size         int64     `json:"size"`
	Created      time.Time `json:"created"`
	// Volumes are the paths the image declares as VOLUMEs.
	Volumes []string `json:"volumes,omitempty"`
}

// Plan is one sandbox container, fully decided: every default applied,
// every limit checked.
type Plan struct {
	Name      string
	Image     string
	Cmd       []string
	Env       []string
	Workdir   string
	User      string
	Memory    int64
	NanoCPUs  int64
	Pids      int64
	TmpfsSize int64
	// Volumes are the image's VOLUME paths: each gets a tmpfs like /tmp's.
	Volumes []string
	// Workspace, when set, is the volume mounted read-write at /workspace in
	// place of its tmpfs.
	Workspace string
	// InitVolume, when set, holds airlock's init (InitPath), mounted read-only
	// at InitDir: the init is the container's entrypoint, in place of the
	// engine's, and reads its command from stdin (internal/initproto).
	InitVolume string
	// EtcDir, when set, is a directory on the engine's host whose files hosts
	// (localhost and the hostname) and hostname are mounted read-only at
	// /etc/hosts and /etc/hostname, in place of the engine's per-container
	// files, whose host path names the container. With it, a sandbox without a
	// network gets no network stack from the engine at all, only its own
	// loopback (docs/DESIGN.md, "No network").
	EtcDir string
	// RelayDir, when set, is a directory both airlock and the engine's host
	// see, where airlock listens for the sandbox's relay: it is mounted
	// read-only at relay.SocketDir (docs/DESIGN.md, "Network by allow-list").
	RelayDir string
	// AutoRemove has the engine remove the container when it stops: a warm
	// sandbox whose owner died (its init reads EOF and exits) goes by itself.
	AutoRemove bool
	Network    string
	Runtime    string
	OpenStdin  bool
	Labels     map[string]string
	// LogCap > 0 has the engine keep the container's output on disk, in its
	// rotating "local" log (see logConfig), for airlock to read back (background
	// jobs); 0 keeps nothing (foreground runs are attached).
	LogCap int64
}

// Attachment is a live connection to a container's stdio.
type Attachment struct {
	// CopyOutput demultiplexes the container's output into stdout and stderr until
	// the container closes them.
	CopyOutput func(stdout, stderr io.Writer) error
	// Stdin writes to the container's stdin; CloseStdin sends EOF.
	Stdin      io.Writer
	CloseStdin func() error
	// Close tears the connection down, ending CopyOutput.
	Close func()
}

// State is the engine's record of how a container ran.
type State struct {
	Running    bool
	ExitCode   int
	OOMKilled  bool
	Error      string
	StartedAt  time.Time
	FinishedAt time.Time
}

// UsageSample is one reading of the container's cgroup counters.
type UsageSample struct {
	CPUNanos   uint64
	MemoryPeak uint64
	IORead     uint64
	IOWrite    uint64
}

// ErrNoContainer is returned by Inspect and Rename when the container does
// not exist.
var ErrNoContainer = errors.New("no such container")

// ErrNameInUse is returned by Create when another container has the plan's
// name: names are unique on one engine, whichever process made them.
var ErrNameInUse = errors.New("container name in use")

// Exit is how a wait for a container ended: its exit code, or Err when the
// wait broke (and the code says nothing).
type Exit struct {
	Code int
	Err  error
}
