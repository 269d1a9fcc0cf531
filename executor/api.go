package executor

import "github.com/airlock-sandbox/airlock/api"

// The executor's request and answers are the wire types of package api, so
// that a client of the HTTP API shares them without linking the executor.
type (
	Spec          = api.Spec
	Seconds       = api.Seconds
	SpecError     = api.SpecError
	State         = api.State
	Result        = api.Result
	EgressEntry   = api.EgressEntry
	Secret        = api.Secret
	ResourceUsage = api.ResourceUsage
	Process       = api.Process
	ProcessList   = api.ProcessList
	ListOptions   = api.ListOptions
	KillResult    = api.KillResult
	Logs          = api.Logs
	LogChunk      = api.LogChunk
	LogsOptions   = api.LogsOptions
)

// The states, exit codes and errors of package api.
const (
	StateRunning   = api.StateRunning
	StateCompleted = api.StateCompleted
	StateTimedOut  = api.StateTimedOut
	StateKilled    = api.StateKilled
	StateBlocked   = api.StateBlocked
	StateFailed    = api.StateFailed
	StateLost      = api.StateLost

	ExitTimedOut = api.ExitTimedOut
	ExitFailed   = api.ExitFailed
	ExitBlocked  = api.ExitBlocked
	ExitNotFound = api.ExitNotFound

	DefaultForceAfter = api.DefaultForceAfter
)

var (
	ErrInvalidSpec = api.ErrInvalidSpec
	ErrNotFound    = api.ErrNotFound
	ErrRunning     = api.ErrRunning
	ErrEngine      = api.ErrEngine
)
