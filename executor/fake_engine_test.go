package executor

import (
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/internal/enginefake"
)

// fakeEngine is the engine of the unit tests (internal/enginefake).
type fakeEngine = enginefake.Engine

func newFakeEngine() *fakeEngine { return enginefake.New() }

const fakeContainerID = enginefake.ContainerID

// newFakeExecutor returns an Executor over f with a test configuration (KillGrace
// 50ms, quiet logger), with New's own calls to the engine forgotten.
func newFakeExecutor(t *testing.T, f *fakeEngine, change func(*Config)) *Executor {
	t.Helper()
	cfg := testConfig()
	if change != nil {
		change(&cfg)
	}
	e, err := New(WithConfig(cfg), WithEngine(f))
	if err != nil {
		t.Fatalf("New with a fake engine: %v", err)
	}
	t.Cleanup(func() { e.Close() })
	e.oomWait = 100 * time.Millisecond // the fake's flag is never late
	f.Reset()
	return e
}

var errFake = errors.New("fake engine failure")

// sigkillExit is the exit code of a process ended by SIGKILL.
const sigkillExit = 128 + int(syscall.SIGKILL)
