package policy

import (
	"regexp"
	"strings"
)

// builtinRules applies the built-in deny rules to one unwrapped command. extra is
// true when the command gets arguments only known at run time (xargs).
func (c *checker) builtinRules(name string, argv []word, extra bool, ctx cmdContext, match *commandText) {
	args := argv[1:]
	switch {
	case c.bombs[name]:
		c.refuse(RuleForkBomb, match.String())
	case name == "rm":
		recursive, noPreserve := false, false
		for _, a := range options(args) {
			recursive = recursive || a == "--recursive" || shortFlag(a, 'r') || shortFlag(a, 'R')
			noPreserve = noPreserve || a == "--no-preserve-root"
		}
		switch {
		case noPreserve:
			c.refuse(RuleRmRoot, match.String())
		case recursive && anyRootPath(operands(args)):
			c.refuse(RuleRmRoot, match.String())
		case recursive && extra && c.strict():
			c.refuse(RuleDynamicCommand, match.String()) // xargs rm -r: targets only known at run time
		}
	case name == "find":
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
		if !anyRootPath(starts) {
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
	case name == "mkfs" || strings.HasPrefix(name, "mkfs.") || name == "mke2fs" || name == "mkswap" ||
		name == "wipefs" || name == "diskpart" || name == "format":
		c.refuse(RuleMkfs, match.String())
	case name == "dd":
		for _, a := range args {
			if dev, ok := strings.CutPrefix(a.s, "of="); ok && isBlockDevice(dev) {
				c.refuse(RuleBlockDevice, match.String())
				return
			}
		}
	case name == "tee" || name == "shred" || name == "fdisk" || name == "sfdisk" || name == "parted" ||
		name == "sgdisk" || name == "gdisk" || name == "blkdiscard" || name == "cfdisk":
		for _, a := range operands(args) {
			if isBlockDevice(a.s) {
				c.refuse(RuleBlockDevice, match.String())
				return
			}
		}
	case name == "cp" || name == "mv" || name == "install" || name == "rsync":
		if ops := operands(args); len(ops) >= 2 && isBlockDevice(ops[len(ops)-1].s) {
			c.refuse(RuleBlockDevice, match.String())
		}
	case name == "chmod" || name == "chown" || name == "chgrp":
		recursive := false
		for _, a := range options(args) {
			recursive = recursive || a == "--recursive" || shortFlag(a, 'R')
		}
		if recursive && anyRootPath(operands(args)) {
			c.refuse(RuleChmodRoot, match.String())
		}
	case name == "shutdown" || name == "reboot" || name == "halt" || name == "poweroff":
		c.refuse(RulePower, match.String())
	case name == "init" || name == "telinit":
		if ops := operands(args); len(ops) > 0 && (ops[0].s == "0" || ops[0].s == "6") {
			c.refuse(RulePower, match.String())
		}
	case name == "systemctl":
		ops := operands(args)
		if len(ops) == 0 {
			return
		}
		switch ops[0].s {
		case "poweroff", "reboot", "halt", "kexec", "suspend", "hibernate":
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
	case name == "service":
		if ops := operands(args); len(ops) >= 2 && firewallUnit(ops[0].s) && ops[1].s == "stop" {
			c.refuse(RuleFirewall, match.String())
		}
	case strings.HasPrefix(name, "iptables") || strings.HasPrefix(name, "ip6tables"):
		for _, a := range args {
			if a.s == "-F" || a.s == "--flush" || strings.HasPrefix(a.s, "--flush=") {
				c.refuse(RuleFirewall, match.String())
				return
			}
		}
	case name == "nft":
		joined := " " + joinWords(args) + " "
		if strings.Contains(joined, " flush ruleset ") || strings.Contains(joined, " flush table ") {
			c.refuse(RuleFirewall, match.String())
		}
	case name == "ufw":
		if ops := operands(args); len(ops) > 0 && ops[0].s == "disable" {
			c.refuse(RuleFirewall, match.String())
		}
	case name == "setenforce":
		if ops := operands(args); len(ops) > 0 && (ops[0].s == "0" || strings.EqualFold(ops[0].s, "permissive")) {
			c.refuse(RuleSELinux, match.String())
		}
	case name == "sudo" || name == "su" || name == "doas" || name == "pkexec" || name == "run0":
		c.refuse(RulePrivilege, match.String())
	case name == "chroot":
		c.refuse(RuleChroot, match.String())
	case name == "mount" || name == "umount":
		c.refuse(RuleMount, match.String())
	}
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

func anyRootPath(ws []word) bool {
	for _, w := range ws {
		if isRootPath(w) {
			return true
		}
	}
	return false
}

// homeSpellings reduce the ways of writing the home directory to "~".
var homeSpellings = strings.NewReplacer("${HOME}", "~", "$HOME", "~", `"`, "")

// isRootPath reports whether a target is /, home, or a top-level system directory,
// with any trailing "/", "/*" or "/.*".
func isRootPath(w word) bool {
	s := w.s
	if w.dynamic {
		// Only $HOME is known to be a root of something; other dynamic targets are
		// unknown, not root.
		s = homeSpellings.Replace(s)
		if !strings.HasPrefix(s, "~") {
			return false
		}
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
	if !strings.HasPrefix(s, "/") {
		return false
	}
	s = cleanPath(s)
	if s == "/" || systemDirs[s] {
		return true
	}
	// A glob in the first component (/e*, /?tc) may name a system directory.
	first := strings.SplitN(s[1:], "/", 2)[0]
	return w.glob && strings.ContainsAny(first, "*?[") && !strings.Contains(s[1:], "/")
}

var blockDevice = regexp.MustCompile(`^/dev/((sd|hd|vd|xvd|nvme|mmcblk|dm-|md|loop|sr|nbd|rbd|zram)[^/]*|(mapper|disk)/.+|mem|kmem|port)$`)

// isBlockDevice reports whether path names a block device or raw memory.
func isBlockDevice(path string) bool {
	return strings.HasPrefix(path, "/dev/") && blockDevice.MatchString(cleanPath(path))
}
