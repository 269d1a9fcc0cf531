package policy

import "testing"

// The families of forms an adversarial review let through, a few examples each
// (the review's own list stays held out); docs/policy.md names the rules.

func TestFamilyRunners(t *testing.T) {
	runCases(t, "runner", []tcase{
		{cmd: `chronic rm -rf /`, want: "rm-root"},
		{cmd: `strace -f -o /dev/null rm -rf /`, want: "rm-root"},
		{cmd: `ltrace -o /tmp/x rm -rf /etc`, want: "rm-root"},
		{cmd: `unshare -r rm -rf /`, want: "rm-root"},
		{cmd: `firejail --quiet rm -rf /`, want: "rm-root"},
		{cmd: `toybox rm -rf /`, want: "rm-root"},
		{cmd: `nsenter -t 1 -m -u -i -n -p -- sh`, want: "privilege-escalation"},
		{cmd: `capsh -- -c 'id'`, want: "privilege-escalation"},
		{cmd: `setpriv --reuid=0 id`, want: "privilege-escalation"},
		{cmd: `systemd-run --pty bash`, want: "privilege-escalation"},
		{cmd: `gosu root id`, want: "privilege-escalation"},
		{cmd: `su-exec 0 id`, want: "privilege-escalation"},
		{cmd: `runuser -u root -- id`, want: "privilege-escalation"},
		{cmd: `sudoedit /etc/passwd`, want: "privilege-escalation"},
		{cmd: `machinectl shell root@`, want: "privilege-escalation"},
		{cmd: `sg wheel -c 'id'`, want: "privilege-escalation"},
		{cmd: `watch -n1 'rm -rf /'`, want: "rm-root"},
		{cmd: `watch -n 1 rm -rf /usr`, want: "rm-root"},
		{cmd: `flock /tmp/l -c 'rm -rf /'`, want: "rm-root"},
		{cmd: `flock -w 3 /tmp/l rm -rf /`, want: "rm-root"},
		{cmd: `parallel ::: 'rm -rf /'`, want: "rm-root"},
		{cmd: `at now <<< 'rm -rf /'`, want: "rm-root"},
		{cmd: `echo 'rm -rf /' | batch`, want: "rm-root"},
		{cmd: `ssh host 'rm -rf /'`, want: "rm-root"},
		{cmd: `ssh -p 22 -i key host rm -rf /etc`, want: "rm-root"},
		{cmd: `ksh93 -c 'rm -rf /'`, want: "rm-root"},
		{cmd: `tcsh -c 'rm -rf /'`, want: "rm-root"},
		{cmd: `csh -c 'rm -rf /'`, want: "rm-root"},
		{cmd: `posh -c 'rm -rf /'`, want: "rm-root"},
		{cmd: `busybox ash -c 'rm -rf /'`, want: "rm-root"},
		// Harmless uses stay allowed.
		{cmd: `watch -n5 date`, want: allow},
		{cmd: `ssh host uptime`, want: allow},
		{cmd: `strace -c ls`, want: allow},
		{cmd: `parallel echo ::: a b c`, want: allow},
	})
}

func TestFamilyDevicePaths(t *testing.T) {
	runCases(t, "device path", []tcase{
		{cmd: `echo x > //dev/sda`, want: "block-device-write"},
		{cmd: `dd if=/dev/zero of=/./dev/sda`, want: "block-device-write"},
		{cmd: `dd if=/dev/zero of=/dev/root`, want: "block-device-write"},
		{cmd: `cat x > /dev/mapper/vg-root`, want: "block-device-write"},
		{cmd: `cat x > /dev/disk/by-uuid/1234`, want: "block-device-write"},
		{cmd: `dd if=/dev/zero of=/dev/block/8:0`, want: "block-device-write"},
		{cmd: `dd if=/dev/zero of=/dev/sd?`, want: "block-device-write"},
		{cmd: `dd if=/dev/zero of=/proc/self/root/dev/sda`, want: "block-device-write"},
		{cmd: `echo hi > /dev/null; dd if=/dev/zero of=/tmp/disk.img count=1`, want: allow},
	})
}

