package policy

// Table tests for the policy contract (docs/policy.md).
//
// Files:
//   policy_test.go        helpers; group 1 (seed patterns), group 6 (mode off), group 8 (New errors)
//   bypass_test.go        group 2 (bypass families)
//   falsepositive_test.go group 3 (false-positive guards)
//   strict_test.go        group 4 (strict mode, and the same inputs in standard)
//   operator_test.go      group 5 (operator layers)
//   argv_test.go          group 7 (CheckArgv)
//
// Every case is {command, mode (default standard), config tweaks, want allowed or
// want rule id}. A case marked "ambiguous" documents a reading of the contract that
// the contract does not spell out; the safer reading is asserted.

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// allow is the want of a case that must be allowed.
const allow = ""

// tcase is one table row.
type tcase struct {
	cmd   string        // the command given to Check
	mode  Mode          // "" = standard
	cfg   func(*Config) // optional operator tweaks (Mode is set from mode first)
	want  string        // allow, or the rule id that must refuse
	alt   []string      // further acceptable rule ids (contract leaves the choice open)
	match string        // if set, Decision.Match must equal it exactly
	note  string        // why the case exists / which contract line (shown on failure)
}

// effectiveMode is the mode a Decision must carry.
func (c tcase) effectiveMode() Mode {
	if c.mode == "" {
		return ModeStandard
	}
	return c.mode
}

func (c tcase) config() Config {
	cfg := Config{Mode: c.mode}
	if c.cfg != nil {
		c.cfg(&cfg)
	}
	return cfg
}

// wantString renders the expectation for failure messages.
func (c tcase) wantString() string {
	if c.want == allow {
		return "allowed"
	}
	s := fmt.Sprintf("refused by rule %q", c.want)
	if len(c.alt) > 0 {
		s += fmt.Sprintf(" (or %q)", c.alt)
	}
	if c.match != "" {
		s += fmt.Sprintf(" with match %q", c.match)
	}
	if c.note != "" {
		s += " [" + c.note + "]"
	}
	return s
}

var knownRules = func() map[string]bool {
	m := map[string]bool{}
	for _, r := range Rules() {
		m[r.ID] = true
	}
	return m
}()

// subtestName keeps names readable: technique, then the command.
func subtestName(technique string, c tcase) string {
	name := c.cmd
	if len(name) > 80 {
		name = name[:80] + "..."
	}
	if c.mode != "" && c.mode != ModeStandard {
		name = "[" + string(c.mode) + "] " + name
	}
	return technique + ": " + name
}

// runCases runs a named table of Check cases as parallel subtests.
func runCases(t *testing.T, technique string, cases []tcase) {
	t.Helper()
	for _, c := range cases {
		t.Run(subtestName(technique, c), func(t *testing.T) {
			t.Parallel()
			p, err := New(c.config())
			if err != nil {
				t.Fatalf("New(%+v) for Check(%q): unexpected error %v", c.config(), c.cmd, err)
			}
			d, panicked := safeCheck(func() Decision { return p.Check(c.cmd) })
			if panicked != nil {
				t.Fatalf("Check(%q) panicked: %v; want %s", c.cmd, panicked, c.wantString())
			}
			assertDecision(t, fmt.Sprintf("Check(%q)", c.cmd), d, c)
		})
	}
}

// runArgvCases runs CheckArgv cases; argv is given as the cmd split on \x00.
type argvCase struct {
	argv []string
	tcase
}

func runArgvCases(t *testing.T, technique string, cases []argvCase) {
	t.Helper()
	for _, c := range cases {
		name := fmt.Sprintf("%s: %q", technique, c.argv)
		if c.mode != "" && c.mode != ModeStandard {
			name = fmt.Sprintf("%s: [%s] %q", technique, c.mode, c.argv)
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := New(c.config())
			if err != nil {
				t.Fatalf("New(%+v) for CheckArgv(%q): unexpected error %v", c.config(), c.argv, err)
			}
			argv := slices.Clone(c.argv)
			d, panicked := safeCheck(func() Decision { return p.CheckArgv(argv) })
			if panicked != nil {
				t.Fatalf("CheckArgv(%q) panicked: %v; want %s", c.argv, panicked, c.wantString())
			}
			if !slices.Equal(argv, c.argv) {
				t.Errorf("CheckArgv(%q) modified its argument to %q", c.argv, argv)
			}
			assertDecision(t, fmt.Sprintf("CheckArgv(%q)", c.argv), d, c.tcase)
		})
	}
}

func safeCheck(f func() Decision) (d Decision, panicked any) {
	defer func() { panicked = recover() }()
	return f(), nil
}

func assertDecision(t *testing.T, call string, d Decision, c tcase) {
	t.Helper()
	got := fmt.Sprintf("%s = allowed=%v rule=%q (reason %q, match %q, mode %q)", call, d.Allowed, d.Rule, d.Reason, d.Match, d.Mode)
	if d.Mode != c.effectiveMode() {
		t.Errorf("%s: Decision.Mode = %q, want %q", got, d.Mode, c.effectiveMode())
	}
	if c.want == allow {
		if !d.Allowed {
			t.Errorf("%s, want allowed", got)
		} else if d.Rule != "" {
			t.Errorf("%s: allowed but Rule is set, want Rule empty", got)
		}
		return
	}
	if d.Allowed {
		t.Errorf("%s, want %s", got, c.wantString())
		return
	}
	if d.Rule != c.want && !slices.Contains(c.alt, d.Rule) {
		t.Errorf("%s, want %s", got, c.wantString())
	}
	if !knownRules[d.Rule] {
		t.Errorf("%s: rule %q is not one of Rules()", got, d.Rule)
	}
	if strings.TrimSpace(d.Reason) == "" {
		t.Errorf("%s: refusal with an empty Reason", got)
	}
	if c.match != "" && d.Match != c.match {
		t.Errorf("%s: Match = %q, want %q", got, d.Match, c.match)
	}
}

