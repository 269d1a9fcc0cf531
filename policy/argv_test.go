package policy

// Group 7: CheckArgv judges an argv executed directly, without a shell: its
// arguments are literal words (no quotes, no $( ), no globbing); only an argv that
// runs a shell (sh -c STR) or a wrapper brings further commands into play.

import "testing"

func av(argv []string, want string, opts ...func(*tcase)) argvCase {
	c := argvCase{argv: argv, tcase: tcase{want: want}}
	for _, o := range opts {
		o(&c.tcase)
	}
	return c
}

func inMode(m Mode) func(*tcase) { return func(c *tcase) { c.mode = m } }

func withCfg(f func(*Config)) func(*tcase) { return func(c *tcase) { c.cfg = f } }

func withMatch(m string) func(*tcase) { return func(c *tcase) { c.match = m } }

var argvCases = []argvCase{
	av([]string{"rm", "-rf", "/"}, "rm-root", withMatch("rm -rf /")),
	av([]string{"/bin/rm", "-rf", "/"}, "rm-root"),
	av([]string{"rm", "-r", "-f", "/etc"}, "rm-root"),
	av([]string{"rm", "/", "-rf"}, "rm-root"),
	av([]string{"sh", "-c", "rm -rf /"}, "rm-root", withMatch("rm -rf /")),
	av([]string{"bash", "-c", "sudo id"}, "privilege-escalation"),
	av([]string{"/bin/sh", "-c", "echo ok; reboot"}, "power"),
	av([]string{"sh", "-c", "r''m -rf /"}, "rm-root", func(c *tcase) { c.note = "the -c script is shell: its quotes are removed" }),
	av([]string{"env", "rm", "-rf", "/"}, "rm-root"),
	av([]string{"env", "-i", "FOO=1", "sudo", "id"}, "privilege-escalation"),
	av([]string{"nice", "-n", "5", "reboot"}, "power"),
	av([]string{"timeout", "5", "sh", "-c", "rm -rf /"}, "rm-root"),
	av([]string{"xargs", "rm", "-rf", "/"}, "rm-root"),
	av([]string{"sudo", "id"}, "privilege-escalation"),
	av([]string{"find", "/", "-delete"}, "find-delete-root"),
	av([]string{"dd", "if=/dev/zero", "of=/dev/sda"}, "block-device-write"),
	av([]string{"mkfs.ext4", "/dev/sda1"}, "mkfs"),
	av([]string{"chmod", "-R", "777", "/"}, "chmod-root"),
	av([]string{"iptables", "-F"}, "firewall-disable"),
	av([]string{"setenforce", "0"}, "selinux-disable"),
	av([]string{"mount", "/dev/sdb1", "/mnt"}, "mount"),
	av([]string{"chroot", "/mnt"}, "chroot"),
	av([]string{"eval", "rm -rf /"}, "rm-root", func(c *tcase) {
		c.note = "ambiguous: eval is a builtin, but an argv naming it is judged as eval; safer reading"
	}),
	// literal arguments: no shell, nothing else runs
	av([]string{"echo", "rm -rf /"}, allow),
	av([]string{"echo", "$(sudo id)"}, allow),
	av([]string{"echo", "`reboot`"}, allow),
	av([]string{"printf", "%s\n", "sudo reboot"}, allow),
	av([]string{"grep", "-r", "rm -rf /", "."}, allow),
	av([]string{"git", "commit", "-m", "sudo reboot; rm -rf /"}, allow),
	av([]string{"python3", "-c", "print('rm -rf /')"}, allow),
	av([]string{"ls", "-la"}, allow),
	av([]string{"ls", "a; sudo id"}, allow, func(c *tcase) { c.note = "a file name with a semicolon" }),
	av([]string{"rm", "-rf", "/tmp/x"}, allow),
	av([]string{"rm", "-rf", "./build"}, allow),
	av([]string{"cat", "x | sh"}, allow),
	av([]string{"touch", "rm -rf /"}, allow),
	av([]string{"sh", "-c", "echo hi"}, allow),
	av([]string{"dd", "if=/dev/sda", "of=disk.img"}, allow),
	av([]string{"echo", "x", ">", "/dev/sda"}, allow, func(c *tcase) { c.note = "\">\" is a literal argument, not a redirect" }),
	av([]string{"rm", "-rf", "{/,x}"}, allow, func(c *tcase) { c.note = "no brace expansion without a shell" }),
	av([]string{}, allow, func(c *tcase) { c.note = "empty argv: nothing runs" }),
	av([]string{""}, allow),
	av([]string{"trap", "rm -rf /", "EXIT"}, "rm-root"),
	av([]string{"env", "-S", "rm -rf /"}, "rm-root"),
	av([]string{"busybox", "sh", "-c", "reboot"}, "power"),
	av([]string{"sh", "-c", "$(curl -fsSL x)"}, "eval-fetched", func(c *tcase) {
		c.alt = []string{"fetch-pipe-shell"}
		c.note = "ambiguous: the inner shell runs fetched words as a command; safer reading"
	}),
	// modes and operator layers
	av([]string{"rm", "-rf", "/"}, allow, inMode(ModeOff)),
	av([]string{"sudo", "id"}, allow, inMode(ModeOff)),
	av([]string{"rm", "-rf", "/"}, "rm-root", inMode(ModeStrict)),
	av([]string{"echo", "$x"}, allow, inMode(ModeStrict), func(c *tcase) { c.note = "literal $x: not dynamic without a shell" }),
	av([]string{"sh", "-c", "$x"}, "dynamic-command", inMode(ModeStrict)),
	av([]string{"sh", "-c", "echo \"unterminated"}, "unparseable", inMode(ModeStrict)),
	av([]string{"git", "push", "origin"}, "deny-program", withCfg(denyGitPush)),
	av([]string{"/usr/bin/git", "push"}, "deny-program", withCfg(denyGitPush)),
	av([]string{"git", "status"}, allow, withCfg(denyGitPush)),
	av([]string{"git", "push", "origin"}, "deny-pattern", withCfg(denyPatterns(`^git push`))),
	av([]string{"ls", "-la"}, allow, withCfg(gitLsGo)),
	av([]string{"cat", "x"}, "not-allowlisted", withCfg(gitLsGo)),
	av([]string{"git", "log", "--oneline", "-3"}, allow, withCfg(gitLsGo)),
	av([]string{"cat", "/etc/passwd"}, "path-outside-workspace", withCfg(ws)),
	av([]string{"cat", "../../etc/passwd"}, "path-traversal", withCfg(ws)),
	av([]string{"cat", "/workspace/a"}, allow, withCfg(ws)),
	av([]string{"sudo", "id"}, allow, withCfg(allowSudoID)),
}

func TestCheckArgv(t *testing.T) {
	t.Parallel()
	runArgvCases(t, "argv", argvCases)
}
