package policy

// Group 5: operator layers — allow_patterns, deny_patterns, deny_programs,
// allowlist and workspace_roots — always per simple command.

import "testing"

func allowPatterns(ps ...string) func(*Config) {
	return func(c *Config) { c.AllowPatterns = ps }
}

func denyPatterns(ps ...string) func(*Config) {
	return func(c *Config) { c.DenyPatterns = ps }
}

func denyPrograms(rs ...ProgramRule) func(*Config) {
	return func(c *Config) { c.DenyPrograms = rs }
}

func allowlist(rs ...ProgramRule) func(*Config) {
	return func(c *Config) { c.Allowlist = rs }
}

func roots(rs ...string) func(*Config) {
	return func(c *Config) { c.WorkspaceRoots = rs }
}

func combine(fs ...func(*Config)) func(*Config) {
	return func(c *Config) {
		for _, f := range fs {
			f(c)
		}
	}
}

var (
	allowSudoUpdate = allowPatterns(`^sudo apt-get update$`)
	allowEcho       = allowPatterns(`^echo`)
	allowSudoID     = allowPatterns(`^sudo id$`)
)

var operatorAllowPatterns = []tcase{
	// an allow pattern excuses its own simple command from the built-in rules
	{cmd: `sudo apt-get update`, cfg: allowSudoUpdate, want: allow},
	{cmd: `s''udo "apt-get" update`, cfg: allowSudoUpdate, want: allow, note: "matched on the normalised command"},
	{cmd: `sudo id`, cfg: allowSudoID, want: allow},
	{cmd: `env sudo id`, cfg: allowSudoID, want: allow, note: "wrappers stripped before matching"},
	{cmd: `rm -rf /`, cfg: allowPatterns(`.*`), want: allow, note: "an allow pattern matching everything excuses everything"},
	// ... but never another command in the same string
	{cmd: `sudo apt-get update && rm -rf /`, cfg: allowSudoUpdate, want: "rm-root", match: "rm -rf /"},
	{cmd: `sudo apt-get update; sudo rm x`, cfg: allowSudoUpdate, want: "privilege-escalation", match: "sudo rm x"},
	{cmd: `sudo apt-get update | sudo tee x`, cfg: allowSudoUpdate, want: "privilege-escalation"},
	{cmd: `sudo apt-get update -y`, cfg: allowSudoUpdate, want: "privilege-escalation", note: "anchored pattern does not match"},
	{cmd: `git push origin && rm -rf /`, cfg: allowPatterns(`^git push`), want: "rm-root", match: "rm -rf /"},
	{cmd: `rm -rf / ; git push origin`, cfg: allowPatterns(`^git push`), want: "rm-root"},
	{cmd: `git push origin || reboot`, cfg: allowPatterns(`^git push`), want: "power"},
	{cmd: `git push origin "$(sudo id)"`, cfg: allowPatterns(`^git push`), want: "privilege-escalation"},
	// ... and never a command nested inside it
	{cmd: `echo $(sudo id)`, cfg: allowEcho, want: "privilege-escalation", match: "sudo id"},
	{cmd: `echo "$(rm -rf /)"`, cfg: allowEcho, want: "rm-root"},
	{cmd: "echo `reboot`", cfg: allowEcho, want: "power"},
	{cmd: `echo <(sudo id)`, cfg: allowEcho, want: "privilege-escalation"},
	{cmd: `bash -c 'sudo id'`, cfg: allowPatterns(`^bash -c`), want: "privilege-escalation", note: "sh -c script is nested"},
	{cmd: `sh -c 'ls; rm -rf /'`, cfg: allowPatterns(`^sh `), want: "rm-root"},
	{cmd: `eval 'reboot'`, cfg: allowPatterns(`^eval`), want: "power"},
	{cmd: `trap 'sudo id' EXIT`, cfg: allowPatterns(`^trap`), want: "privilege-escalation"},
	{cmd: `find / -name x -exec sudo id \;`, cfg: allowPatterns(`^find`), want: "privilege-escalation"},
	{cmd: `echo hi`, cfg: allowEcho, want: allow},
	// allow excuses the operator layers too
	{cmd: `git push origin main`, cfg: combine(allowPatterns(`^git push origin main$`), denyPrograms(ProgramRule{Program: "git", Args: "^push"})), want: allow},
	{cmd: `git push origin dev`, cfg: combine(allowPatterns(`^git push origin main$`), denyPrograms(ProgramRule{Program: "git", Args: "^push"})), want: "deny-program"},
	{cmd: `curl https://ok.example/x`, cfg: combine(allowPatterns(`^curl https://ok\.example/`), denyPatterns(`^curl`)), want: allow},
	{cmd: `make test`, cfg: combine(allowPatterns(`^make test$`), allowlist(ProgramRule{Program: "ls"})), want: allow},
	{cmd: `make install`, cfg: combine(allowPatterns(`^make test$`), allowlist(ProgramRule{Program: "ls"})), want: "not-allowlisted"},
	{cmd: `make test && make install`, cfg: combine(allowPatterns(`^make test$`), allowlist(ProgramRule{Program: "ls"})), want: "not-allowlisted", match: "make install"},
	{cmd: `cat /etc/os-release`, cfg: combine(allowPatterns(`^cat /etc/os-release$`), roots("/workspace")), want: allow},
	{cmd: `cat /etc/passwd`, cfg: combine(allowPatterns(`^cat /etc/os-release$`), roots("/workspace")), want: "path-outside-workspace"},
	{cmd: `cat /etc/os-release; cat /etc/passwd`, cfg: combine(allowPatterns(`^cat /etc/os-release$`), roots("/workspace")), want: "path-outside-workspace", match: "cat /etc/passwd"},
}

