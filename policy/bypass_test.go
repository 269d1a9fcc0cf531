package policy

// Group 2: bypass families. Each table is one technique; every case must be refused
// (or, where the contract says so, allowed in standard and refused in strict).

import (
	"fmt"
	"strings"
	"testing"
)

// shQuote quotes s for a POSIX shell with single quotes.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// nestSh wraps inner in n levels of `SHELL -c '...'`, cycling through shells.
func nestSh(n int, inner string) string {
	shells := []string{"sh", "bash", "dash", "zsh"}
	s := inner
	for i := 0; i < n; i++ {
		s = shells[i%len(shells)] + " -c " + shQuote(s)
	}
	return s
}

var bypassQuoting = []tcase{
	{cmd: `r''m -rf /`, want: "rm-root", match: "rm -rf /"},
	{cmd: `"r"m -rf /`, want: "rm-root", match: "rm -rf /"},
	{cmd: `'rm' -rf /`, want: "rm-root", match: "rm -rf /"},
	{cmd: `"rm" -rf /`, want: "rm-root"},
	{cmd: `r""m -rf /`, want: "rm-root"},
	{cmd: `'r'"m" -rf /`, want: "rm-root"},
	{cmd: `rm "-rf" "/"`, want: "rm-root", match: "rm -rf /"},
	{cmd: `rm -r''f '/'`, want: "rm-root"},
	{cmd: `rm -rf ""/`, want: "rm-root"},
	{cmd: `rm -rf "//"`, want: "rm-root"},
	{cmd: `s''udo id`, want: "privilege-escalation", match: "sudo id"},
	{cmd: `"su"do id`, want: "privilege-escalation"},
	{cmd: `re'bo'ot`, want: "power"},
	{cmd: `m"kfs".ext4 /dev/sda1`, want: "mkfs"},
	{cmd: `"setenforce" "0"`, want: "selinux-disable"},
	{cmd: `$"rm" -rf /`, want: "rm-root", note: "locale string $\"...\""},
	{cmd: `rm -rf $'/'`, want: "rm-root"},
}

var bypassEscapes = []tcase{
	{cmd: `\rm -rf /`, want: "rm-root", match: "rm -rf /"},
	{cmd: `r\m -rf /`, want: "rm-root"},
	{cmd: `rm -rf \/`, want: "rm-root"},
	{cmd: `rm -r\f /`, want: "rm-root"},
	{cmd: `\sudo id`, want: "privilege-escalation"},
	{cmd: `\s\u\d\o id`, want: "privilege-escalation"},
	{cmd: `$'\x72\x6d' -rf /`, want: "rm-root", match: "rm -rf /"},
	{cmd: `$'\162\155' -rf /`, want: "rm-root", match: "rm -rf /"},
	{cmd: `$'rm' -rf /`, want: "rm-root"},
	{cmd: `$'\x73udo' id`, want: "privilege-escalation"},
	{cmd: `$'\x73\x75\x64\x6f' id`, want: "privilege-escalation"},
	{cmd: `rm $'-\x72f' $'\x2f'`, want: "rm-root", note: "ANSI-C quoting in the arguments too"},
	{cmd: `$'\162\145\142\157\157\164'`, want: "power"},
}

var bypassPaths = []tcase{
	{cmd: `/bin/rm -rf /`, want: "rm-root"},
	{cmd: `/usr/bin/rm -rf /`, want: "rm-root"},
	{cmd: `./rm -rf /`, want: "rm-root"},
	{cmd: `../bin/rm -rf /`, want: "rm-root"},
	{cmd: `/usr/local/bin/rm -rf /`, want: "rm-root"},
	{cmd: `/usr/sbin/reboot`, want: "power"},
	{cmd: `/sbin/mkfs.xfs /dev/sdb`, want: "mkfs"},
	{cmd: `/usr/bin/sudo -i`, want: "privilege-escalation"},
	{cmd: `"/bin/rm" -rf /`, want: "rm-root"},
	{cmd: `/bin/../bin/rm -rf /`, want: "rm-root"},
}

var bypassFlags = []tcase{
	{cmd: `rm -fr /`, want: "rm-root", match: "rm -fr /"},
	{cmd: `rm -r -f /`, want: "rm-root", match: "rm -r -f /"},
	{cmd: `rm -Rf /`, want: "rm-root"},
	{cmd: `rm --recursive --force /`, want: "rm-root"},
	{cmd: `rm --force --recursive /usr/`, want: "rm-root"},
	{cmd: `rm / -rf`, want: "rm-root", note: "flags after targets"},
	{cmd: `rm /etc -r`, want: "rm-root"},
	{cmd: `rm -f -R /`, want: "rm-root"},
	{cmd: `rm -vrf /etc`, want: "rm-root"},
	{cmd: `rm -d -r /`, want: "rm-root"},
	{cmd: `rm -r --no-preserve-root /`, want: "rm-root"},
	{cmd: `rm -rf --one-file-system /`, want: "rm-root"},
	{cmd: `rm -I -r /`, want: "rm-root"},
}

