package policy

import (
	"regexp"
	"slices"
	"strings"
)

// builtinRules applies the built-in deny rules to one unwrapped command. extra is
// true when the command gets arguments only known at run time (xargs).
func (c *checker) builtinRules(name string, kind nameKind, argv []word, extra bool, match *commandText) {
	args := argv[1:]
	if p := argv[0].s; firewallUnit(name) && (strings.Contains(p, "/init.d/") || strings.Contains(p, "/rc.d/")) {
		// /etc/init.d/iptables stop: the init script of a firewall.
		if ops := operands(args); len(ops) > 0 && (ops[0].s == "stop" || ops[0].s == "flush" || ops[0].s == "clear") {
			c.refuse(RuleFirewall, match.String())
			return
		}
	}
	if len(c.bombs) > 0 && c.bombs[name] { // nearly no script has one: no lookup
		c.refuse(RuleForkBomb, match.String())
		return
	}
	// One switch on the name rather than a chain of comparisons: the names are
	// distinct, so which rule applies does not depend on the order of the
	// cases; the rules that go by a prefix or a kind are tried in the default.
	switch name {
	case "rm":
		recursive, noPreserve := false, false
		for _, a := range options(args) {
			recursive = recursive || longOpt(a, "--recursive", 3) || shortFlag(a, 'r') || shortFlag(a, 'R')
			noPreserve = noPreserve || longOpt(a, "--no-preserve-root", 3)
		}
		switch {
		case noPreserve:
			c.refuse(RuleRmRoot, match.String())
		case recursive && c.anyRootPath(operands(args)):
			c.refuse(RuleRmRoot, match.String())
		case recursive && c.unknownRootTarget(operands(args)):
			c.refuse(RuleRmRoot, match.String())
		case recursive && extra && c.strict():
			c.refuse(RuleDynamicCommand, match.String()) // xargs rm -r: targets only known at run time
		}
	case "find":
		var starts []word
		for i, a := range args {
			if (a.s == "-H" || a.s == "-L" || a.s == "-P" || strings.HasPrefix(a.s, "-O")) && len(starts) == 0 {
				continue // options before the start paths
			}
			if a.s == "-D" && len(starts) == 0 && i+1 < len(args) {
				continue
			}
			if strings.HasPrefix(a.s, "-") || a.s == "(" || a.s == "!" {
				break
			}
			starts = append(starts, a)
		}
		if !c.anyRootPath(starts) {
			return
		}
		for i, a := range args {
			switch a.s {
			case "-delete":
				c.refuse(RuleFindDelete, match.String())
				return
			case "-exec", "-execdir", "-ok", "-okdir":
				if i+1 < len(args) && commandName(args[i+1].s) == "rm" {
					c.refuse(RuleFindDelete, match.String())
					return
				}
			}
		}
	case "mkfs", "mke2fs", "mkswap", "wipefs", "mkdosfs", "mkntfs", "mkexfatfs", "mkreiserfs", "mkisofs", "diskpart", "format":
		c.formatter(name, args, match) // and mkfs.NAME, in the default
	case "badblocks":
		if slices.ContainsFunc(options(args), func(a string) bool { return shortFlag(a, 'w') }) && formatsDevice(args) {
			c.refuse(RuleMkfs, match.String())
		}
	case "nvme", "cryptsetup":
		if ops := operands(args); len(ops) > 1 && destroyingVerbs[ops[0].s] && formatsDevice(ops[1:]) {
			c.refuse(RuleMkfs, match.String())
		}
	case "fdisk", "sfdisk", "parted", "sgdisk", "gdisk", "blkdiscard", "cfdisk":
		if listsOnly(name, args) {
			return // sfdisk -l /dev/sda, parted /dev/sda print: reads the table
		}
		for _, a := range operands(args) {
			if isBlockDevice(a.s) {
				c.refuse(RuleBlockDevice, match.String())
				return
			}
		}
	case "chmod", "chown", "chgrp":
		recursive := false
		for _, a := range options(args) {
			recursive = recursive || longOpt(a, "--recursive", 5) || shortFlag(a, 'R') // --rec: --ref is --reference
		}
		if recursive && c.anyRootPath(operands(args)) {
			c.refuse(RuleChmodRoot, match.String())
		}
	case "shutdown", "reboot", "halt", "poweroff":
		c.refuse(RulePower, match.String())
	case "init", "telinit":
		if ops := operands(args); len(ops) > 0 && (ops[0].s == "0" || ops[0].s == "6") {
			c.refuse(RulePower, match.String())
		}
	case "systemctl":
		ops := operands(args)
		if len(ops) == 0 {
			return
		}
		switch ops[0].s {
		case "poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "soft-reboot", "hybrid-sleep", "suspend-then-hibernate":
			c.refuse(RulePower, match.String())
		case "start", "isolate", "restart":
			for _, unit := range ops[1:] {
				switch strings.TrimSuffix(unit.s, ".target") {
				case "poweroff", "reboot", "halt", "kexec", "shutdown", "rescue", "emergency":
					c.refuse(RulePower, match.String())
					return
				}
			}
		case "stop", "disable", "mask", "kill":
			for _, unit := range ops[1:] {
				if firewallUnit(unit.s) {
					c.refuse(RuleFirewall, match.String())
					return
				}
			}
		}
	case "loginctl":
		if ops := operands(args); len(ops) > 0 {
			switch ops[0].s {
			case "poweroff", "reboot", "halt", "kexec", "suspend", "hibernate", "soft-reboot":
				c.refuse(RulePower, match.String())
			}
		}
	case "kexec":
		for _, a := range options(args) {
			if a == "-e" || a == "--exec" || a == "-f" || a == "--force" {
				c.refuse(RulePower, match.String()) // boots the loaded kernel now
				return
			}
		}
	case "service":
		if ops := operands(args); len(ops) >= 2 && firewallUnit(ops[0].s) && ops[1].s == "stop" {
			c.refuse(RuleFirewall, match.String())
		}
	case "nft":
		joined := " " + strings.Join(ifsFields(joinWords(args)), " ") + " " // nft 'flush ruleset' is one word
		for _, verb := range []string{" flush ruleset ", " flush table ", " flush chain ", " delete table ", " delete chain "} {
			if strings.Contains(joined, verb) {
				c.refuse(RuleFirewall, match.String())
				return
			}
		}
	case "ufw":
		if ops := operands(args); len(ops) > 0 && (ops[0].s == "disable" || ops[0].s == "reset") {
			c.refuse(RuleFirewall, match.String())
		}
	case "setenforce":
		if ops := operands(args); len(ops) > 0 && (ops[0].s == "0" || strings.EqualFold(ops[0].s, "permissive")) {
			c.refuse(RuleSELinux, match.String())
		}
	case "machinectl":
		if ops := operands(args); len(ops) > 0 && (ops[0].s == "shell" || ops[0].s == "login") {
			c.refuse(RulePrivilege, match.String())
		}
	case "chroot":
		c.refuse(RuleChroot, match.String())
	case "mount", "umount":
		c.refuse(RuleMount, match.String())
	default:
		switch {
		case strings.HasPrefix(name, "mkfs."):
			c.formatter(name, args, match)
			return
		case strings.HasPrefix(name, "iptables") || strings.HasPrefix(name, "ip6tables"):
			for _, a := range args {
				if a.s == "-F" || a.s == "--flush" || strings.HasPrefix(a.s, "--flush=") {
					c.refuse(RuleFirewall, match.String())
					return
				}
			}
			return
		case kind&kindPrivilege != 0:
			if name == "systemd-run" && slices.Contains(options(args), "--user") {
				break // the caller's own service manager: as the same user; the table judges what it runs
			}
			c.refuse(RulePrivilege, match.String())
			return
		}
	}
}

