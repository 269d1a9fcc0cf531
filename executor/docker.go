package executor

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/build"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/jsonmessage"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/docker/go-units"

	"github.com/airlock-sandbox/airlock/images"
	"github.com/airlock-sandbox/airlock/internal/engine"
	"github.com/airlock-sandbox/airlock/internal/relay"
)

// dockerEngine is the engine over the Docker Engine API.
type dockerEngine struct {
	c *client.Client
}

// newDockerEngine connects as the docker CLI does (DOCKER_HOST and friends) and
// negotiates the API version, so that an old engine (20.10, API 1.41) works.
func newDockerEngine() (*dockerEngine, error) {
	c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	return &dockerEngine{c: c}, nil
}

func (d *dockerEngine) Close() error { return d.c.Close() }

func (d *dockerEngine) Info(ctx context.Context) (engineInfo, error) {
	if _, err := d.c.Ping(ctx); err != nil {
		return engineInfo{}, err
	}
	in, err := d.c.Info(ctx)
	if err != nil {
		return engineInfo{}, err
	}
	runtimes := make([]string, 0, len(in.Runtimes))
	args := make(map[string][]string, len(in.Runtimes))
	paths := make(map[string]string, len(in.Runtimes))
	for name, r := range in.Runtimes {
		runtimes = append(runtimes, name)
		args[name], paths[name] = r.Args, r.Path
	}
	sort.Strings(runtimes)
	return engineInfo{ID: in.ID, Version: in.ServerVersion, APIVer: d.c.ClientVersion(), CPUs: in.NCPU, Runtimes: runtimes, RuntimeArgs: args,
		RuntimePaths: paths, DefaultRuntime: in.DefaultRuntime, RuncCommit: in.RuncCommit.ID}, nil
}

func (d *dockerEngine) InspectImage(ctx context.Context, ref string) (Image, bool, error) {
	in, err := d.c.ImageInspect(ctx, ref)
	switch {
	case cerrdefs.IsNotFound(err):
		return Image{}, false, nil
	case err != nil:
		return Image{}, false, err
	}
	img := Image{Ref: ref, ID: in.ID, Size: in.Size, Created: parseEngineTime(in.Created)}
	if in.Config != nil {
		img.Recipe, img.RecipeDigest = in.Config.Labels[images.Label], in.Config.Labels[images.DigestLabel]
		img.Volumes = slices.Sorted(maps.Keys(in.Config.Volumes))
	}
	return img, true, nil
}

func (d *dockerEngine) RemoveImage(ctx context.Context, id string) error {
	_, err := d.c.ImageRemove(ctx, id, image.RemoveOptions{PruneChildren: true})
	return err
}

func (d *dockerEngine) BuildImage(ctx context.Context, tag string, buildContext io.Reader, labels map[string]string, progress io.Writer) error {
	resp, err := d.c.ImageBuild(ctx, buildContext, build.ImageBuildOptions{
		Tags:        []string{tag},
		Labels:      labels,
		NoCache:     true, // the classic builder's cache can be poisoned for FROM scratch
		Remove:      true,
		ForceRemove: true,
		Version:     build.BuilderV1,
	})
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return jsonmessage.DisplayJSONMessagesStream(resp.Body, progress, 0, false, nil)
}

func (d *dockerEngine) PullImage(ctx context.Context, ref string) error {
	rc, err := d.c.ImagePull(ctx, ref, image.PullOptions{})
	if err != nil {
		return err
	}
	defer rc.Close()
	return jsonmessage.DisplayJSONMessagesStream(rc, io.Discard, 0, false, nil)
}

func (d *dockerEngine) ListImages(ctx context.Context) ([]Image, error) {
	list, err := d.c.ImageList(ctx, image.ListOptions{Filters: filters.NewArgs(filters.Arg("label", images.Label))})
	if err != nil {
		return nil, err
	}
	var out []Image
	for _, im := range list {
		refs := im.RepoTags
		if len(refs) == 0 {
			refs = []string{"<none>"}
		}
		for _, ref := range refs {
			out = append(out, Image{Ref: ref, ID: im.ID, Recipe: im.Labels[images.Label], RecipeDigest: im.Labels[images.DigestLabel],
				Size: im.Size, Created: unixTime(im.Created)})
		}
	}
	return out, nil
}

