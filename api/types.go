package api

import "time"

// Spec is one request to run a command in a fresh sandbox. Its JSON form is the body
// of the HTTP API; zero values mean "the operator's default".
type Spec struct {
	// Command is a shell command, run as `/bin/sh -c Command`.
	Command string `json:"command,omitempty" jsonschema:"a shell command, run as /bin/sh -c COMMAND; give this or argv"`
	// Argv is the alternative to Command: executed directly, with no shell.
	Argv []string `json:"argv,omitempty" jsonschema:"a program and its arguments, run directly with no shell; give this or command"`
	// Image is the sandbox image; empty means Config.DefaultImage.
	Image string `json:"image,omitempty" jsonschema:"sandbox image (default: the server's, airlock/minimal)"`
	// Timeout bounds the run's wall clock; 0 means Config.DefaultTimeout.
	Timeout Seconds `json:"timeout,omitempty" jsonschema:"seconds before the run is killed (exit 124); fractions allowed; default 60 for a run, none for a background job"`
	// Workdir is the working directory inside the container (default /workspace).
	Workdir string `json:"workdir,omitempty" jsonschema:"absolute working directory in the sandbox (default /workspace)"`
	// Env is merged over the image's environment. The host's is never passed.
	Env map[string]string `json:"env,omitempty" jsonschema:"environment variables added to the image's; names of letters, digits and _"`
	// Stdin is fed to the process and then closed. Without it stdin is closed at once.
	Stdin *string `json:"stdin,omitempty" jsonschema:"text fed to the command's standard input, then closed (default: closed at once)"`
	// User is "uid[:gid]" or a name known to the image (default 65534:65534).
	User string `json:"user,omitempty" jsonschema:"uid[:gid] or a user name of the image (default 65534:65534, nobody)"`
	// Memory is the memory limit in bytes; swap is not allowed on top of it.
	Memory int64 `json:"memory,omitempty" jsonschema:"memory limit in bytes (default 536870912, 512 MiB); no swap"`
	// CPUs is the CPU quota in cores; fractions are allowed.
	CPUs float64 `json:"cpus,omitempty" jsonschema:"CPU quota in cores, fractions allowed (default 1)"`
	// Pids is the maximum number of tasks in the container.
	Pids int64 `json:"pids,omitempty" jsonschema:"most processes and threads (default 256)"`
	// TmpfsSize is the size in bytes of each of /tmp, /workspace and /dev/shm.
	TmpfsSize int64 `json:"tmpfs_size,omitempty" jsonschema:"size in bytes of each of /tmp, /workspace and /dev/shm (default 67108864, 64 MiB)"`
	// Network is the network the container joins (default "none").
	Network string `json:"network,omitempty" jsonschema:"network to join (default none: no network)"`
	// Egress names the hosts the run may reach through airlock's proxy:
	// exact names or one leading "*." label, with an optional port (default
	// 80 and 443). Empty: no network at all, unless the operator set a default.
	Egress []string `json:"egress,omitempty" jsonschema:"hosts the run may reach over HTTP(S) through airlock's proxy, e.g. [\"pypi.org\", \"*.pythonhosted.org\", \"github.com:443\"]: exact names or one leading *. label, optional :port (default 80 and 443); empty means no network"`
	// Secrets names secrets the operator or the tenant stored (Secret), for
	// the run's requests to their hosts. The sandbox sees each as a variable
	// holding a placeholder, worthless outside this run; airlock's proxy puts
	// the value into requests to the secret's hosts, which join Egress.
	Secrets []string `json:"secrets,omitempty" jsonschema:"names of stored secrets the run may use: each is an environment variable holding a per-run placeholder, and airlock's proxy puts the real value into requests to the secret's hosts (which join egress); the value never enters the sandbox"`
	// Runtime is the OCI runtime: "runc" or "runsc" (gVisor).
	Runtime string `json:"runtime,omitempty" jsonschema:"OCI runtime: runc or runsc (gVisor), as the server allows"`
	// Background asks for a detached job. Run refuses it; Start sets it.
	Background bool `json:"background,omitempty" jsonschema:"start a background job and return its id at once (HTTP only; over MCP use the start tool)"`
	// MaxOutput caps each of stdout and stderr in the Result, in bytes.
	MaxOutput int64 `json:"max_output,omitempty" jsonschema:"bytes of each of stdout and stderr kept in the result (default 1048576, 1 MiB)"`
	// TailLines is how many trailing lines StdoutTail and StderrTail hold.
	TailLines int `json:"tail_lines,omitempty" jsonschema:"lines in stdout_tail and stderr_tail (default 100)"`
	// Labels are the caller's metadata, echoed back in the Result.
	Labels map[string]string `json:"labels,omitempty" jsonschema:"your metadata (agent, session): echoed back, filterable in list"`
	// Workspace, when set, is the id of a workspace mounted read-write at
	// /workspace (in place of its tmpfs): the files stay after the run.
	Workspace string `json:"workspace,omitempty" jsonschema:"id of a workspace (ws_...) to mount read-write at /workspace; its files outlive the run"`
	// Report names the JUnit XML files the run writes in its workspace
	// ("junit:reports/*.xml"); the Result then carries their summary in Tests.
	Report string `json:"report,omitempty" jsonschema:"JUnit XML reports the command writes in its workspace, as junit:GLOB (e.g. junit:reports/*.xml); the result then has tests: passed, failed, and each failure's name and message"`
	// QueueTimeout bounds how long a run or background job waits for room (a
	// tenant's turn; in cluster mode, a node's slot); 0 means
	// DefaultQueueTimeout. Past it the request fails with ErrBusy (one server)
	// or ErrQueueTimeout (a cluster) and nothing runs.
	QueueTimeout Seconds `json:"queue_timeout,omitempty" jsonschema:"seconds the run or background job may wait for room (the tenant's limit; in cluster mode node slots too) before it fails (busy, or queue_timeout in cluster mode) or, a background job answered queued, ends expired (default 30)"`
	// Retry is, in cluster mode, how many times a background job is run again
	// when its node dies while it runs; 0 makes such a job lost. Only for
	// idempotent work.
	Retry int `json:"retry,omitempty" jsonschema:"cluster mode: times a background job is run again if its node dies while it runs (default 0: reported lost instead); only for idempotent work"`
}

