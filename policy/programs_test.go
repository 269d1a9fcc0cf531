package policy

import (
	"sort"
	"strings"
	"testing"
)

// codeSamples are, by language, code that runs the command CMD, in the form
// the language's reader finds (code.go).
var codeSamples = map[string]string{
	"python":      `import os; os.system("CMD")`,
	"perl":        `system("CMD")`,
	"ruby":        `system("CMD")`,
	"js":          `require("child_process").execSync("CMD")`,
	"php":         `system("CMD");`,
	"lua":         `os.execute("CMD")`,
	"r":           `system("CMD")`,
	"julia":       "run(`CMD`)",
	"applescript": `do shell script "CMD"`,
	"tcl":         `exec CMD`,
	"octave":      `system("CMD")`,
	"haskell":     `System.Process.callCommand "CMD"`,
	"lisp":        `(ext:run-shell-command "CMD")`,
	"slang":       `system("CMD")`,
	"puppet":      `exec { "CMD": }`,
	"rpm":         `%{lua:os.execute("CMD")}`,
	"make":        "x:\n\tCMD",
	"tex":         `\immediate\write18{CMD}`,
	"fzf":         `enter:execute(CMD)`,
	"gdb":         `!CMD`,
	"lldb":        `platform shell CMD`,
	"sqlite":      `.shell CMD`,
	"mysql":       `\! CMD`,
	"psql":        `\! CMD`,
	"vim":         `:!CMD`,
	"bang":        `!CMD`,
	"dc":          `!CMD`,
}

// payloads are the commands every code-taking word of the table is tried
// with, and the rule that must refuse each.
var payloads = []struct{ cmd, rule string }{{"reboot", "power"}, {"rm -rf /", "rm-root"}}

// codeValue is a value of role r that runs cmd.
func codeValue(t *testing.T, r argRole, cmd string) (string, bool) {
	switch r.role {
	case roleCmd:
		return cmd, true
	case roleKV:
		return strings.ReplaceAll(r.keys[0], "*", "x") + "=" + cmd, true
	case rolePrefix:
		return r.keys[0] + cmd, true
	case roleCSV:
		return strings.ReplaceAll(cmd, " ", ","), true
	case roleCode:
		sample, ok := codeSamples[r.lang]
		if !ok {
			t.Errorf("no code sample of %s", r.lang)
		}
		return strings.ReplaceAll(sample, "CMD", cmd), ok
	}
	return "", false
}

// tableEntries are every entry of the table, subcommands with their full
// names, in order.
func tableEntries() []*program {
	var out []*program
	var add func(p *program)
	add = func(p *program) {
		out = append(out, p)
		keys := make([]string, 0, len(p.subs))
		for k := range p.subs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			add(p.subs[k])
		}
	}
	names := make([]string, 0, len(programs))
	for name := range programs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		add(programs[name])
	}
	return out
}