func (d *dockerEngine) Create(ctx context.Context, p containerPlan) (string, error) {
	tmpfsOpts := fmt.Sprintf("rw,exec,nosuid,nodev,size=%d,nr_inodes=%d,mode=1777", p.TmpfsSize, tmpfsInodes(p.TmpfsSize))
	init := p.InitVolume == "" // airlock's own init, or the engine's
	entrypoint := []string{}   // the image's entrypoint must not wrap the command
	if p.InitVolume != "" {
		entrypoint = []string{engine.InitPath}
	}
	pids := p.Pids
	cfg := &container.Config{
		Image:      p.Image,
		Cmd:        p.Cmd,
		Entrypoint: entrypoint,
		Env:        p.Env,
		WorkingDir: p.Workdir,
		User:       p.User,
		Hostname:   "sandbox",
		// No network: no endpoint in the engine's network stack either, whose
		// teardowns can deadlock the engine when many end at once
		// (docs/DESIGN.md, "No network"). The loopback is the runtime's own.
		NetworkDisabled: p.Network == "none" && p.EtcDir != "",
		Labels:          p.Labels,
		AttachStdout:    true,
		AttachStderr:    true,
		AttachStdin:     p.OpenStdin,
		OpenStdin:       p.OpenStdin,
		StdinOnce:       p.OpenStdin,
	}
	host := &container.HostConfig{
		NetworkMode:    container.NetworkMode(p.Network),
		ReadonlyRootfs: true,
		// A private cgroup namespace: /proc/self/cgroup no longer names the
		// container (its id is the key to its host paths); API 1.41 and later.
		CgroupnsMode: container.CgroupnsModePrivate,
		AutoRemove:   p.AutoRemove,
		Tmpfs:        tmpfsMounts(p, tmpfsOpts),
		ShmSize:      p.TmpfsSize,
		Init:         &init,
		Runtime:      p.Runtime,
		CapDrop:      []string{"ALL"},
		SecurityOpt:  []string{"no-new-privileges", "seccomp=" + seccompProfileFor(p.Runtime)},
		MaskedPaths:  maskedPaths,
		LogConfig:    logConfig(p.LogCap),
		Mounts:       planMounts(p),
		Resources: container.Resources{
			Memory:     p.Memory,
			MemorySwap: p.Memory, // swap = memory: no swap at all
			NanoCPUs:   p.NanoCPUs,
			PidsLimit:  &pids,
			Ulimits: []*units.Ulimit{
				{Name: "nofile", Soft: 1024, Hard: 1024},
				{Name: "core", Soft: 0, Hard: 0},
			},
		},
	}
	resp, err := d.c.ContainerCreate(ctx, cfg, host, nil, nil, p.Name)
	if err != nil {
		if cerrdefs.IsConflict(err) {
			return "", fmt.Errorf("%w: %v", engine.ErrNameInUse, err)
		}
		return "", err
	}
	return resp.ID, nil
}

// tmpfsMounts are the sandbox's writable places: /tmp, /workspace, and a tmpfs
// over each path the image declares as a VOLUME, so that the engine creates no
// anonymous volume (unbounded, on the host's disk) for any of them.
func tmpfsMounts(p containerPlan, opts string) map[string]string {
	m := map[string]string{"/tmp": opts}
	if p.Workspace == "" {
		m["/workspace"] = opts
	}
	for _, v := range p.Volumes {
		m[path.Clean(v)] = opts
	}
	return m
}

// planMounts mounts the plan's workspace volume, if it has one, at /workspace
// (its bounds are the volume's own mount options, see workspaceVolumeOpts), the
// init's volume, the hosts file, and the relay's directory.
func planMounts(p containerPlan) []mount.Mount {
	var ms []mount.Mount
	if p.Workspace != "" {
		ms = append(ms, mount.Mount{Type: mount.TypeVolume, Source: p.Workspace, Target: "/workspace"})
	}
	if p.InitVolume != "" {
		ms = append(ms, mount.Mount{Type: mount.TypeVolume, Source: p.InitVolume, Target: engine.InitDir, ReadOnly: true,
			VolumeOptions: &mount.VolumeOptions{NoCopy: true}})
	}
	if p.EtcDir != "" {
		for _, f := range sandboxEtc {
			ms = append(ms, mount.Mount{Type: mount.TypeBind, Source: path.Join(p.EtcDir, f.name), Target: "/etc/" + f.name, ReadOnly: true})
		}
	}
	if p.RelayDir != "" {
		ms = append(ms, mount.Mount{Type: mount.TypeBind, Source: p.RelayDir, Target: relay.SocketDir, ReadOnly: true})
	}
	return ms
}