var operatorDenyPatterns = []tcase{
	{cmd: `git push origin main`, cfg: denyPatterns(`^git push`), want: "deny-pattern", match: "git push origin main"},
	{cmd: `git status`, cfg: denyPatterns(`^git push`), want: allow},
	{cmd: `"git" push`, cfg: denyPatterns(`^git push`), want: "deny-pattern", note: "normalised"},
	{cmd: `g'i't pu''sh`, cfg: denyPatterns(`^git push`), want: "deny-pattern"},
	{cmd: `env git push`, cfg: denyPatterns(`^git push`), want: "deny-pattern"},
	{cmd: `nice -n 5 git push`, cfg: denyPatterns(`^git push`), want: "deny-pattern"},
	{cmd: `sh -c 'git push'`, cfg: denyPatterns(`^git push`), want: "deny-pattern"},
	{cmd: `eval "git push"`, cfg: denyPatterns(`^git push`), want: "deny-pattern"},
	{cmd: `echo $(git push)`, cfg: denyPatterns(`^git push`), want: "deny-pattern"},
	{cmd: `ls && git push`, cfg: denyPatterns(`^git push`), want: "deny-pattern", match: "git push"},
	{cmd: `echo git push`, cfg: denyPatterns(`^git push`), want: allow, note: "anchored to one simple command"},
	{cmd: `curl https://example.com`, cfg: denyPatterns(`curl .*example\.com`), want: "deny-pattern"},
	{cmd: `curl https://other.org`, cfg: denyPatterns(`curl .*example\.com`), want: allow},
	{cmd: `timeout 5 python3 -c 'print(1)'`, cfg: denyPatterns(`^python3 -c`), want: "deny-pattern"},
	{cmd: `eval "shred -u secret"`, cfg: denyPatterns(`^shred`), want: "deny-pattern"},
	{cmd: `rm -rf /`, cfg: denyPatterns(`^rm`), want: "rm-root", note: "built-in rules before operator deny rules"},
	{cmd: `rm x`, cfg: denyPatterns(`^rm`), want: "deny-pattern"},
	{cmd: `ls; rm x`, cfg: denyPatterns(`^ls`, `^rm`), want: "deny-pattern", match: "ls", note: "first refusing simple command"},
	{cmd: `echo "unterminated`, cfg: denyPatterns(`unterminated`), want: "deny-pattern", note: "standard: unparseable input checked against deny_patterns on the raw string"},
	{cmd: `echo "unterminated`, cfg: denyPatterns(`^git`), want: allow},
	{cmd: `ls`, cfg: denyPatterns(`^git`, `^ls$`), want: "deny-pattern", note: "second pattern"},
}

var (
	denyGitPush = denyPrograms(ProgramRule{Program: "git", Args: "^push"})
	denyCurl    = denyPrograms(ProgramRule{Program: "curl"})
)

