package images

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
)

// airlock/debian is Debian's minbase variant plus the packages listed in
// debian/packages, installed by debootstrap from a Debian mirror, and those
// in debian/packages.apt, installed after it by the root filesystem's own apt
// (debootstrap's resolver misses some of npm's dependencies), packed as the
// root filesystem of a FROM scratch image. It needs debootstrap on the
// host and root (debootstrap makes device nodes and chowns files); the archive
// is its only source, so it builds wherever Debian's mirror is reachable.

const debianSuite = "bookworm"

// DebianMirror is the mirror debootstrap installs from; AIRLOCK_DEBIAN_MIRROR
// overrides it.
func DebianMirror() string {
	if m := os.Getenv("AIRLOCK_DEBIAN_MIRROR"); m != "" {
		return m
	}
	return "http://deb.debian.org/debian"
}

// debianPackages lists the packages of the recipe file name in debian/.
func debianPackages(name string) ([]string, error) {
	b, err := recipes.ReadFile("debian/" + name)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(b)), nil
}

func debianKey() (string, error) {
	pkgs, err := debianPackages("packages")
	if err != nil {
		return "", err
	}
	later, err := debianPackages("packages.apt")
	if err != nil {
		return "", err
	}
	df, err := recipes.ReadFile("debian/Dockerfile")
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "suite %s\nmirror %s\npackages %s\nthen %s\n", debianSuite, DebianMirror(), strings.Join(pkgs, ","), strings.Join(later, ","))
	h.Write(df)
	return fmt.Sprintf("sha256:%x", h.Sum(nil)), nil
}

// debianContext debootstraps the root filesystem into a temporary directory
// and returns the build context: the Dockerfile and rootfs.tar.
func debianContext() ([]byte, error) {
	if _, err := exec.LookPath("debootstrap"); err != nil {
		return nil, fmt.Errorf("%s needs debootstrap on this host (sudo apt-get install debootstrap), "+
			"run as root: `sudo airlock images build debian`", Debian.Ref)
	}
	pkgs, err := debianPackages("packages")
	if err != nil {
		return nil, err
	}
	later, err := debianPackages("packages.apt")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "airlock-debian-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "rootfs")
	cmd := exec.Command("debootstrap", "--variant=minbase", "--include="+strings.Join(pkgs, ","), debianSuite, root, DebianMirror())
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("debootstrap %s: %v\n%s", debianSuite, err, lastLines(out, 20))
	}
	for _, args := range [][]string{{"update", "-q"}, append([]string{"install", "-y", "-q", "--no-install-recommends"}, later...)} {
		cmd := exec.Command("chroot", append([]string{root, "apt-get"}, args...)...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("apt-get %s in the debian root filesystem: %v\n%s", args[0], err, lastLines(out, 20))
		}
	}
	// What a run needs and nothing it does not: no package caches, and the
	// same writable places as airlock/minimal.
	for _, p := range []string{"var/cache/apt/archives", "var/lib/apt/lists", "var/log",
		"usr/share/doc", "usr/share/man", "usr/share/info", "usr/share/locale"} {
		entries, _ := os.ReadDir(filepath.Join(root, p))
		for _, e := range entries {
			os.RemoveAll(filepath.Join(root, p, e.Name()))
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "workspace"), 0o1777); err != nil {
		return nil, err
	}
	if err := os.Chmod(filepath.Join(root, "workspace"), 0o1777); err != nil {
		return nil, err
	}
	// GNU tar keeps owners, modes, links and hard links as debootstrap made
	// them; /dev, /proc and /sys are the engine's to provide.
	rootfs, err := exec.Command("tar", "--numeric-owner", "--exclude=./dev/*", "--exclude=./proc/*", "--exclude=./sys/*",
		"-C", root, "-cf", "-", ".").Output()
	if err != nil {
		return nil, fmt.Errorf("pack the debian root filesystem: %w", err)
	}
	df, err := recipes.ReadFile(path.Join(Debian.Name, "Dockerfile"))
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := writeFile(tw, "Dockerfile", df, 0o644); err != nil {
		return nil, err
	}
	if err := writeFile(tw, "rootfs.tar", rootfs, 0o644); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