// tmpfsInodes bounds the files a sandbox tmpfs holds: one per page of its size
// (at least 1024). Without it the kernel allows millions of empty files in a
// 64 MiB tmpfs, each a few hundred bytes of kernel memory; with it, inode
// exhaustion ends in ENOSPC like any other fill. gVisor ignores the option; its
// tmpfs lives in the sandbox's memory, under the memory limit.
func tmpfsInodes(size int64) int64 { return max(size/4096, 1024) }

// logConfig keeps no log for an attached run, and for a background job a
// bounded one: two files, the older compressed, so that whatever the job writes
// the engine's disk holds a bounded amount for it. A file holds twice the cap
// (at least 64 MiB): airlock's copy follows the log, and this engine's log
// follow skips what a rotation takes away before it was read, so the files must
// be large enough for the copy to keep up with all but a flood.
func logConfig(logCap int64) container.LogConfig {
	if logCap <= 0 {
		return container.LogConfig{Type: "none"}
	}
	return container.LogConfig{Type: "local", Config: map[string]string{
		"max-size": strconv.FormatInt(max(2*logCap, 64<<20), 10),
		"max-file": "2",
		"compress": "true",
	}}
}

// maskedPaths are the engine's current defaults (docker 28), which add
// /proc/interrupts and powercap to what a 20.10 engine masks. Setting them replaces
// the engine's list, so every default must be here.
var maskedPaths = []string{
	"/proc/asound",
	"/proc/acpi",
	"/proc/interrupts",
	"/proc/kcore",
	"/proc/keys",
	"/proc/latency_stats",
	"/proc/timer_list",
	"/proc/timer_stats",
	"/proc/sched_debug",
	"/proc/scsi",
	"/sys/firmware",
	"/sys/devices/virtual/powercap",
}

func (d *dockerEngine) Attach(ctx context.Context, id string, stdin bool) (*attachment, error) {
	hj, err := d.c.ContainerAttach(ctx, id, container.AttachOptions{Stream: true, Stdin: stdin, Stdout: true, Stderr: true})
	if err != nil {
		return nil, err
	}
	return &attachment{
		CopyOutput: func(stdout, stderr io.Writer) error {
			_, err := stdcopy.StdCopy(stdout, stderr, hj.Reader)
			return err
		},
		Stdin:      hj.Conn,
		CloseStdin: hj.CloseWrite,
		Close:      hj.Close,
	}, nil
}

func (d *dockerEngine) Wait(ctx context.Context, id string, nextExit bool) <-chan engine.Exit {
	done := make(chan engine.Exit, 1)
	cond := container.WaitConditionNotRunning
	if nextExit {
		cond = container.WaitConditionNextExit
	}
	resC, errC := d.c.ContainerWait(ctx, id, cond)
	go func() {
		select {
		case res := <-resC:
			if res.Error != nil && res.Error.Message != "" {
				done <- engine.Exit{Err: errors.New(res.Error.Message)}
				return
			}
			done <- engine.Exit{Code: int(res.StatusCode)}
		case err := <-errC:
			done <- engine.Exit{Err: err}
		}
	}()
	return done
}

func (d *dockerEngine) Start(ctx context.Context, id string) error {
	return d.c.ContainerStart(ctx, id, container.StartOptions{})
}

func (d *dockerEngine) Kill(ctx context.Context, id, signal string) error {
	err := d.c.ContainerKill(ctx, id, signal)
	if err != nil && (cerrdefs.IsNotFound(err) || cerrdefs.IsConflict(err) || isNotRunning(err)) {
		return nil // already gone or already stopped: the kill has nothing left to do
	}
	return err
}