// withStrictCopies returns cases plus, for every refused case without operator
// config, the same command in strict mode with the same expectation (built-in rules
// apply in standard and strict). strictAlt adds, per wanted rule, acceptable
// strict-only rule ids.
func withStrictCopies(cases []tcase, strictAlt map[string][]string) []tcase {
	out := slices.Clone(cases)
	for _, c := range cases {
		if c.want == allow || c.cfg != nil || c.mode != "" {
			continue
		}
		s := c
		s.mode = ModeStrict
		s.alt = append(slices.Clone(c.alt), strictAlt[c.want]...)
		out = append(out, s)
	}
	return out
}

// ---------------------------------------------------------------------------
// Group 1: the built-in deny rules, one table per technique.

// topLevelDirs is the contract's list of top-level system directories.
var topLevelDirs = []string{"/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32",
	"/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/usr", "/var"}

var seedRmRoot = []tcase{
	{cmd: `rm -rf /`, want: "rm-root", match: "rm -rf /"},
	{cmd: `rm -rf /*`, want: "rm-root"},
	{cmd: `rm -r /`, want: "rm-root", match: "rm -r /"},
	{cmd: `rm -R /`, want: "rm-root"},
	{cmd: `rm --recursive /`, want: "rm-root"},
	{cmd: `rm -rfv /`, want: "rm-root"},
	{cmd: `rm -rf //`, want: "rm-root"},
	{cmd: `rm -rf /.`, want: "rm-root"},
	{cmd: `rm -rf /./`, want: "rm-root"},
	{cmd: `rm -rf /..`, want: "rm-root"},
	{cmd: `rm -rf /.*`, want: "rm-root"},
	{cmd: `rm -rf ~`, want: "rm-root"},
	{cmd: `rm -rf ~/`, want: "rm-root"},
	{cmd: `rm -rf ~/*`, want: "rm-root"},
	{cmd: `rm -rf $HOME`, want: "rm-root"},
	{cmd: `rm -rf ${HOME}`, want: "rm-root"},
	{cmd: `rm -rf $HOME/*`, want: "rm-root"},
	{cmd: `rm -rf "$HOME"`, want: "rm-root", note: "ambiguous: quoted $HOME is still $HOME; safer reading"},
	{cmd: `rm -rf -- /`, want: "rm-root", note: "-- ends options, / is a target"},
	{cmd: `rm -rf /tmp/x /`, want: "rm-root", note: "one root target among several"},
	{cmd: `rm --no-preserve-root -rf /`, want: "rm-root"},
	{cmd: `rm --no-preserve-root /tmp/x`, want: "rm-root", note: "--no-preserve-root with any target"},
	{cmd: `rm -rf /usr/`, want: "rm-root"},
	{cmd: `rm -rf / # comment`, want: "rm-root"},
	{cmd: `rm -rf /e""tc`, want: "rm-root"},
	{cmd: `rm -rf /etc/../`, want: "rm-root", note: "ambiguous: cleans to /; safer reading"},
	{cmd: `rm -rf ///`, want: "rm-root", note: "ambiguous: cleans to /; safer reading"},
	{cmd: `rm -rf /./etc`, want: "rm-root", note: "ambiguous: cleans to /etc; safer reading"},
	{cmd: `rm -rf /usr/bin/..`, want: "rm-root", note: "ambiguous: cleans to /usr; safer reading"},
	{cmd: `rm -rf /etc//`, want: "rm-root", note: "ambiguous: /etc with two slashes; safer reading"},
	{cmd: `rm -rf $HOME/`, want: "rm-root", note: "ambiguous: like ~/; safer reading"},
	{cmd: `rm -rf "${HOME}/"`, want: "rm-root"},
	{cmd: `rm -rf /et?`, want: "rm-root", note: "ambiguous: glob matching /etc; safer reading"},
	// allowed neighbours
	{cmd: `rm -rf /tmp`, want: allow},
	{cmd: `rm -rf /workspace`, want: allow},
	{cmd: `rm -rf /mnt/x`, want: allow},
	{cmd: `rm -rf /usr/local/x`, want: allow},
	{cmd: `rm -rf ./build`, want: allow},
	{cmd: `rm -rf build/`, want: allow},
	{cmd: `rm -rf /tmp/x`, want: allow},
	{cmd: `rm /etc/passwd`, want: allow, note: "non-recursive"},
	{cmd: `rm -f /etc/passwd`, want: allow, note: "non-recursive"},
	{cmd: `rm -- -rf /`, want: allow, note: "after --, -rf is a file name: non-recursive"},
	{cmd: `rm -rf /etc/nginx/sites-enabled/default`, want: allow},
}

// seedRmSystemDirs: rm -rf DIR, DIR/, DIR/* for every top-level system directory.
func seedRmSystemDirs() []tcase {
	var out []tcase
	for _, d := range topLevelDirs {
		for _, suffix := range []string{"", "/", "/*"} {
			out = append(out, tcase{cmd: "rm -rf " + d + suffix, want: "rm-root"})
		}
	}
	return out
}