// inlineCode reports whether a command hands awk a program that runs
// commands (in strict mode a refusal: no static check reads another
// language); the other interpreters' inline code is found by the table of
// programs (code:LANG). Running a named script file is not inline code.
func inlineCode(name string, args []word) bool {
	if name == "awk" || name == "gawk" || name == "mawk" || name == "nawk" {
		program, ok := awkProgram(args)
		return !ok && slices.ContainsFunc(args, func(w word) bool { return w.dynamic }) || awkRuns.MatchString(program)
	}
	return false
}

// options returns the option words before "--".
func options(args []word) []string {
	var out []string
	for _, a := range args {
		if a.s == "--" {
			break
		}
		if strings.HasPrefix(a.s, "-") && len(a.s) > 1 && !a.dynamic {
			out = append(out, a.s)
		}
	}
	return out
}

// operands returns the words that are not options (all words after "--").
func operands(args []word) []word {
	var out []word
	dashdash := false
	for _, a := range args {
		switch {
		case dashdash || a.dynamic:
			out = append(out, a)
		case a.s == "--":
			dashdash = true
		case strings.HasPrefix(a.s, "-") && len(a.s) > 1:
		default:
			out = append(out, a)
		}
	}
	return out
}

// shortFlag reports whether a is a cluster of short options (-rf) that holds f.
func shortFlag(a string, f byte) bool {
	return len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.IndexByte(a[1:], f) >= 0
}

