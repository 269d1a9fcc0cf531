package executor

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/airlock-sandbox/airlock/images"
	"github.com/airlock-sandbox/airlock/internal/engine"
)

// airlock's init (cmd/airlock-init) reaches a sandbox on a volume, mounted
// read-only: no registry, nothing written into the image's read-only root, and
// only the engine's socket needed. The volume is named by the digest of the
// binary and kept, as the sandbox images are; a new binary gets a new volume.
// docs/DESIGN.md, "The init".

// Labels of an init volume. It is not io.airlock.managed: like a sandbox image
// it is kept on purpose, and outlives every run.
const (
	labelComponent  = labelPrefix + "component" // "init"
	labelInitDigest = labelPrefix + "init.digest"
	labelInitReady  = labelPrefix + "init.ready" // on the empty volume that says the files are in
)

// EngineInit, as Config.InitPath, runs sandboxes under the engine's init
// instead of airlock's, on purpose: usage figures then rest on the engine's
// samples (zero for a run shorter than a second), an OOM early in a run may go
// unflagged, and there is no warm pool. Only a caller that asks for it gets it.
const EngineInit = "engine"

// ErrNoInit is New's error when airlock's init cannot be found or cannot run
// in a sandbox; its text says how to get one.
var ErrNoInit = errors.New("airlock's init (airlock-init) is missing")

// initHowTo says how to get the init, in every error about it.
const initHowTo = "build it with `make build` (bin/airlock-init beside bin/airlock), " +
	"or `CGO_ENABLED=0 go install github.com/airlock-sandbox/airlock/cmd/airlock-init@<the version of airlock you run>`, " +
	"or set AIRLOCK_INIT to its path"

// InitBinary finds airlock's init: $AIRLOCK_INIT, airlock-init beside the
// running executable (bin/airlock-init beside bin/airlock, /airlock-init in the
// server image), or airlock-init on $PATH or in Go's install directory (where
// `go install` puts it beside airlock). Empty when there is none; New then
// fails, saying how to get it.
func InitBinary() string {
	if p := os.Getenv("AIRLOCK_INIT"); p != "" {
		return p
	}
	var dirs []string
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(exe))
	}
	dirs = append(dirs, filepath.SplitList(os.Getenv("PATH"))...)
	dirs = append(dirs, goBinDirs()...)
	for _, d := range dirs {
		p := filepath.Join(d, "airlock-init")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// goBinDirs are the directories `go install` writes to: $GOBIN, else
// $GOPATH/bin, else ~/go/bin.
func goBinDirs() []string {
	if d := os.Getenv("GOBIN"); d != "" {
		return []string{d}
	}
	if gp := os.Getenv("GOPATH"); gp != "" {
		var dirs []string
		for _, d := range filepath.SplitList(gp) {
			dirs = append(dirs, filepath.Join(d, "bin"))
		}
		return dirs
	}
	if home, err := os.UserHomeDir(); err == nil {
		return []string{filepath.Join(home, "go", "bin")}
	}
	return nil
}

// checkInit tells why the init at path cannot be PID 1 of a sandbox: missing,
// not a Linux executable of this machine's architecture, or linked against a
// C library that images such as airlock/minimal do not have.
func checkInit(path string) error {
	if path == "" {
		return fmt.Errorf("%w: not found beside this program, on $PATH or in Go's install directory; %s", ErrNoInit, initHowTo)
	}
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%w: %s is not a Linux executable (%v); %s", ErrNoInit, path, err, initHowTo)
	}
	defer f.Close()
	if f.Machine != elfMachine() {
		return fmt.Errorf("%w: %s is built for %s, not this machine's %s; %s", ErrNoInit, path, f.Machine, runtime.GOARCH, initHowTo)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%w: %s is dynamically linked (built with cgo), and a sandbox image may have no C library; %s", ErrNoInit, path, initHowTo)
		}
	}
	return nil
}

// elfMachine is the ELF machine of the running program.
func elfMachine() elf.Machine {
	switch runtime.GOARCH {
	case "arm64":
		return elf.EM_AARCH64
	case "386":
		return elf.EM_386
	case "arm":
		return elf.EM_ARM
	case "riscv64":
		return elf.EM_RISCV
	case "ppc64le", "ppc64":
		return elf.EM_PPC64
	case "s390x":
		return elf.EM_S390
	default:
		return elf.EM_X86_64
	}
}

// sandboxEtc are the files of /etc that airlock writes for every sandbox that
// has the init, beside the init in its volume: a sandbox without a network
// gets no /etc/hosts from the engine (docs/DESIGN.md, "No network"), and
// programs still look localhost up there; the engine's /etc/hostname is a bind
// of a file whose host path names the container, which a run could read in
// /proc/self/mountinfo.
var sandboxEtc = []struct{ name, text string }{
	{"hosts", "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n"},
	{"hostname", "sandbox\n"},
}