// fromTable builds, for every word of every entry that is code, a command
// that hands it each payload, and the same with a harmless command.
func fromTable(t *testing.T) (refused, harmless []tcase) {
	for _, p := range tableEntries() {
		if privilegeRunners[p.name] || p.name == "chroot" || strings.HasPrefix(p.name, "ld.so") {
			continue // refused for what they are
		}
		prog := p.name
		if prog == "ld.so" {
			continue
		}
		strictRule := func(r argRole, rule string) string {
			if r.role == roleCode && codeLangs[r.lang].general {
				return "inline-code"
			}
			return rule
		}
		try := func(r argRole, build func(v string) string, argvWords func(cmd string) string) {
			for _, pl := range payloads {
				cmd := ""
				if argvWords != nil {
					cmd = argvWords(pl.cmd)
				} else {
					v, ok := codeValue(t, r, pl.cmd)
					if !ok {
						return
					}
					cmd = build(shQuote(v))
				}
				refused = append(refused, tcase{cmd: cmd, want: pl.rule},
					tcase{cmd: cmd, mode: ModeStrict, want: strictRule(r, pl.rule)})
			}
			cmd := ""
			if argvWords != nil {
				cmd = argvWords("echo hi")
			} else if v, ok := codeValue(t, r, "echo hi"); ok {
				cmd = build(shQuote(v))
			}
			harmless = append(harmless, tcase{cmd: cmd, want: allow})
		}
		for ch, o := range p.short {
			if o == nil || o.arg.role == roleData || o.arg.role == roleWrite || o.arg.role == roleDir || o.arg.role == roleDev || o.arg.role == roleWPrefix {
				continue
			}
			opt := "-" + string(rune(ch))
			if o.arg.role == roleRest {
				try(o.arg, nil, func(cmd string) string { return prog + " " + opt + " " + cmd })
				continue
			}
			try(o.arg, func(v string) string { return prog + " " + opt + " " + v + " x" }, nil)
		}
		longs := make([]string, 0, len(p.long))
		for k := range p.long {
			longs = append(longs, k)
		}
		sort.Strings(longs)
		for _, opt := range longs {
			o := p.long[opt]
			switch o.arg.role {
			case roleData, roleWrite, roleDir, roleDev, roleWPrefix:
				continue
			case roleRest:
				try(o.arg, nil, func(cmd string) string { return prog + " " + opt + " " + cmd })
				continue
			}
			try(o.arg, func(v string) string { return prog + " " + opt + " " + v + " x" }, nil)
		}
		before := func(n int) string { // the data operands before the n-th
			return strings.Repeat("x ", n-1)
		}
		for i, r := range p.pos {
			switch r.role {
			case roleCmd, roleKV, rolePrefix, roleCSV, roleCode:
				n := i + 1
				try(r, func(v string) string { return prog + " " + before(n) + v }, nil)
			}
		}
		if p.restFrom > 0 {
			n := p.restFrom
			switch p.rest.role {
			case roleArgv, roleWords:
				if _, ok := wrappers[p.name]; ok && p.restFrom == 1 {
					// a wrapper: unwrap looks through it
				}
				try(p.rest, nil, func(cmd string) string { return prog + " " + before(n) + cmd })
			case roleCmd, roleKV, rolePrefix, roleCSV, roleCode:
				try(p.rest, func(v string) string { return prog + " " + before(n) + v }, nil)
			}
		}
		if p.cfgKeys != nil {
			key := strings.ReplaceAll(p.cfgKeys[0], "*", "x")
			try(argRole{role: roleCmd}, func(v string) string { return prog + " " + key + " " + v }, nil)
		}
	}
	return refused, harmless
}

func TestTableCodeWords(t *testing.T) {
	refused, harmless := fromTable(t)
	if len(refused) < 400 {
		t.Errorf("only %d cases from the table", len(refused))
	}
	runCases(t, "table", refused)
	runCases(t, "table harmless", harmless)
}

func TestTableSize(t *testing.T) {
	n := 0
	for range programs {
		n++
	}
	if n < 400 {
		t.Errorf("the table knows %d programs, want 400 or more", n)
	}
	for _, p := range tableEntries() {
		if strings.ContainsAny(p.name, "\t") {
			t.Errorf("%q: a tab in a name", p.name)
		}
	}
}

