package executor

import (
	"cmp"
	"fmt"
	"log/slog"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// PatchedRunc is the name `make runc` (.ci/install-runc) registers its build of
// runc under in the engine. Config.PatchedRunc defaults to it: runc sandboxes
// run under it when the engine offers it (SECURITY.md, "The runc airlock runs").
const PatchedRunc = "airlock-runc"

// runcVersion is a runc release: 1.2.8 is {1, 2, 8, 0}, 1.4.0-rc.3 is {1, 4, 0, 3}.
type runcVersion struct{ major, minor, patch, rc int }

// runcVersionRE reads the upstream version at the start of what runc or the
// engine says: "1.1.5+ds1-1+deb12u1" (Debian), "v1.1.12-0-g51d5e94" (git
// describe, Docker's packages), "1.4.0-rc.3", "1.0.0-rc93".
var runcVersionRE = regexp.MustCompile(`^v?(\d+)\.(\d+)\.(\d+)(?:-rc\.?(\d+))?`)

// parseRuncVersion reads the upstream version s begins with.
func parseRuncVersion(s string) (runcVersion, bool) {
	m := runcVersionRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return runcVersion{}, false
	}
	var n [4]int
	for i, d := range m[1:] {
		if d == "" {
			continue
		}
		v, err := strconv.Atoi(d)
		if err != nil { // more digits than an int holds
			return runcVersion{}, false
		}
		n[i] = v
	}
	return runcVersion{n[0], n[1], n[2], n[3]}, true
}

func (v runcVersion) String() string {
	s := fmt.Sprintf("%d.%d.%d", v.major, v.minor, v.patch)
	if v.rc > 0 {
		s += fmt.Sprintf("-rc.%d", v.rc)
	}
	return s
}

// compare orders versions; a release comes after its release candidates.
func (v runcVersion) compare(w runcVersion) int {
	for _, d := range [...]int{v.major - w.major, v.minor - w.minor, v.patch - w.patch} {
		if d != 0 {
			return d
		}
	}
	switch {
	case v.rc == w.rc:
		return 0
	case v.rc == 0:
		return 1
	case w.rc == 0:
		return -1
	}
	return v.rc - w.rc
}

// runcAdvisory is one of runc's security advisories that a sandbox can use
// against the host, with the first fixed release of each line it was fixed in.
type runcAdvisory struct {
	ID    string
	Fixed []runcVersion // oldest line first
}

// affects says whether v lacks the fix: a line with a fixed release is fixed
// from that release on; a line newer than every fixed one was never affected;
// an older one (1.1 for a fix first made in 1.2) never got the fix.
func (a runcAdvisory) affects(v runcVersion) bool {
	if v.compare(a.Fixed[len(a.Fixed)-1]) >= 0 {
		return false
	}
	for _, f := range a.Fixed {
		if f.major == v.major && f.minor == v.minor && v.compare(f) >= 0 {
			return false
		}
	}
	return true
}

func rv(s string) runcVersion {
	v, ok := parseRuncVersion(s)
	if !ok {
		panic("runc version " + s)
	}
	return v
}

// runcAdvisories are runc's advisories a sandbox of airlock's could exploit,
// from runc's CHANGELOG. Not listed: CVE-2026-119101 (fixed in 1.3.7, 1.4.4,
// 1.5.3), which needs `runc restore`; airlock never checkpoints a container.
var runcAdvisories = []runcAdvisory{
	{"CVE-2024-21626", []runcVersion{rv("1.1.12")}},                               // a leaked host directory descriptor
	{"CVE-2024-45310", []runcVersion{rv("1.1.14"), rv("1.2.0-rc.3")}},             // empty files and directories made on the host
	{"CVE-2025-31133", []runcVersion{rv("1.2.8"), rv("1.3.3"), rv("1.4.0-rc.3")}}, // a masked /dev/null replaced by a symlink
	{"CVE-2025-52565", []runcVersion{rv("1.2.8"), rv("1.3.3"), rv("1.4.0-rc.3")}}, // /dev/console bind-mount races
	{"CVE-2025-52881", []runcVersion{rv("1.2.8"), rv("1.3.3"), rv("1.4.0-rc.3")}}, // writes redirected to /proc files
	{"CVE-2026-41579", []runcVersion{rv("1.3.6"), rv("1.4.3"), rv("1.5.0-rc.3")}}, // a /dev symlink in the image
}

