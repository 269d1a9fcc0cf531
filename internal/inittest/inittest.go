// Package inittest builds airlock's init for the tests of packages that run
// real sandboxes, as `make build` builds it, and points AIRLOCK_INIT at it:
// executor.New refuses to start without an init, and a test must measure what
// users get, not the engine's samples.
package inittest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Setenv builds cmd/airlock-init (static, CGO_ENABLED=0) into dir and sets
// AIRLOCK_INIT to it; a TestMain calls it before its tests run.
func Setenv(dir string) error {
	path := filepath.Join(dir, "airlock-init")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", path, "github.com/airlock-sandbox/airlock/cmd/airlock-init")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("build airlock-init: %v\n%s", err, out)
	}
	return os.Setenv("AIRLOCK_INIT", path)
}
