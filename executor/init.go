package executor

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/airlock-sandbox/airlock/images"
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
)

// InitBinary finds airlock's init: $AIRLOCK_INIT, or airlock-init beside the
// running executable (bin/airlock-init beside bin/airlock, /airlock-init in the
// server image). Empty when there is none: runs then use the engine's init.
func InitBinary() string {
	if p := os.Getenv("AIRLOCK_INIT"); p != "" {
		return p
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "airlock-init")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// sandboxHosts is the /etc/hosts of every sandbox that has the init: a
// sandbox without a network gets none from the engine (docs/DESIGN.md, "No
// network"), and programs still look localhost up there.
const sandboxHosts = "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n"

// initVolume returns the volume that holds the init, making it the first time,
// and the path, on the engine's host, of the hosts file beside the init ("" when
// the engine does not say where its volumes are).
func (e *Executor) initVolume(ctx context.Context) (volume, hosts string, err error) {
	e.initMu.Lock()
	defer e.initMu.Unlock()
	if e.initVol != "" || e.cfg.InitPath == "" {
		return e.initVol, e.initHosts, nil
	}
	bin, err := os.ReadFile(e.cfg.InitPath)
	if err != nil {
		return "", "", fmt.Errorf("%w: airlock's init: %v", ErrEngine, err)
	}
	digest := fmt.Sprintf("%x", sha256.Sum256(append(bin, sandboxHosts...)))
	name := "airlock-init-" + digest[:16]
	vols, err := e.eng.ListVolumes(ctx, labelInitDigest+"="+digest)
	if err != nil {
		return "", "", e.engineErr("list init volumes", err)
	}
	if len(vols) == 0 {
		if err := e.makeInitVolume(ctx, name, digest, bin); err != nil {
			return "", "", err
		}
		if vols, err = e.eng.ListVolumes(ctx, labelInitDigest+"="+digest); err != nil {
			return "", "", e.engineErr("list init volumes", err)
		}
	}
	e.removeOldInits(ctx, digest)
	e.initVol = name
	if len(vols) == 1 && vols[0].Mountpoint != "" {
		e.initHosts = path.Join(vols[0].Mountpoint, "hosts")
	}
	return name, e.initHosts, nil
}

// makeInitVolume creates the init's volume and copies the binary into it
// through a container that is created, never started.
func (e *Executor) makeInitVolume(ctx context.Context, name, digest string, bin []byte) error {
	labels := map[string]string{labelComponent: "init", labelInitDigest: digest}
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
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "hosts", Mode: 0o644, Size: int64(len(sandboxHosts)), ModTime: time.Unix(0, 0)})
	tw.Write([]byte(sandboxHosts))
	tw.Close()
	if err := e.eng.CopyTo(ctx, cid, "/workspace", &buf); err != nil {
		return e.engineErr("copy the init into its volume", err)
	}
	return nil
}

// removeOldInits removes the volumes of other init binaries, as a rebuilt
// image replaces the old one; one a sandbox still mounts stays (best effort).
func (e *Executor) removeOldInits(ctx context.Context, digest string) {
	vols, err := e.eng.ListVolumes(ctx, labelComponent+"=init")
	if err != nil {
		return
	}
	for _, v := range vols {
		if v.Labels[labelInitDigest] != digest {
			if err := e.eng.RemoveVolume(ctx, v.Name); err != nil {
				e.cfg.Logger.Debug("old init volume kept", "volume", v.Name, "err", err)
			}
		}
	}
}
