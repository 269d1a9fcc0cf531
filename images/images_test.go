package images

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestDebianKey(t *testing.T) {
	a, err := Debian.Key()
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := Debian.Key(); a != b || !strings.HasPrefix(a, "sha256:") {
		t.Errorf("key not stable: %s, %s", a, b)
	}
	t.Setenv("AIRLOCK_DEBIAN_MIRROR", "http://mirror.example/debian")
	if c, _ := Debian.Key(); c == a {
		t.Error("the key ignores the mirror")
	}
	if r, ok := Lookup("airlock/debian"); !ok || r != Debian {
		t.Errorf("Lookup(airlock/debian) = %v %v", r, ok)
	}
}

func TestNamed(t *testing.T) {
	for name, want := range map[string]Recipe{"minimal": Minimal, "debian": Debian, "airlock/debian": Debian} {
		if r, ok := Named(name); !ok || r != want {
			t.Errorf("Named(%q) = %v, %v", name, r, ok)
		}
	}
}

func TestLookup(t *testing.T) {
	for _, ref := range []string{"airlock/minimal", "airlock/minimal:latest"} {
		if r, ok := Lookup(ref); !ok || r != Minimal {
			t.Errorf("Lookup(%q) = %v, %v", ref, r, ok)
		}
	}
	for _, ref := range []string{"busybox", "airlock/minimal:v2", "python:3", "minimal", "debian"} {
		if _, ok := Lookup(ref); ok {
			t.Errorf("Lookup(%q) found a recipe; only airlock's own images have one", ref)
		}
	}
}

// TestMinimalContext checks the build context a host with busybox-static produces:
// the offline Dockerfile, and a root filesystem with busybox, its applets, the
// users, and world-writable sticky /tmp and /workspace.
func TestMinimalContext(t *testing.T) {
	if _, err := StaticBusybox(); err != nil {
		t.Fatalf("%v: the offline recipe needs it", err)
	}
	raw, err := Minimal.Context()
	if err != nil {
		t.Fatal(err)
	}
	files := untar(t, bytes.NewReader(raw))
	if df := string(files["Dockerfile"].data); !strings.HasPrefix(strings.SplitN(df, "\nFROM ", 2)[1], "scratch\n") || strings.Contains(df, "busybox:") {
		t.Errorf("Dockerfile is not the offline FROM scratch recipe:\n%s", df)
	}
	rootfs := untar(t, bytes.NewReader(files["rootfs.tar"].data))
	for name, check := range map[string]func(entry) bool{
		"bin/busybox": func(e entry) bool { return e.Typeflag == tar.TypeReg && e.Mode == 0o755 && len(e.data) > 1<<20 },
		"bin/sh":      func(e entry) bool { return e.Typeflag == tar.TypeSymlink && e.Linkname == "/bin/busybox" },
		"usr/bin/env": func(e entry) bool { return e.Typeflag == tar.TypeSymlink },
		"etc/passwd":  func(e entry) bool { return strings.Contains(string(e.data), "nobody:x:65534:65534:") },
		"etc/group":   func(e entry) bool { return strings.Contains(string(e.data), ":x:65534:") },
		"tmp/":        func(e entry) bool { return e.Mode == 0o1777 },
		"workspace/":  func(e entry) bool { return e.Mode == 0o1777 },
		"root/":       func(e entry) bool { return e.Mode == 0o700 },
	} {
		e, ok := rootfs[name]
		if !ok || !check(e) {
			t.Errorf("rootfs %s: %+v", name, e.Header)
		}
	}
}

type entry struct {
	tar.Header
	data []byte
}

func untar(t *testing.T, r io.Reader) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		out[h.Name] = entry{*h, data}
	}
}

// TestNoBusyboxSaysWhatToInstall: on a host without a static busybox the build
// context is refused with the package and the command that fix it, never by
// falling back on a registry.
func TestNoBusyboxSaysWhatToInstall(t *testing.T) {
	saved := BusyboxPaths
	t.Cleanup(func() { BusyboxPaths = saved })
	BusyboxPaths = []string{t.TempDir() + "/busybox"}
	t.Setenv("AIRLOCK_BUSYBOX", "/bin/sh") // there, but dynamically linked (or a link to one)
	_, err := Minimal.Context()
	if err == nil || !strings.Contains(err.Error(), "apt-get install busybox-static") || !strings.Contains(err.Error(), "make images") {
		t.Fatalf("Context() error = %v", err)
	}
}

// The meter reads debootstrap's and apt's lines as a share of the build that
// only grows, and never claims the context is made before it is.
func TestDebianMeter(t *testing.T) {
	var m debianMeter
	var seen []Progress
	report := func(p Progress) { seen = append(seen, p) }
	var lines []string
	for i := range 150 {
		lines = append(lines, fmt.Sprintf("I: Retrieving pkg%d 1.0", i), fmt.Sprintf("I: Validating pkg%d 1.0", i))
	}
	for i := range 150 {
		lines = append(lines, fmt.Sprintf("I: Unpacking pkg%d...", i))
	}
	for i := range 150 {
		lines = append(lines, fmt.Sprintf("I: Configuring pkg%d...", i))
	}
	lines = append(lines, "Get:1 http://deb.debian.org/debian bookworm InRelease", "0 upgraded, 40 newly installed, 0 to remove and 0 not upgraded.")
	for i := range 40 {
		lines = append(lines, fmt.Sprintf("Get:%d http://deb.debian.org/debian bookworm/main amd64 p%d", i+2, i))
	}
	for i := range 40 {
		lines = append(lines, fmt.Sprintf("Setting up p%d (1.0) ...", i))
	}
	for _, l := range lines {
		m.line(l, report)
	}
	last := -1
	for _, p := range seen {
		if p.Percent < last || p.Percent >= packPercent {
			t.Fatalf("progress went %d -> %d (%s)", last, p.Percent, p.Stage)
		}
		last = p.Percent
	}
	if last < packPercent-2 || !strings.HasPrefix(seen[len(seen)-1].Stage, "apt") {
		t.Errorf("last progress %+v; want apt near %d%%", seen[len(seen)-1], packPercent)
	}
	if len(seen) < 20 {
		t.Errorf("%d reports; want steps along the way", len(seen))
	}
}