// DefaultQueueTimeout is the queue_timeout of a request that gives none.
const DefaultQueueTimeout = 30 * time.Second

// Seconds is a duration given in (possibly fractional) seconds, as in the JSON API.
type Seconds float64

// Duration converts s to a time.Duration.
func (s Seconds) Duration() time.Duration { return time.Duration(float64(s) * float64(time.Second)) }

// SpecError is an invalid field of a Spec. It matches ErrInvalidSpec with errors.Is.
type SpecError struct {
	Field  string // the JSON name of the field, e.g. "memory" or "env.PATH"
	Reason string
}

func (e *SpecError) Error() string { return e.Field + ": " + e.Reason }

// Is makes errors.Is(err, ErrInvalidSpec) true for every *SpecError.
func (e *SpecError) Is(target error) bool { return target == ErrInvalidSpec }

// DefaultForceAfter is how long Kill waits after its signal before SIGKILL, when
// the caller has no preference.
const DefaultForceAfter = 10 * time.Second

// Process is a background job as Start, List and Kill report it.
type Process struct {
	ID        string            `json:"id"`
	State     State             `json:"state"`
	Command   string            `json:"command,omitempty"`
	Argv      []string          `json:"argv,omitempty"`
	Image     string            `json:"image"`
	Runtime   string            `json:"runtime"`
	Labels    map[string]string `json:"labels,omitempty"`
	Workspace string            `json:"workspace,omitempty"`
	Tenant    string            `json:"tenant,omitempty"`
	// Node is, in cluster mode, the node that runs or ran the job.
	Node       string     `json:"node,omitempty"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// DurationMS is the runtime so far while the job runs.
	DurationMS int64 `json:"duration_ms"`
	// ExitCode is set once the job has ended.
	ExitCode    *int   `json:"exit_code,omitempty"`
	Signal      string `json:"signal,omitempty"`
	TimedOut    bool   `json:"timed_out"`
	OOMKilled   bool   `json:"oom_killed"`
	Blocked     bool   `json:"blocked"`
	BlockRule   string `json:"block_rule,omitempty"`
	BlockReason string `json:"block_reason,omitempty"`
	Error       string `json:"error,omitempty"`
	StdoutBytes int64  `json:"stdout_bytes"`
	StderrBytes int64  `json:"stderr_bytes"`
}

// KillResult answers a Kill.
type KillResult struct {
	Process Process `json:"process"`
	// Signal is the signal sent; empty when the job had already ended.
	Signal string `json:"signal,omitempty"`
	// AlreadyEnded is true when there was nothing to kill.
	AlreadyEnded bool   `json:"already_ended"`
	Message      string `json:"message"`
}

// ListOptions filter and bound List.
type ListOptions struct {
	// State keeps the jobs in that state; empty keeps all.
	State State
	// Labels keeps the jobs carrying every one of these labels.
	Labels map[string]string
	// Limit is the most jobs returned: 0 means 50; at most 1000.
	Limit int
	// Tenant, when set, keeps only that tenant's jobs.
	Tenant string
}

// ProcessList is a page of jobs, most recent first.
type ProcessList struct {
	Processes []Process `json:"processes"`
	// Total counts the jobs that match, before the limit.
	Total int `json:"total"`
}

// LogsOptions choose what Logs returns.
type LogsOptions struct {
	// Stream is "stdout", "stderr" or "both" (the default).
	Stream string
	// Offset is the first byte of each chosen stream to return.
	Offset int64
	// Limit is the most bytes returned per stream: 0 means 1 MiB, at most 64 MiB.
	// Follow ignores it.
	Limit int64
	// Follow, when set, receives every byte from Offset on as the job writes it,
	// until the job has ended and its last byte is delivered (or ctx ends).
	Follow func(LogChunk) error
}

// LogChunk is a piece of one stream delivered by a follow.
type LogChunk struct {
	Stream string `json:"stream"`
	Offset int64  `json:"offset"`
	Data   []byte `json:"data"`
}

// Logs is a page of a job's output. Sizes count the bytes kept on disk; Bytes
// count every byte the job wrote, kept or not.
type Logs struct {
	ID          string `json:"id"`
	State       State  `json:"state"`
	Stdout      []byte `json:"stdout,omitempty"`
	Stderr      []byte `json:"stderr,omitempty"`
	StdoutSize  int64  `json:"stdout_size"`
	StderrSize  int64  `json:"stderr_size"`
	StdoutBytes int64  `json:"stdout_bytes"`
	StderrBytes int64  `json:"stderr_bytes"`
	// Truncated is true when a stream wrote more than the per-job cap keeps.
	Truncated bool `json:"truncated"`
	// NextOffset is where the next page of each stream starts.
	StdoutNext int64 `json:"stdout_next"`
	StderrNext int64 `json:"stderr_next"`
}

// ImageBuild is an image airlock is building from its recipe and how far the
// build has come: the data of a foreground run's "building" event, while the
// run waits for its image.
type ImageBuild struct {
	Image   string `json:"image"`
	Stage   string `json:"stage"`
	Percent int    `json:"percent"`
}