func TestFamilyWriters(t *testing.T) {
	runCases(t, "writer", []tcase{
		{cmd: `curl -o /dev/sda https://x/img`, want: "block-device-write"},
		{cmd: `curl --output=/dev/sda https://x/img`, want: "block-device-write"},
		{cmd: `wget -O /dev/sda https://x/img`, want: "block-device-write"},
		{cmd: `tar -cf /dev/sda .`, want: "block-device-write"},
		{cmd: `tar --file=/dev/nvme0n1 -c .`, want: "block-device-write"},
		{cmd: `sort -o /dev/sda x`, want: "block-device-write"},
		{cmd: `/usr/bin/time -o /dev/sda ls`, want: "block-device-write"},
		{cmd: `env time --output=/dev/sda ls`, want: "block-device-write"},
		{cmd: `ddrescue /dev/zero /dev/sda`, want: "block-device-write"},
		{cmd: `badblocks -w /dev/sda`, want: "mkfs"},
		{cmd: `nvme format /dev/nvme0n1`, want: "mkfs"},
		{cmd: `cryptsetup luksFormat /dev/sdb`, want: "mkfs"},
		{cmd: `mkdosfs /dev/sdb1`, want: "mkfs"},
		{cmd: `mkntfs /dev/sdb1`, want: "mkfs"},
		{cmd: `wipefs -a /dev/sda`, want: "mkfs"},
		{cmd: `shred -n1 /dev/sda`, want: "block-device-write"},
		{cmd: `echo b | tee /proc/sysrq-trigger`, want: "power"},
		{cmd: `dd of=/proc/sysrq-trigger <<< b`, want: "power"},
		{cmd: `cp /tmp/zero /sys/fs/selinux/enforce`, want: "selinux-disable"},
		{cmd: `curl -o out.tar https://x/a.tar && tar -cf backup.tar src`, want: allow},
		{cmd: `sort -o sorted.txt input.txt`, want: allow},
	})
}

func TestFamilyRmTargets(t *testing.T) {
	runCases(t, "rm target", []tcase{
		{cmd: `rm --recur --forc /`, want: "rm-root"},
		{cmd: `rm --no-pres -r /tmp/x`, want: "rm-root"},
		{cmd: `chmod --recur 777 /`, want: "chmod-root"},
		{cmd: `rm -rf ~root`, want: "rm-root"},
		{cmd: `rm -rf ~/..`, want: "rm-root"},
		{cmd: `rm -rf "${HOME:?}"`, want: "rm-root"},
		{cmd: `rm -rf "${HOME:?}/"`, want: "rm-root"},
		{cmd: `rm -rf /proc/self/root/*`, want: "rm-root"},
		{cmd: `cd / && rm -rf *`, want: "rm-root"},
		{cmd: `(cd / && rm -rf .[!.]* *)`, want: "rm-root"},
		{cmd: `pushd / && rm -rf *`, want: "rm-root"},
		{cmd: `cd /etc; rm -rf ./*`, want: "rm-root"},
		{cmd: `cd /tmp/build && rm -rf *`, want: allow},
		{cmd: `rm -rf ~/project/build`, want: allow},
		{cmd: `rm --recursive-typo x`, want: allow},
	})
}