var bypassXargs = []tcase{
	{cmd: `echo / | xargs rm -rf`, want: "rm-root"},
	{cmd: `echo /etc | xargs rm -rf`, want: "rm-root"},
	{cmd: `printf '%s\n' / | xargs rm -rf`, want: "rm-root"},
	{cmd: `xargs rm -rf /`, want: "rm-root", note: "explicit root target among xargs args"},
	{cmd: `ls | xargs -n1 rm -rf /`, want: "rm-root"},
	{cmd: `find . | xargs -0 rm -rf /`, want: "rm-root"},
	{cmd: `echo id | xargs sudo`, want: "privilege-escalation"},
	{cmd: `echo x | xargs reboot`, want: "power"},
	{cmd: `ls | xargs sh -c 'rm -rf /'`, want: "rm-root"},
	{cmd: `ls | xargs -I{} bash -c 'sudo id'`, want: "privilege-escalation"},
	{cmd: `find . -name '*.tmp' | xargs rm -rf`, want: allow, note: "standard: xargs targets unknown"},
	{cmd: `find . -name '*.tmp' | xargs rm -rf`, mode: ModeStrict, want: "dynamic-command"},
	{cmd: `ls | xargs -I{} rm -rf {}`, want: allow},
	{cmd: `ls | xargs -I{} rm -rf {}`, mode: ModeStrict, want: "dynamic-command"},
	{cmd: `ls | xargs rm -r`, mode: ModeStrict, want: "dynamic-command"},
	{cmd: `ls | xargs echo`, mode: ModeStrict, want: allow},
	{cmd: `echo / | xargs -I % rm -rf %`, want: "rm-root"},
	{cmd: `echo "/" | xargs rm -rf`, want: "rm-root"},
	{cmd: `echo /etc /tmp | xargs rm -rf`, want: "rm-root"},
	{cmd: `echo / | sudo xargs rm -rf`, want: "privilege-escalation"},
	{cmd: `echo /tmp | xargs rm -rf`, want: allow},
	{cmd: `xargs -r rm -rf /`, want: "rm-root"},
	{cmd: `xargs -P4 -n1 rm -rf /`, want: "rm-root"},
	{cmd: `find / -print0 | xargs -0 rm -rf`, want: "find-delete-root", alt: []string{"rm-root"}, note: "ambiguous: the contract only resolves echo/printf stages, but find / feeds every path under / to rm -rf; safer reading"},
}

var bypassEnv = []tcase{
	{cmd: `env rm -rf /`, want: "rm-root", match: "rm -rf /"},
	{cmd: `env -i rm -rf /`, want: "rm-root", match: "rm -rf /"},
	{cmd: `env FOO=1 rm -rf /`, want: "rm-root"},
	{cmd: `env -i FOO=1 BAR=2 sudo id`, want: "privilege-escalation"},
	{cmd: `env -u PATH rm -rf /`, want: "rm-root"},
	{cmd: `env -C /tmp rm -rf /`, want: "rm-root"},
	{cmd: `env -0 sudo id`, want: "privilege-escalation"},
	{cmd: `env -S 'rm -rf /'`, want: "rm-root"},
	{cmd: `/usr/bin/env rm -rf /`, want: "rm-root"},
	{cmd: `env env env rm -rf /`, want: "rm-root"},
	{cmd: `env -- rm -rf /`, want: "rm-root"},
	{cmd: `env --unset=X rm -rf /`, want: "rm-root"},
	{cmd: `env -S"rm -rf /"`, want: "rm-root"},
	{cmd: `env --split-string='rm -rf /'`, want: "rm-root"},
	{cmd: `busybox env rm -rf /`, want: "rm-root"},
	{cmd: `FOO=1 rm -rf /`, want: "rm-root", note: "assignment prefix"},
	{cmd: `A=1 B=2 sudo id`, want: "privilege-escalation"},
}

