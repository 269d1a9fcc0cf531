package executor

import (
	"fmt"
	"os"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/inittest"
)

// TestMain gives every executor of the unit tests a data dir of its own, away
// from the user's, and builds airlock's init for the examples.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "airlock-executor-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("AIRLOCK_DATA", dir)
	// The examples run on the real engine, with airlock's init.
	if err := inittest.Setenv(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
