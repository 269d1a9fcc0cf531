package executor

import "github.com/airlock-sandbox/airlock/internal/engine"

// The engine boundary (internal/engine), under the names the executor's code
// uses: only docker.go knows the Docker SDK.
type (
	engineAPI        = engine.Engine
	logFrame         = engine.LogFrame
	containerSummary = engine.ContainerSummary
	engineInfo       = engine.Info
	containerPlan    = engine.Plan
	attachment       = engine.Attachment
	containerState   = engine.State
	usageSample      = engine.UsageSample
	containerExit    = engine.Exit
)

// Image is one sandbox image present in the engine.
type Image = engine.Image

// errNoContainer is returned by Inspect when the container does not exist.
var errNoContainer = engine.ErrNoContainer
