// Package executor is airlock's core: it turns a Spec into a fresh,
// locked-down container, runs it, and returns an exact Result; it keeps
// background jobs, workspaces and the warm pool on the same engine.
//
// One gate (gate.go). Admit validates a Spec against the operator's Config
// and the caller's bounds (defaults and ceilings; an invalid field is a
// *SpecError and nothing is created) and has the policy judge the command,
// once. Everything after takes the Admitted, never a Spec: what runs is what
// was admitted. AdmittedElsewhere is the Admitted of a job another node of a
// cluster admitted; only what is this node's own (its engine's runtimes) is
// checked again.
//
// Runs (run.go, initrun.go, capture.go). Execute plans a container (no
// network, read-only root, tmpfs, memory without swap, CPU and pids limits,
// nobody, no capabilities, no-new-privileges, airlock's seccomp profile,
// airlock's init as PID 1, no engine logs), or claims a warm one (pool.go),
// hands the init its command, captures stdout and stderr apart with a cap
// each, enforces the timeout on the whole container, reads the final state,
// and removes the container on every path. A command that fails is a Result,
// never an error; errors are for invalid specs (ErrInvalidSpec) and for the
// engine failing (ErrEngine).
//
// Background jobs (background.go, jobwatch.go, joblogs.go, reconcile.go).
// Launch starts a detached job recorded in the data dir's store; Get, Logs,
// Kill, Wait, List and Remove answer for it from any process on the data dir. Reconcile adopts the jobs nobody watches and clears what crashed
// processes left.
//
// Workspaces (workspace.go, workspace_files.go, tarsafe.go). A volume and
// its holder container; files move through airlock's file agent in the
// holder, over a socket or an exec, never through the engine's archive API.
//
// Egress and secrets (egress.go, secrets.go). A run's allow-list proxy
// session and the relay that carries the sandbox's connections to it.
//
// Every Docker call goes through the engine interface (engine.go,
// internal/engine), whose one implementation over the Docker SDK is
// docker.go. docs/DESIGN.md describes each part and why it is so.
package executor
