package executor

import (
	"context"
	"errors"
	"io"
	"time"
)

// engine is everything airlock asks of the container engine. Only docker.go knows
// the Docker SDK; a move to another SDK or engine touches that file alone, and unit
// tests replace the engine with a fake to reach error paths a real one rarely takes.
type engine interface {
	// info pings the engine and reports what it offers.
	info(ctx context.Context) (engineInfo, error)

	// inspectImage reports the image ref names, and whether the engine has it.
	inspectImage(ctx context.Context, ref string) (img Image, found bool, err error)
	removeImage(ctx context.Context, id string) error
	buildImage(ctx context.Context, tag string, buildContext io.Reader, labels map[string]string, progress io.Writer) error
	pullImage(ctx context.Context, ref string) error
	// listImages lists the images airlock built (labelled images.Label).
	listImages(ctx context.Context) ([]Image, error)

	create(ctx context.Context, p containerPlan) (containerID string, err error)
	// attach connects to the container's streams; call it before start so that no
	// byte is written before anyone listens.
	attach(ctx context.Context, id string, stdin bool) (*attachment, error)
	// wait arms a wait for the container's exit: its next exit (arm it before
	// start), or with nextExit false, for it not to be running (at once if it has
	// stopped already). The channel yields once: nil when the container exited.
	wait(ctx context.Context, id string, nextExit bool) <-chan error
	start(ctx context.Context, id string) error
	kill(ctx context.Context, id, signal string) error
	inspect(ctx context.Context, id string) (containerState, error)
	// stats calls sample with each resource sample the engine reports, until the
	// container stops or ctx ends.
	stats(ctx context.Context, id string, sample func(usageSample)) error
	// remove deletes the container and its anonymous volumes; a container that is
	// already gone is not an error.
	remove(ctx context.Context, id string) error

	// logs reads what the engine's log driver kept of a container's output (only
	// for containers created with a LogCap): every message stamped at or after
	// since, in order, one call of frame per message. With follow it goes on until
	// the container stops.
	logs(ctx context.Context, id string, since time.Time, follow bool, frame func(logFrame) error) error
	// list lists the containers, running or not, that carry the label (k=v).
	list(ctx context.Context, label string) ([]containerSummary, error)
}

// logFrame is one message of a container's log: a line, or a piece of one.
type logFrame struct {
	Stderr bool
	Time   time.Time // the engine's stamp; pieces of one long line share it
	Data   []byte
}

// containerSummary is one container as the engine lists it.
type containerSummary struct {
	ID      string
	Labels  map[string]string
	Running bool
}

// engineInfo is what the engine says of itself.
type engineInfo struct {
	Version  string
	APIVer   string
	CPUs     int
	Runtimes []string
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

// containerPlan is one sandbox container, fully decided: every default applied,
// every limit checked.
type containerPlan struct {
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
	Volumes   []string
	Network   string
	Runtime   string
	OpenStdin bool
	Labels    map[string]string
	// LogCap > 0 has the engine keep the container's output on disk, in its
	// rotating "local" log (see logConfig), for airlock to read back (background
	// jobs); 0 keeps nothing (foreground runs are attached).
	LogCap int64
}

// attachment is a live connection to a container's stdio.
type attachment struct {
	// copyOutput demultiplexes the container's output into stdout and stderr until
	// the container closes them.
	copyOutput func(stdout, stderr io.Writer) error
	// stdin writes to the container's stdin; closeStdin sends EOF.
	stdin      io.Writer
	closeStdin func() error
	// close tears the connection down, ending copyOutput.
	close func()
}

// containerState is the engine's record of how a container ran.
type containerState struct {
	Running    bool
	ExitCode   int
	OOMKilled  bool
	Error      string
	StartedAt  time.Time
	FinishedAt time.Time
}

// usageSample is one reading of the container's cgroup counters.
type usageSample struct {
	CPUNanos   uint64
	MemoryPeak uint64
	IORead     uint64
	IOWrite    uint64
}

// errNoContainer is returned by inspect when the container does not exist.
var errNoContainer = errors.New("no such container")