// TestTableRunners: the forms the issue named, and fresh members of the
// same families; each is refused in both modes, by the rule of what it runs.
func TestTableRunners(t *testing.T) {
	runCases(t, "runner", withStrictCopies([]tcase{
		{cmd: `cpulimit -f -- reboot`, want: "power"},
		{cmd: `cpulimit -l 50 -f rm -rf /`, want: "rm-root"},
		{cmd: `gdb -ex '!reboot'`, want: "power"},
		{cmd: `gdb -nx -ex 'shell rm -rf /' -ex quit`, want: "rm-root"},
		{cmd: `gdb -q --args reboot -f`, want: "power"},
		{cmd: `fzf --bind 'enter:execute(reboot)'`, want: "power"},
		{cmd: `git -c core.fsmonitor='rm -rf /' status`, want: "rm-root"},
		{cmd: `git -c alias.x='!reboot' x`, want: "power"},
		{cmd: `git config core.pager reboot`, want: "power"},
		{cmd: `git rebase -x 'rm -rf /' HEAD~3`, want: "rm-root"},
		{cmd: `git bisect run reboot`, want: "power"},
		{cmd: `git submodule foreach 'rm -rf /'`, want: "rm-root"},
		{cmd: `npx -c 'rm -rf /'`, want: "rm-root"},
		{cmd: `tar -I 'sh -c reboot' -cf x.tar .`, want: "power"},
		{cmd: `tar -cf /dev/null /dev/null --checkpoint=1 --checkpoint-action=exec=reboot`, want: "power"},
		{cmd: `ssh -o ProxyCommand='reboot' host`, want: "power"},
		{cmd: `ssh -o 'ProxyCommand reboot' host uptime`, want: "power"},
		{cmd: `rsync -e 'sh -c reboot' x y:`, want: "power"},
		{cmd: `dhclient -sf /sbin/reboot`, want: "power"},
		{cmd: `certbot renew --pre-hook 'reboot'`, want: "power"},
		{cmd: `sqlite3 /dev/null '.shell reboot'`, want: "power"},
		{cmd: `dc -e '!reboot'`, want: "power"},
		{cmd: `ex -c '!reboot'`, want: "power"},
		{cmd: `vim -c ':!rm -rf /'`, want: "rm-root"},
		{cmd: `gcc -wrapper /sbin/reboot,-x x.c`, want: "power"},
		{cmd: `apt-get -o APT::Update::Pre-Invoke::=reboot update`, want: "power"},
		{cmd: `valgrind reboot`, want: "power"},
		{cmd: `perf stat -- reboot`, want: "power"},
		{cmd: `hyperfine 'reboot'`, want: "power"},
		{cmd: `uv run reboot`, want: "power"},
		{cmd: `bundle exec reboot`, want: "power"},
		{cmd: `cabal exec -- reboot`, want: "power"},
		{cmd: `choom -n 0 reboot`, want: "power"},
		{cmd: `aa-exec -p x reboot`, want: "power"},
		{cmd: `sem reboot`, want: "power"},
		{cmd: `watch -x reboot`, want: "power"},
		{cmd: `split --filter=reboot /etc/hosts`, want: "power"},
		{cmd: `socat stdin exec:reboot`, want: "power"},
		{cmd: `nc -e /sbin/reboot host 1`, want: "power"},
		{cmd: `openvpn --up 'reboot'`, want: "power"},
		{cmd: `mysql -e '\! reboot'`, want: "power"},
		{cmd: `man -P reboot ls`, want: "power"},
		{cmd: `make --eval=$'x:\n\treboot'`, want: "power"},
		{cmd: `zip x.zip a -T -TT 'reboot #'`, want: "power"},
		{cmd: `timeout 7d reboot`, want: "power"},
		{cmd: `time -f "" reboot`, want: "power"},
		{cmd: `setlock - reboot`, want: "power"},
		{cmd: `distcc reboot`, want: "power"},
		{cmd: `genie -c reboot`, want: "power"},
		{cmd: `check_by_ssh -o "ProxyCommand reboot" -H localhost -C xx`, want: "power"},
		{cmd: `make -s --eval=$'x:\n\t-'"reboot"`, want: "power"},
		{cmd: `ed <<< '!reboot'`, want: "power"},
		{cmd: `echo '.shell rm -rf /' | sqlite3`, want: "rm-root"},
		{cmd: `psql <<EOF
\! reboot
EOF`, want: "power"},
	}, nil))
	runCases(t, "interpreter", []tcase{
		{cmd: `python3 -c 'import os; os.system("reboot")'`, want: "power"},
		{cmd: `python3 -c 'import subprocess; subprocess.run(["rm", "-rf", "/"])'`, want: "rm-root"},
		{cmd: `perl -e 'exec "reboot"'`, want: "power"},
		{cmd: `ruby -e 'system("rm -rf /")'`, want: "rm-root"},
		{cmd: `node -e 'require("child_process").execSync("reboot")'`, want: "power"},
		{cmd: `php -r 'system("reboot");'`, want: "power"},
		{cmd: `lua -e 'os.execute("reboot")'`, want: "power"},
		{cmd: "julia -e 'run(`reboot`)'", want: "power"},
		{cmd: `expect -c 'spawn reboot'`, want: "power"},
		{cmd: `emacs --eval '(shell-command "reboot")'`, want: "power"},
		{cmd: `python3 -c 'import os; os.system("reboot")'`, mode: ModeStrict, want: "inline-code"},
		{cmd: `expect -c 'spawn reboot'`, mode: ModeStrict, want: "inline-code"},
	})
	runCases(t, "reads only", withStrictCopies([]tcase{
		{cmd: `echo 'rm -rf /'`, want: allow},
		{cmd: `printf 'reboot\n'`, want: allow},
		{cmd: `grep -r reboot .`, want: allow},
		{cmd: `git commit -m 'rm -rf /'`, want: allow},
		{cmd: `git log --oneline`, want: allow},
		{cmd: `gdb -batch -ex bt ./a.out`, want: allow},
		{cmd: `fzf --preview 'cat {}'`, want: allow},
		{cmd: `tar -czf out.tgz src`, want: allow},
		{cmd: `npx eslint .`, want: allow},
		{cmd: `git -c user.name=x commit -m 'reboot'`, want: allow},
		{cmd: `ssh host uptime`, want: allow},
		{cmd: `cp build.log /dev/null`, want: allow},
		{cmd: `mv x /dev/stdout`, want: allow},
		{cmd: `apt-get -o Dpkg::Options::=--force-confnew install -y curl`, want: allow},
		{cmd: `ssh -o StrictHostKeyChecking=no host uptime`, want: allow},
		{cmd: `python3 -c 'print("rm -rf /")'`, want: allow},
		{cmd: `nmap --script=vuln -p 80 host`, want: allow},
		{cmd: `ed -s notes.txt <<< ',p'`, want: allow},
		{cmd: `time -p make`, want: allow},
	}, nil))
}