func isNotRunning(err error) bool { return strings.Contains(err.Error(), "is not running") }

func (d *dockerEngine) Inspect(ctx context.Context, id string) (containerState, error) {
	in, err := d.c.ContainerInspect(ctx, id)
	if cerrdefs.IsNotFound(err) {
		return containerState{}, fmt.Errorf("%w: %v", errNoContainer, err)
	}
	if err != nil {
		return containerState{}, err
	}
	st := in.State
	return containerState{
		Running:    st.Running,
		ExitCode:   st.ExitCode,
		OOMKilled:  st.OOMKilled,
		Error:      st.Error,
		StartedAt:  parseEngineTime(st.StartedAt),
		FinishedAt: parseEngineTime(st.FinishedAt),
	}, nil
}

func (d *dockerEngine) Stats(ctx context.Context, id string, sample func(usageSample)) error {
	resp, err := d.c.ContainerStats(ctx, id, true)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(resp.Body)
	for {
		var s container.StatsResponse
		if err := dec.Decode(&s); err != nil {
			if errors.Is(err, io.EOF) || ctx.Err() != nil {
				return nil
			}
			return err
		}
		if s.Read.IsZero() || s.PidsStats.Current == 0 && s.CPUStats.CPUUsage.TotalUsage == 0 {
			continue // the container is not (or no longer) running: an empty sample
		}
		u := usageSample{CPUNanos: s.CPUStats.CPUUsage.TotalUsage, MemoryPeak: s.MemoryStats.MaxUsage}
		if u.MemoryPeak == 0 { // cgroup v2 reports no peak through this API
			u.MemoryPeak = s.MemoryStats.Usage
		}
		for _, e := range s.BlkioStats.IoServiceBytesRecursive {
			switch strings.ToLower(e.Op) {
			case "read":
				u.IORead += e.Value
			case "write":
				u.IOWrite += e.Value
			}
		}
		sample(u)
	}
}

func (d *dockerEngine) Logs(ctx context.Context, id string, since time.Time, follow bool, frame func(logFrame) error) error {
	opts := container.LogsOptions{ShowStdout: true, ShowStderr: true, Timestamps: true, Follow: follow}
	if !since.IsZero() {
		opts.Since = fmt.Sprintf("%d.%09d", since.Unix(), since.Nanosecond())
	}
	rc, err := d.c.ContainerLogs(ctx, id, opts)
	if err != nil {
		return err
	}
	defer rc.Close()
	return readLogFrames(bufio.NewReaderSize(rc, 64<<10), frame)
}

// readLogFrames splits the engine's multiplexed log stream: each frame is an
// 8-byte header (stream, 3 zero bytes, big-endian length) and one message, which
// with timestamps on starts with the stamp and a space.
func readLogFrames(r io.Reader, frame func(logFrame) error) error {
	var hdr [8]byte
	var buf []byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		n := int(binary.BigEndian.Uint32(hdr[4:]))
		if cap(buf) < n {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(r, buf); err != nil {
			return err
		}
		switch hdr[0] {
		case 1, 2: // stdout, stderr
		case 3: // the engine reports a failure of its own read; the caller reads again
			return fmt.Errorf("engine log read: %s", bytes.TrimSpace(buf))
		default:
			continue
		}
		stamp, data, ok := bytes.Cut(buf, []byte{' '})
		if !ok {
			return fmt.Errorf("log message without a timestamp: %.40q", buf)
		}
		t, err := time.Parse(time.RFC3339Nano, string(stamp))
		if err != nil {
			return fmt.Errorf("log message timestamp: %w", err)
		}
		if err := frame(logFrame{Stderr: hdr[0] == 2, Time: t, Data: data}); err != nil {
			return err
		}
	}
}

func (d *dockerEngine) List(ctx context.Context, label string) ([]containerSummary, error) {
	cs, err := d.c.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", label))})
	if err != nil {
		return nil, err
	}
	out := make([]containerSummary, 0, len(cs))
	for _, c := range cs {
		var name string
		if len(c.Names) > 0 {
			name = strings.TrimPrefix(c.Names[0], "/")
		}
		out = append(out, containerSummary{ID: c.ID, Name: name, Labels: c.Labels, Running: c.State == "running", State: c.State})
	}
	return out, nil
}

