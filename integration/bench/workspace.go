package main

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"

	"github.com/airlock-sandbox/airlock/executor"
)

// transferRounds is how many times each upload and download is timed; the
// median is printed.
const transferRounds = 5

// workspaces measures moving files in and out of a workspace against `docker
// cp` of the same archive into and out of a container's tmpfs volume (the
// same backing), and the cost of a run on a workspace against one without.
func (b *bench) workspaces(ctx context.Context, w *tabwriter.Writer) (err error) {
	ws, err := b.ex.CreateWorkspace(ctx, executor.WorkspaceSpec{Size: 256 << 20}, executor.Caller{})
	if err != nil {
		return err
	}
	defer func() {
		err = errors.Join(err, b.ex.RemoveWorkspace(context.WithoutCancel(ctx), ws.ID, executor.Caller{}))
	}()
	cp, cleanup, err := b.dockerCpTarget(ctx)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, cleanup()) }()

	big, err := archiveOf(1, 50<<20)
	if err != nil {
		return err
	}
	small, err := archiveOf(2000, 1<<10)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nworkspace transfers: median of %d, each against `docker cp` of the same archive into a tmpfs volume\n", transferRounds)
	fmt.Fprintln(w, "data\tdirection\tairlock\tdocker cp\tairlock rate\tdocker cp rate\tairlock / docker cp")
	for _, set := range []struct {
		name  string
		data  []byte
		files int
	}{{"one 50 MB file", big, 1}, {"2000 files of 1 KiB", small, 2000}} {
		up, err := median(func() error { return b.ex.PutArchive(ctx, ws.ID, "data", bytes.NewReader(set.data), executor.Caller{}) })
		if err != nil {
			return fmt.Errorf("upload: %w", err)
		}
		cpUp, err := median(func() error {
			return b.cli.CopyToContainer(ctx, cp, "/data", bytes.NewReader(set.data), container.CopyToContainerOptions{})
		})
		if err != nil {
			return fmt.Errorf("docker cp in: %w", err)
		}
		down, err := median(func() error {
			rc, err := b.ex.OpenArchive(ctx, ws.ID, "data", executor.Caller{})
			if err != nil {
				return err
			}
			defer rc.Close()
			_, err = io.Copy(io.Discard, rc)
			return err
		})
		if err != nil {
			return fmt.Errorf("download: %w", err)
		}
		cpDown, err := median(func() error {
			rc, _, err := b.cli.CopyFromContainer(ctx, cp, "/data/.")
			if err != nil {
				return err
			}
			defer rc.Close()
			_, err = io.Copy(io.Discard, rc)
			return err
		})
		if err != nil {
			return fmt.Errorf("docker cp out: %w", err)
		}
		rate := func(d time.Duration) string {
			if set.files > 1 {
				return fmt.Sprintf("%.0f files/s", float64(set.files)/d.Seconds())
			}
			return fmt.Sprintf("%.0f MB/s", float64(len(set.data))/1e6/d.Seconds())
		}
		for _, row := range []struct {
			dir     string
			a, base time.Duration
		}{{"in", up, cpUp}, {"out", down, cpDown}} {
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%.2fx\n", set.name, row.dir, ms(row.a), ms(row.base), rate(row.a), rate(row.base), ratio(row.a, row.base))
		}
		if err := b.ex.RemoveFile(ctx, ws.ID, "data", executor.Caller{}); err != nil {
			return err
		}
	}
	w.Flush()

	// A run on a workspace mounts a volume and asks the engine about its holder.
	var with, without []time.Duration
	for round := range warmup + *n {
		for _, on := range []bool{round%2 == 0, round%2 != 0} {
			spec := executor.Spec{Argv: []string{"echo", "hi"}}
			if on {
				spec.Workspace = ws.ID
			}
			t0 := time.Now()
			res, err := b.ex.Run(ctx, spec)
			if err != nil {
				return err
			}
			if err := check(res.Stdout, res.Stderr, res.ExitCode); err != nil {
				return err
			}
			if round >= warmup {
				if on {
					with = append(with, time.Since(t0))
				} else {
					without = append(without, time.Since(t0))
				}
			}
		}
	}
	slices.Sort(with)
	slices.Sort(without)
	fmt.Fprintf(w, "\nrun of `echo hi` on a workspace against one without: n=%d each, alternating\n", *n)
	fmt.Fprintln(w, "\tp50\tp90")
	fmt.Fprintf(w, "with a workspace\t%s\t%s\n", ms(percentile(with, 0.5)), ms(percentile(with, 0.9)))
	fmt.Fprintf(w, "without\t%s\t%s\n", ms(percentile(without, 0.5)), ms(percentile(without, 0.9)))
	fmt.Fprintf(w, "with / without\t%.2fx\t%.2fx\n", ratio(percentile(with, 0.5), percentile(without, 0.5)), ratio(percentile(with, 0.9), percentile(without, 0.9)))
	return w.Flush()
}

// dockerCpTarget starts the baseline's container: airlock/minimal asleep, with
// a tmpfs volume of the workspace's size at /data (docker cp writes into a
// volume of a running container, whatever its root).
func (b *bench) dockerCpTarget(ctx context.Context) (id string, cleanup func() error, err error) {
	name := "airlock-bench-" + b.session + "-cp"
	labels := map[string]string{executor.LabelManaged: "true", executor.LabelID: b.newID()}
	if _, err := b.cli.VolumeCreate(ctx, volume.CreateOptions{Name: name, Driver: "local", Labels: labels,
		DriverOpts: map[string]string{"type": "tmpfs", "device": "tmpfs", "o": "size=268435456"}}); err != nil {
		return "", nil, err
	}
	removeVolume := func() error { return b.cli.VolumeRemove(context.Background(), name, true) }
	c, err := b.cli.ContainerCreate(ctx, &container.Config{Image: *image, Cmd: []string{"sleep", "3600"}, Labels: labels},
		&container.HostConfig{NetworkMode: "none", Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: name, Target: "/data"}}}, nil, nil, name)
	if err != nil {
		return "", nil, errors.Join(err, removeVolume())
	}
	cleanup = func() error { return errors.Join(b.remove(c.ID), removeVolume()) }
	if err := b.cli.ContainerStart(ctx, c.ID, container.StartOptions{}); err != nil {
		return "", nil, errors.Join(err, cleanup())
	}
	return c.ID, cleanup, nil
}

// archiveOf is a tar of n files of size random bytes each.
func archiveOf(n, size int) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	data := make([]byte, size)
	for i := range n {
		rand.Read(data)
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: fmt.Sprintf("f%04d", i), Mode: 0o644, Size: int64(size)}); err != nil {
			return nil, err
		}
		tw.Write(data)
	}
	err := tw.Close()
	return buf.Bytes(), err
}

// median times fn transferRounds times and returns the median.
func median(fn func() error) (time.Duration, error) {
	lat, err := timeCalls(transferRounds, fn)
	if err != nil {
		return 0, err
	}
	return lat[len(lat)/2], nil
}
