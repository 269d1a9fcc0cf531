package images

import (
	"archive/tar"
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
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
func debianContext(report func(Progress)) ([]byte, error) {
	if report == nil {
		report = func(Progress) {}
	}
	var meter debianMeter
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
	report(Progress{Stage: "debootstrap: resolving packages", Percent: 0})
	cmd := exec.Command("debootstrap", "--variant=minbase", "--include="+strings.Join(pkgs, ","), debianSuite, root, DebianMirror())
	if out, err := runMetered(cmd, func(line string) { meter.line(line, report) }); err != nil {
		return nil, fmt.Errorf("debootstrap %s: %v\n%s", debianSuite, err, lastLines(out, 20))
	}
	for _, args := range [][]string{{"update", "-q"}, append([]string{"install", "-y", "-q", "--no-install-recommends"}, later...)} {
		cmd := exec.Command("chroot", append([]string{root, "apt-get"}, args...)...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := runMetered(cmd, func(line string) { meter.line(line, report) }); err != nil {
			return nil, fmt.Errorf("apt-get %s in the debian root filesystem: %v\n%s", args[0], err, lastLines(out, 20))
		}
	}
	report(Progress{Stage: "packing the root filesystem", Percent: packPercent})
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
	report(Progress{Stage: "root filesystem packed", Percent: ContextPercent})
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

// The shares of airlock/debian's build, from its usual timings here:
// debootstrap fetches (up to debootstrapFetched) and installs the base (up to
// aptStart); apt adds Node.js and npm (up to packPercent); the root
// filesystem is packed (up to ContextPercent); the engine imports it.
const (
	debootstrapFetched = 25
	aptStart           = 50
	packPercent        = 80
	// ContextPercent is where a build context is made and the engine's build
	// of it begins.
	ContextPercent = 85
	// debianBasePackages is about how many packages debootstrap fetches for
	// the recipe: it says the number only once it has them all.
	debianBasePackages = 140
)

// debianMeter turns the lines debootstrap and apt print into Progress.
type debianMeter struct {
	fetched, installed, aptTotal, aptDone int
	last                                  Progress
}

func (m *debianMeter) line(line string, report func(Progress)) {
	p := m.last
	switch {
	case strings.HasPrefix(line, "I: Retrieving "):
		m.fetched++
		p = Progress{"debootstrap: fetching packages", min(m.fetched*debootstrapFetched/debianBasePackages, debootstrapFetched-1)}
	case strings.HasPrefix(line, "I: Extracting "), strings.HasPrefix(line, "I: Unpacking "), strings.HasPrefix(line, "I: Configuring "):
		m.installed++
		total := 2 * max(m.fetched, 1) // each package is unpacked, then configured (extracting is a share of the first)
		p = Progress{"debootstrap: installing the base system", debootstrapFetched + min(m.installed*(aptStart-debootstrapFetched)/total, aptStart-debootstrapFetched-1)}
	case strings.Contains(line, " newly installed, "):
		fmt.Sscanf(line[strings.LastIndex(line[:strings.Index(line, " newly installed")], " ")+1:], "%d", &m.aptTotal)
		p = Progress{"apt: installing Node.js and npm", aptStart}
	case strings.HasPrefix(line, "Get:") && m.aptTotal > 0, strings.HasPrefix(line, "Setting up ") && m.aptTotal > 0:
		m.aptDone++
		p = Progress{"apt: installing Node.js and npm", aptStart + min(m.aptDone*(packPercent-aptStart)/(2*m.aptTotal), packPercent-aptStart-1)}
	}
	if p != m.last {
		m.last = p
		report(p)
	}
}

// runMetered runs cmd, handing each line of its output to line as it comes,
// and returns the whole output.
func runMetered(cmd *exec.Cmd, line func(string)) ([]byte, error) {
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(io.TeeReader(pr, &out))
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line(sc.Text())
		}
		io.Copy(io.Discard, pr)
	}()
	err := cmd.Run()
	pw.Close()
	<-done
	return out.Bytes(), err
}
