// Command bench measures airlock's performance figures in one run on one engine: the latency
// of `echo hi` through executor.Run, through `docker run --rm` with the same
// container settings, and through the bare Docker API (the floor); the throughput
// of executor.Run at concurrency 1 and 8; with 200 background jobs running, the
// latency of Get and List against the engine's own inspect and list; workspace
// uploads and downloads against docker cp, and a run on a workspace against one
// without; how exactly a background job's output is counted when it floods; and
// the network by allow-list (a download, an HTTPS first byte and a pooled run
// through the relay and proxy) against the same without them.
//
// It prints figures only and asserts nothing about timing. Every container it makes
// is removed, also on error and on Ctrl-C.
//
//	go run ./integration/bench [-n 30] [-d 10s | -runs 200] [-jobs 200] [-image airlock/minimal]
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/client"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/docker/go-units"
)

const warmup = 3

var (
	n        = flag.Int("n", 30, "measured runs of each method, after 3 warm-up runs each")
	duration = flag.Duration("d", 10*time.Second, "how long to run each concurrency level of the throughput test")
	fixed    = flag.Int("runs", 0, "if set, run this many runs per concurrency level instead of for -d")
	image    = flag.String("image", "airlock/minimal", "sandbox image, present in the engine")
	only     = flag.String("only", "", "measure one part only: latency, http, pool, background, workspaces, floods, egress or cluster")
)

// want reports whether the part is measured in this run (-only).
func want(part string) bool { return *only == "" || *only == part }