var seedFindDelete = []tcase{
	{cmd: `find / -delete`, want: "find-delete-root"},
	{cmd: `find / -name '*.log' -delete`, want: "find-delete-root"},
	{cmd: `find /etc -exec rm -rf {} +`, want: "find-delete-root"},
	{cmd: `find /usr -type f -execdir rm {} \;`, want: "find-delete-root"},
	{cmd: `find / -ok rm {} \;`, want: "find-delete-root"},
	{cmd: `find /var/ -delete`, want: "find-delete-root"},
	{cmd: `find / -xdev -delete`, want: "find-delete-root"},
	{cmd: `find / -type d -exec rm -r {} +`, want: "find-delete-root"},
	{cmd: `find / -mindepth 1 -delete`, want: "find-delete-root"},
	{cmd: `find /* -delete`, want: "find-delete-root"},
	{cmd: `find / -exec /bin/rm {} \;`, want: "find-delete-root"},
	{cmd: `find /etc -exec r''m {} +`, want: "find-delete-root"},
	{cmd: `find -L / -delete`, want: "find-delete-root", note: "options (-H -L -P) come before the start path"},
	{cmd: `find -H /etc -delete`, want: "find-delete-root", note: "options (-H -L -P) come before the start path"},
	{cmd: `find -P /usr -exec rm -rf {} +`, want: "find-delete-root", note: "options (-H -L -P) come before the start path"},
	{cmd: `find . -name '*.o' -delete`, want: allow},
	{cmd: `find / -name passwd`, want: allow, note: "no delete"},
	{cmd: `find /tmp -name '*.log' -delete`, want: allow},
	{cmd: `find . -type f -exec rm {} +`, want: allow},
}

var seedMkfs = []tcase{
	{cmd: `mkfs /dev/sda1`, want: "mkfs"},
	{cmd: `mkfs -t ext4 /dev/sdb1`, want: "mkfs"},
	{cmd: `mkfs.ext4 /dev/sda1`, want: "mkfs"},
	{cmd: `mkfs.xfs -f /dev/nvme0n1`, want: "mkfs"},
	// A disk image is a regular file: formatting it is harmless (docs/policy.md).
	{cmd: `mkfs.vfat image.img`, want: allow},
	{cmd: `mkfs.btrfs disk.img`, want: allow},
	{cmd: `mke2fs /dev/sdb1`, want: "mkfs"},
	{cmd: `mkswap /dev/sdb2`, want: "mkfs"},
	{cmd: `wipefs -a /dev/sda`, want: "mkfs"},
	{cmd: `diskpart`, want: "mkfs"},
	{cmd: `format C:`, want: "mkfs"},
	{cmd: `/sbin/mkfs.ext4 /dev/sda1`, want: "mkfs"},
}

var seedBlockDevice = []tcase{
	{cmd: `dd if=/dev/zero of=/dev/sda`, want: "block-device-write"},
	{cmd: `dd if=/dev/zero of=/dev/sda bs=1M`, want: "block-device-write"},
	{cmd: `dd of=/dev/nvme0n1 if=image.iso`, want: "block-device-write"},
	{cmd: `dd if=x.img of=/dev/mmcblk0 status=progress`, want: "block-device-write"},
	{cmd: `dd if=/dev/urandom of=/dev/mapper/root`, want: "block-device-write"},
	{cmd: `dd if=/dev/zero of=/dev/disk/by-id/x`, want: "block-device-write"},
	{cmd: `dd if=/dev/zero of=/dev/mem`, want: "block-device-write"},
	{cmd: `> /dev/sda`, want: "block-device-write"},
	{cmd: `echo x > /dev/sda`, want: "block-device-write"},
	{cmd: `cat image > /dev/sda`, want: "block-device-write"},
	{cmd: `echo x >> /dev/sdb1`, want: "block-device-write"},
	{cmd: `echo x >| /dev/hda`, want: "block-device-write"},
	{cmd: `cat 3<>/dev/vda`, want: "block-device-write"},
	{cmd: `ls &> /dev/xvda`, want: "block-device-write"},
	{cmd: `ls &>> /dev/nvme0n1p1`, want: "block-device-write"},
	{cmd: `ls 2> /dev/sda`, want: "block-device-write"},
	{cmd: `: > /dev/dm-0`, want: "block-device-write"},
	{cmd: `echo > /dev/md0`, want: "block-device-write"},
	{cmd: `echo > /dev/loop0`, want: "block-device-write"},
	{cmd: `echo > /dev/mapper/vg-root`, want: "block-device-write"},
	{cmd: `echo > /dev/disk/by-uuid/abc`, want: "block-device-write"},
	{cmd: `echo > /dev/kmem`, want: "block-device-write"},
	{cmd: `echo > /dev/port`, want: "block-device-write"},
	{cmd: `echo > /dev/mmcblk0p1`, want: "block-device-write"},
	{cmd: `echo x | tee /dev/sda`, want: "block-device-write"},
	{cmd: `tee -a /dev/sdb < x`, want: "block-device-write"},
	{cmd: `cp disk.img /dev/sda`, want: "block-device-write"},
	{cmd: `mv x /dev/sdb`, want: "block-device-write"},
	{cmd: `shred -n 1 /dev/sda`, want: "block-device-write"},
	{cmd: `fdisk /dev/sda`, want: "block-device-write"},
	{cmd: `sfdisk /dev/sda < layout`, want: "block-device-write"},
	{cmd: `parted /dev/sda mklabel gpt`, want: "block-device-write"},
	{cmd: `sgdisk -Z /dev/nvme0n1`, want: "block-device-write"},
	{cmd: `blkdiscard /dev/nvme0n1`, want: "block-device-write"},
	{cmd: `dd of=/dev/sda`, want: "block-device-write"},
	{cmd: `dd if=x of="/dev/sda"`, want: "block-device-write"},
	{cmd: `echo x 1>/dev/sda`, want: "block-device-write"},
	{cmd: `exec 3>/dev/sda`, want: "block-device-write"},
	{cmd: `tee /dev/null /dev/sda`, want: "block-device-write"},
	{cmd: `x=/dev/sda; echo > $x`, want: "block-device-write"},
	{cmd: `echo > /dev/sd"a"`, want: "block-device-write"},
	{cmd: `sh -c 'echo x > /dev/sda'`, want: "block-device-write"},
	{cmd: `ls >& /dev/sda`, want: "block-device-write", note: "ambiguous: >& FILE is bash's older spelling of &> FILE; safer reading"},
	// reading and harmless devices
	{cmd: `dd if=/dev/sda of=disk.img`, want: allow},
	{cmd: `cat /dev/sda | head`, want: allow},
	{cmd: `echo x > /dev/null`, want: allow},
	{cmd: `ls 2>/dev/null`, want: allow},
	{cmd: `echo err >/dev/stderr`, want: allow},
	{cmd: `ls > /dev/stdout`, want: allow},
	{cmd: `dd if=/dev/zero of=./disk.img bs=1M count=10`, want: allow},
	{cmd: `lsblk /dev/sda`, want: allow},
	{cmd: `blkid /dev/sda1`, want: allow},
	{cmd: `echo /dev/sda`, want: allow},
}

