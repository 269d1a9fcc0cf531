package tcairlock

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/client"
	"github.com/docker/docker/errdefs"
	mobyclient "github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/airlock-sandbox/airlock/images"
)

// The server image is built from this module's own Dockerfile, offline: the
// context is the airlock binary (built here with the Go toolchain, static) and
// the host's static busybox. Its tag is the digest of that context, so a second
// Run, in this process or another, finds it on the engine and builds nothing.

var (
	builtOnce sync.Once
	built     string // the image reference, once prepared
	builtErr  error
)

// serverImage returns the reference of the server image, building it first
// when the engine lacks it.
func serverImage(ctx context.Context) (string, error) {
	builtOnce.Do(func() { built, builtErr = buildServerImage(ctx) })
	return built, builtErr
}

func buildServerImage(ctx context.Context) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "tcairlock-context-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		return "", err
	}
	// The server and, beside it, airlock's init, which it gives every sandbox.
	for _, b := range []struct{ out, pkg string }{{"airlock.build", "./cmd/airlock"}, {"airlock-init.build", "./cmd/airlock-init"}} {
		build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags", "-s -w -X main.version=tcairlock",
			"-o", filepath.Join(dir, b.out), b.pkg)
		build.Dir = root
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			return "", fmt.Errorf("build %s in %s: %v\n%s", b.pkg, root, err, out)
		}
	}
	busybox, err := images.StaticBusybox()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, f := range []struct{ from, to string }{
		{filepath.Join(root, "Dockerfile"), "Dockerfile"},
		{filepath.Join(root, ".dockerignore"), ".dockerignore"},
		{busybox, "bin/busybox"},
		{filepath.Join(dir, "airlock.build"), "bin/airlock"},
		{filepath.Join(dir, "airlock-init.build"), "bin/airlock-init"},
	} {
		if err := copyInto(h, f.from, filepath.Join(dir, f.to)); err != nil {
			return "", err
		}
	}
	ref := fmt.Sprintf("%s:tc-%x", ImageRepo, h.Sum(nil)[:6])

	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return "", fmt.Errorf("connect to the engine: %w", err)
	}
	defer cli.Close()
	if _, err := cli.ImageInspect(ctx, ref); err == nil {
		return ref, nil
	} else if !errdefs.IsNotFound(err) {
		return "", fmt.Errorf("inspect image %s: %w", ref, err)
	}
	// Built by testcontainers so that its build log and errors read as usual; kept
	// (it is the cache) under the digest tag.
	req := testcontainers.ContainerRequest{
		FromDockerfile: testcontainers.FromDockerfile{
			Context: dir, Repo: ImageRepo, Tag: ref[len(ImageRepo)+1:], KeepImage: true,
			BuildOptionsModifier: func(o *mobyclient.ImageBuildOptions) {
				o.NoCache = true // the classic builder's cache is not trusted for FROM scratch
				o.Remove, o.ForceRemove = true, true
			},
		},
	}
	provider, err := testcontainers.NewDockerProvider()
	if err != nil {
		return "", fmt.Errorf("testcontainers provider: %w", err)
	}
	defer provider.Close()
	if _, err := provider.BuildImage(ctx, &req); err != nil {
		return "", fmt.Errorf("build the server image from %s: %w", filepath.Join(root, "Dockerfile"), err)
	}
	removeStale(ctx, cli, ref)
	return ref, nil
}

// removeStale removes the server images this module built from other sources
// than ref's: each change of airlock builds a new one, and the old ones would
// pile up. One still in use stays.
func removeStale(ctx context.Context, cli *client.Client, ref string) {
	list, err := cli.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("reference", ImageRepo+":tc-*"))})
	if err != nil {
		return
	}
	for _, im := range list {
		for _, tag := range im.RepoTags {
			if tag != ref {
				cli.ImageRemove(ctx, tag, image.RemoveOptions{PruneChildren: true})
			}
		}
	}
}

// moduleRoot is the directory of this module's source (in the module cache for
// a user of it): where the Dockerfile and cmd/airlock are.
func moduleRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("tcairlock: cannot locate the module's source")
	}
	root := filepath.Dir(filepath.Dir(file))
	if _, err := os.Stat(filepath.Join(root, "Dockerfile")); err != nil {
		return "", fmt.Errorf("tcairlock: the airlock module's Dockerfile is not at %s (built with -trimpath?); "+
			"build the image yourself (make server-image) and pass testcontainers.WithImage: %w", root, err)
	}
	return root, nil
}

// copyInto copies file from to to, adding its name and bytes to h.
func copyInto(h io.Writer, from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
	if err != nil {
		return err
	}
	fmt.Fprintf(h, "%s\x00%d\x00", filepath.Base(to), info.Size())
	if _, err := io.Copy(io.MultiWriter(out, h), in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
