package server

import (
	"fmt"
	"os"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/inittest"
)

// TestMain builds airlock's init for the tests that run real sandboxes.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "airlock-server-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := inittest.Setenv(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