var seedChmodRoot = []tcase{
	{cmd: `chmod -R 777 /`, want: "chmod-root", match: "chmod -R 777 /"},
	{cmd: `chmod -R 777 /etc`, want: "chmod-root"},
	{cmd: `chmod -R 777 /*`, want: "chmod-root"},
	{cmd: `chmod --recursive 777 /`, want: "chmod-root"},
	{cmd: `chmod -Rv 777 /`, want: "chmod-root"},
	{cmd: `chmod -vR 0777 /usr/`, want: "chmod-root"},
	{cmd: `chmod -R a+rwx ~`, want: "chmod-root"},
	{cmd: `chown -R me /`, want: "chmod-root"},
	{cmd: `chown -R root:root /var`, want: "chmod-root"},
	{cmd: `chown --recursive nobody /home`, want: "chmod-root"},
	{cmd: `chgrp -R staff /`, want: "chmod-root"},
	{cmd: `chmod -cR 777 /`, want: "chmod-root"},
	{cmd: `chown -hR x /`, want: "chmod-root"},
	{cmd: `chmod 777 -R /`, want: "chmod-root", note: "ambiguous: GNU chmod takes -R after the mode; safer reading"},
	{cmd: `chmod -R 777 /`, mode: ModeStrict, want: "chmod-root"},
	{cmd: `chmod -R 755 ./dist`, want: allow},
	{cmd: `chmod 777 /tmp/x`, want: allow},
	{cmd: `chmod +x run.sh`, want: allow},
	{cmd: `chown -R me:me ./src`, want: allow},
	{cmd: `chmod -R 700 /tmp/build`, want: allow},
	{cmd: `chgrp staff file`, want: allow},
}

var seedForkBomb = []tcase{
	{cmd: `:(){ :|:& };:`, want: "fork-bomb"},
	{cmd: `:(){ :|: & };:`, want: "fork-bomb"},
	{cmd: "bomb(){ bomb|bomb& }; bomb", want: "fork-bomb"},
	{cmd: "f(){ f & f; }; f", want: "fork-bomb"},
	{cmd: "f(){ f; f; }; f", want: "fork-bomb", note: "calls itself twice"},
	{cmd: "x(){ x|x; }; x", want: "fork-bomb", note: "calls itself in a pipeline"},
	{cmd: "function f { f|f & }; f", want: "fork-bomb"},
	{cmd: "function g() { g & g & }; g", want: "fork-bomb"},
	{cmd: "forkit() {\n  forkit | forkit &\n}\nforkit", want: "fork-bomb"},
	{cmd: `sh -c ':(){ :|:& };:'`, want: "fork-bomb"},
	{cmd: `bash -c 'b(){ b|b& }; b'`, want: "fork-bomb"},
	{cmd: `: () { : | : & } ; :`, want: "fork-bomb"},
	{cmd: "f(){ f & }; f", want: "fork-bomb", note: "calls itself in the background"},
	{cmd: "f(){ (f &); f; }; f", want: "fork-bomb"},
	{cmd: "f(){ echo hi; }; f", want: allow},
	{cmd: "f(){ g | g; }; g(){ echo; }; f", want: allow, note: "calls another function, not itself"},
}

var seedPower = []tcase{
	{cmd: `shutdown -h now`, want: "power"},
	{cmd: `shutdown now`, want: "power"},
	{cmd: `shutdown -r +5`, want: "power"},
	{cmd: `reboot`, want: "power", match: "reboot"},
	{cmd: `reboot -f`, want: "power"},
	{cmd: `halt`, want: "power"},
	{cmd: `halt -p`, want: "power"},
	{cmd: `poweroff`, want: "power"},
	{cmd: `init 0`, want: "power"},
	{cmd: `init 6`, want: "power"},
	{cmd: `telinit 0`, want: "power"},
	{cmd: `telinit 6`, want: "power"},
	{cmd: `systemctl poweroff`, want: "power"},
	{cmd: `systemctl reboot`, want: "power"},
	{cmd: `systemctl halt`, want: "power"},
	{cmd: `systemctl kexec`, want: "power"},
	{cmd: `/sbin/shutdown -h now`, want: "power"},
	{cmd: `/sbin/init 0`, want: "power"},
	{cmd: `busybox poweroff`, want: "power"},
	{cmd: `systemctl --no-block reboot`, want: "power"},
	{cmd: `systemctl reboot --force`, want: "power"},
	{cmd: `echo b > /proc/sysrq-trigger`, want: "power", note: "ambiguous: sysrq b reboots at once, beyond the contract's list; safer reading"},
	{cmd: `systemctl isolate reboot.target`, want: "power", note: "ambiguous: beyond the contract's list; safer reading"},
	{cmd: `systemctl start poweroff.target`, want: "power", note: "ambiguous: beyond the contract's list; safer reading"},
	{cmd: `sleep 5 && reboot`, want: "power", match: "reboot"},
	{cmd: `git init`, want: allow},
	{cmd: `init 3`, want: allow, note: "init with other args is allowed"},
	{cmd: `systemctl status nginx`, want: allow},
	{cmd: `systemctl restart nginx`, want: allow},
}