var bypassWrappers = []tcase{
	{cmd: `nice rm -rf /`, want: "rm-root", match: "rm -rf /"},
	{cmd: `nice -n 10 rm -rf /`, want: "rm-root"},
	{cmd: `nice -10 rm -rf /`, want: "rm-root"},
	{cmd: `nohup rm -rf /`, want: "rm-root"},
	{cmd: `nohup sudo id &`, want: "privilege-escalation"},
	{cmd: `timeout 10 rm -rf /`, want: "rm-root"},
	{cmd: `timeout -s KILL 5s rm -rf /`, want: "rm-root"},
	{cmd: `timeout --signal=KILL 5 rm -rf /`, want: "rm-root"},
	{cmd: `timeout -k 1 5m reboot`, want: "power"},
	{cmd: `stdbuf -oL rm -rf /`, want: "rm-root"},
	{cmd: `stdbuf -i0 -oL -eL sudo id`, want: "privilege-escalation"},
	{cmd: `setsid rm -rf /`, want: "rm-root"},
	{cmd: `ionice -c 3 rm -rf /`, want: "rm-root"},
	{cmd: `ionice -c 2 -n 7 sudo id`, want: "privilege-escalation"},
	{cmd: `setsid -f rm -rf /`, want: "rm-root"},
	{cmd: `timeout -v 5 rm -rf /`, want: "rm-root"},
	{cmd: `timeout --preserve-status 5 rm -rf /`, want: "rm-root"},
	{cmd: `ionice -t -c3 rm -rf /`, want: "rm-root"},
	{cmd: `nohup sh -c 'rm -rf /' >/dev/null 2>&1 &`, want: "rm-root"},
	{cmd: `env -i PATH=/bin sh -c 'rm -rf /'`, want: "rm-root"},
	{cmd: `time rm -rf /`, want: "rm-root"},
	{cmd: `time -p rm -rf /`, want: "rm-root"},
	{cmd: `/usr/bin/time -f %e rm -rf /`, want: "rm-root"},
	{cmd: `/usr/bin/time -o out.txt rm -rf /`, want: "rm-root"},
	{cmd: `command rm -rf /`, want: "rm-root"},
	{cmd: `command sudo id`, want: "privilege-escalation"},
	{cmd: `exec rm -rf /`, want: "rm-root"},
	{cmd: `exec sudo su`, want: "privilege-escalation"},
	{cmd: `builtin eval "rm -rf /"`, want: "rm-root"},
	{cmd: `busybox rm -rf /`, want: "rm-root"},
	{cmd: `busybox reboot`, want: "power"},
	{cmd: `chrt 10 rm -rf /`, want: "rm-root"},
	{cmd: `taskset 0x1 rm -rf /`, want: "rm-root"},
	{cmd: `nice nohup timeout 5 env FOO=1 rm -rf /`, want: "rm-root", match: "rm -rf /"},
	{cmd: `exec nice -n 5 stdbuf -oL setsid sudo id`, want: "privilege-escalation"},
	{cmd: `exec -a name rm -rf /`, want: "rm-root"},
	{cmd: `exec -- rm -rf /`, want: "rm-root"},
	{cmd: `command -p rm -rf /`, want: "rm-root"},
	{cmd: `command -- rm -rf /`, want: "rm-root"},
	{cmd: `nice --adjustment=5 rm -rf /`, want: "rm-root"},
	{cmd: `nice -n -5 rm -rf /`, want: "rm-root"},
	{cmd: `nohup -- rm -rf /`, want: "rm-root"},
	{cmd: `nice -- rm -rf /`, want: "rm-root"},
	{cmd: `env -iS 'rm -rf /'`, want: "rm-root"},
	{cmd: `time -- rm -rf /`, want: "rm-root", note: "bash 5 runs `time -- CMD` as time CMD"},
	{cmd: `time -p -- sudo id`, want: "privilege-escalation", note: "bash 5 runs `time -p -- CMD` as time CMD"},
	{cmd: `command exec rm -rf /`, want: "rm-root"},
	{cmd: `exec env rm -rf /`, want: "rm-root"},
	{cmd: `busybox chroot /mnt`, want: "chroot"},
	{cmd: `timeout --kill-after=1 5 rm -rf /`, want: "rm-root"},
	{cmd: `stdbuf --output=L rm -rf /`, want: "rm-root"},
	{cmd: `ionice -c3 rm -rf /`, want: "rm-root"},
	{cmd: `chrt -f 10 rm -rf /`, want: "rm-root"},
	{cmd: `taskset -c 0 rm -rf /`, want: "rm-root"},
	{cmd: `/usr/bin/time -v rm -rf /`, want: "rm-root"},
	{cmd: `xargs -- rm -rf /`, want: "rm-root"},
	// wrappers beyond the contract's list
	{cmd: `flock /tmp/l rm -rf /`, want: "rm-root", note: "beyond the contract's wrapper list"},
	{cmd: `unbuffer rm -rf /`, want: "rm-root", note: "beyond the contract's wrapper list"},
	{cmd: `watch -n 1 rm -rf /`, want: "rm-root", note: "beyond the contract's wrapper list"},
	{cmd: `script -qc 'rm -rf /' /dev/null`, want: "rm-root", note: "ambiguous: script -c runs a shell string, beyond the contract's list; safer reading"},
	{cmd: `parallel rm -rf ::: /`, want: "rm-root", note: "ambiguous: GNU parallel runs its command, beyond the contract's list; safer reading"},
	{cmd: `doas rm -rf /tmp/x`, want: "privilege-escalation", note: "doas is denied itself"},
	{cmd: `command -v rm`, want: allow},
	{cmd: `command -V sudo`, want: allow},
}

var bypassNestedShells = []tcase{
	{cmd: `sh -c "rm -rf /"`, want: "rm-root", match: "rm -rf /"},
	{cmd: `bash -c 'rm -rf /'`, want: "rm-root"},
	{cmd: `dash -c 'rm -rf /'`, want: "rm-root"},
	{cmd: `ash -c 'rm -rf /'`, want: "rm-root"},
	{cmd: `zsh -c 'rm -rf /'`, want: "rm-root"},
	{cmd: `ksh -c 'rm -rf /'`, want: "rm-root"},
	{cmd: `mksh -c 'rm -rf /'`, want: "rm-root"},
	{cmd: `busybox sh -c 'rm -rf /'`, want: "rm-root"},
	{cmd: `/bin/bash -c 'sudo id'`, want: "privilege-escalation"},
	{cmd: `bash -xc 'rm -rf /'`, want: "rm-root", note: "combined -xc: still a -c script"},
	{cmd: `bash -e -c 'reboot'`, want: "power"},
	{cmd: `sh -c "sh -c 'rm -rf /'"`, want: "rm-root"},
	{cmd: `bash -c "bash -c \"sh -c 'rm -rf /'\""`, want: "rm-root"},
	{cmd: `sh -c "echo ok; sudo id"`, want: "privilege-escalation", match: "sudo id"},
	{cmd: `bash -c 'x=rm; $x -rf /'`, want: "rm-root"},
	{cmd: `sh -c 'r""m -rf /'`, want: "rm-root"},
	{cmd: `bash -c "eval 'sh -c \"rm -rf /\"'"`, want: "rm-root"},
	{cmd: `env sh -c 'rm -rf /'`, want: "rm-root"},
	{cmd: `timeout 5 bash -c 'reboot'`, want: "power"},
	{cmd: `exec sh -c 'rm -rf /'`, want: "rm-root"},
	{cmd: `sh -c -- 'rm -rf /'`, want: "rm-root"},
	{cmd: `bash -c 'rm -rf /' name arg`, want: "rm-root"},
	{cmd: `bash --norc -c 'rm -rf /'`, want: "rm-root"},
	{cmd: `bash -lc 'rm -rf /'`, want: "rm-root"},
	{cmd: `sh -ec 'rm -rf /'`, want: "rm-root"},
	{cmd: `bash -o pipefail -c 'rm -rf /'`, want: "rm-root"},
	{cmd: `sh -c 'rm -rf "$1"' sh /`, want: "rm-root", note: "ambiguous: sh -c positional args are literal words; safer reading"},
	{cmd: `bash -c 'rm -rf $0' /`, want: "rm-root", note: "ambiguous: $0 of sh -c is the literal next word; safer reading"},
	{cmd: `"$SHELL" -c 'rm -rf /'`, want: "rm-root", note: "ambiguous: unknown program but a static -c script; safer reading"},
	{cmd: `$BASH -c 'sudo id'`, want: "privilege-escalation", note: "ambiguous: unknown program but a static -c script; safer reading"},
	{cmd: nestSh(3, "rm -rf /"), want: "rm-root"},
	{cmd: nestSh(4, "sudo id"), want: "privilege-escalation"},
	{cmd: nestSh(5, "rm -rf /"), want: "rm-root"},
	{cmd: nestSh(6, "mkfs.ext4 /dev/sda1"), want: "mkfs"},
	{cmd: nestSh(6, "echo hi"), want: allow},
	{cmd: `sh -c 'echo hi'`, want: allow},
	{cmd: `bash -c "ls -la && git status"`, want: allow},
}

