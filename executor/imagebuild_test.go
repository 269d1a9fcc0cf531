package executor

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBackgroundImageBuild: while a server builds a missing image in the
// background, a run that asked to wait (WaitForImageBuilds) hears how far the
// build has come and runs once it is built; a run that did not is told, after
// a short patience, that the image is being built, naming it; nothing is
// created for it.
func TestBackgroundImageBuild(t *testing.T) {
	f := newFakeEngine()
	f.ImageMissing = true
	f.BuildGate = make(chan struct{})
	f.Stdout = "ok\n"
	e := newFakeExecutor(t, f, nil)
	e.buildPatience = 100 * time.Millisecond

	built := e.BuildImagesInBackground(t.Context(), "minimal")
	deadline := time.Now().Add(5 * time.Second)
	for {
		if b, ok := e.Building("airlock/minimal:latest"); ok && strings.HasPrefix(b.Stage, "engine:") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the background build never reached the engine")
		}
		time.Sleep(10 * time.Millisecond)
	}

	res, err := runWithin(t, t.Context(), e, Spec{Command: "true"})
	wantFailed(t, res, err, `image "airlock/minimal" is being built from its recipe (engine: build step 1 of 2, 85%)`)
	for _, c := range f.Methods() {
		if c == "create" {
			t.Fatalf("a container was created for a run without its image: %q", f.Methods())
		}
	}

	var mu sync.Mutex
	var heard []ImageBuild
	ctx := WaitForImageBuilds(t.Context(), func(b ImageBuild) {
		mu.Lock()
		heard = append(heard, b)
		mu.Unlock()
	})
	done := make(chan Result, 1)
	go func() {
		r, err := e.Run(ctx, Spec{Command: "true"})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	time.Sleep(300 * time.Millisecond)
	close(f.BuildGate)
	if err := <-built; err != nil {
		t.Fatalf("background build: %v", err)
	}
	select {
	case r := <-done:
		if r.State != StateCompleted || r.Stdout != "ok\n" {
			t.Errorf("run after the build: %q %q %q", r.State, r.Stdout, r.Error)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting run did not run after the build")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(heard) == 0 || heard[0].Image != "airlock/minimal" || heard[0].Percent != 85 {
		t.Errorf("the waiting run heard %+v; want the build of airlock/minimal at 85%%", heard)
	}
	if _, ok := e.Building("airlock/minimal"); ok {
		t.Error("still building after the build ended")
	}
}
