package integration

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/client"

	"github.com/airlock-sandbox/airlock/images"
)

// testEngine is a Docker engine of a test's own, beside the machine's: its
// own data root, exec root, socket, pid file, containerd (which dockerd
// starts under the exec root, with a namespace of its own) and network
// namespace, no bridge and no iptables. A node on it neither sees nor touches another engine's
// containers, as on a host of its own. It has one runtime, runc, and one
// image, airlock/minimal, copied from the machine's engine.
type testEngine struct {
	name   string
	dir    string
	host   string // DOCKER_HOST
	c      *client.Client
	cmd    *exec.Cmd
	exited chan error
	// stopped is closed once the engine has been told to stop.
	stopped chan struct{}
	once    sync.Once
}

// startEngine starts a test engine and loads airlock/minimal into it. It is
// stopped, and everything under its directory removed, when the test ends.
func startEngine(t *testing.T) *testEngine {
	t.Helper()
	dir, err := os.MkdirTemp("", "airlock-engine-")
	if err != nil {
		t.Fatal(err)
	}
	name := "airlock-test-" + filepath.Base(dir)[len("airlock-engine-"):]
	e := &testEngine{name: name, dir: dir, host: "unix://" + filepath.Join(dir, "docker.sock"), exited: make(chan error, 1), stopped: make(chan struct{})}
	if err := os.WriteFile(filepath.Join(dir, "daemon.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	log, err := os.Create(filepath.Join(dir, "dockerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	e.cmd = exec.Command("dockerd",
		"--config-file", filepath.Join(dir, "daemon.json"),
		"--data-root", filepath.Join(dir, "data"),
		"--exec-root", filepath.Join(dir, "exec"),
		"--pidfile", filepath.Join(dir, "docker.pid"),
		"--host", e.host,
		"--containerd-namespace", name,
		"--containerd-plugins-namespace", name+"-plugins",
		"--cgroup-parent", "/"+name,
		"--bridge", "none", "--iptables=false", "--ip-masq=false",
		"--shutdown-timeout", "2")
	e.cmd.Stdout, e.cmd.Stderr = log, log
	// A network namespace of its own, as a host has: a dockerd with no
	// bridge deletes docker0, which in the machine's namespace is the
	// machine's engine's.
	e.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Cloneflags: syscall.CLONE_NEWNET}
	if err := e.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		t.Fatalf("start a second engine (dockerd): %v", err)
	}
	go func() { e.exited <- e.cmd.Wait() }()
	t.Cleanup(func() { e.remove(t) })
	if e.c, err = client.NewClientWithOpts(client.WithHost(e.host), client.WithAPIVersionNegotiation()); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := e.c.Ping(t.Context()); err == nil {
			break
		}
		select {
		case err := <-e.exited:
			t.Fatalf("engine %s ended at its start: %v\n%s", name, err, e.log())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("engine %s did not answer within 60 s:\n%s", name, e.log())
		}
	}
	e.load(t, images.Minimal.Ref)
	return e
}

// load copies image ref from the machine's engine into e.
func (e *testEngine) load(t *testing.T, ref string) {
	t.Helper()
	ctx := t.Context()
	rc, err := docker.ImageSave(ctx, []string{ref})
	if err != nil {
		t.Fatalf("save %s: %v", ref, err)
	}
	defer rc.Close()
	resp, err := e.c.ImageLoad(ctx, rc, client.ImageLoadWithQuiet(true))
	if err != nil {
		t.Fatalf("load %s into engine %s: %v", ref, e.name, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"error"`) {
			t.Fatalf("load %s into engine %s: %s", ref, e.name, sc.Text())
		}
	}
	if _, err := e.c.ImageInspect(ctx, ref); err != nil {
		t.Fatalf("%s is not on engine %s after its load: %v", ref, e.name, err)
	}
}

// stop stops the engine as a host's shutdown does: its containers are
// stopped (2 s of grace), then dockerd and its containerd end.
func (e *testEngine) stop(t *testing.T) {
	t.Helper()
	e.once.Do(func() {
		close(e.stopped)
		e.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-e.exited:
		case <-time.After(60 * time.Second):
			t.Errorf("engine %s did not stop within 60 s of SIGTERM; killed", e.name)
			syscall.Kill(-e.cmd.Process.Pid, syscall.SIGKILL)
			<-e.exited
		}
	})
}

// remove stops the engine and removes its directory: whatever is still
// mounted under it is detached first.
func (e *testEngine) remove(t *testing.T) {
	if e.c != nil {
		e.c.Close()
	}
	e.stop(t)
	if t.Failed() {
		t.Logf("engine %s's log:\n%s", e.name, tail(e.log(), 4000))
	}
	mounts, _ := os.ReadFile("/proc/self/mounts")
	var under []string
	for line := range strings.Lines(string(mounts)) {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], e.dir+"/") {
			under = append(under, f[1])
		}
	}
	for i := len(under) - 1; i >= 0; i-- { // the deepest first
		syscall.Unmount(under[i], syscall.MNT_DETACH)
	}
	// dockerd removes its containers' cgroups, not their parent.
	cgroups, _ := filepath.Glob("/sys/fs/cgroup/*/" + e.name)
	for _, g := range append(cgroups, "/sys/fs/cgroup/"+e.name) {
		os.Remove(g)
	}
	if err := os.RemoveAll(e.dir); err != nil {
		t.Errorf("remove engine %s's directory: %v", e.name, err)
	}
}

func (e *testEngine) log() string {
	b, _ := os.ReadFile(filepath.Join(e.dir, "dockerd.log"))
	return string(b)
}

// env is the environment of a process that uses e: DOCKER_HOST names it.
func (e *testEngine) env() []string {
	env := []string{"DOCKER_HOST=" + e.host}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DOCKER_HOST=") && !strings.HasPrefix(kv, "DOCKER_CONTEXT=") {
			env = append(env, kv)
		}
	}
	return env
}

// nodeEngines maps a cluster node's id to its test engine; a node without
// one uses the machine's (docker).
var nodeEngines sync.Map

// engineOf is the engine node id's containers are on, and false once that
// engine has stopped: they went with it.
func engineOf(id string) (*client.Client, bool) {
	v, ok := nodeEngines.Load(id)
	if !ok {
		return docker, true
	}
	e := v.(*testEngine)
	select {
	case <-e.stopped:
		return nil, false
	default:
		return e.c, true
	}
}