func main() {
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// bench holds the three ways of running a container and what they share.
type bench struct {
	ex      *executor.Executor
	cli     *client.Client
	session string       // in the io.airlock.id of every container bench makes itself
	seq     atomic.Int64 // numbers those containers
	seccomp string       // airlock's profile, as JSON
	secFile string       // the same, in a file for `docker run`

	mu     sync.Mutex
	runIDs map[string]bool // the containers executor.Run made, to check they are gone
}

// method is one way of running `echo hi` once.
type method struct {
	name string
	run  func(context.Context) error
}

// run measures and prints everything, and removes what it created on every path.
func run(ctx context.Context) (err error) {
	if *n < 1 || *fixed < 0 || *fixed == 0 && *duration <= 0 {
		return errors.New("need -n >= 1, and -d > 0 or -runs > 0")
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer cli.Close()
	ex, err := executor.New()
	if err != nil {
		return err
	}
	defer ex.Close()

	b := &bench{ex: ex, cli: cli, session: randomHex(4), seccomp: executor.SeccompProfile(), runIDs: map[string]bool{}}
	f, err := os.CreateTemp("", "airlock-bench-seccomp-*.json")
	if err != nil {
		return err
	}
	b.secFile = f.Name()
	defer os.Remove(b.secFile)
	if _, err := f.WriteString(b.seccomp); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	// Whatever happens, nothing bench made outlives it.
	defer func() { err = errors.Join(err, b.sweep()) }()

	ver, err := cli.ServerVersion(ctx)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "date\t%s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "engine\tDocker %s (API %s, client API %s), %s/%s\n", ver.Version, ver.APIVersion, cli.ClientVersion(), ver.Os, ver.Arch)
	fmt.Fprintf(w, "host\t%d CPUs, GOMAXPROCS %d, %s\n", runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.Version())
	fmt.Fprintf(w, "image\t%s\n\n", *image)
	w.Flush()

	if want("latency") {
		if err := b.latency(ctx, w); err != nil {
			return err
		}
	}
	for _, part := range []struct {
		name    string
		measure func(context.Context, *tabwriter.Writer) error
	}{{"http", b.httpOverhead}, {"pool", b.pool}, {"background", b.background}, {"workspaces", b.workspaces}, {"floods", floods}, {"egress", b.egress}, {"cluster", b.cluster}} {
		if want(part.name) {
			if err := part.measure(ctx, w); err != nil {
				return err
			}
		}
	}
	return nil
}

// latency measures `echo hi` through the executor, docker run and the bare
// API, and the executor's throughput at concurrency 1 and 8.
func (b *bench) latency(ctx context.Context, w *tabwriter.Writer) error {
	methods := []method{
		{"executor.Run", b.viaExecutor},
		{"docker run --rm", b.viaDockerRun},
		{"bare Docker API", b.viaAPI},
	}
	lat, err := measure(ctx, methods)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "latency of `echo hi`: n=%d per method after %d warm-up runs each, one of each per round\n", *n, warmup)
	fmt.Fprintln(w, "method\tp50\tp90\tmean")
	for i, m := range methods {
		s := lat[i]
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", m.name, ms(s.p50), ms(s.p90), ms(s.mean))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "ratio\tp50\tp90\tmean")
	for _, r := range []struct {
		name string
		a, b int
	}{{"executor / bare API", 0, 2}, {"executor / docker run", 0, 1}, {"docker run / bare API", 1, 2}} {
		x, y := lat[r.a], lat[r.b]
		fmt.Fprintf(w, "%s\t%.2fx\t%.2fx\t%.2fx\n", r.name, ratio(x.p50, y.p50), ratio(x.p90, y.p90), ratio(x.mean, y.mean))
	}
	w.Flush()

	level := fmt.Sprintf("%s per level", *duration)
	if *fixed > 0 {
		level = fmt.Sprintf("%d runs per level", *fixed)
	}
	fmt.Fprintf(w, "\nthroughput of executor.Run, %s\n", level)
	fmt.Fprintln(w, "concurrency\truns\tseconds\truns/s")
	var rate [2]float64
	for i, c := range []int{1, 8} {
		runs, secs, err := b.throughput(ctx, c)
		if err != nil {
			return err
		}
		rate[i] = float64(runs) / secs
		fmt.Fprintf(w, "%d\t%d\t%.2f\t%.2f\n", c, runs, secs, rate[i])
	}
	fmt.Fprintf(w, "c8 / c1\t\t\t%.2fx\n", rate[1]/rate[0])
	return w.Flush()
}

// summary is the distribution of one method's latencies.
type summary struct{ p50, p90, mean time.Duration }

// measure runs every method warm-up times and then n times, one of each per round,
// rotating which goes first so that engine drift and ordering affect all alike.
func measure(ctx context.Context, methods []method) ([]summary, error) {
	times := make([][]time.Duration, len(methods))
	for round := range warmup + *n {
		for k := range methods {
			i := (round + k) % len(methods)
			t0 := time.Now()
			if err := methods[i].run(ctx); err != nil {
				return nil, fmt.Errorf("%s: %w", methods[i].name, err)
			}
			if round >= warmup {
				times[i] = append(times[i], time.Since(t0))
			}
		}
	}
	out := make([]summary, len(methods))
	for i, ts := range times {
		slices.Sort(ts)
		var sum time.Duration
		for _, t := range ts {
			sum += t
		}
		out[i] = summary{p50: percentile(ts, 0.50), p90: percentile(ts, 0.90), mean: sum / time.Duration(len(ts))}
	}
	return out, nil
}

// throughput runs executor.Run from c goroutines for -d (or -runs runs in all) and
// returns how many runs completed and the seconds they took.
func (b *bench) throughput(ctx context.Context, c int) (int, float64, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var claimed, done atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range c {
		wg.Go(func() {
			for ctx.Err() == nil {
				if *fixed > 0 && claimed.Add(1) > int64(*fixed) || *fixed <= 0 && time.Since(start) >= *duration {
					return
				}
				if err := b.viaExecutor(ctx); err != nil {
					cancel(err)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return 0, 0, fmt.Errorf("throughput at concurrency %d: %w", c, err)
	}
	return int(done.Load()), time.Since(start).Seconds(), nil
}

// viaExecutor runs `echo hi` through the library, as airlock's callers do.
func (b *bench) viaExecutor(ctx context.Context) error {
	res, err := b.ex.Run(ctx, executor.Spec{Argv: []string{"echo", "hi"}})
	if res.ContainerID != "" {
		b.mu.Lock()
		b.runIDs[res.ContainerID] = true
		b.mu.Unlock()
	}
	if err != nil {
		return err
	}
	return check(res.Stdout, res.Stderr, res.ExitCode)
}

// viaDockerRun runs `echo hi` with the docker CLI, with the flags that give the
// container airlock's settings (executor/docker.go, dockerEngine.create). The CLI
// cannot set masked paths, so the engine applies its own default list instead.
func (b *bench) viaDockerRun(ctx context.Context) error {
	id := b.newID()
	args := []string{
		"run", "--rm", "--name", "airlock-" + id,
		"--label", executor.LabelManaged + "=true", "--label", executor.LabelID + "=" + id,
		"--network", "none", "--read-only",
		"--tmpfs", "/tmp:" + tmpfsOpts, "--tmpfs", "/workspace:" + tmpfsOpts, "--shm-size", "64m",
		"--memory", "512m", "--memory-swap", "512m", "--cpus", "1", "--pids-limit", "256",
		"--user", "65534:65534", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges", "--security-opt", "seccomp=" + b.secFile,
		"--init", "--runtime", "runc",
		"--ulimit", "nofile=1024:1024", "--ulimit", "core=0", "--log-driver", "none",
		"--hostname", "sandbox", "--workdir", "/workspace", "--entrypoint", "",
		*image, "echo", "hi",
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		// A CLI that failed or was killed may leave its container behind.
		b.remove("airlock-" + id)
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("docker run: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return check(stdout.String(), stderr.String(), 0)
}

// viaAPI is the floor: the calls any client of the Docker API must make to run a
// command and collect its output and exit code, and nothing else.
func (b *bench) viaAPI(ctx context.Context) (err error) {
	id := b.newID()
	cfg, host := b.containerConfig(id)
	ref := "airlock-" + id // a create cut short may still have made the container
	defer func() { err = errors.Join(err, b.remove(ref)) }()
	created, err := b.cli.ContainerCreate(ctx, cfg, host, nil, nil, ref)
	if err != nil {
		return err
	}
	ref = created.ID
	hj, err := b.cli.ContainerAttach(ctx, created.ID, container.AttachOptions{Stream: true, Stdout: true, Stderr: true})
	if err != nil {
		return err
	}
	defer hj.Close()
	waitC, errC := b.cli.ContainerWait(ctx, created.ID, container.WaitConditionNextExit)
	if err := b.cli.ContainerStart(ctx, created.ID, container.StartOptions{}); err != nil {
		return err
	}
	var code int64
	select {
	case res := <-waitC:
		if res.Error != nil && res.Error.Message != "" {
			return errors.New(res.Error.Message)
		}
		code = res.StatusCode
	case err := <-errC:
		return err
	}
	var stdout, stderr bytes.Buffer
	if _, err := stdcopy.StdCopy(&stdout, &stderr, hj.Reader); err != nil {
		return err
	}
	return check(stdout.String(), stderr.String(), int(code))
}

// tmpfsOpts are the options of /tmp and /workspace, as airlock gives them (64 MiB).
const tmpfsOpts = "rw,exec,nosuid,nodev,size=67108864,mode=1777"

// containerConfig is the container airlock creates for `echo hi` with the default
// limits, copied from executor/docker.go (dockerEngine.create).
func (b *bench) containerConfig(id string) (*container.Config, *container.HostConfig) {
	init := true
	pids := int64(256)
	cfg := &container.Config{
		Image:        *image,
		Cmd:          []string{"echo", "hi"},
		Entrypoint:   []string{},
		WorkingDir:   "/workspace",
		User:         "65534:65534",
		Hostname:     "sandbox",
		Labels:       map[string]string{executor.LabelManaged: "true", executor.LabelID: id},
		AttachStdout: true,
		AttachStderr: true,
	}
	host := &container.HostConfig{
		NetworkMode:    "none",
		ReadonlyRootfs: true,
		Tmpfs:          map[string]string{"/tmp": tmpfsOpts, "/workspace": tmpfsOpts},
		ShmSize:        64 << 20,
		Init:           &init,
		Runtime:        "runc",
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges", "seccomp=" + b.seccomp},
		MaskedPaths: []string{
			"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
			"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug",
			"/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap",
		},
		LogConfig: container.LogConfig{Type: "none"},
		Resources: container.Resources{
			Memory:     512 << 20,
			MemorySwap: 512 << 20,
			NanoCPUs:   1e9,
			PidsLimit:  &pids,
			Ulimits: []*units.Ulimit{
				{Name: "nofile", Soft: 1024, Hard: 1024},
				{Name: "core", Soft: 0, Hard: 0},
			},
		},
	}
	return cfg, host
}

// check fails unless the run printed exactly "hi\n", nothing on stderr, and exited 0.
func check(stdout, stderr string, code int) error {
	if stdout != "hi\n" || stderr != "" || code != 0 {
		return fmt.Errorf("echo hi: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	return nil
}

// newID returns a fresh io.airlock.id for a container bench creates itself.
func (b *bench) newID() string {
	return fmt.Sprintf("bench-%s-%d", b.session, b.seq.Add(1))
}

// remove force-removes a container by id or name; one that is already gone is fine,
// and one the engine is already removing (`docker run --rm`) is waited for. It does
// not depend on the run's context, which may be cancelled.
func (b *bench) remove(ref string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := b.cli.ContainerRemove(ctx, ref, container.RemoveOptions{Force: true, RemoveVolumes: true})
	if err == nil || cerrdefs.IsNotFound(err) {
		return nil
	}
	if !strings.Contains(err.Error(), "already in progress") {
		return err
	}
	for {
		if _, err := b.cli.ContainerInspect(ctx, ref); cerrdefs.IsNotFound(err) {
			return nil
		} else if ctx.Err() != nil {
			return fmt.Errorf("container %s: still being removed: %w", ref, ctx.Err())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// sweep removes every container bench made that is still there (executor.Run
// removes its own; this catches a failure to), and warns of airlock containers
// from elsewhere, which share the engine and so skew the figures.
func (b *bench) sweep() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := b.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", executor.LabelManaged))})
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	others := 0
	for _, c := range cs {
		if b.runIDs[c.ID] || strings.HasPrefix(c.Labels[executor.LabelID], "bench-"+b.session+"-") {
			fmt.Fprintf(os.Stderr, "bench: removing leftover container %.12s\n", c.ID)
			err = errors.Join(err, b.remove(c.ID))
		} else {
			others++
		}
	}
	if others > 0 {
		fmt.Fprintf(os.Stderr, "bench: %d airlock containers from another process share this engine\n", others)
	}
	return err
}

// percentile returns the nearest-rank q-quantile of sorted, which is not empty.
func percentile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, i)]
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}
