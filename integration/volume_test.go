package integration

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/image"

	"github.com/airlock-sandbox/airlock/executor"
)

// An image that declares VOLUMEs: the engine would give each an anonymous
// volume, read-write, unbounded, on the host's disk. airlock covers each with a
// bounded tmpfs instead (executor.create).

var (
	volumeImageOnce sync.Once
	volumeImageRef  string
	volumeImageErr  error
)

// volumeImage builds, once per test process, a local image FROM airlock/minimal
// that declares /data and /var/cache/app as VOLUMEs. TestMain removes it.
func volumeImage(t *testing.T) string {
	t.Helper()
	volumeImageOnce.Do(func() {
		ref := "airlock-test/volumes:" + randomHex(6)
		var ctxTar bytes.Buffer
		tw := tar.NewWriter(&ctxTar)
		df := []byte("FROM airlock/minimal\nVOLUME /data /var/cache/app\n")
		tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(df))})
		tw.Write(df)
		tw.Close()
		resp, err := docker.ImageBuild(context.Background(), &ctxTar, build.ImageBuildOptions{
			Tags: []string{ref}, NoCache: true, Remove: true, ForceRemove: true,
			Labels: map[string]string{labelTest: "volumes"},
		})
		if err != nil {
			volumeImageErr = err
			return
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(out), "Successfully tagged") {
			volumeImageErr = &buildError{string(out)}
			return
		}
		volumeImageRef = ref
		afterAll = append(afterAll, func() {
			docker.ImageRemove(context.Background(), ref, image.RemoveOptions{Force: true, PruneChildren: true})
		})
	})
	if volumeImageErr != nil {
		t.Fatalf("build the VOLUME image: %v", volumeImageErr)
	}
	return volumeImageRef
}

type buildError struct{ log string }

func (e *buildError) Error() string { return "build failed: " + e.log }

// volumeFill writes past the run's tmpfs size into both declared volumes, and
// says what is mounted there.
const volumeFill = `grep -E ' /(data|var/cache/app) ' /proc/mounts; ` +
	`dd if=/dev/zero of=/data/fill bs=1M count=64; dd if=/dev/zero of=/var/cache/app/fill bs=1M count=64`

// assertVolumesBounded: both declared paths are tmpfs mounts, and a write past
// the tmpfs size ends in ENOSPC in each.
func assertVolumesBounded(t *testing.T, stdout, stderr string) {
	t.Helper()
	for _, p := range []string{" /data ", " /var/cache/app "} {
		line := ""
		for l := range strings.SplitSeq(stdout, "\n") {
			if strings.Contains(l, p) {
				line = l
			}
		}
		if !strings.Contains(line, "tmpfs") {
			t.Errorf("%s is not a tmpfs in the sandbox: %q", strings.TrimSpace(p), line)
		}
	}
	if strings.Count(stdout+stderr, "No space left on device") != 2 {
		t.Errorf("stdout %q stderr %q: each write must end in ENOSPC", stdout, stderr)
	}
}

// TestVolumeImageBackgroundJob: a background job with no timeout, on an image
// with VOLUMEs, cannot write past its tmpfs size to the host's disk.
func TestVolumeImageBackgroundJob(t *testing.T) {
	ref := volumeImage(t)
	p, err := ex.Start(t.Context(), executor.Spec{Image: ref, Command: volumeFill, TmpfsSize: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	res, err := ex.Wait(ctx, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	assertState(t, res, executor.StateCompleted, 1)
	assertVolumesBounded(t, res.Stdout, res.Stderr)
	ex.Remove(context.Background(), p.ID)
}