// runcAffected lists the advisories whose range holds v.
func runcAffected(v runcVersion) []string {
	var ids []string
	for _, a := range runcAdvisories {
		if a.affects(v) {
			ids = append(ids, a.ID)
		}
	}
	return ids
}

// runcChoice is the engine runtime runc sandboxes run under, and what is
// known of its version.
type runcChoice struct {
	Runtime string // the engine's name for it: PatchedRunc, or runc
	// Version is what the engine or the runtime's path says: the engine's
	// RuncCommit for its default runtime, the directory `make runc` installs
	// into for airlock's build; "" when neither says.
	Version  string
	Affected []string // the advisories whose range holds Version
}

// chooseRunc picks the runtime for runc sandboxes on an engine: patched when
// the engine offers it (and patched is set), else the engine's own runc.
func chooseRunc(info engineInfo, patched string) runcChoice {
	c := runcChoice{Runtime: "runc"}
	if patched != "" && slices.Contains(info.Runtimes, patched) {
		c.Runtime = patched
	}
	// The engine reports the version of its default runtime's binary only.
	if def := cmp.Or(info.DefaultRuntime, "runc"); def == c.Runtime && info.RuncCommit != "" && info.RuncCommit != "N/A" {
		c.Version = info.RuncCommit
	} else if v, ok := pathVersion(info.RuntimePaths[c.Runtime]); ok {
		c.Version = v
	}
	if v, ok := parseRuncVersion(c.Version); ok {
		c.Affected = runcAffected(v)
	}
	return c
}

// pathVersion reads a version from a directory of the runtime's path, as
// .ci/install-runc installs it (/usr/local/lib/airlock/runc/1.5.3/runc).
func pathVersion(p string) (string, bool) {
	for dir := path.Dir(p); dir != "/" && dir != "."; dir = path.Dir(dir) {
		base := strings.TrimPrefix(path.Base(dir), "runc-")
		if m := runcVersionRE.FindString(base); m != "" && m == base {
			return strings.TrimPrefix(base, "v"), true
		}
	}
	return "", false
}

// warn logs, at start, a runc choice with known escapes: what it is, which
// advisories, and how to get a patched one.
func (c runcChoice) warn(log *slog.Logger, patched string) {
	if len(c.Affected) == 0 {
		return
	}
	cves := strings.Join(c.Affected, ", ")
	if c.Runtime != "runc" {
		log.Warn(fmt.Sprintf("runc sandboxes run under %s, runc %s, which is in the range of %s: rebuild it with make runc", c.Runtime, c.Version, cves),
			"runtime", c.Runtime, "runc_version", c.Version, "advisories", c.Affected)
		return
	}
	how := "make runc builds a patched runc and registers it with the engine"
	if patched != "" {
		how += " as " + patched + ", which airlock then uses"
	}
	log.Warn(fmt.Sprintf("runc sandboxes run under the engine's runc %s, which is in the range of %s (a distribution may carry fixes under an older version: check yours); %s",
		c.Version, cves, how), "runtime", c.Runtime, "runc_version", c.Version, "advisories", c.Affected)
}

// engineRuntime is the engine's name for a sandbox's runtime: runc is the
// patched build when the engine offered it at start (see chooseRunc).
func (e *Executor) engineRuntime(name string) string {
	if name != "runc" || e.runc.Runtime == "" {
		return name
	}
	return e.runc.Runtime
}

// RuncRuntime says which engine runtime runc sandboxes run under (PatchedRunc,
// or the engine's own runc) and its version, "" when the engine does not say.
// A Result's runtime stays "runc" either way.
func (e *Executor) RuncRuntime() (runtime, version string) {
	return e.runc.Runtime, e.runc.Version
}
