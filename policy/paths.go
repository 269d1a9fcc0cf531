package policy

import "strings"

// alwaysPass are device paths any command may use.
var alwaysPass = map[string]bool{
	"/dev/null": true, "/dev/zero": true, "/dev/random": true, "/dev/urandom": true, "/dev/full": true,
	"/dev/stdin": true, "/dev/stdout": true, "/dev/stderr": true, "/dev/tty": true,
}

// checkArgPath applies the workspace rules to an argument that looks like a path,
// including the value of --opt=/path.
func (c *checker) checkArgPath(arg, match string) {
	if len(c.p.roots) == 0 {
		return
	}
	if strings.HasPrefix(arg, "-") {
		_, value, ok := strings.Cut(arg, "=")
		if !ok {
			return
		}
		arg = value
	}
	if strings.Contains(arg, "://") {
		return // a URL
	}
	if strings.HasPrefix(arg, "/") || strings.HasPrefix(arg, "~") || arg == ".." ||
		strings.HasPrefix(arg, "../") || strings.Contains(arg, "/../") || strings.HasSuffix(arg, "/..") {
		c.checkPath(arg, match)
	}
}

// checkPath refuses a path outside the workspace roots. Relative paths are taken
// from the first root, the working directory.
func (c *checker) checkPath(p, match string) {
	if len(c.p.roots) == 0 || p == "" {
		return
	}
	if strings.HasPrefix(p, "~") {
		c.refuse(RuleOutsideRoots, match)
		return
	}
	if !strings.HasPrefix(p, "/") {
		if !within(cleanPath(c.p.roots[0]+"/"+p), c.p.roots[:1]) {
			c.refuse(RulePathTraversal, match)
		}
		return
	}
	clean := cleanPath(p)
	if alwaysPass[clean] || strings.HasPrefix(clean, "/dev/fd/") || strings.HasPrefix(clean, "/proc/self/fd/") {
		return
	}
	if !within(clean, c.p.roots) {
		c.refuse(RuleOutsideRoots, match)
	}
}

func within(p string, roots []string) bool {
	for _, r := range roots {
		if p == r || r == "/" || strings.HasPrefix(p, r+"/") {
			return true
		}
	}
	return false
}
