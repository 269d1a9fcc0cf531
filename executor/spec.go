package executor

import (
	"fmt"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/api"
)

// Linux refuses a single argument or environment string longer than this
// (MAX_ARG_STRLEN, including the NUL); past it execve fails with a confusing E2BIG.
const maxArgLen = 128*1024 - 1

var (
	envName    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	userSpec   = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]*)?$`)
	runtimeRef = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	idPattern  = regexp.MustCompile(`^[0-9a-f]{24}$`)
)

// The bounds of a background job's queue_timeout and retry.
const (
	maxQueueTimeout = time.Hour
	maxRetry        = 10
)

// normalize fills in the defaults of s and checks it against the Config's
// ceilings and then the caller's, for a foreground run or a background job
// (s.Background). The first invalid field is reported as a *SpecError. Admit is
// its one caller: see docs/DESIGN.md, "One gate".
func (c *Config) normalize(s Spec, caller Caller) (Spec, error) {
	bad := func(field, format string, args ...any) (Spec, error) {
		return Spec{}, &SpecError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	background := s.Background
	total, err := c.checkCommand(s)
	if err != nil {
		return Spec{}, err
	}
	for k, v := range s.Env {
		if !envName.MatchString(k) {
			return bad("env", "%q is not a valid variable name (letters, digits and _, not starting with a digit)", k)
		}
		if strings.ContainsRune(v, 0) {
			return bad("env."+k, "value contains a NUL byte")
		}
		if len(k)+1+len(v) > maxArgLen {
			return bad("env."+k, "is %d bytes; the kernel refuses a single variable over %d bytes", len(k)+1+len(v), maxArgLen)
		}
		total += len(k) + len(v) + 2
	}
	if total > c.MaxArgBytes {
		return bad("argv", "command, argv and env total %d bytes, over the limit of %d", total, c.MaxArgBytes)
	}
	if s.Stdin != nil && int64(len(*s.Stdin)) > c.MaxStdin {
		return bad("stdin", "is %d bytes, over the limit of %d", len(*s.Stdin), c.MaxStdin)
	}

	if s.Image == "" {
		s.Image = c.DefaultImage
	}
	if strings.ContainsAny(s.Image, " \t\n\x00") {
		return bad("image", "%q is not an image reference", s.Image)
	}
	if len(caller.Images) > 0 && !slices.Contains(caller.Images, s.Image) {
		return bad("image", "%q is not among the images the tenant may run (%s)", s.Image, strings.Join(caller.Images, ", "))
	}

	timeout, ceiling, whose := float64(s.Timeout), c.Ceilings.Timeout, "server's"
	if background {
		ceiling = c.MaxBackgroundTimeout
	} else if caller.MaxTimeout > 0 && caller.MaxTimeout < ceiling {
		ceiling, whose = caller.MaxTimeout, "tenant's"
	}
	switch {
	case math.IsNaN(timeout) || timeout < 0:
		return bad("timeout", "must be a positive number of seconds")
	case timeout == 0 && background: // none
	case timeout == 0:
		s.Timeout = Seconds(min(c.Defaults.Timeout, ceiling).Seconds())
	case timeout > ceiling.Seconds(): // in seconds: a huge value overflows a Duration
		return bad("timeout", "%gs is greater than the %s limit of %gs", timeout, whose, ceiling.Seconds())
	case timeout < 0.01:
		return bad("timeout", "%gs is too short; the minimum is 0.01s", timeout)
	}

	if s.Workdir == "" {
		s.Workdir = "/workspace"
	}
	if !strings.HasPrefix(s.Workdir, "/") || strings.ContainsRune(s.Workdir, 0) {
		return bad("workdir", "%q must be an absolute path", s.Workdir)
	}
	if underSystemDir(path.Clean(s.Workdir)) {
		// The route of CVE-2024-21626 on an unpatched runc (a working directory
		// through /proc/self/fd); no command needs one of these.
		return bad("workdir", "%q is under /proc, /sys or /dev, which a sandbox may not work in", s.Workdir)
	}

	if s.Workspace != "" && !workspaceIDPattern.MatchString(s.Workspace) {
		return bad("workspace", "%q is not a workspace id (ws_ and 24 hex digits)", s.Workspace)
	}
	if s.Report != "" {
		if s.Workspace == "" {
			return bad("report", "is read from the run's workspace after it ends: give workspace too")
		}
		if background {
			return bad("report", "is read when a run ends; a background job has none (read its files in the workspace)")
		}
		if _, _, err := parseReport(s.Report); err != nil {
			return Spec{}, err
		}
	}

	// queue_timeout bounds the wait for room: a tenant's turn on one server,
	// a node's slot in a cluster. The gate fills it, so that every deadline
	// after the gate (the queue's, the answer's) reads it from the admitted
	// spec. retry is the cluster's (docs/cluster.md): a single process has no
	// node to lose, and ignores it.
	if qt := float64(s.QueueTimeout); math.IsNaN(qt) || qt < 0 || qt > maxQueueTimeout.Seconds() {
		return bad("queue_timeout", "must be between 0 and %gs", maxQueueTimeout.Seconds())
	}
	if s.QueueTimeout != 0 && s.QueueTimeout < 0.01 {
		return bad("queue_timeout", "%gs is too short; the minimum is 0.01s", float64(s.QueueTimeout))
	}
	if s.QueueTimeout == 0 {
		s.QueueTimeout = Seconds(api.DefaultQueueTimeout.Seconds())
	}
	if s.Retry < 0 || s.Retry > maxRetry {
		return bad("retry", "must be between 0 and %d", maxRetry)
	}
	if !background && s.Retry != 0 {
		return bad("retry", "is for background jobs in cluster mode; a foreground run is never run again")
	}

	if s.User == "" {
		s.User = c.DefaultUser
	}
	if !userSpec.MatchString(s.User) {
		return bad("user", "%q is not uid[:gid] or a user name", s.User)
	}
	if _, err := strconv.ParseUint(s.User, 10, 32); err == nil {
		// A uid the image does not know would get gid 0 (root) from the engine.
		s.User += ":" + s.User
	}
	if isRoot(s.User) && !c.AllowRoot {
		return bad("user", "%q is uid or gid 0; running as root is not allowed by the server", s.User)
	}

	memCeiling, memWhose := c.Ceilings.Memory, "server's"
	if caller.MaxMemory > 0 && caller.MaxMemory < memCeiling {
		memCeiling, memWhose = caller.MaxMemory, "tenant's"
	}
	if v, err := boundedBy(memWhose, "memory", s.Memory, min(c.Defaults.Memory, memCeiling), memCeiling, minMemory, formatBytes); err != nil {
		return Spec{}, err
	} else {
		s.Memory = v
	}
	if v, err := bounded("tmpfs_size", s.TmpfsSize, c.Defaults.TmpfsSize, c.Ceilings.TmpfsSize, 1<<20, formatBytes); err != nil {
		return Spec{}, err
	} else {
		s.TmpfsSize = v
	}
	if v, err := bounded("pids", s.Pids, c.Defaults.Pids, c.Ceilings.Pids, 2, formatCount); err != nil {
		return Spec{}, err
	} else {
		s.Pids = v
	}
	if v, err := bounded("max_output", s.MaxOutput, c.Defaults.MaxOutput, c.Ceilings.MaxOutput, 0, formatBytes); err != nil {
		return Spec{}, err
	} else {
		s.MaxOutput = v
	}
	switch {
	case math.IsNaN(s.CPUs) || s.CPUs < 0:
		return bad("cpus", "must be a positive number")
	case s.CPUs == 0:
		s.CPUs = c.Defaults.CPUs
	case s.CPUs > c.Ceilings.CPUs:
		return bad("cpus", "%g is greater than the server's limit of %g", s.CPUs, c.Ceilings.CPUs)
	case s.CPUs < 0.01:
		return bad("cpus", "%g is below the minimum of 0.01", s.CPUs)
	}
	switch {
	case s.TailLines < 0:
		return bad("tail_lines", "must not be negative")
	case s.TailLines == 0:
		s.TailLines = c.DefaultTailLines
	case s.TailLines > 100000:
		return bad("tail_lines", "%d is greater than the limit of 100000", s.TailLines)
	}

	if s.Network == "" {
		s.Network = "none"
	}
	if s.Egress, err = c.normalizeEgress(s.Egress, caller); err != nil {
		return Spec{}, err
	}
	if hosts, err := c.normalizeSecrets(s, caller); err != nil {
		return Spec{}, err
	} else if len(hosts) > 0 {
		s.Egress = slices.Compact(slices.Sorted(slices.Values(append(s.Egress, hosts...))))
	}
	if len(s.Egress) > 0 && s.Network != "none" {
		return bad("egress", "reaches hosts through airlock's proxy, with no engine network: network must be none, not %q", s.Network)
	}
	if !slices.Contains(c.Networks, s.Network) {
		return bad("network", "%q is not allowed by the server (allowed: %s)", s.Network, strings.Join(c.Networks, ", "))
	}
	if s.Runtime == "" {
		s.Runtime = c.DefaultRuntime
	}
	if !runtimeRef.MatchString(s.Runtime) || !slices.Contains(c.Runtimes, s.Runtime) {
		return bad("runtime", "%q is not allowed by the server (allowed: %s)", s.Runtime, strings.Join(c.Runtimes, ", "))
	}

	for k, v := range s.Labels {
		switch {
		case k == "":
			return bad("labels", "a label name is empty")
		case strings.HasPrefix(k, labelPrefix):
			return bad("labels."+k, "the %q prefix is reserved for airlock", labelPrefix)
		case strings.ContainsRune(k, 0) || strings.ContainsRune(v, 0):
			return bad("labels."+k, "contains a NUL byte")
		}
		total += len(k) + len(v)
	}
	if total > c.MaxArgBytes {
		return bad("labels", "command, argv, env and labels total %d bytes, over the limit of %d", total, c.MaxArgBytes)
	}
	return s, nil
}

// checkCommand checks the command or argv of s, and returns its size toward
// MaxArgBytes.
func (c *Config) checkCommand(s Spec) (int, error) {
	bad := func(field, format string, args ...any) (int, error) {
		return 0, &SpecError{Field: field, Reason: fmt.Sprintf(format, args...)}
	}
	switch {
	case s.Command == "" && len(s.Argv) == 0:
		return bad("command", "one of command or argv is required")
	case s.Command != "" && len(s.Argv) > 0:
		return bad("command", "give command or argv, not both")
	}
	if strings.TrimSpace(s.Command) == "" && s.Command != "" {
		return bad("command", "is blank")
	}
	if strings.ContainsRune(s.Command, 0) {
		return bad("command", "contains a NUL byte")
	}
	if len(s.Command) > maxArgLen {
		return bad("command", "is %d bytes; the kernel refuses a single argument over %d bytes (pass long scripts as stdin)", len(s.Command), maxArgLen)
	}
	if len(s.Argv) > 0 && s.Argv[0] == "" {
		return bad("argv[0]", "program name is empty")
	}
	total := len(s.Command)
	for i, a := range s.Argv {
		if strings.ContainsRune(a, 0) {
			return bad(fmt.Sprintf("argv[%d]", i), "contains a NUL byte")
		}
		if len(a) > maxArgLen {
			return bad(fmt.Sprintf("argv[%d]", i), "is %d bytes; the kernel refuses a single argument over %d bytes", len(a), maxArgLen)
		}
		total += len(a) + 1
	}
	if total > c.MaxArgBytes {
		return bad("argv", "command and argv total %d bytes, over the limit of %d", total, c.MaxArgBytes)
	}
	return total, nil
}

// minMemory is the engine's own floor for a memory limit.
const minMemory = 6 << 20

// bounded applies a default, the server's ceiling and a floor to a numeric limit.
func bounded(field string, v, def, ceiling, floor int64, format func(int64) string) (int64, error) {
	return boundedBy("server's", field, v, def, ceiling, floor, format)
}

// boundedBy is bounded with a ceiling that is whose ("server's", "tenant's").
func boundedBy(whose, field string, v, def, ceiling, floor int64, format func(int64) string) (int64, error) {
	switch {
	case v < 0:
		return 0, &SpecError{Field: field, Reason: "must not be negative"}
	case v == 0:
		return def, nil
	case v > ceiling:
		return 0, &SpecError{Field: field, Reason: fmt.Sprintf("%s is greater than the %s limit of %s", format(v), whose, format(ceiling))}
	case v < floor:
		return 0, &SpecError{Field: field, Reason: fmt.Sprintf("%s is below the minimum of %s", format(v), format(floor))}
	}
	return v, nil
}

func formatCount(n int64) string { return fmt.Sprint(n) }

// formatBytes prints n in the largest binary unit that divides it, e.g. "512MiB".
func formatBytes(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d%s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}

// isRoot reports whether user names uid 0 or gid 0 as the engine reads it: numbers
// are parsed, so "00" is root too. A name that an image's passwd maps to 0 cannot
// be seen from here; only "root" is known.
func isRoot(user string) bool {
	u, g, _ := strings.Cut(user, ":")
	for _, id := range []string{u, g} {
		if id == "root" {
			return true
		}
		if n, err := strconv.ParseUint(id, 10, 64); err == nil && n == 0 {
			return true
		}
	}
	return false
}

// underSystemDir reports whether the clean absolute path p is /proc, /sys or
// /dev, or under one of them.
func underSystemDir(p string) bool {
	for _, d := range []string{"/proc", "/sys", "/dev"} {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}