var bypassEval = []tcase{
	{cmd: `eval "rm -rf /"`, want: "rm-root", match: "rm -rf /"},
	{cmd: `eval rm -rf /`, want: "rm-root"},
	{cmd: `eval 'sudo id'`, want: "privilege-escalation"},
	{cmd: `eval "r''m -rf /"`, want: "rm-root"},
	{cmd: `eval "rm" "-rf" "/"`, want: "rm-root", note: "eval joins its args with spaces"},
	{cmd: `eval 'echo ok; reboot'`, want: "power"},
	{cmd: `c="rm -rf /"; eval $c`, want: "rm-root"},
	{cmd: `c="rm -rf /"; eval "$c"`, want: "rm-root"},
	{cmd: `command eval 'rm -rf /'`, want: "rm-root"},
	{cmd: `eval -- 'rm -rf /'`, want: "rm-root", note: "bash's eval accepts -- and runs the rest"},
	{cmd: `eval -- "sudo id"`, want: "privilege-escalation", note: "bash's eval accepts -- and runs the rest"},
	{cmd: strings.Repeat("eval ", 8) + "rm -rf /", want: "rm-root", note: "8 evals deep: within the limit"},
	{cmd: strings.Repeat("eval ", 40) + "rm -rf /", want: "too-complex", alt: []string{"rm-root"}, note: "40 evals: deeper than 16"},
	{cmd: strings.Repeat("eval ", 40) + "echo hi", want: "too-complex", note: "deeper than 16 is too-complex even when harmless"},
	{cmd: strings.Repeat("eval ", 40) + "echo hi", mode: ModeStrict, want: "too-complex"},
	{cmd: `eval "echo hi"`, want: allow},
}

var bypassTrap = []tcase{
	{cmd: `trap 'rm -rf /' EXIT`, want: "rm-root", match: "rm -rf /"},
	{cmd: `trap "sudo reboot" INT`, want: "privilege-escalation", match: "sudo reboot"},
	{cmd: `trap -- 'reboot' TERM`, want: "power"},
	{cmd: `trap -- 'rm -rf /' EXIT INT`, want: "rm-root", note: "bash's trap accepts -- before the action"},
	{cmd: `trap 'r''m -rf /' EXIT; exit`, want: "rm-root"},
	{cmd: `trap 'echo bye' EXIT`, want: allow},
	{cmd: `trap 'rm -f /tmp/lock' EXIT`, want: allow},
}

var bypassIFS = []tcase{
	{cmd: `IFS=,; c=rm,-rf,/; $c`, want: "rm-root"},
	{cmd: `IFS=:; x=rm:-rf:/; $x`, want: "rm-root"},
	{cmd: `c="rm -rf /"; $c`, want: "rm-root"},
	{cmd: `c='sudo id'; $c`, want: "privilege-escalation"},
	{cmd: "c='rm\t-rf\t/'; $c", want: "rm-root", note: "default IFS splits on tab"},
	{cmd: `rm${IFS}-rf${IFS}/`, want: "rm-root", note: "ambiguous: $IFS never assigned but has a default; safer reading"},
}

var bypassBraces = []tcase{
	{cmd: `{rm,-rf,/}`, want: "rm-root"},
	{cmd: `{sudo,id}`, want: "privilege-escalation"},
	{cmd: `{rm,-rf,/etc}`, want: "rm-root"},
	{cmd: `{reboot,now}`, want: "power"},
	{cmd: `rm -rf /{etc,usr}`, want: "rm-root", note: "ambiguous: brace expansion in a target; safer reading"},
	{cmd: `r{m,} -rf /`, want: "rm-root", note: "expands to rm r -rf /"},
	{cmd: `rm -rf {/,/tmp}`, want: "rm-root"},
	{cmd: `echo {a,b,c}`, want: allow},
}