func firewallUnit(unit string) bool {
	unit = strings.TrimSuffix(unit, ".service")
	return unit == "firewalld" || unit == "ufw" || unit == "iptables" || unit == "ip6tables" || unit == "nftables"
}

// systemDirs are the top-level directories whose recursive deletion wrecks a system.
// /tmp and /workspace are the sandbox's scratch space and are not among them.
var systemDirs = map[string]bool{
	"/bin": true, "/boot": true, "/dev": true, "/etc": true, "/home": true, "/lib": true, "/lib32": true,
	"/lib64": true, "/libx32": true, "/opt": true, "/proc": true, "/root": true, "/run": true, "/sbin": true,
	"/srv": true, "/sys": true, "/usr": true, "/var": true,
}

// anyRootPath reports whether a target is a root (isRootPath), a relative one
// read from the working directory the script moved to (cd /; rm -rf *).
func (c *checker) anyRootPath(ws []word) bool {
	for _, w := range ws {
		if !w.dynamic && !strings.HasPrefix(w.s, "/") && !strings.HasPrefix(w.s, "~") && (c.cwd != "" || strings.HasPrefix(w.s, "..")) {
			w.s = c.dir() + "/" + w.s // rm -rf .. climbs from the working directory
		}
		if isRootPath(w) {
			return true
		}
	}
	return false
}

// unknownRootTarget reports whether a target only known at run time could
// be /: its literal part, with every unknown part empty, is / ("$x"/*,
// ${!n}/..); in strict mode also when that is a top-level system directory
// ("$x/usr") or the target is all unknown ("$(cat target)"), but for a
// function's unbound arguments.
func (c *checker) unknownRootTarget(ws []word) bool {
	for _, w := range ws {
		if !w.dynamic || mentionsHome(w.s) {
			continue // $HOME is modelled: isRootPath reads it
		}
		lit := literalRemainder(w.s)
		switch {
		case lit == "":
			if c.strict() && !c.unboundPositional(w) && !c.inBody {
				return true
			}
		case strings.HasPrefix(lit, "/") && isRootPath(word{s: lit}):
			// Standard mode refuses the target that reaches / itself
			// ("$x"/*, ${!n}/..); strict also one that reaches a system
			// directory ("$x/usr", which is $DESTDIR/usr as often).
			if c.strict() || rootItself(lit) {
				return true
			}
		}
	}
	return false
}

// rootItself reports whether the path p is / (with any trailing "/", "/*"
// or "/.*", and any "..").
func rootItself(p string) bool {
	for {
		t := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(p, "/*"), "/.*"), "/")
		if t == p {
			break
		}
		p = t
	}
	return p == "" || cleanPath(p) == "/"
}

// literalRemainder is the source text of a dynamic word with its
// expansions ($x, ${...}, $(...), backquotes) and quotes taken out: what the
// word is when every unknown part is empty.
func literalRemainder(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch == '"' || ch == '\'':
			continue
		case ch == '`':
			if j := strings.IndexByte(s[i+1:], '`'); j >= 0 {
				i += j + 1
			}
		case ch == '$' && i+1 < len(s) && (s[i+1] == '(' || s[i+1] == '{'):
			open, close := s[i+1], byte(')')
			if open == '{' {
				close = '}'
			}
			depth := 0
			j := i + 1
			for ; j < len(s); j++ {
				if s[j] == open {
					depth++
				} else if s[j] == close {
					depth--
					if depth == 0 {
						break
					}
				}
			}
			i = j
		case ch == '$':
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9' || j == i+1 && strings.IndexByte("@*#?$!-", s[j]) >= 0) {
				j++
				if j == i+2 && strings.IndexByte("@*#?$!-0123456789", s[j-1]) >= 0 {
					break
				}
			}
			i = j - 1
		default:
			b.WriteByte(ch)
		}
	}
	return b.String()
}

