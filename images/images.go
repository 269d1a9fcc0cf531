package images

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"embed"
	"fmt"
	"os"
	"os/exec"
	"path"
	"strings"
	"time"
)

//go:embed minimal debian
var recipes embed.FS

// Labels on every image airlock builds.
const (
	Label       = "io.airlock.image"        // the recipe name
	DigestLabel = "io.airlock.image.digest" // sha256 of the build context it came from
)

// Recipe is one sandbox image airlock can build offline.
type Recipe struct {
	Name string // directory under images/, e.g. "minimal"
	Ref  string // the image reference it is tagged with, e.g. "airlock/minimal"
}

// Minimal is FROM scratch plus a static busybox.
var Minimal = Recipe{Name: "minimal", Ref: "airlock/minimal"}

// Debian is a toolchain for users' projects (python3 and pytest, git, make,
// the GNU userland), debootstrapped from Debian's archive: see debian.go.
var Debian = Recipe{Name: "debian", Ref: "airlock/debian"}

// All lists every recipe, in build order.
func All() []Recipe { return []Recipe{Minimal, Debian} }

// Lookup finds the recipe that builds the image ref ("airlock/minimal" or
// "airlock/minimal:latest"). A bare name is not ours: "debian" is Docker Hub's.
func Lookup(ref string) (Recipe, bool) {
	ref = strings.TrimSuffix(ref, ":latest")
	for _, r := range All() {
		if r.Ref == ref {
			return r, true
		}
	}
	return Recipe{}, false
}

// Named finds a recipe by its name ("minimal") or its image ref, as `airlock
// images build` takes them.
func Named(name string) (Recipe, bool) {
	for _, r := range All() {
		if r.Name == name {
			return r, true
		}
	}
	return Lookup(name)
}

// BusyboxPaths are where a static busybox is looked for on the host (Debian's
// busybox-static installs /bin/busybox). AIRLOCK_BUSYBOX, when set, comes first.
var BusyboxPaths = []string{"/bin/busybox", "/usr/bin/busybox"}

// Key identifies what the recipe builds: an image labelled with the same key
// (DigestLabel) needs no rebuild. airlock/minimal's is the digest of its build
// context, which is cheap to make and the same bytes on the same host;
// airlock/debian's is the digest of its recipe (suite, mirror, packages,
// Dockerfile), since debootstrap takes minutes and its output differs each time.
func (r Recipe) Key() (string, error) {
	switch r.Name {
	case Minimal.Name:
		bc, err := r.Context()
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("sha256:%x", sha256.Sum256(bc)), nil
	case Debian.Name:
		return debianKey()
	}
	return "", fmt.Errorf("image recipe %q: unknown", r.Name)
}

// Progress is how far the making of an image's build context has come: a
// stage a person can read, and the share of the whole build (0 to 100) that
// is done, estimated from the stages' usual lengths.
type Progress struct {
	Stage   string `json:"stage"`
	Percent int    `json:"percent"`
}

// Context returns the recipe's build context as a tar archive, made with no
// registry: airlock/minimal's from the host's static busybox (without one it
// fails, saying how to get one), airlock/debian's with debootstrap.
func (r Recipe) Context() ([]byte, error) { return r.ContextWithProgress(nil) }

// ContextWithProgress is Context, telling report (when not nil) of its
// progress as it goes: airlock/debian's takes minutes. The context reaches at
// most ContextPercent; the engine's build of it is the rest.
func (r Recipe) ContextWithProgress(report func(Progress)) ([]byte, error) {
	switch r.Name {
	case Minimal.Name:
	case Debian.Name:
		return debianContext(report)
	default:
		return nil, fmt.Errorf("image recipe %q: unknown", r.Name)
	}
	busybox, err := StaticBusybox()
	if err != nil {
		return nil, err
	}
	const dockerfile = "Dockerfile"
	rootfs, err := minimalRootfs(busybox)
	if err != nil {
		return nil, err
	}
	df, err := recipes.ReadFile(path.Join(r.Name, dockerfile))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		data []byte
	}{{"Dockerfile", df}, {"rootfs.tar", rootfs}} {
		if err := writeFile(tw, f.name, f.data, 0o644); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// StaticBusybox returns the path of a statically linked busybox on the host:
// $AIRLOCK_BUSYBOX, or one of BusyboxPaths. The error says how to get one.
func StaticBusybox() (string, error) {
	paths := BusyboxPaths
	if p := os.Getenv("AIRLOCK_BUSYBOX"); p != "" {
		paths = append([]string{p}, paths...)
	}
	for _, p := range paths {
		if isStatic(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s needs a statically linked busybox on this host and found none in %s: "+
		"install Debian's busybox-static (sudo apt-get install busybox-static) or set AIRLOCK_BUSYBOX "+
		"to a static busybox, then run `make images` (or `airlock images build`)", Minimal.Ref, strings.Join(paths, ", "))
}

// isStatic reports whether p is an ELF executable with no program interpreter.
func isStatic(p string) bool {
	f, err := elf.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return false
		}
	}
	return f.Type == elf.ET_EXEC || f.Type == elf.ET_DYN
}

// minimalRootfs builds the image's file tree as a tar: the directories, /etc files
// for root and nobody, the busybox binary and a symlink for each of its applets.
func minimalRootfs(busybox string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []struct {
		name string
		mode int64
	}{
		{"bin", 0o755}, {"sbin", 0o755}, {"usr", 0o755}, {"usr/bin", 0o755}, {"usr/sbin", 0o755},
		{"usr/local", 0o755}, {"usr/local/bin", 0o755}, {"etc", 0o755}, {"root", 0o700},
		{"tmp", 0o1777}, {"var", 0o755}, {"var/tmp", 0o1777}, {"workspace", 0o1777},
	} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d.name + "/", Mode: d.mode, ModTime: epoch}); err != nil {
			return nil, err
		}
	}
	for _, name := range []string{"passwd", "group"} {
		data, err := recipes.ReadFile(path.Join(Minimal.Name, name))
		if err != nil {
			return nil, err
		}
		if err := writeFile(tw, "etc/"+name, data, 0o644); err != nil {
			return nil, err
		}
	}
	bin, err := os.ReadFile(busybox)
	if err != nil {
		return nil, fmt.Errorf("read busybox: %w", err)
	}
	if err := writeFile(tw, "bin/busybox", bin, 0o755); err != nil {
		return nil, err
	}
	out, err := exec.Command(busybox, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("list busybox applets: %w", err)
	}
	for _, applet := range strings.Fields(string(out)) {
		if applet == "bin/busybox" {
			continue
		}
		h := &tar.Header{Typeflag: tar.TypeSymlink, Name: applet, Linkname: "/bin/busybox", Mode: 0o777, ModTime: epoch}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// epoch is the fixed modification time of generated files, so that a recipe's
// context is the same bytes on every build.
var epoch = time.Unix(0, 0)

func writeFile(tw *tar.Writer, name string, data []byte, mode int64) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: epoch}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}