var bypassVariables = []tcase{
	{cmd: `x=rm; $x -rf /`, want: "rm-root", match: "rm -rf /"},
	{cmd: `x=rm; ${x} -rf /`, want: "rm-root"},
	{cmd: `x=/bin/rm; "$x" -rf /`, want: "rm-root"},
	{cmd: `x=rm; "${x}" -rf /`, want: "rm-root"},
	{cmd: `export x=rm; $x -rf /`, want: "rm-root"},
	{cmd: `declare x=rm; $x -rf /`, want: "rm-root"},
	{cmd: "x=rm\n$x -rf /", want: "rm-root"},
	{cmd: `x=sudo; $x id`, want: "privilege-escalation"},
	{cmd: `a=r; b=m; $a$b -rf /`, want: "rm-root"},
	{cmd: `t=/; rm -rf $t`, want: "rm-root", note: "literal target variable"},
	{cmd: `t=/etc; rm -rf "$t"`, want: "rm-root"},
	{cmd: `x=ls; x=rm; $x -rf /`, want: "rm-root"},
	{cmd: `if true; then x=ls; else x=rm; fi; $x -rf /`, want: "rm-root", note: "any candidate refusing refuses"},
	{cmd: `f(){ local x=rm; $x -rf /; }; f`, want: "rm-root"},
	{cmd: `x=rm; y=$x; $y -rf /`, want: "rm-root", note: "ambiguous: chain of literal assignments; safer reading"},
	{cmd: `${x:-rm} -rf /`, want: "rm-root", note: "ambiguous: default value of an unset variable; safer reading"},
	{cmd: `a=(rm -rf /); "${a[@]}"`, want: "rm-root", note: "ambiguous: literal array; safer reading"},
	{cmd: `x=reboot; sh -c "$x"`, want: "power", note: "literal value followed into sh -c"},
	{cmd: `x=r; $x''m -rf /`, want: "rm-root"},
	{cmd: `x=-rf; rm $x /`, want: "rm-root"},
	{cmd: `x='-rf /'; rm $x`, want: "rm-root"},
	{cmd: `x=/; rm -rf "$x"*`, want: "rm-root"},
	{cmd: `readonly x=rm; $x -rf /`, want: "rm-root"},
	{cmd: `typeset x=rm; $x -rf /`, want: "rm-root"},
	{cmd: `case x in x) c=rm;; esac; $c -rf /`, want: "rm-root"},
	{cmd: `x=r; x+=m; $x -rf /`, want: "rm-root", note: "ambiguous: append assignment of literals; safer reading"},
	{cmd: `set -- rm -rf /; "$@"`, want: "rm-root", note: "ambiguous: positional parameters set to literals; safer reading"},
	{cmd: `f(){ "$@"; }; f rm -rf /`, want: "rm-root", note: "ambiguous: function runs its literal arguments; safer reading"},
	{cmd: `f(){ rm -rf "$1"; }; f /`, want: "rm-root", note: "ambiguous: function parameter bound to a literal; safer reading"},
	{cmd: `function f() { rm -rf "$@"; }; f /`, want: "rm-root", note: "ambiguous: function parameters bound to literals; safer reading"},
	{cmd: `declare -a a=(rm -rf /); "${a[@]}"`, want: "rm-root"},
	{cmd: `x=( sudo id ); ${x[@]}`, want: "privilege-escalation"},
	{cmd: `x=$'\x72\x6d'; $x -rf /`, want: "rm-root"},
	{cmd: `x="r""m"; $x -rf /`, want: "rm-root"},
	{cmd: `x=rm; eval "$x -rf /"`, want: "rm-root"},
	{cmd: `: ${x:=rm}; $x -rf /`, want: "rm-root", note: "ambiguous: ${x:=rm} assigns a literal; safer reading"},
	{cmd: `: ${x=rm}; $x -rf /`, want: "rm-root", note: "ambiguous: ${x=rm} assigns a literal; safer reading"},
	{cmd: `printf -v x rm; $x -rf /`, want: "rm-root", note: "ambiguous: printf -v assigns a literal; safer reading"},
	{cmd: "shopt -s expand_aliases\nalias x='rm -rf /'\nx", want: "rm-root", note: "ambiguous: alias bodies are commands once expand_aliases is on; safer reading"},
	{cmd: `x=ls; $x -la`, want: allow},
	{cmd: `x=ls; $x -la`, mode: ModeStrict, want: allow, note: "literal: not dynamic"},
}

var bypassForLoops = []tcase{
	{cmd: `for x in rm; do $x -rf /; done`, want: "rm-root"},
	{cmd: `for c in ls rm; do $c -rf /; done`, want: "rm-root"},
	{cmd: `for x in sudo; do $x id; done`, want: "privilege-escalation"},
	{cmd: `for d in / /tmp; do rm -rf $d; done`, want: "rm-root"},
	{cmd: `for d in /tmp /etc; do rm -rf "$d"; done`, want: "rm-root"},
	{cmd: `for x in "rm -rf /"; do $x; done`, want: "rm-root"},
	{cmd: "for p in reboot\ndo\n  $p\ndone", want: "power"},
	{cmd: `for d in /tmp/a /tmp/b; do rm -rf "$d"; done`, want: allow},
	{cmd: `for f in *.go; do gofmt -l "$f"; done`, want: allow},
}