// initVolume returns the volume that holds the init, making it the first time,
// and the path, on the engine's host, of the directory that holds it and the
// sandboxEtc files ("" when the engine does not say where its volumes are).
func (e *Executor) initVolume(ctx context.Context) (volume, etc string, err error) {
	e.initMu.Lock()
	defer e.initMu.Unlock()
	if e.initVol != "" || e.cfg.InitPath == EngineInit {
		return e.initVol, e.initEtc, nil
	}
	bin, err := os.ReadFile(e.cfg.InitPath)
	if err != nil {
		return "", "", fmt.Errorf("%w: airlock's init: %v", ErrEngine, err)
	}
	sum := sha256.New()
	sum.Write(bin)
	for _, f := range sandboxEtc {
		sum.Write([]byte(f.name + "\x00" + f.text + "\x00"))
	}
	digest := fmt.Sprintf("%x", sum.Sum(nil))
	name := "airlock-init-" + digest[:16]
	vol, err := e.readyInitVolume(ctx, name, digest, bin)
	if err != nil {
		return "", "", err
	}
	e.initVol = name
	e.initEtc = vol.Mountpoint
	return name, e.initEtc, nil
}

// initMaking serialises the making of init volumes within a process.
var initMaking sync.Mutex

// readyInitVolume finds the init's volume with its files in, making it when
// there is none. Every airlock process on the engine may look for it at once,
// and a volume is listed from its creation, before its files are copied in: so
// the files' volume is known ready only by a second, empty volume that its
// maker creates once the files are in (labelInitReady). Two makers at once
// copy the same files twice, which is harmless.
func (e *Executor) readyInitVolume(ctx context.Context, name, digest string, bin []byte) (engine.Volume, error) {
	// The executors of one process (a test suite has many) make it one at a time.
	initMaking.Lock()
	defer initMaking.Unlock()
	for attempt := 0; ; attempt++ {
		vols, err := e.eng.ListVolumes(ctx, labelInitDigest+"="+digest)
		if err != nil {
			return engine.Volume{}, e.engineErr("list init volumes", err)
		}
		var files engine.Volume
		ready := false
		for _, v := range vols {
			switch {
			case v.Labels[labelInitReady] == "true":
				ready = true
			case v.Name == name:
				files = v
			}
		}
		if ready && files.Name != "" {
			return files, nil
		}
		if attempt > 0 {
			return engine.Volume{}, fmt.Errorf("%w: the init's volume %s is not ready after it was made", ErrEngine, name)
		}
		if err := e.makeInitVolume(ctx, name, digest, bin); err != nil {
			return engine.Volume{}, err
		}
		labels := map[string]string{labelComponent: "init", labelInitDigest: digest, labelInitReady: "true"}
		if err := e.eng.CreateVolume(ctx, name+"-ready", nil, labels); err != nil {
			return engine.Volume{}, e.engineErr("mark the init's volume ready", err)
		}
	}
}

// makeInitVolume creates the init's volume and copies the binary into it
// through a container that is created, never started.
func (e *Executor) makeInitVolume(ctx context.Context, name, digest string, bin []byte) error {
	labels := map[string]string{labelComponent: "init", labelInitDigest: digest}
	// A volume of that name without our labels is one the engine made on its
	// own (a container named it after it was removed): it goes first, since
	// creating a volume that exists keeps the old one's labels.
	e.eng.RemoveVolume(ctx, name)
	if err := e.eng.CreateVolume(ctx, name, nil, labels); err != nil {
		return e.engineErr("create init volume", err)
	}
	plan := containerPlan{
		Name: "airlock-init-copy-" + NewID(), Image: images.Minimal.Ref, Cmd: []string{"true"},
		Memory: minMemory, NanoCPUs: 1e8, Pids: 2, TmpfsSize: 1 << 20, Network: "none", Runtime: "runc",
		Workspace: name, Labels: map[string]string{LabelManaged: "true", LabelID: "init-copy"},
	}
	cid, err := e.create(ctx, plan)
	if err != nil {
		return err
	}
	defer e.discard(context.WithoutCancel(ctx), cid)
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "init", Mode: 0o755, Size: int64(len(bin)), ModTime: time.Unix(0, 0)})
	tw.Write(bin)
	for _, f := range sandboxEtc {
		tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: 0o644, Size: int64(len(f.text)), ModTime: time.Unix(0, 0)})
		tw.Write([]byte(f.text))
	}
	tw.Close()
	if err := e.eng.CopyTo(ctx, cid, "/workspace", &buf); err != nil {
		return e.engineErr("copy the init into its volume", err)
	}
	return nil
}