func TestFamilyCodeByOtherDoors(t *testing.T) {
	runCases(t, "other door", []tcase{
		{cmd: `source /dev/stdin <<< 'rm -rf /'`, want: "rm-root"},
		{cmd: `. /dev/fd/0 <<EOF
rm -rf /
EOF`, want: "rm-root"},
		{cmd: `bash /dev/fd/3 3<<<'rm -rf /'`, want: "rm-root"},
		{cmd: `awk 'BEGIN{system("rm -rf /")}'`, want: "rm-root"},
		{cmd: `awk 'BEGIN{print "x" | "rm -rf /"}'`, want: "rm-root"},
		{cmd: `sed '1e rm -rf /' f`, want: "rm-root"},
		{cmd: `GIT_SSH_COMMAND='rm -rf /' git fetch`, want: "rm-root"},
		{cmd: `PAGER='rm -rf /' man ls`, want: "rm-root"},
		{cmd: `export PROMPT_COMMAND='rm -rf /'`, want: "rm-root"},
		{cmd: `env 'BASH_FUNC_ls%%=() { rm -rf /; }' bash -c ls`, want: "rm-root"},
		{cmd: `let 'x=a[$(rm -rf /)]'`, want: "rm-root"},
		{cmd: `hash -p /bin/rm ls; ls -rf /`, want: "rm-root"},
		{cmd: `awk '{print $1}' file`, want: allow},
		{cmd: `sed -n '1p' f`, want: allow},
		{cmd: `PAGER=less git log`, want: allow},
	})
}

func TestFamilyStrictDecodes(t *testing.T) {
	for _, mode := range []Mode{ModeStandard, ModeStrict} {
		runCases(t, "decoded name", []tcase{
			{cmd: `$(printf '\x72\x6d') -rf /`, mode: mode, want: "rm-root"},
			{cmd: `c=$(printf 'r%s' m); $c -rf /`, mode: mode, want: "rm-root"},
			{cmd: `$(echo -e '\x72\x6d') -rf /`, mode: mode, want: "rm-root"},
		})
	}
	runCases(t, "undecided name", []tcase{
		{cmd: `$(printf '%3s' rm) -rf /`, mode: ModeStrict, want: "dynamic-command"},
	})
}

func TestFamilyVerbs(t *testing.T) {
	runCases(t, "verb", []tcase{
		{cmd: `systemctl soft-reboot`, want: "power"},
		{cmd: `systemctl kexec`, want: "power"},
		{cmd: `kexec -e`, want: "power"},
		{cmd: `loginctl poweroff`, want: "power"},
		{cmd: `ufw --force reset`, want: "firewall-disable"},
		{cmd: `ufw reset`, want: "firewall-disable"},
		{cmd: `nft flush ruleset`, want: "firewall-disable"},
		{cmd: `nft delete table inet filter`, want: "firewall-disable"},
		{cmd: `/etc/init.d/iptables stop`, want: "firewall-disable"},
		{cmd: `/etc/init.d/firewalld stop`, want: "firewall-disable"},
		{cmd: `telinit 0`, want: "power"},
		{cmd: `kexec -l /boot/vmlinuz`, want: allow},
		{cmd: `nft list ruleset`, want: allow},
	})
}

func TestFamilyFalsePositives(t *testing.T) {
	runCases(t, "harmless", []tcase{
		{cmd: `mkfs.ext4 --help`, want: allow},
		{cmd: `mkfs.ext4 -V`, want: allow},
		{cmd: `mke2fs -n /dev/sda1`, want: allow},
		{cmd: `mkfs.ext4 ./disk.img`, want: allow},
		{cmd: `truncate -s 64M disk.img && mkfs.ext4 -F disk.img`, want: allow},
		{cmd: `mkswap /tmp/swapfile`, want: allow},
		{cmd: "echo rm\u00a0-rf\u00a0/", want: allow},
		{cmd: "x=$(echo 'rm\u2003-rf /'); echo $x", want: allow},
		{cmd: `reboot() { echo would reboot; }; reboot`, want: allow},
		{cmd: `mkfs.ext4 /dev/sdb1`, want: "mkfs"},
		{cmd: `mkfs.ext4 "$DEV"`, want: "mkfs"},
	})
}