var operatorDenyPrograms = []tcase{
	{cmd: `git push origin`, cfg: denyGitPush, want: "deny-program", match: "git push origin"},
	{cmd: `git push`, cfg: denyGitPush, want: "deny-program"},
	{cmd: `git status`, cfg: denyGitPush, want: allow},
	{cmd: `git log -p`, cfg: denyGitPush, want: allow},
	{cmd: `/usr/bin/git push`, cfg: denyGitPush, want: "deny-program"},
	{cmd: `env git push`, cfg: denyGitPush, want: "deny-program"},
	{cmd: `env -i HOME=/x git push --force`, cfg: denyGitPush, want: "deny-program"},
	{cmd: `sh -c 'git push'`, cfg: denyGitPush, want: "deny-program"},
	{cmd: `bash -c "cd x && git push"`, cfg: denyGitPush, want: "deny-program"},
	{cmd: `nice git push --force`, cfg: denyGitPush, want: "deny-program"},
	{cmd: `timeout 60 nohup git push`, cfg: denyGitPush, want: "deny-program"},
	{cmd: `echo x | xargs git push`, cfg: denyGitPush, want: "deny-program"},
	{cmd: `"g"it 'push'`, cfg: denyGitPush, want: "deny-program"},
	{cmd: `x=git; $x push`, cfg: denyGitPush, want: "deny-program"},
	{cmd: `git status && git push`, cfg: denyGitPush, want: "deny-program", match: "git push"},
	{cmd: `echo git push`, cfg: denyGitPush, want: allow},
	{cmd: `curl https://x`, cfg: denyCurl, want: "deny-program"},
	{cmd: `curl`, cfg: denyCurl, want: "deny-program"},
	{cmd: `command curl x`, cfg: denyCurl, want: "deny-program"},
	{cmd: `$'\x63url' x`, cfg: denyCurl, want: "deny-program"},
	{cmd: `c''url x`, cfg: denyCurl, want: "deny-program"},
	{cmd: `find . -exec curl x \;`, cfg: denyCurl, want: "deny-program"},
	{cmd: `trap 'curl x' EXIT`, cfg: denyCurl, want: "deny-program"},
	{cmd: `echo $(curl x)`, cfg: denyCurl, want: "deny-program"},
	{cmd: `echo curl`, cfg: denyCurl, want: allow},
	{cmd: `which curl`, cfg: denyCurl, want: allow},
	{cmd: `command -v curl`, cfg: denyCurl, want: allow},
	{cmd: `wget x`, cfg: denyPrograms(ProgramRule{Program: "/usr/bin/wget"}), want: "deny-program", note: "path in config reduced to base name"},
	{cmd: `git reset --hard`, cfg: denyPrograms(ProgramRule{Program: "git", Args: "^push"}, ProgramRule{Program: "git", Args: `^reset --hard`}), want: "deny-program"},
	{cmd: `git reset --soft HEAD~1`, cfg: denyPrograms(ProgramRule{Program: "git", Args: "^push"}, ProgramRule{Program: "git", Args: `^reset --hard`}), want: allow},
	{cmd: `rm -rf /`, cfg: denyPrograms(ProgramRule{Program: "rm"}), want: "rm-root", note: "built-in before operator deny"},
	{cmd: `rm x`, cfg: denyPrograms(ProgramRule{Program: "rm"}), want: "deny-program"},
	{cmd: `git push`, mode: ModeStrict, cfg: denyGitPush, want: "deny-program"},
	{cmd: `echo push | xargs git`, cfg: denyGitPush, want: "deny-program", note: "xargs gets the literal piped words"},
	{cmd: `git push 2>/dev/null`, cfg: denyGitPush, want: "deny-program"},
	{cmd: `bash -c 'ls'`, cfg: denyPrograms(ProgramRule{Program: "bash"}), want: "deny-program", note: "a denied shell is denied even with a harmless script"},
	{cmd: `env ls`, cfg: denyPrograms(ProgramRule{Program: "env"}), want: "deny-program", note: "ambiguous: a denied wrapper is itself denied; safer reading"},
	{cmd: `x=ssh; $x host`, cfg: denyPrograms(ProgramRule{Program: "ssh"}), want: "deny-program"},
}

