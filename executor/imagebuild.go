package executor

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/images"
)

// ImageBuild is an image airlock is building from its recipe, and how far
// the build has come.
type ImageBuild = api.ImageBuild

// Building says whether airlock is building the image ref in the background
// now (BuildImagesInBackground), and how far it has come.
func (e *Executor) Building(ref string) (ImageBuild, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	b, ok := e.builds[imageRef(ref)]
	return b, ok
}

// imageRef is ref with the tag a bare name implies.
func imageRef(ref string) string {
	if r, ok := images.Lookup(ref); ok {
		return r.Ref
	}
	return ref
}

// buildingProgress records how far the build of ref has come, and logs it
// at each stage and every tenth of the way.
func (e *Executor) buildingProgress(ref string, p images.Progress) {
	e.mu.Lock()
	old, had := e.builds[ref]
	if !had && p.Stage != "starting" { // a build a run asked for: others wait for it on buildMu
		e.mu.Unlock()
		return
	}
	b := ImageBuild{Image: ref, Stage: p.Stage, Percent: p.Percent}
	e.builds[ref] = b
	e.mu.Unlock()
	if had && (old.Stage != b.Stage || old.Percent/10 != b.Percent/10) {
		e.cfg.Logger.Info("building image", "image", ref, "stage", b.Stage, "percent", b.Percent)
	}
}

func (e *Executor) buildDone(ref string) {
	e.mu.Lock()
	delete(e.builds, ref)
	e.mu.Unlock()
}

type buildWaitKey struct{}

// WaitForImageBuilds returns a context under which a run or job whose image
// airlock is building from its recipe (at a server's start, say) waits for
// the build, telling report how far it has come every few seconds. Without
// it such a run fails at once, saying the image is being built and how far.
func WaitForImageBuilds(ctx context.Context, report func(ImageBuild)) context.Context {
	return context.WithValue(ctx, buildWaitKey{}, report)
}

// buildReportEvery is how often a run waiting for its image hears of the
// build; buildPatience is how long a run that did not ask to wait
// (WaitForImageBuilds) waits anyway, for builds of seconds (airlock/minimal).
const (
	buildReportEvery = 2 * time.Second
	buildPatience    = 15 * time.Second
)

// awaitBuild waits for the background build b of a run's image: to its end
// when the caller asked to (WaitForImageBuilds), else buildPatience at most,
// and then says the image is being built and how far it has come.
func (e *Executor) awaitBuild(ctx context.Context, b ImageBuild) error {
	report, _ := ctx.Value(buildWaitKey{}).(func(ImageBuild))
	start := time.Now()
	var reported time.Time
	for ok := true; ok; b, ok = e.Building(b.Image) {
		switch {
		case report != nil && time.Since(reported) >= buildReportEvery:
			report(b)
			reported = time.Now()
		case report == nil && time.Since(start) >= e.buildPatience:
			return fmt.Errorf("%w: image %q is being built from its recipe (%s, %d%%); ask again in a few minutes, or follow the run's events (Accept: text/event-stream), which wait for it",
				ErrEngine, b.Image, b.Stage, b.Percent)
		}
		select {
		case <-time.After(250 * time.Millisecond):
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	return nil
}

// buildSteps reads the engine's build output ("Step 2/3 : ADD ...") as the
// last share of a build's progress, from images.ContextPercent on.
type buildSteps struct {
	e    *Executor
	ref  string
	out  io.Writer
	line []byte
}

func (s *buildSteps) Write(p []byte) (int, error) {
	s.line = append(s.line, p...)
	for {
		i := bytes.IndexByte(s.line, '\n')
		if i < 0 {
			break
		}
		var step, steps int
		if n, _ := fmt.Sscanf(string(s.line[:i]), "Step %d/%d", &step, &steps); n == 2 && steps > 0 {
			s.e.buildingProgress(s.ref, images.Progress{Stage: fmt.Sprintf("engine: build step %d of %d", step, steps),
				Percent: images.ContextPercent + (step-1)*(100-images.ContextPercent)/steps})
		}
		s.line = s.line[i+1:]
	}
	return s.out.Write(p)
}