var bypassHereStringsAndDocs = []tcase{
	// Ambiguous: the contract says here-doc bodies are data and only strict refuses a
	// shell reading stdin, but a literal script fed to a shell is decidable: the
	// safer reading (and the implementation) judges it as the script it is.
	{cmd: `bash <<< "rm -rf /"`, want: "rm-root", note: "ambiguous: here-string fed to a shell judged as its script (safer reading)"},
	{cmd: `bash <<< "rm -rf /"`, mode: ModeStrict, want: "pipe-to-interpreter", alt: []string{"rm-root"}},
	{cmd: `sh <<< 'rm -rf /'`, want: "rm-root", note: "ambiguous: safer reading"},
	{cmd: `sh <<< 'rm -rf /'`, mode: ModeStrict, want: "pipe-to-interpreter", alt: []string{"rm-root"}},
	{cmd: `bash <<< 'ls -la'`, want: allow, note: "harmless script on stdin: standard allows"},
	{cmd: `python3 <<< 'print(1)'`, mode: ModeStrict, want: "pipe-to-interpreter"},
	{cmd: `bash <<< "$(sudo id)"`, want: "privilege-escalation", note: "the substitution in the here-string is judged"},
	{cmd: `bash <<< "$(curl -fsSL x)"`, mode: ModeStrict, want: "pipe-to-interpreter", alt: []string{"fetch-pipe-shell"}},
	{cmd: "sh <<EOF\nrm -rf /\nEOF", want: "rm-root", note: "ambiguous: here-doc fed to a shell judged as its script (safer reading)"},
	{cmd: "sh <<EOF\nrm -rf /\nEOF", mode: ModeStrict, want: "pipe-to-interpreter", alt: []string{"rm-root"}},
	{cmd: "bash <<'EOF'\nsudo id\nEOF", want: "privilege-escalation", note: "ambiguous: safer reading"},
	{cmd: "bash <<'EOF'\nsudo id\nEOF", mode: ModeStrict, want: "pipe-to-interpreter", alt: []string{"privilege-escalation"}},
	{cmd: "bash <<'EOF'\necho hello\nEOF", want: allow},
	{cmd: "echo 'sudo id' | sh", want: "privilege-escalation", note: "ambiguous: echoed literal script fed to a shell; safer reading"},
	{cmd: "echo 'ls' | sh", want: allow},
	{cmd: "python3 <<EOF\nprint(1)\nEOF", mode: ModeStrict, want: "pipe-to-interpreter"},
	{cmd: "cat <<EOF\n$(rm -rf /)\nEOF", want: "rm-root", note: "$() in an unquoted here-doc is judged"},
	{cmd: "cat <<EOF\n`sudo id`\nEOF", want: "privilege-escalation"},
	{cmd: "cat <<-EOF\n\t$(sudo id)\n\tEOF", want: "privilege-escalation"},
	{cmd: "cat > f <<EOF\nhello ${USER} $(reboot)\nEOF", want: "power"},
	{cmd: "cat <<'EOF'\n$(rm -rf /)\nEOF", want: allow, note: "quoted here-doc: data"},
	{cmd: "cat <<\"EOF\"\n$(sudo id)\nEOF", want: allow},
	{cmd: "cat <<EOF\nrm -rf /\nEOF", want: allow},
	{cmd: "cat <<EOF\nrm -rf /\nEOF", mode: ModeStrict, want: allow},
	{cmd: `sh <(echo 'rm -rf /')`, want: "rm-root", note: "ambiguous: a literal script fed to sh through <( ); safer reading, as echo | sh"},
	{cmd: `printf 'rm -rf /' | sh`, want: "rm-root", note: "ambiguous: printed literal script fed to a shell; safer reading"},
	{cmd: `bash <<< "$(curl x)"`, want: "fetch-pipe-shell", note: "ambiguous: the shell's stdin is curl's output; safer reading"},
	{cmd: `. /dev/stdin < <(curl x)`, want: "fetch-pipe-shell", note: "ambiguous: sources curl's output; safer reading"},
	{cmd: `curl x | tee >(sh)`, want: "fetch-pipe-shell", note: "ambiguous: sh reads the pipe through >( ); safer reading"},
	{cmd: `cat <<< x > /dev/sda`, want: "block-device-write"},
}

var bypassSubstitution = []tcase{
	{cmd: `echo $(rm -rf /)`, want: "rm-root", match: "rm -rf /"},
	{cmd: "echo `rm -rf /`", want: "rm-root", match: "rm -rf /"},
	{cmd: `x=$(sudo id)`, want: "privilege-escalation"},
	{cmd: `ls "$(reboot)"`, want: "power"},
	{cmd: `echo "$(echo $(sudo id))"`, want: "privilege-escalation"},
	{cmd: "echo \"`echo \\`reboot\\``\"", want: "power"},
	{cmd: `cat <(sudo id)`, want: "privilege-escalation"},
	{cmd: `diff <(rm -rf /) x`, want: "rm-root"},
	{cmd: `echo hi > >(reboot)`, want: "power"},
	{cmd: `local_var="${x:-$(sudo id)}"`, want: "privilege-escalation"},
	{cmd: `echo ${#a[$(reboot)]}`, want: "power"},
	{cmd: `[[ -n $(sudo id) ]]`, want: "privilege-escalation"},
	{cmd: `echo $(( $(reboot) + 1 ))`, want: "power"},
	{cmd: `echo $(date)`, want: allow},
	{cmd: `$(echo rm) -rf /`, want: "rm-root", alt: []string{"dynamic-command"}, note: "ambiguous: the contract calls a $( ) name dynamic (strict only), but echo of a literal is decidable, as echo | sh is; safer reading"},
	{cmd: "`echo sudo` id", want: "privilege-escalation", note: "ambiguous: backticks echoing a literal; safer reading"},
	{cmd: `bash -c "$(echo 'rm -rf /')"`, want: "rm-root", note: "ambiguous: sh -c of echoed literal text; safer reading"},
	{cmd: `declare x=$(sudo id)`, want: "privilege-escalation"},
	{cmd: `a[$(reboot)]=1`, want: "power"},
	{cmd: "cat > /dev/sda <<EOF\nx\nEOF", want: "block-device-write"},
}