var (
	gitLsGo = allowlist(
		ProgramRule{Program: "git", Subcommands: []string{"status", "log --oneline"}},
		ProgramRule{Program: "ls"},
		ProgramRule{Program: "go", Subcommands: []string{"test", "build"}},
		ProgramRule{Program: "/usr/bin/make"},
	)
)

var operatorAllowlist = []tcase{
	{cmd: `git status`, cfg: gitLsGo, want: allow},
	{cmd: `git status -s`, cfg: gitLsGo, want: allow, note: "subcommand is a prefix"},
	{cmd: `git log --oneline -5`, cfg: gitLsGo, want: allow},
	{cmd: `git log -p`, cfg: gitLsGo, want: "not-allowlisted"},
	{cmd: `git log`, cfg: gitLsGo, want: "not-allowlisted", note: "'log --oneline' needs both words"},
	{cmd: `git push`, cfg: gitLsGo, want: "not-allowlisted", match: "git push"},
	{cmd: `git statusx`, cfg: gitLsGo, want: "not-allowlisted", note: "word prefix, not string prefix"},
	{cmd: `git`, cfg: gitLsGo, want: "not-allowlisted", note: "ambiguous: no leading argument to match a subcommand; safer reading"},
	{cmd: `ls -la`, cfg: gitLsGo, want: allow},
	{cmd: `/bin/ls`, cfg: gitLsGo, want: allow},
	{cmd: `make`, cfg: gitLsGo, want: allow, note: "config path reduced to base name"},
	{cmd: `go test ./...`, cfg: gitLsGo, want: allow},
	{cmd: `go run x`, cfg: gitLsGo, want: "not-allowlisted"},
	{cmd: `rm x`, cfg: gitLsGo, want: "not-allowlisted", match: "rm x"},
	{cmd: `ls; cat x`, cfg: gitLsGo, want: "not-allowlisted", match: "cat x"},
	{cmd: `ls | grep x`, cfg: gitLsGo, want: "not-allowlisted"},
	{cmd: `echo $(rm x)`, cfg: gitLsGo, want: "not-allowlisted", match: "rm x", note: "allowlisted echo does not excuse $()"},
	{cmd: `echo $(git push)`, cfg: gitLsGo, want: "not-allowlisted"},
	{cmd: `ls $(cat x)`, cfg: gitLsGo, want: "not-allowlisted"},
	{cmd: "echo `whoami`", cfg: gitLsGo, want: "not-allowlisted"},
	{cmd: `env ls`, cfg: gitLsGo, want: allow, note: "wrappers are transparent"},
	{cmd: `nice git status`, cfg: gitLsGo, want: allow},
	{cmd: `timeout 5 git status`, cfg: gitLsGo, want: allow},
	{cmd: `env rm x`, cfg: gitLsGo, want: "not-allowlisted"},
	{cmd: `sh -c 'ls'`, cfg: gitLsGo, want: allow, note: "sh -c with a static script is transparent"},
	{cmd: `bash -c 'git status && ls'`, cfg: gitLsGo, want: allow},
	{cmd: `sh -c 'rm x'`, cfg: gitLsGo, want: "not-allowlisted"},
	{cmd: `bash -c "git status && git push"`, cfg: gitLsGo, want: "not-allowlisted"},
	{cmd: `ls | xargs rm`, cfg: gitLsGo, want: "not-allowlisted"},
	{cmd: `find . -name x`, cfg: gitLsGo, want: "not-allowlisted"},
	{cmd: `sudo ls`, cfg: gitLsGo, want: "privilege-escalation", note: "built-in rules before allowlist"},
	{cmd: `rm -rf /`, cfg: gitLsGo, want: "rm-root"},
	{cmd: `if ls; then echo y; fi`, cfg: gitLsGo, want: allow},
	{cmd: `for f in a b; do echo $f; done`, cfg: gitLsGo, want: allow},
	// assignment-only commands and the always-allowed builtins
	{cmd: `X=1`, cfg: gitLsGo, want: allow},
	{cmd: `X=1 Y=2`, cfg: gitLsGo, want: allow},
	{cmd: `X=$(rm x)`, cfg: gitLsGo, want: "not-allowlisted", note: "the assignment is allowed, the substitution is judged"},
	{cmd: `cd /tmp && ls`, cfg: gitLsGo, want: allow},
	{cmd: `pwd`, cfg: gitLsGo, want: allow},
	{cmd: `true`, cfg: gitLsGo, want: allow},
	{cmd: `false`, cfg: gitLsGo, want: allow},
	{cmd: `:`, cfg: gitLsGo, want: allow},
	{cmd: `test -f x`, cfg: gitLsGo, want: allow},
	{cmd: `[ -f x ]`, cfg: gitLsGo, want: allow},
	{cmd: `echo hi`, cfg: gitLsGo, want: allow},
	{cmd: `printf '%s\n' hi`, cfg: gitLsGo, want: allow},
	{cmd: `exit 0`, cfg: gitLsGo, want: allow},
	{cmd: `f(){ return 1; }`, cfg: gitLsGo, want: allow},
	{cmd: `export A=1`, cfg: gitLsGo, want: allow},
	{cmd: `set -euo pipefail`, cfg: gitLsGo, want: allow},
	{cmd: `unset A`, cfg: gitLsGo, want: allow},
	{cmd: `shift`, cfg: gitLsGo, want: allow},
	{cmd: `read -r line`, cfg: gitLsGo, want: allow},
	{cmd: `f(){ local x=1; }`, cfg: gitLsGo, want: allow},
	{cmd: `declare -a arr`, cfg: gitLsGo, want: allow},
	{cmd: `sleep 1 & wait`, cfg: gitLsGo, want: "not-allowlisted", match: "sleep 1", note: "wait is a builtin, sleep is not"},
	{cmd: `ls -la`, mode: ModeStrict, cfg: gitLsGo, want: allow},
	{cmd: `time ls`, cfg: gitLsGo, want: allow},
	{cmd: `! ls`, cfg: gitLsGo, want: allow},
	{cmd: `ls &`, cfg: gitLsGo, want: allow},
	{cmd: `[[ -f x ]]`, cfg: gitLsGo, want: allow},
	{cmd: `(( x++ ))`, cfg: gitLsGo, want: allow},
	{cmd: `exec ls`, cfg: gitLsGo, want: allow},
	{cmd: `exec rm x`, cfg: gitLsGo, want: "not-allowlisted", match: "rm x"},
	{cmd: `trap 'rm x' EXIT`, cfg: gitLsGo, want: "not-allowlisted", match: "rm x"},
	{cmd: `busybox rm x`, cfg: gitLsGo, want: "not-allowlisted"},
	{cmd: `ls | xargs echo`, cfg: gitLsGo, want: allow},
	{cmd: `command -v git`, cfg: gitLsGo, want: allow, note: "command -v only prints"},
	{cmd: `git status; git -c a=b push`, cfg: gitLsGo, want: "not-allowlisted", match: "git -c a=b push"},
}