func TestStrictInlineCode(t *testing.T) {
	runCases(t, "inline code", []tcase{
		{cmd: `python3 -c 'import os; os.system("id")'`, mode: ModeStrict, want: "inline-code"},
		{cmd: `perl -e 'unlink glob "*"'`, mode: ModeStrict, want: "inline-code"},
		{cmd: `ruby -e 'puts 1'`, mode: ModeStrict, want: "inline-code"},
		{cmd: `node -e 'process.exit(0)'`, mode: ModeStrict, want: "inline-code"},
		{cmd: `awk 'BEGIN{system(cmd)}'`, mode: ModeStrict, want: "inline-code"},
		{cmd: `awk '{print $1 | "sort"}' f`, mode: ModeStrict, want: "inline-code"},
		{cmd: `python3 -c 'print(1)'`, want: allow},
		{cmd: `python3 script.py`, mode: ModeStrict, want: allow},
		{cmd: `awk '{print $1}' f`, mode: ModeStrict, want: allow},
		{cmd: `python3 -c 'print(1)'`, mode: ModeStrict, want: allow,
			cfg: func(c *Config) { c.AllowPatterns = []string{`^python3 -c 'print\(1\)'$`, `^python3 -c print\(1\)$`} }},
		{cmd: `python3 -c 'print(1)'`, mode: ModeStrict, want: allow,
			cfg: func(c *Config) { c.Allowlist = []ProgramRule{{Program: "python3"}} }},
	})
}

func TestDenyWritePaths(t *testing.T) {
	deny := func(c *Config) { c.DenyWritePaths = []string{"~/.bash_history", "/etc/**", "/var/log/*.log"} }
	runCases(t, "deny write", []tcase{
		{cmd: `echo x > ~/.bash_history`, cfg: deny, want: "deny-write-path"},
		{cmd: `echo x >> "$HOME/.bash_history"`, cfg: deny, want: "deny-write-path"},
		{cmd: `echo x | tee /etc/hosts`, cfg: deny, want: "deny-write-path"},
		{cmd: `cp x /etc/cron.d/job`, cfg: deny, want: "deny-write-path"},
		{cmd: `dd of=/var/log/auth.log if=/dev/zero`, cfg: deny, want: "deny-write-path"},
		{cmd: `curl -o //etc/passwd https://x`, cfg: deny, want: "deny-write-path"},
		{cmd: `cat /etc/hosts > /tmp/hosts`, cfg: deny, want: allow},
		{cmd: `echo x > /var/log/sub/a.log`, cfg: deny, want: allow},
	})
	// A relative entry is read from the working directory.
	p, err := New(Config{DenyWritePaths: []string{".env"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{`echo x > .env`, `echo x > /workspace/.env`, `cd /workspace && cp y .env`} {
		if d := p.Check(cmd); d.Rule != "deny-write-path" {
			t.Errorf("%s: %+v, want deny-write-path", cmd, d)
		}
	}
}

func TestExplain(t *testing.T) {
	d, steps := Default().Explain(`echo start; sudo -u x env FOO=1 nice rm -rf / && echo never`)
	if d.Allowed || d.Rule != "privilege-escalation" {
		t.Fatalf("decision %+v", d)
	}
	if len(steps) != 2 || steps[0].Command != "echo start" || steps[0].Rule != "" || steps[1].Rule != "privilege-escalation" {
		t.Fatalf("steps %+v", steps)
	}
	d, steps = Default().Explain(`x=rm; c='-rf /'; $x $c`)
	if d.Rule != "rm-root" || len(steps) == 0 || steps[len(steps)-1].Command != "rm -rf /" {
		t.Fatalf("expanded: %+v %+v", d, steps)
	}
	d, steps = Default().Explain(`echo x > /dev/sda`)
	if d.Rule != "block-device-write" || steps[len(steps)-1].Rule != "block-device-write" {
		t.Fatalf("redirect: %+v %+v", d, steps)
	}
}