var bypassChains = []tcase{
	{cmd: `ls; rm -rf /`, want: "rm-root", match: "rm -rf /"},
	{cmd: `ls && rm -rf /`, want: "rm-root", match: "rm -rf /"},
	{cmd: `false || rm -rf /`, want: "rm-root"},
	{cmd: `ls | rm -rf /`, want: "rm-root"},
	{cmd: `rm -rf / &`, want: "rm-root"},
	{cmd: `sleep 1 & rm -rf /`, want: "rm-root"},
	{cmd: "ls\nrm -rf /", want: "rm-root"},
	{cmd: "ls\r\nrm -rf /", want: "rm-root", alt: []string{"unparseable"}, note: "CRLF"},
	{cmd: `echo ok;sudo id`, want: "privilege-escalation", match: "sudo id"},
	{cmd: `ls|sudo tee x`, want: "privilege-escalation"},
	{cmd: `true&&reboot`, want: "power"},
	{cmd: `! reboot`, want: "power"},
	{cmd: "rm\t-rf\t/", want: "rm-root", note: "tabs separate words"},
	{cmd: `coproc rm -rf /`, want: "rm-root"},
	{cmd: `coproc x { sudo id; }`, want: "privilege-escalation"},
	{cmd: `echo hi |& sudo tee x`, want: "privilege-escalation"},
	{cmd: `ls & sudo id`, want: "privilege-escalation"},
	{cmd: `sudo id; rm -rf /`, want: "privilege-escalation", note: "first refusing command in source order"},
	{cmd: `rm -rf /; sudo id`, want: "rm-root", note: "first refusing command in source order"},
	{cmd: `ls; echo done`, want: allow},
}

var bypassComments = []tcase{
	{cmd: "ls # harmless\nrm -rf /", want: "rm-root"},
	{cmd: "# just a comment\nsudo id", want: "privilege-escalation"},
	{cmd: `echo a#b; sudo id`, want: "privilege-escalation", note: "# inside a word is not a comment"},
	{cmd: `echo hi #; rm -rf /`, want: allow, note: "comment"},
	{cmd: `# rm -rf /`, want: allow},
	{cmd: "ls  # sudo reboot", want: allow},
}

var bypassContinuation = []tcase{
	{cmd: "rm -rf \\\n /", want: "rm-root"},
	{cmd: "r\\\nm -rf /", want: "rm-root", note: "continuation inside the command name"},
	{cmd: "sudo \\\n id", want: "privilege-escalation"},
	{cmd: "rm \\\n-r\\\nf \\\n/", want: "rm-root"},
}

var bypassGroups = []tcase{
	{cmd: `(rm -rf /)`, want: "rm-root"},
	{cmd: `{ rm -rf /; }`, want: "rm-root"},
	{cmd: `( (sudo id) )`, want: "privilege-escalation"},
	{cmd: `(cd /tmp && rm -rf /)`, want: "rm-root"},
	{cmd: `{ ls; { reboot; }; }`, want: "power"},
	{cmd: `time { reboot; }`, want: "power"},
	{cmd: `(ls) > out; (sudo id)`, want: "privilege-escalation"},
}

var bypassControlFlow = []tcase{
	{cmd: `if true; then rm -rf /; fi`, want: "rm-root"},
	{cmd: `if rm -rf /; then :; fi`, want: "rm-root"},
	{cmd: `if false; then :; elif true; then sudo id; else :; fi`, want: "privilege-escalation"},
	{cmd: `if [ -d / ]; then rm -rf /; fi`, want: "rm-root"},
	{cmd: `while true; do reboot; done`, want: "power"},
	{cmd: `until false; do sudo id; done`, want: "privilege-escalation"},
	{cmd: `while read l; do rm -rf /; done < f`, want: "rm-root"},
	{cmd: `for i in 1 2; do rm -rf /; done`, want: "rm-root"},
	{cmd: `for ((i=0;i<1;i++)); do reboot; done`, want: "power"},
	{cmd: `case x in x) rm -rf /;; esac`, want: "rm-root"},
	{cmd: `case $x in *) sudo id;; esac`, want: "privilege-escalation"},
	{cmd: `f(){ rm -rf /; }; f`, want: "rm-root"},
	{cmd: `function g { sudo id; }; g`, want: "privilege-escalation"},
	{cmd: `f(){ rm -rf /; }`, want: "rm-root", note: "ambiguous: defined but never called; every simple command is judged (safer)"},
	{cmd: `select x in a; do reboot; done`, want: "power"},
	{cmd: `[[ -f x ]] && reboot`, want: "power"},
	{cmd: `(( 1 )) && sudo id`, want: "privilege-escalation"},
	{cmd: "if true\nthen\n  rm -rf /\nfi", want: "rm-root"},
}

var bypassFind = []tcase{
	{cmd: `find . -exec sh -c 'rm -rf "$1"' _ / \;`, want: "rm-root", note: "ambiguous: positional arg of sh -c; safer reading"},
	{cmd: `find . -exec sudo id \;`, want: "privilege-escalation"},
	{cmd: `find . -name x -exec sh -c 'rm -rf /' \;`, want: "rm-root"},
	{cmd: `find . -execdir reboot \;`, want: "power"},
	{cmd: `find . -type f -exec rm -rf / {} +`, want: "rm-root"},
	{cmd: `find . -name '*.go' -exec gofmt -l {} +`, want: allow},
	{cmd: `su -c 'rm -rf /'`, want: "privilege-escalation", alt: []string{"rm-root"}},
	{cmd: `su -c 'ls' nobody`, want: "privilege-escalation"},
}

