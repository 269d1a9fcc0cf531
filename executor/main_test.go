package executor

import (
	"fmt"
	"os"
	"testing"
)

// TestMain gives every executor of the unit tests a data dir of its own, away
// from the user's.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "airlock-executor-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("AIRLOCK_DATA", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