// homeSpelling matches the ways of writing the home directory: $HOME,
// ${HOME}, ${HOME:?msg}, ${HOME:-x}.
var homeSpelling = regexp.MustCompile(`\$\{HOME(?:[:]?[-=?+][^}]*)?\}|\$HOME\b`)

// mentionsHome reports whether s may hold a homeSpelling: every match starts
// with $HOME or ${HOME, and most words have neither, so the regexp is skipped.
func mentionsHome(s string) bool {
	return strings.Contains(s, "$HOME") || strings.Contains(s, "${HOME")
}

// homeToTilde writes every spelling of the home directory in s as ~.
func homeToTilde(s string) string {
	if !mentionsHome(s) {
		return s
	}
	return homeSpelling.ReplaceAllString(s, "~")
}

// isRootPath reports whether a target is /, a home directory or above, or a
// top-level system directory, with any trailing "/", "/*" or "/.*", however it
// is spelt: ~root, ~/.., ${HOME:?}, //etc, /proc/self/root/usr.
func isRootPath(w word) bool {
	s := strings.ReplaceAll(w.s, `"`, "")
	s = homeToTilde(s)
	if w.dynamic && !strings.HasPrefix(s, "~") {
		// Only $HOME is known to be a root of something; other dynamic targets are
		// unknown, not root.
		return false
	}
	for {
		t := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(s, "/*"), "/.*"), "/")
		if t == s {
			break
		}
		s = t
	}
	if s == "" || s == "~" {
		return true
	}
	if strings.HasPrefix(s, "~") {
		// ~user is that user's home (root's is /root); ~/.. climbs out of one.
		user, rest, _ := strings.Cut(s[1:], "/")
		home := "/home/" + user
		switch user {
		case "":
			home = "/home/user"
		case "root":
			home = "/root"
		}
		s = home + "/" + rest
		if p := cleanPath(s); p == home || p == "/home" {
			return true
		}
	}
	if !strings.HasPrefix(s, "/") {
		return false
	}
	s = systemPath(s)
	if s == "/" || systemDirs[s] {
		return true
	}
	// A glob in the first component (/e*, /?tc, /.[!.]*) may name a system directory.
	first := strings.SplitN(s[1:], "/", 2)[0]
	return w.glob && strings.ContainsAny(first, "*?[") && !strings.Contains(s[1:], "/")
}

// systemPathAgain is systemPath(p) of a p systemPath returned: p is clean
// already, so only a path still under /proc/ can change
// (/proc/self/root/proc/self/root/dev/sda loses one /proc/self/root a time).
func systemPathAgain(p string) string {
	if strings.HasPrefix(p, "/proc/") {
		return systemPath(p)
	}
	return p
}

// systemPath is p as the kernel resolves it: cleaned, and with a
// /proc/PID/root prefix (the root again) taken away.
func systemPath(p string) string {
	p = cleanPath(p)
	if rest, ok := strings.CutPrefix(p, "/proc/"); ok {
		pid, after, _ := strings.Cut(rest, "/")
		if pid == "self" || pid == "thread-self" || isDigits(pid) {
			if r, ok := strings.CutPrefix(after, "root"); ok && (r == "" || r[0] == '/') {
				return cleanPath("/" + r)
			}
		}
	}
	return p
}

// longOpt reports whether a is full or an abbreviation of it that GNU's
// option parser takes (at least min bytes, "--" included).
func longOpt(a, full string, min int) bool {
	if key, _, ok := strings.Cut(a, "="); ok {
		a = key
	}
	return len(a) >= min && strings.HasPrefix(full, a)
}