var ws = roots("/workspace")

var operatorWorkspace = []tcase{
	{cmd: `cat /etc/passwd`, cfg: ws, want: "path-outside-workspace", match: "cat /etc/passwd"},
	{cmd: `cd /`, cfg: ws, want: "path-outside-workspace"},
	{cmd: `tool --file=/etc/x`, cfg: ws, want: "path-outside-workspace"},
	{cmd: `tool --output=/etc/x`, cfg: ws, want: "path-outside-workspace"},
	{cmd: `tool -o /etc/x`, cfg: ws, want: "path-outside-workspace"},
	{cmd: `echo x > /etc/x`, cfg: ws, want: "path-outside-workspace"},
	{cmd: `cat < /etc/shadow`, cfg: ws, want: "path-outside-workspace"},
	{cmd: `ls > /tmp/out`, cfg: ws, want: "path-outside-workspace"},
	{cmd: `ls 2> /var/log/x`, cfg: ws, want: "path-outside-workspace"},
	{cmd: `ls /workspace/../etc`, cfg: ws, want: "path-outside-workspace", note: "cleaned: /etc"},
	{cmd: `ls /workspacefoo`, cfg: ws, want: "path-outside-workspace", note: "prefix must end at a path separator"},
	{cmd: `grep -r foo /`, cfg: ws, want: "path-outside-workspace"},
	{cmd: `echo /etc/passwd`, cfg: ws, want: "path-outside-workspace", note: "any absolute path argument"},
	{cmd: `cat /dev/sda`, cfg: ws, want: "path-outside-workspace", note: "not a /dev exception"},
	{cmd: `cat "/etc/passwd"`, cfg: ws, want: "path-outside-workspace"},
	{cmd: `sh -c 'cat /etc/passwd'`, cfg: ws, want: "path-outside-workspace"},
	{cmd: `echo $(cat /etc/passwd)`, cfg: ws, want: "path-outside-workspace"},
	{cmd: `env cat /etc/passwd`, cfg: ws, want: "path-outside-workspace"},
	{cmd: `ls; cat /etc/hosts`, cfg: ws, want: "path-outside-workspace", match: "cat /etc/hosts"},
	{cmd: `cat ~/.ssh/id_rsa`, cfg: ws, want: "path-outside-workspace", alt: []string{"path-traversal"}, note: "ambiguous: ~ is outside the workspace; safer reading"},
	{cmd: `cat ../../etc/passwd`, cfg: ws, want: "path-traversal"},
	{cmd: `cat a/../../x`, cfg: ws, want: "path-traversal"},
	{cmd: `cat ..`, cfg: ws, want: "path-traversal"},
	{cmd: `ls ../`, cfg: ws, want: "path-traversal"},
	{cmd: `ls > ../out`, cfg: ws, want: "path-traversal"},
	{cmd: `tool --prefix=../../usr`, cfg: ws, want: "path-traversal", note: "ambiguous: --flag=relative; safer reading"},
	{cmd: `cat ./a/../b`, cfg: ws, want: allow},
	{cmd: `cat foo/../bar`, cfg: ws, want: allow},
	{cmd: `ls /workspace/x`, cfg: ws, want: allow},
	{cmd: `ls /workspace`, cfg: ws, want: allow},
	{cmd: `ls /workspace/`, cfg: ws, want: allow},
	{cmd: `ls sub/dir`, cfg: ws, want: allow},
	{cmd: `ls .`, cfg: ws, want: allow},
	{cmd: `ls > out.txt`, cfg: ws, want: allow},
	{cmd: `tool --file=/workspace/conf`, cfg: ws, want: allow},
	{cmd: `cat /dev/null`, cfg: ws, want: allow},
	{cmd: `echo > /dev/null`, cfg: ws, want: allow},
	{cmd: `ls 2>/dev/null`, cfg: ws, want: allow},
	{cmd: `head -c 10 /dev/urandom`, cfg: ws, want: allow},
	{cmd: `head -c 10 /dev/random`, cfg: ws, want: allow},
	{cmd: `dd if=/dev/zero of=./x bs=1 count=1`, cfg: ws, want: allow},
	{cmd: `cat /dev/stdin`, cfg: ws, want: allow},
	{cmd: `echo x > /dev/stdout`, cfg: ws, want: allow},
	{cmd: `echo x > /dev/stderr`, cfg: ws, want: allow},
	{cmd: `cat /dev/fd/3`, cfg: ws, want: allow},
	{cmd: `echo hi > /dev/tty`, cfg: ws, want: allow},
	{cmd: `curl https://example.com/a/b`, cfg: ws, want: allow, note: "URLs are not paths"},
	{cmd: `git clone https://github.com/x/y`, cfg: ws, want: allow},
	{cmd: `ls -la`, cfg: ws, want: allow, note: "flags are not paths"},
	{cmd: `/bin/ls`, cfg: ws, want: allow, note: "ambiguous: the program path is not an argument"},
	{cmd: `rm -rf /`, cfg: ws, want: "rm-root", note: "built-in rules before paths"},
	{cmd: `cat /workspace/a`, cfg: roots("/workspace/"), want: allow, note: "root with trailing slash"},
	{cmd: `cat /data/x`, cfg: roots("/workspace", "/data"), want: allow, note: "second root"},
	{cmd: `cat /etc/x`, cfg: roots("/workspace", "/data"), want: "path-outside-workspace"},
	{cmd: `cat ../data/x`, cfg: roots("/workspace", "/data"), want: "path-traversal", note: "relative paths resolve from the FIRST root"},
	{cmd: `cat /etc/passwd`, mode: ModeStrict, cfg: ws, want: "path-outside-workspace"},
	{cmd: `cat /etc/passwd`, cfg: combine(ws, gitLsGo), want: "not-allowlisted", note: "allowlist before paths"},
	{cmd: `ls /etc`, cfg: combine(ws, gitLsGo), want: "path-outside-workspace"},
	{cmd: `git push /etc/x`, cfg: combine(ws, denyGitPush), want: "deny-program", note: "operator deny before paths"},
	{cmd: `cat /workspace/../etc/passwd`, cfg: ws, want: "path-outside-workspace"},
	{cmd: `cat /workspace/a/../../etc`, cfg: ws, want: "path-outside-workspace"},
	{cmd: `cat /dev/null/../../etc/passwd`, cfg: ws, want: "path-outside-workspace", note: "cleaned before the /dev exceptions"},
	{cmd: `cat /dev/fd/../../etc/passwd`, cfg: ws, want: "path-outside-workspace", note: "cleaned before the /dev exceptions"},
	{cmd: `cd .. && ls`, cfg: ws, want: "path-traversal", match: "cd .."},
	{cmd: `cat a/b/../../..`, cfg: ws, want: "path-traversal"},
	{cmd: `cat < ../x`, cfg: ws, want: "path-traversal"},
	{cmd: `ln -s /etc/passwd x`, cfg: ws, want: "path-outside-workspace"},
	{cmd: `tar -C /etc -xf x`, cfg: ws, want: "path-outside-workspace"},
	{cmd: `git -C /etc status`, cfg: ws, want: "path-outside-workspace"},
	{cmd: `cp -t /etc x`, cfg: ws, want: "path-outside-workspace"},
	{cmd: `echo x >> ~/.bashrc`, cfg: ws, want: "path-outside-workspace"},
	{cmd: `ls ~`, cfg: ws, want: "path-outside-workspace"},
	{cmd: `> /etc/x`, cfg: ws, want: "path-outside-workspace"},
	{cmd: `ls -d -- /etc`, cfg: ws, want: "path-outside-workspace"},
	{cmd: `x=/etc; cat $x/passwd`, cfg: ws, want: "path-outside-workspace", note: "literal variable followed"},
	{cmd: `cat /proc/self/environ`, cfg: ws, want: "path-outside-workspace"},
	{cmd: `sh -c 'cd / && ls'`, cfg: ws, want: "path-outside-workspace", match: "cd /"},
	{cmd: `curl -o /etc/x https://x`, cfg: ws, want: "path-outside-workspace"},
	{cmd: `git clone https://x/y /tmp/y`, cfg: ws, want: "path-outside-workspace"},
	{cmd: `cat $HOME/.ssh/id_rsa`, cfg: ws, want: "path-outside-workspace", note: "ambiguous: $HOME is outside any workspace (the contract treats $HOME as a root path for rm); safer reading"},
	{cmd: `cat a/b/../../c`, cfg: ws, want: allow},
	{cmd: `cat ../workspace/x`, cfg: ws, want: allow, note: "climbs out and back in: resolves inside the first root"},
	{cmd: `git diff main..feature`, cfg: ws, want: allow, note: "no / and not exactly .."},
	{cmd: `git log HEAD~3..HEAD`, cfg: ws, want: allow},
	{cmd: `git log origin/main..HEAD`, cfg: ws, want: allow},
	{cmd: `cat ..foo`, cfg: ws, want: allow},
	{cmd: `sed -i 's/a/b/' file`, cfg: ws, want: allow},
	{cmd: `curl -H 'Accept: application/json' https://x`, cfg: ws, want: allow},
	{cmd: `npm install @types/node`, cfg: ws, want: allow},
	{cmd: `git checkout -b feature/x`, cfg: ws, want: allow},
	{cmd: `ls 2>&1`, cfg: ws, want: allow, note: "fd duplication is not a path"},
	{cmd: `cat /etc/passwd`, cfg: roots("/"), want: allow, note: "root / contains everything"},
}

func TestOperatorLayers(t *testing.T) {
	t.Parallel()
	runCases(t, "allow_patterns", operatorAllowPatterns)
	runCases(t, "deny_patterns", operatorDenyPatterns)
	runCases(t, "deny_programs", operatorDenyPrograms)
	runCases(t, "allowlist", operatorAllowlist)
	runCases(t, "workspace_roots", operatorWorkspace)
}