// TestExplainNamesTheEntry: a command judged because of the table's entry
// says so.
func TestExplainNamesTheEntry(t *testing.T) {
	d, steps := Default().Explain(`cpulimit -l 5 -f reboot`)
	if d.Allowed || len(steps) == 0 {
		t.Fatalf("%+v %+v", d, steps)
	}
	d, steps = Default().Explain(`git -c core.pager='rm -rf /' log`)
	last := steps[len(steps)-1]
	if d.Rule != "rm-root" || last.Via != "git -c: a command line" || last.Command != "rm -rf /" {
		t.Fatalf("%+v %+v", d, steps)
	}
}

// TestStrictUnknownPrograms: strict reads an argument of a program the
// table does not know as a command line when it parses as one; standard
// keeps it data.
func TestStrictUnknownPrograms(t *testing.T) {
	runCases(t, "unknown program", []tcase{
		{cmd: `unknowntool 'rm -rf /'`, mode: ModeStrict, want: "rm-root"},
		{cmd: `unknowntool --exec='reboot'`, mode: ModeStrict, want: "power"},
		{cmd: `./deploy.sh x 'sh -c reboot'`, mode: ModeStrict, want: "power"},
		{cmd: `unknowntool 'rm -rf /'`, want: allow},
		{cmd: `./deploy.sh '*.go' 'a|b' "it's"`, mode: ModeStrict, want: allow},
		{cmd: `unknowntool 'hello world' --name=x`, mode: ModeStrict, want: allow},
		{cmd: `grep 'rm -rf /' notes.txt`, mode: ModeStrict, want: allow},
		{cmd: `f(){ :; }; f 'rm -rf /'`, mode: ModeStrict, want: allow},
		{cmd: `virsh shutdown web1`, mode: ModeStrict, want: allow},
		{cmd: `vagrant halt && vagrant up`, mode: ModeStrict, want: allow},
		{cmd: `pm2 stop all`, mode: ModeStrict, want: allow},
		{cmd: `ansible all -i localhost, -a 'rm -rf /'`, want: "rm-root"},
	})
	_, steps := Explain(t, ModeStrict, `unknowntool 'rm -rf /'`)
	if last := steps[len(steps)-1]; !strings.Contains(last.Via, "not in the table") {
		t.Errorf("steps %+v: the refusal does not say the program is not in the table", steps)
	}
}

