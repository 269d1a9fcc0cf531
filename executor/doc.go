// Package executor is airlock's core: it turns a Spec into a fresh, locked-down
// container, runs it, and returns an exact Result.
//
// Data flows one way. Run validates the Spec against the operator's Config
// (defaults and ceilings; an invalid field is a *SpecError and nothing is created),
// has the Config's policy judge the command (a refusal is a blocked Result, exit
// code 126, and nothing is created), plans a container (no network, read-only root, tmpfs, memory without swap,
// CPU and pids limits, nobody, no capabilities, no-new-privileges, airlock's seccomp
// profile, an init as PID 1, no engine logs), launches it with its streams attached
// before it starts, captures stdout and stderr apart with a per-stream cap, enforces
// the timeout on the whole container (SIGTERM, then SIGKILL after a grace period),
// reads the final state from the engine (exit code, OOM flag, timestamps), and
// removes the container on every path.
//
// A command that fails is a Result, never an error. Errors are for invalid specs
// (ErrInvalidSpec) and for the engine failing (ErrEngine, with a failed Result).
//
// Every Docker call goes through the unexported engine interface (engine.go), whose
// only implementation over the Docker SDK is in docker.go.
package executor