func (d *dockerEngine) Remove(ctx context.Context, id string) error {
	err := d.c.ContainerRemove(ctx, id, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err != nil && (cerrdefs.IsNotFound(err) || strings.Contains(err.Error(), "already in progress")) {
		return nil
	}
	return err
}

func (d *dockerEngine) Rename(ctx context.Context, id, name string) error {
	err := d.c.ContainerRename(ctx, id, name)
	if cerrdefs.IsNotFound(err) {
		return fmt.Errorf("%w: %v", engine.ErrNoContainer, err)
	}
	return err
}

// parseEngineTime reads the engine's RFC 3339 timestamps; the zero time stands for
// the engine's "0001-01-01T00:00:00Z" (never happened).
func parseEngineTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || t.Year() <= 1 {
		return time.Time{}
	}
	return t
}

func unixTime(sec int64) time.Time { return time.Unix(sec, 0).UTC() }

func (d *dockerEngine) Exec(ctx context.Context, id, user string, cmd []string, stdin io.Reader, stdout, stderr io.Writer) (int, error) {
	ex, err := d.c.ContainerExecCreate(ctx, id, container.ExecOptions{
		User: user, Cmd: cmd, AttachStdin: stdin != nil, AttachStdout: true, AttachStderr: true,
	})
	if err != nil {
		return -1, err
	}
	hj, err := d.c.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return -1, err
	}
	defer hj.Close()
	stop := context.AfterFunc(ctx, hj.Close)
	defer stop()
	fed := make(chan error, 1)
	go func() {
		var err error
		if stdin != nil {
			// Large writes: each one crosses the engine and its shim.
			_, err = io.CopyBuffer(hj.Conn, struct{ io.Reader }{stdin}, make([]byte, 1<<20))
		}
		hj.CloseWrite()
		fed <- err
	}()
	if _, err := stdcopy.StdCopy(stdout, stderr, hj.Reader); err != nil {
		return -1, cmp.Or(ctx.Err(), err)
	}
	// The process closed its output; a stdin it stopped reading is not waited for.
	hj.Close()
	if err := <-fed; err != nil && !errors.Is(err, net.ErrClosed) && !errors.Is(err, syscall.EPIPE) && !errors.Is(err, syscall.ECONNRESET) {
		return -1, fmt.Errorf("exec stdin: %w", err)
	}
	// The engine records the exit code a moment after the output ends.
	for {
		in, err := d.c.ContainerExecInspect(ctx, ex.ID)
		if err != nil {
			return -1, err
		}
		if !in.Running {
			return in.ExitCode, nil
		}
		select {
		case <-ctx.Done():
			return -1, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func (d *dockerEngine) CreateVolume(ctx context.Context, name string, opts, labels map[string]string) error {
	_, err := d.c.VolumeCreate(ctx, volume.CreateOptions{Name: name, Driver: "local", DriverOpts: opts, Labels: labels})
	return err
}

func (d *dockerEngine) Update(ctx context.Context, id string, memory, nanoCPUs, pids int64) error {
	_, err := d.c.ContainerUpdate(ctx, id, container.UpdateConfig{Resources: container.Resources{
		Memory: memory, MemorySwap: memory, NanoCPUs: nanoCPUs, PidsLimit: &pids,
	}})
	return err
}

func (d *dockerEngine) CopyTo(ctx context.Context, id, dir string, archive io.Reader) error {
	return d.c.CopyToContainer(ctx, id, dir, archive, container.CopyToContainerOptions{})
}

func (d *dockerEngine) RemoveVolume(ctx context.Context, name string) error {
	err := d.c.VolumeRemove(ctx, name, true)
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	return err
}

func (d *dockerEngine) ListVolumes(ctx context.Context, label string) ([]engine.Volume, error) {
	resp, err := d.c.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", label))})
	if err != nil {
		return nil, err
	}
	out := make([]engine.Volume, 0, len(resp.Volumes))
	for _, v := range resp.Volumes {
		out = append(out, engine.Volume{Name: v.Name, Labels: v.Labels, Mountpoint: v.Mountpoint})
	}
	return out, nil
}