// listsOnly reports whether a partitioning program's options or verb only
// read the partition table: its listings, dumps and checks.
func listsOnly(name string, args []word) bool {
	for _, a := range options(args) {
		switch strings.SplitN(a, "=", 2)[0] {
		case "-l", "--list", "-s", "--show-size", "-d", "--dump", "-J", "--json", "-V", "--verify", "-g", "--show-geometry",
			"-F", "--list-free", "--help", "-h", "--version", "-v", "-p", "--print":
			return name != "blkdiscard" && name != "parted" || a == "-l" || a == "--list" || a == "--help" || a == "-h"
		}
	}
	if name == "parted" {
		ops := operands(args)
		return len(ops) == 2 && ops[1].s == "print"
	}
	return false
}

// formatter is the rule of the programs that make a filesystem, swap or an
// empty disk: Windows' formatters name no /dev; the others are refused only
// when aimed at a device.
func (c *checker) formatter(name string, args []word, match *commandText) {
	p := lookupProgram(name)
	if p == nil {
		p = lookupProgram("mkfs")
	}
	if name == "diskpart" || name == "format" || formatsDeviceAs(p, args) {
		c.refuse(RuleMkfs, match.String())
	}
}

// formatsDevice reports whether a formatter's arguments aim it at a device (or
// at a target only known at run time): --help, --version or a dry run (-n) write
// nothing, and a regular file (a disk image) is harmless.
func formatsDevice(args []word) bool {
	return formatsDeviceAs(lookupProgram("mkfs"), args)
}

// formatsDeviceAs is formatsDevice with the options of the program p, so
// that an option's value is not taken for an option or an operand
// (mkfs.ext4 -L -n /dev/sda1: -n is the label).
func formatsDeviceAs(p *program, args []word) bool {
	var operands []word
	dashdash := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		if dashdash || a.dynamic || len(a.s) < 2 || a.s[0] != '-' {
			operands = append(operands, a)
			continue
		}
		if a.s == "--" {
			dashdash = true
			continue
		}
		if o, _, _, next := p.optionOf(a.s); o != nil && o.takes {
			if next {
				i++
			}
			continue
		}
		if dryRunFlag(a.s) {
			return false
		}
	}
	for _, a := range operands {
		if a.dynamic || strings.HasPrefix(systemPath(a.s), "/dev/") {
			return true
		}
	}
	return false
}

// dryRunFlag reports whether a formatter's option word asks for help, its
// version or a dry run (-n), which write nothing.
func dryRunFlag(a string) bool {
	switch a {
	case "--help", "-h", "-V", "--version", "-n", "-N", "--dry-run", "--noact":
		return true
	}
	return false
}

// destroyingVerbs are the subcommands of nvme and cryptsetup that wipe a device.
var destroyingVerbs = map[string]bool{"format": true, "sanitize": true, "luksFormat": true, "erase": true, "luksErase": true, "reencrypt": true}

var blockDevice = regexp.MustCompile(`^/dev/((sd|hd|vd|xvd|nvme|mmcblk|dm-|md|loop|sr|nbd|rbd|zram|ram|fd|mtd|ubi|bcache|zd|drbd|rsxx|nullb|pmem)[^/]*|(mapper|disk|block)/.+|root|mem|kmem|port)$`)

// devDirs are the directories under /dev that hold no block devices; any other
// /dev/NAME/NAME is taken for an LVM volume (/dev/VG/LV).
var devDirs = map[string]bool{
	"pts": true, "shm": true, "mqueue": true, "fd": true, "net": true, "snd": true, "input": true, "dri": true,
	"bus": true, "char": true, "cpu": true, "hugepages": true, "usb": true, "v4l": true, "serial": true, "vfio": true,
}

// isBlockDevice reports whether path names a block device or raw memory, however
// it is spelt (//dev/sda, /./dev/sda, /proc/self/root/dev/sda).
func isBlockDevice(path string) bool {
	return isSystemBlockDevice(systemPath(path))
}

// isSystemBlockDevice is isBlockDevice of a path systemPath returned.
func isSystemBlockDevice(p string) bool {
	rest, ok := strings.CutPrefix(p, "/dev/")
	if !ok {
		return false
	}
	if blockDevice.MatchString(p) {
		return true
	}
	dir, _, nested := strings.Cut(rest, "/")
	return nested && !devDirs[dir]
}