var seedFirewall = []tcase{
	{cmd: `iptables -F`, want: "firewall-disable"},
	{cmd: `iptables --flush`, want: "firewall-disable"},
	{cmd: `iptables -t nat -F`, want: "firewall-disable"},
	{cmd: `iptables -F INPUT`, want: "firewall-disable"},
	{cmd: `ip6tables -F`, want: "firewall-disable"},
	{cmd: `iptables-legacy -F`, want: "firewall-disable"},
	{cmd: `iptables-nft --flush`, want: "firewall-disable"},
	{cmd: `nft flush ruleset`, want: "firewall-disable"},
	{cmd: `nft 'flush ruleset'`, want: "firewall-disable"},
	{cmd: `ufw disable`, want: "firewall-disable"},
	{cmd: `systemctl stop firewalld`, want: "firewall-disable"},
	{cmd: `systemctl disable firewalld`, want: "firewall-disable"},
	{cmd: `systemctl mask ufw`, want: "firewall-disable"},
	{cmd: `systemctl stop iptables`, want: "firewall-disable"},
	{cmd: `systemctl disable nftables`, want: "firewall-disable"},
	{cmd: `service firewalld stop`, want: "firewall-disable"},
	{cmd: `service ufw stop`, want: "firewall-disable"},
	{cmd: `service iptables stop`, want: "firewall-disable"},
	{cmd: `iptables -w -F`, want: "firewall-disable"},
	{cmd: `iptables --table nat --flush`, want: "firewall-disable"},
	{cmd: `ufw --force disable`, want: "firewall-disable"},
	{cmd: `systemctl stop firewalld.service`, want: "firewall-disable", note: "ambiguous: unit suffix; safer reading"},
	{cmd: `systemctl disable --now firewalld`, want: "firewall-disable", note: "ambiguous: option between verb and unit; safer reading"},
	{cmd: `systemctl -q stop ufw`, want: "firewall-disable", note: "ambiguous: option before the verb; safer reading"},
	{cmd: `iptables -L`, want: allow},
	{cmd: `iptables -L -n -v`, want: allow},
	{cmd: `ufw status`, want: allow},
	{cmd: `nft list ruleset`, want: allow},
	{cmd: `systemctl status firewalld`, want: allow},
	{cmd: `systemctl start firewalld`, want: allow},
}

var seedSELinux = []tcase{
	{cmd: `setenforce 0`, want: "selinux-disable"},
	{cmd: `setenforce Permissive`, want: "selinux-disable"},
	{cmd: `setenforce permissive`, want: "selinux-disable"},
	{cmd: `setenforce PERMISSIVE`, want: "selinux-disable"},
	{cmd: `echo 0 > /sys/fs/selinux/enforce`, want: "selinux-disable", note: "ambiguous: same effect as setenforce 0, beyond the contract's list; safer reading"},
	{cmd: `getenforce`, want: allow},
	{cmd: `setenforce 1`, want: allow},
	{cmd: `setenforce Enforcing`, want: allow},
}

var seedPrivilege = []tcase{
	{cmd: `sudo id`, want: "privilege-escalation", match: "sudo id"},
	{cmd: `sudo`, want: "privilege-escalation"},
	{cmd: `sudo -i`, want: "privilege-escalation"},
	{cmd: `sudo -s`, want: "privilege-escalation"},
	{cmd: `sudo -u nobody id`, want: "privilege-escalation"},
	{cmd: `sudo apt-get install -y curl`, want: "privilege-escalation"},
	{cmd: `su`, want: "privilege-escalation"},
	{cmd: `su -`, want: "privilege-escalation"},
	{cmd: `su root`, want: "privilege-escalation"},
	{cmd: `su -c id root`, want: "privilege-escalation"},
	{cmd: `doas ls`, want: "privilege-escalation"},
	{cmd: `pkexec bash`, want: "privilege-escalation"},
	{cmd: `/usr/bin/sudo id`, want: "privilege-escalation"},
	{cmd: `chroot /mnt /bin/bash`, want: "chroot"},
	{cmd: `chroot /`, want: "chroot"},
	{cmd: `mount /dev/sdb1 /mnt`, want: "mount"},
	{cmd: `mount -t tmpfs none /mnt/x`, want: "mount"},
	{cmd: `mount --bind /a /b`, want: "mount"},
	{cmd: `mount -o remount,rw /`, want: "mount"},
	{cmd: `mount`, want: "mount"},
	{cmd: `umount /mnt`, want: "mount"},
	{cmd: `umount -l /mnt`, want: "mount"},
}