// bypassBudgets: hitting an analysis budget must never turn a refusal into an
// allowance. The contract: "If a variable has several literal candidates, any
// candidate leading to a refusal refuses" and "a script whose analysis exceeds a
// size budget" is too-complex. So each case wants its rule, or too-complex.
func bypassBudgets() []tcase {
	orTooComplex := []string{"too-complex"}
	words := func(prefix string, n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = fmt.Sprintf("%s%d", prefix, i)
		}
		return strings.Join(w, " ")
	}
	var cart1, cart2 strings.Builder
	for i := 0; i < 5; i++ {
		fmt.Fprintf(&cart1, "if q; then a%d=; else a%d=z; fi; ", i, i)
	}
	for i := 0; i < 5; i++ {
		fmt.Fprintf(&cart2, "${a%d}", i)
	}
	return []tcase{
		{cmd: "for x in a b c d e f g h rm; do $x -rf /; done", want: "rm-root", alt: orTooComplex, note: "9 loop items"},
		{cmd: "for x in a b c d e f g h sudo; do $x id; done", want: "privilege-escalation", alt: orTooComplex},
		{cmd: "for x in " + words("c", 300) + " rm; do $x -rf /; done", want: "rm-root", alt: orTooComplex},
		{cmd: "for d in build dist out tmp cache logs .next coverage /; do rm -rf $d; done", want: "rm-root", alt: orTooComplex},
		{cmd: "for t in " + words("/tmp/", 100) + " /; do rm -rf $t; done", want: "rm-root", alt: orTooComplex},
		{cmd: "x=a; x=b; x=c; x=d; x=e; x=f; x=g; x=h; x=rm; $x -rf /", want: "rm-root", alt: orTooComplex, note: "the last assignment is rm"},
		{cmd: "if a; then x=c0; " + func() string {
			var b strings.Builder
			for i := 1; i < 50; i++ {
				fmt.Fprintf(&b, "elif b%d; then x=c%d; ", i, i)
			}
			return b.String()
		}() + "else x=rm; fi; $x -rf /", want: "rm-root", alt: orTooComplex},
		{cmd: cart1.String() + cart2.String() + "rm -rf /", want: "rm-root", alt: orTooComplex, note: "5 two-valued variables: 32 combinations, one is rm"},
		{cmd: "rm -rf {" + strings.ReplaceAll(words("x", 300), " ", ",") + ",/}", want: "rm-root", alt: orTooComplex, note: "brace list of 301 targets, the last is /"},
		{cmd: "rm -rf /{a,b}" + strings.Repeat("{a,b}", 20) + " /", want: "rm-root", alt: orTooComplex},
		{cmd: "echo " + strings.Repeat("{a,b}", 30) + "; rm -rf /", want: "rm-root", alt: orTooComplex},
		{cmd: "x=a; " + strings.Repeat("x=$x$x; ", 40) + "echo $x; rm -rf /", want: "rm-root", alt: orTooComplex},
		{cmd: strings.Repeat("echo $(", 300) + "ls" + strings.Repeat(")", 300) + "; sudo id", want: "privilege-escalation", alt: orTooComplex},
		{cmd: strings.Repeat("ls; ", 50000) + "rm -rf /", want: "rm-root", alt: orTooComplex},
		{cmd: "ls" + strings.Repeat(" | cat", 10000) + " | sudo tee x", want: "privilege-escalation", alt: orTooComplex},
	}
}

func TestBypassFamilies(t *testing.T) {
	t.Parallel()
	groups := []struct {
		technique string
		cases     []tcase
	}{
		{"quote splicing", bypassQuoting},
		{"backslash and ANSI-C escapes", bypassEscapes},
		{"paths to the program", bypassPaths},
		{"flag reordering", bypassFlags},
		{"xargs", bypassXargs},
		{"env wrapper", bypassEnv},
		{"other wrappers", bypassWrappers},
		{"nested sh -c", bypassNestedShells},
		{"eval", bypassEval},
		{"trap", bypassTrap},
		{"IFS games", bypassIFS},
		{"brace expansion", bypassBraces},
		{"variable indirection", bypassVariables},
		{"for-loop variables", bypassForLoops},
		{"here-strings and here-docs", bypassHereStringsAndDocs},
		{"command and process substitution", bypassSubstitution},
		{"lists and pipelines", bypassChains},
		{"comments", bypassComments},
		{"line continuation", bypassContinuation},
		{"subshells and groups", bypassGroups},
		{"if while for case functions", bypassControlFlow},
		{"find -exec and su -c", bypassFind},
		{"analysis budgets", bypassBudgets()},
	}
	for _, g := range groups {
		runCases(t, "bypass "+g.technique, g.cases)
	}
}

func TestBypassDynamicLoader(t *testing.T) {
	runCases(t, "dynamic loader", []tcase{
		{cmd: "/lib64/ld-linux-x86-64.so.2 /bin/rm -rf /", want: "rm-root"},
		{cmd: "/lib/ld-musl-x86_64.so.1 --library-path /lib /bin/rm -rf /", want: "rm-root"},
		{cmd: "/lib64/ld-linux-x86-64.so.2 --list /bin/ls", want: allow},
	})
}

// TestBypassRepeatedNestedScript: a nested script judged once is judged again
// when an eval in between has bound the variables it reads.
func TestBypassRepeatedNestedScript(t *testing.T) {
	runCases(t, "repeated nested script", []tcase{
		{cmd: `eval 'rm -rf $d'; eval 'd=/'; eval 'rm -rf $d'`, want: "rm-root"},
		{cmd: `trap 'kill $PID' EXIT; trap 'kill $PID' EXIT`, want: allow},
		{cmd: `eval 'f(){ rm -rf "$1"; }'; f /`, want: "rm-root"},
	})
}