// Explain is Policy.Explain in mode.
func Explain(t *testing.T, mode Mode, cmd string) (Decision, []Step) {
	p, err := New(Config{Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	return p.Explain(cmd)
}

// TestDeveloperForms: what developers run stays allowed; the formatter's
// options are read with their values.
func TestDeveloperForms(t *testing.T) {
	runCases(t, "developer", withStrictCopies([]tcase{
		{cmd: `sfdisk -l /dev/sda`, want: allow},
		{cmd: `fdisk -l /dev/nvme0n1`, want: allow},
		{cmd: `parted /dev/sda print`, want: allow},
		{cmd: `systemd-run --user --scope make`, want: allow},
		{cmd: `mkfs.ext4 disk.img`, want: allow},
		{cmd: `mkfs.ext4 -n /dev/sda1`, want: allow},
		{cmd: `mkfs.xfs -N /dev/nvme0n1`, want: allow},
		{cmd: `[ -f go.mod ] && go test ./...`, want: allow},
		{cmd: `sfdisk /dev/sda < layout`, want: "block-device-write"},
		{cmd: `parted /dev/sda mklabel gpt`, want: "block-device-write"},
		{cmd: `systemd-run --scope make`, want: "privilege-escalation"},
		{cmd: `systemd-run --user rm -rf /`, want: "rm-root"},
		{cmd: `mkfs.ext4 -L -n /dev/sda1`, want: "mkfs"},
		{cmd: `mkfs.ext4 -L x -F /dev/sda1`, want: "mkfs"},
		{cmd: `mkfs.vfat -n BOOT /dev/sdb1`, want: "mkfs"},
		{cmd: `mkfs.vfat -F 32 /dev/sdb1`, want: "mkfs"},
		{cmd: `LESSOPEN='| rm -rf /' less x`, want: "rm-root"},
		{cmd: `retry(){ "$@"; }; retry rm -rf /`, want: "rm-root"},
	}, nil))
	runCases(t, "developer strict", []tcase{
		{cmd: `LESSOPEN='| lesspipe %s' less x`, mode: ModeStrict, want: allow},
		{cmd: `retry(){ "$@"; }; retry make test`, mode: ModeStrict, want: allow},
		{cmd: `retry(){ "$@"; }; retry "$x"`, mode: ModeStrict, want: "dynamic-command"},
		{cmd: `retry(){ "$@"; }; retry $(cat f)`, mode: ModeStrict, want: "dynamic-command"},
	})
}

// TestStrictFailsClosed: what the checker decodes it judges; what it cannot,
// strict refuses.
func TestStrictFailsClosed(t *testing.T) {
	runCases(t, "decode", withStrictCopies([]tcase{
		{cmd: `$(printf '\u0072m') -rf /`, want: "rm-root"},
		{cmd: `$(printf '\U00000072m') -rf /`, want: "rm-root"},
		{cmd: `$'rm\0x' -rf /`, want: "rm-root"},
		{cmd: "`echo \\`echo rm\\`` -rf /", want: "rm-root"},
		{cmd: `declare -i x; x='a[$(reboot)]'`, want: "power"},
		{cmd: `declare -i x='a[$(reboot)]'`, want: "power"},
		{cmd: `printf -v 'a[$(reboot)]' x`, want: "power"},
		{cmd: `test -v 'a[$(reboot)]'`, want: "power"},
		{cmd: `[ -v 'a[$(reboot)]' ]`, want: "power"},
		{cmd: `(( a[$(reboot)] ))`, want: "power"},
		{cmd: `x='$(reboot)'; (( a[$x] ))`, want: "power"},
		{cmd: `x='a[$(reboot)]'; (( x + 1 ))`, want: "power"},
		{cmd: `for i in 1 2; do (( a[$i]++ )); done`, want: allow},
		{cmd: `echo 'rm -rf /' > >(sh)`, want: "rm-root", alt: []string{"pipe-to-interpreter"}},
		{cmd: `echo 'rm -rf /' | parallel`, want: "rm-root", alt: []string{"pipe-to-interpreter"}},
		{cmd: `curl -s x | (cd /tmp && sh)`, want: "fetch-pipe-shell"},
	}, nil))
	runCases(t, "fail closed", pairs([]strictPair{
		{cmd: `echo hi > >(sh)`, rule: "pipe-to-interpreter"},
		{cmd: `tee >(bash) < f`, rule: "pipe-to-interpreter"},
		{cmd: `cat cmds | parallel`, rule: "pipe-to-interpreter"},
		{cmd: `cat cmds | parallel -j4`, rule: "pipe-to-interpreter"},
	}))
	runCases(t, "decoded harmless", withStrictCopies([]tcase{
		{cmd: `printf 'caf\u00e9\n'`, want: allow},
		{cmd: `declare -i n=3; n=n+1`, want: allow},
		{cmd: `printf -v x '%s' y`, want: allow},
		{cmd: `echo hi > >(cat)`, want: allow},
		{cmd: `parallel echo ::: a b`, want: allow},
	}, nil))
}

// TestWritesAsPaths: deny_write_paths match what a write reaches, however
// the destination is given.
func TestWritesAsPaths(t *testing.T) {
	deny := func(c *Config) { c.DenyWritePaths = []string{"/etc/**", "secrets/*", "~/.ssh/**"} }
	runCases(t, "write path", []tcase{
		{cmd: `cp x /etc/`, cfg: deny, want: "deny-write-path"},
		{cmd: `cp x /etc`, cfg: deny, want: "deny-write-path"},
		{cmd: `cp -r a b /etc`, cfg: deny, want: "deny-write-path"},
		{cmd: `rsync -a ./etc/ /etc/`, cfg: deny, want: "deny-write-path"},
		{cmd: `mv x /etc/cron.d/`, cfg: deny, want: "deny-write-path"},
		{cmd: `sed -i 's/a/b/' /etc/hosts`, cfg: deny, want: "deny-write-path"},
		{cmd: `sed -e 's/a/b/' -i /etc/hosts`, cfg: deny, want: "deny-write-path"},
		{cmd: `tar -C /etc -xf x.tar`, cfg: deny, want: "deny-write-path"},
		{cmd: `tar xf x.tar -C /etc`, cfg: deny, want: "deny-write-path"},
		{cmd: `install -m 644 x /etc/x`, cfg: deny, want: "deny-write-path"},
		{cmd: `install -t /etc x`, cfg: deny, want: "deny-write-path"},
		{cmd: `tee -a /etc/hosts < x`, cfg: deny, want: "deny-write-path"},
		{cmd: `echo x > /et?/hosts`, cfg: deny, want: "deny-write-path"},
		{cmd: `echo x > /e*/hosts`, cfg: deny, want: "deny-write-path"},
		{cmd: `cd /etc && echo x > hosts`, cfg: deny, want: "deny-write-path"},
		{cmd: `cd /etc; cp /tmp/x .`, cfg: deny, want: "deny-write-path"},
		{cmd: `echo k > secrets/key`, cfg: deny, want: "deny-write-path"},
		{cmd: `echo k > /workspace/secrets/key`, cfg: deny, want: "deny-write-path"},
		{cmd: `cd ~ && cp k .ssh/authorized_keys`, cfg: deny, want: "deny-write-path"},
		{cmd: `tar cf /etc/x.tar src`, cfg: deny, want: "deny-write-path"},
		{cmd: `cp x /tmp/`, cfg: deny, want: allow},
		{cmd: `sed -n 1p /etc/hosts`, cfg: deny, want: allow},
		{cmd: `sed 's/a/b/' /etc/hosts > out`, cfg: deny, want: allow},
		{cmd: `echo x > /tmp/h?sts`, cfg: deny, want: allow},
		{cmd: `cd /tmp && echo x > hosts`, cfg: deny, want: allow},
		{cmd: `echo k > other/key`, cfg: deny, want: allow},
		{cmd: `tar xf x.tar -C build`, cfg: deny, want: allow},
	})
}

// TestWorkingDirectory: rm, chmod and writes are judged from the directory
// the script is in, however it got there.
func TestWorkingDirectory(t *testing.T) {
	deny := func(c *Config) { c.DenyWritePaths = []string{"/etc/**"} }
	runCases(t, "cwd", withStrictCopies([]tcase{
		{cmd: `CDPATH=/ cd etc && rm -rf *`, want: "rm-root"},
		{cmd: `CDPATH=/; cd usr; rm -rf ./*`, want: "rm-root"},
		{cmd: `env -C / rm -rf *`, want: "rm-root"},
		{cmd: `env --chdir=/ chmod -R 777 .`, want: "chmod-root"},
		{cmd: `pushd / && rm -rf *`, want: "rm-root"},
		{cmd: `cd .. && rm -rf *`, want: "rm-root"},
		{cmd: `rm -rf ../*`, want: "rm-root"},
		{cmd: `rm -rf "${PWD%/*}"/*`, want: "rm-root"},
		{cmd: `cd /etc && rm -rf "$PWD"`, want: "rm-root"},
		{cmd: `cd /usr/local && rm -rf "${PWD%/*}"`, want: "rm-root"},
		{cmd: `env -C /tmp rm -rf *; rm -rf build`, want: allow},
		{cmd: `cd src && rm -rf *`, want: allow},
		{cmd: `rm -rf ../build`, want: allow},
		{cmd: `rm -rf "$PWD/build"`, want: allow},
		{cmd: `CDPATH=/ cd ./etc && rm -rf *`, want: allow},
	}, nil))
	runCases(t, "cwd write", []tcase{
		{cmd: `env -C /etc cp x hosts`, cfg: deny, want: "deny-write-path"},
		{cmd: `CDPATH=/ cd etc && echo x > hosts`, cfg: deny, want: "deny-write-path"},
		{cmd: `pushd /etc && echo x >> hosts`, cfg: deny, want: "deny-write-path"},
		{cmd: `echo x > "${PWD%/*}/etc/hosts"`, cfg: deny, want: "deny-write-path"},
	})
}