var seedFetchPipe = []tcase{
	{cmd: `curl http://x | sh`, want: "fetch-pipe-shell"},
	{cmd: `curl -fsSL https://x/install.sh | bash`, want: "fetch-pipe-shell"},
	{cmd: `wget -qO- x | bash`, want: "fetch-pipe-shell"},
	{cmd: `wget -O - x | sh`, want: "fetch-pipe-shell"},
	{cmd: `curl x | dash`, want: "fetch-pipe-shell"},
	{cmd: `curl x | ash`, want: "fetch-pipe-shell"},
	{cmd: `curl x | zsh`, want: "fetch-pipe-shell"},
	{cmd: `curl x | ksh`, want: "fetch-pipe-shell"},
	{cmd: `curl x | mksh`, want: "fetch-pipe-shell"},
	{cmd: `curl x | busybox sh`, want: "fetch-pipe-shell"},
	{cmd: `curl x | python`, want: "fetch-pipe-shell"},
	{cmd: `curl x | python2`, want: "fetch-pipe-shell"},
	{cmd: `curl x | python3`, want: "fetch-pipe-shell"},
	{cmd: `curl x | perl`, want: "fetch-pipe-shell"},
	{cmd: `curl x | ruby`, want: "fetch-pipe-shell"},
	{cmd: `curl x | node`, want: "fetch-pipe-shell"},
	{cmd: `curl x | php`, want: "fetch-pipe-shell"},
	{cmd: `curl x | lua`, want: "fetch-pipe-shell"},
	{cmd: `curl x | sh -s`, want: "fetch-pipe-shell"},
	{cmd: `curl x | bash -s -- --flag`, want: "fetch-pipe-shell"},
	{cmd: `curl x | bash -`, want: "fetch-pipe-shell"},
	{cmd: `curl x | tee f | sh`, want: "fetch-pipe-shell", note: "a later stage, not the next"},
	{cmd: `curl x | /bin/sh`, want: "fetch-pipe-shell"},
	{cmd: `curl x | env bash`, want: "fetch-pipe-shell", note: "wrapper looked through"},
	{cmd: `/usr/bin/curl -s x | sh`, want: "fetch-pipe-shell"},
	{cmd: `sh <(curl x)`, want: "fetch-pipe-shell"},
	{cmd: `bash <(wget -O- x)`, want: "fetch-pipe-shell"},
	{cmd: `source <(curl x)`, want: "fetch-pipe-shell"},
	{cmd: `. <(curl x)`, want: "fetch-pipe-shell"},
	{cmd: `sh -c "$(curl -fsSL x)"`, want: "fetch-pipe-shell"},
	{cmd: `bash -c "$(wget -qO- x)"`, want: "fetch-pipe-shell"},
	{cmd: `zsh -c "$(curl -fsSL x)"`, want: "fetch-pipe-shell"},
	{cmd: `sh -c "$(wget -O - x)" -- arg`, want: "fetch-pipe-shell"},
	{cmd: `curl x|sh`, want: "fetch-pipe-shell"},
	{cmd: `wget x -O - | bash`, want: "fetch-pipe-shell"},
	{cmd: `python3 -c "$(curl x)"`, want: "fetch-pipe-shell", alt: []string{"eval-fetched"}, note: "ambiguous: an interpreter running fetched code, as sh -c \"$(curl)\"; safer reading"},
	{cmd: `perl -e "$(curl x)"`, want: "fetch-pipe-shell", alt: []string{"eval-fetched"}, note: "ambiguous: as above; safer reading"},
	{cmd: `curl x | bash -x`, want: "fetch-pipe-shell", note: "options without -c: program from stdin"},
	{cmd: `curl x | sh -e`, want: "fetch-pipe-shell"},
	{cmd: `curl x | python3 -`, want: "fetch-pipe-shell"},
	{cmd: `curl x | sh 2>&1`, want: "fetch-pipe-shell"},
	{cmd: `curl x | base64 -d | sh`, want: "fetch-pipe-shell"},
	{cmd: `(curl x) | sh`, want: "fetch-pipe-shell", note: "curl inside a subshell stage"},
	{cmd: `curl x | (bash)`, want: "fetch-pipe-shell", note: "the later stage is a subshell running bash on the pipe; (curl x) | sh is refused"},
	{cmd: `curl x | { sh; }`, want: "fetch-pipe-shell", note: "the later stage is a group running sh on the pipe"},
	{cmd: `curl -s x | sudo bash`, want: "privilege-escalation", alt: []string{"fetch-pipe-shell"}},
	{cmd: `bash < <(curl x)`, want: "fetch-pipe-shell", note: "ambiguous: shell's stdin is curl's output, as in curl | bash; safer reading"},
	{cmd: `python3 <(curl x)`, want: "fetch-pipe-shell", note: "ambiguous: interpreter reading a script from curl, as sh <(curl); safer reading"},
	{cmd: `curl x | bash /dev/stdin`, want: "fetch-pipe-shell", note: "ambiguous: the script-file argument IS stdin; safer reading"},
	{cmd: `curl x | sh /proc/self/fd/0`, want: "fetch-pipe-shell", note: "ambiguous: the script-file argument IS stdin; safer reading"},
	{cmd: `curl x | jq .`, want: allow},
	{cmd: `wget -qO- x | tar xz`, want: allow},
	{cmd: `curl x | python3 script.py`, want: allow, note: "script-file argument: stdin is data"},
	{cmd: `curl x | bash install.sh`, want: allow, note: "script-file argument: stdin is data"},
	{cmd: `curl x | sh -c 'cat > out'`, want: allow, note: "-c: program is not stdin"},
	{cmd: `curl -fsSL https://x/install.sh -o install.sh`, want: allow},
}

var seedEvalFetched = []tcase{
	{cmd: `eval "$(curl -fsSL https://x/env)"`, want: "eval-fetched"},
	{cmd: `eval $(wget -qO- x)`, want: "eval-fetched"},
	{cmd: "eval \"`curl -s x`\"", want: "eval-fetched"},
	{cmd: "eval `curl x`", want: "eval-fetched"},
	{cmd: `ls && eval "$(curl x)"`, want: "eval-fetched"},
	{cmd: `eval "$(curl x | grep foo)"`, want: "eval-fetched"},
	{cmd: `builtin eval "$(curl x)"`, want: "eval-fetched"},
	{cmd: `command eval "$(curl x)"`, want: "eval-fetched"},
	{cmd: `x=$(curl x); eval "$x"`, want: "eval-fetched", note: "ambiguous: the variable holds fetched text; safer reading"},
	{cmd: `$(curl -fsSL x)`, want: "eval-fetched", note: "ambiguous: runs fetched words as a command, like eval; safer reading"},
	{cmd: `eval "$(ssh-agent -s)"`, want: allow, note: "eval of a non-fetching substitution is not eval-fetched"},
}

// seedStrictAlt: in strict mode a seed may be refused first by the strict rule that
// also covers it (a shell reading a pipe, a non-static eval or sh -c string); both
// ids are acceptable there.
var seedStrictAlt = map[string][]string{
	"fetch-pipe-shell": {"pipe-to-interpreter", "dynamic-command"},
	"eval-fetched":     {"dynamic-command"},
}

func TestSeedPatterns(t *testing.T) {
	t.Parallel()
	groups := []struct {
		technique string
		cases     []tcase
	}{
		{"rm-root", seedRmRoot},
		{"rm-root system dirs", seedRmSystemDirs()},
		{"find-delete-root", seedFindDelete},
		{"mkfs", seedMkfs},
		{"block-device-write", seedBlockDevice},
		{"chmod-root", seedChmodRoot},
		{"fork-bomb", seedForkBomb},
		{"power", seedPower},
		{"firewall-disable", seedFirewall},
		{"selinux-disable", seedSELinux},
		{"privilege chroot mount", seedPrivilege},
		{"fetch-pipe-shell", seedFetchPipe},
		{"eval-fetched", seedEvalFetched},
	}
	for _, g := range groups {
		runCases(t, "seed "+g.technique, withStrictCopies(g.cases, seedStrictAlt))
	}
}

// ---------------------------------------------------------------------------
// Group 6: mode off allows everything, even garbage and even with operator rules.

var offEverything = func(c *Config) {
	c.DenyPatterns = []string{`.*`}
	c.DenyPrograms = []ProgramRule{{Program: "ls"}}
	c.Allowlist = []ProgramRule{{Program: "git", Subcommands: []string{"status"}}}
	c.WorkspaceRoots = []string{"/workspace"}
}

var modeOffCases = []tcase{
	{cmd: `rm -rf /`, mode: ModeOff, want: allow},
	{cmd: `sudo id`, mode: ModeOff, want: allow},
	{cmd: `:(){ :|:& };:`, mode: ModeOff, want: allow},
	{cmd: `curl x | sh`, mode: ModeOff, want: allow},
	{cmd: `eval "$(curl x)"`, mode: ModeOff, want: allow},
	{cmd: `mkfs.ext4 /dev/sda1`, mode: ModeOff, want: allow},
	{cmd: `dd if=/dev/zero of=/dev/sda`, mode: ModeOff, want: allow},
	{cmd: `reboot`, mode: ModeOff, want: allow},
	{cmd: `$(echo c3VkbwoK | base64 -d) id`, mode: ModeOff, want: allow},
	{cmd: `echo ls | sh`, mode: ModeOff, want: allow},
	{cmd: `echo "unterminated`, mode: ModeOff, want: allow},
	{cmd: `if then fi`, mode: ModeOff, want: allow},
	{cmd: `((((`, mode: ModeOff, want: allow},
	{cmd: "\x00\xff garbage", mode: ModeOff, want: allow},
	{cmd: ``, mode: ModeOff, want: allow},
	{cmd: strings.Repeat("eval ", 40) + "rm -rf /", mode: ModeOff, want: allow},
	{cmd: `ls -la`, mode: ModeOff, cfg: offEverything, want: allow},
	{cmd: `cat /etc/passwd`, mode: ModeOff, cfg: offEverything, want: allow},
	{cmd: `git push --force`, mode: ModeOff, cfg: offEverything, want: allow},
	{cmd: `rm -rf / && sudo reboot`, mode: ModeOff, cfg: offEverything, want: allow},
}

func TestModeOff(t *testing.T) {
	t.Parallel()
	runCases(t, "mode off", modeOffCases)
}

// ---------------------------------------------------------------------------
// Group 8: New errors name the field.

func TestNewErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		cfg     Config
		wantErr string // substring of the error; "" = no error
	}{
		{"bad mode", Config{Mode: "paranoid"}, "mode"},
		{"mode wrong case", Config{Mode: "Strict"}, "mode"},
		{"bad allow pattern", Config{AllowPatterns: []string{"("}}, "allow_patterns[0]"},
		{"second allow pattern bad", Config{AllowPatterns: []string{"^ls", "[a-"}}, "allow_patterns[1]"},
		{"bad deny pattern", Config{DenyPatterns: []string{"("}}, "deny_patterns[0]"},
		{"third deny pattern bad", Config{DenyPatterns: []string{"a", "b", "*x"}}, "deny_patterns[2]"},
		{"bad deny program args", Config{DenyPrograms: []ProgramRule{{Program: "git", Args: "(push"}}}, "deny_programs[0].args"},
		{"second deny program args bad", Config{DenyPrograms: []ProgramRule{{Program: "git"}, {Program: "curl", Args: "x{2,1}"}}}, "deny_programs[1].args"},
		{"empty deny program", Config{DenyPrograms: []ProgramRule{{Program: ""}}}, "deny_programs[0].program"},
		{"empty allowlist program", Config{Allowlist: []ProgramRule{{Program: ""}}}, "allowlist[0]"},
		{"empty allowlist subcommand", Config{Allowlist: []ProgramRule{{Program: "git", Subcommands: []string{"  "}}}}, "allowlist[0]"},
		{"relative workspace root", Config{WorkspaceRoots: []string{"workspace"}}, "workspace_roots[0]"},
		{"second workspace root relative", Config{WorkspaceRoots: []string{"/workspace", "./data"}}, "workspace_roots[1]"},
		{"empty config", Config{}, ""},
		{"off", Config{Mode: ModeOff}, ""},
		{"standard", Config{Mode: ModeStandard}, ""},
		{"strict", Config{Mode: ModeStrict}, ""},
		{"full valid config", Config{
			Mode:           ModeStrict,
			AllowPatterns:  []string{`^git push origin main$`},
			DenyPatterns:   []string{`^curl .*evil`},
			DenyPrograms:   []ProgramRule{{Program: "/usr/bin/git", Args: "^push"}, {Program: "nc"}},
			Allowlist:      []ProgramRule{{Program: "git", Subcommands: []string{"status", "log --oneline"}}, {Program: "ls"}},
			WorkspaceRoots: []string{"/workspace/", "/data"},
		}, ""},
	}
	for _, c := range cases {
		t.Run("New: "+c.name, func(t *testing.T) {
			t.Parallel()
			p, err := New(c.cfg)
			if c.wantErr == "" {
				if err != nil || p == nil {
					t.Fatalf("New(%+v) = %v, %v; want a policy and no error", c.cfg, p, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("New(%+v) = no error, want an error containing %q", c.cfg, c.wantErr)
			}
			if !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("New(%+v) error = %q, want it to contain %q", c.cfg, err, c.wantErr)
			}
			if p != nil {
				t.Errorf("New(%+v) returned a policy with an error", c.cfg)
			}
		})
	}
}

func TestDefaultModeIsStandard(t *testing.T) {
	t.Parallel()
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode() != ModeStandard {
		t.Errorf("New(Config{}).Mode() = %q, want standard", p.Mode())
	}
	if Default().Mode() != ModeStandard {
		t.Errorf("Default().Mode() = %q, want standard", Default().Mode())
	}
	d, panicked := safeCheck(func() Decision { return Default().Check("rm -rf /") })
	if panicked != nil {
		t.Fatalf("Default().Check panicked: %v", panicked)
	}
	if d.Allowed || d.Rule != RuleRmRoot.ID || d.Mode != ModeStandard {
		t.Errorf("Default().Check(%q) = %+v, want refused by rm-root in standard", "rm -rf /", d)
	}
}

func TestRulesAreUniqueAndDocumented(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, r := range Rules() {
		if r.ID == "" || r.Reason == "" {
			t.Errorf("rule %+v: empty id or reason", r)
		}
		if seen[r.ID] {
			t.Errorf("rule id %q listed twice", r.ID)
		}
		seen[r.ID] = true
	}
}

func TestDecisionJSONHasBlocked(t *testing.T) {
	t.Parallel()
	for _, d := range []Decision{
		{Allowed: true, Mode: ModeStandard},
		{Allowed: false, Rule: "rm-root", Reason: "x", Match: "rm -rf /", Mode: ModeStrict},
	} {
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if m["blocked"] != !d.Allowed || m["allowed"] != d.Allowed || m["mode"] != string(d.Mode) {
			t.Errorf("json.Marshal(%+v) = %s, want blocked=%v allowed=%v mode=%q", d, b, !d.Allowed, d.Allowed, d.Mode)
		}
	}
}

// TestCheckIsPureAndConcurrent: one Policy, many goroutines, same answers.
func TestCheckIsPureAndConcurrent(t *testing.T) {
	t.Parallel()
	p, err := New(Config{DenyPrograms: []ProgramRule{{Program: "git", Args: "^push"}}})
	if err != nil {
		t.Fatal(err)
	}
	inputs := map[string]string{"rm -rf /": "rm-root", "ls -la": "", "git push": "deny-program", "sudo id": "privilege-escalation"}
	done := make(chan string)
	for i := 0; i < 8; i++ {
		go func() {
			var msg string
			defer func() {
				if r := recover(); r != nil {
					msg = fmt.Sprintf("panic: %v", r)
				}
				done <- msg
			}()
			for j := 0; j < 50; j++ {
				for in, want := range inputs {
					if d := p.Check(in); d.Rule != want || d.Allowed != (want == "") {
						msg = fmt.Sprintf("Check(%q) = allowed=%v rule=%q, want rule %q", in, d.Allowed, d.Rule, want)
						return
					}
				}
			}
		}()
	}
	for i := 0; i < 8; i++ {
		if msg := <-done; msg != "" {
			t.Error(msg)
		}
	}
}

// TestInputBound: a command over MaxCommandBytes is refused at once, naming the
// limit, without being parsed; one just under it is judged.
func TestInputBound(t *testing.T) {
	p := Default()
	huge := strings.Repeat("echo x; ", 30<<20/8)
	// Parsed, it would be too-complex; too-large says it was refused unread.
	if d := p.Check(huge); d.Allowed || d.Rule != "too-large" || !strings.Contains(d.Reason, "1048576") {
		t.Fatalf("30 MB command: %+v", d)
	}
	if d := p.CheckArgv([]string{"echo", strings.Repeat("x", MaxCommandBytes)}); d.Rule != "too-large" {
		t.Fatalf("huge argv: %+v", d)
	}
	if d := p.Check("echo " + strings.Repeat("x", 100<<10)); !d.Allowed {
		t.Fatalf("a 100 KiB echo: %+v", d)
	}
}
