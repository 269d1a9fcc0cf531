package policy

// Group 4: strict mode refuses the undecidable (dynamic command names, pipes into
// an interpreter, unparseable input); standard allows the very same inputs.

import "testing"

// strictPair is an input strict refuses with rule and standard allows.
type strictPair struct {
	cmd  string
	rule string
	note string
}

// pairs turns strictPairs into a strict case and a standard case each.
func pairs(ps []strictPair) []tcase {
	var out []tcase
	for _, p := range ps {
		out = append(out,
			tcase{cmd: p.cmd, mode: ModeStrict, want: p.rule, note: p.note},
			tcase{cmd: p.cmd, want: allow, note: "standard allows what only strict refuses"},
		)
	}
	return out
}

var strictDynamic = []strictPair{
	{cmd: `$x -rf /`, rule: "dynamic-command", note: "x never assigned"},
	{cmd: `$x`, rule: "dynamic-command"},
	{cmd: `${x} ls`, rule: "dynamic-command"},
	{cmd: `${!x}`, rule: "dynamic-command"},
	{cmd: `$1 -rf /`, rule: "dynamic-command"},
	{cmd: `"$@"`, rule: "dynamic-command"},
	{cmd: `$(echo $x)`, rule: "dynamic-command", note: "echo of an unknown variable"},
	{cmd: "`cat name` -la", rule: "dynamic-command"},
	{cmd: `$(cat name.b64 | base64 -d) id`, rule: "dynamic-command", note: "the decoded text is not known ($(echo c3VkbwoK | base64 -d) id is sudo id, stages_test.go)"},
	{cmd: `/bin/r? -rf /tmp/x`, rule: "dynamic-command", note: "glob in the name"},
	{cmd: `/bin/r* x`, rule: "dynamic-command"},
	{cmd: `x=$(cat f); $x`, rule: "dynamic-command", note: "non-literal value"},
	{cmd: `read x; $x`, rule: "dynamic-command"},
	{cmd: `"$HOME/bin/tool" --flag`, rule: "dynamic-command"},
	{cmd: `eval "$x"`, rule: "dynamic-command", note: "eval of a non-static string"},
	{cmd: `eval "$(cat cmd.txt)"`, rule: "dynamic-command"},
	{cmd: `sh -c "$x"`, rule: "dynamic-command", note: "sh -c of a non-static string"},
	{cmd: `bash -c "$(cat script)"`, rule: "dynamic-command"},
	{cmd: `env $x -la`, rule: "dynamic-command", note: "dynamic after a wrapper"},
	{cmd: `nice "$CMD"`, rule: "dynamic-command"},
	{cmd: `for c in $(cat list); do $c; done`, rule: "dynamic-command"},
	{cmd: `ls; $x`, rule: "dynamic-command"},
	{cmd: `echo $($y)`, rule: "dynamic-command", note: "dynamic name inside a substitution"},
	{cmd: `find . | xargs rm -r`, rule: "dynamic-command", note: "strict refuses xargs rm -r"},
	{cmd: `"${cmd[@]}"`, rule: "dynamic-command"},
	{cmd: `exec "$@"`, rule: "dynamic-command"},
	{cmd: `x=$(which ls); $x`, rule: "dynamic-command"},
	{cmd: `/???/?m -rf /`, rule: "dynamic-command", note: "glob for /bin/rm"},
}

var strictPipeToInterpreter = []strictPair{
	{cmd: `echo ls | sh`, rule: "pipe-to-interpreter"},
	{cmd: `cat x.py | python3`, rule: "pipe-to-interpreter"},
	{cmd: `cat s.sh | bash`, rule: "pipe-to-interpreter"},
	{cmd: `echo 'puts 1' | ruby`, rule: "pipe-to-interpreter"},
	{cmd: `cat x | perl`, rule: "pipe-to-interpreter"},
	{cmd: `cat x | node`, rule: "pipe-to-interpreter"},
	{cmd: `cat x | php`, rule: "pipe-to-interpreter"},
	{cmd: `cat x | lua`, rule: "pipe-to-interpreter"},
	{cmd: `cat x | python`, rule: "pipe-to-interpreter"},
	{cmd: `cat x | zsh`, rule: "pipe-to-interpreter"},
	{cmd: `cat x | bash -s`, rule: "pipe-to-interpreter"},
	{cmd: `cat x | bash -`, rule: "pipe-to-interpreter"},
	{cmd: `printf 'ls' | busybox sh`, rule: "pipe-to-interpreter"},
	{cmd: `cat x | env sh`, rule: "pipe-to-interpreter"},
	{cmd: `cat x | /bin/sh`, rule: "pipe-to-interpreter"},
	{cmd: `cat x | tee y | sh`, rule: "pipe-to-interpreter"},
	{cmd: `base64 -d x | bash`, rule: "pipe-to-interpreter"},
	{cmd: `echo bHMK | base64 -d | sh`, rule: "pipe-to-interpreter", note: "decodes to ls: only strict refuses (echo cm0gLXJmIC8= | base64 -d | sh is rm -rf / in both modes, stages_test.go)"},
	{cmd: `bash <<< "ls"`, rule: "pipe-to-interpreter"},
	{cmd: "sh <<EOF\nls\nEOF", rule: "pipe-to-interpreter"},
	{cmd: `cat x | sh -s -- arg`, rule: "pipe-to-interpreter"},
	{cmd: `cat x | bash -x`, rule: "pipe-to-interpreter"},
	{cmd: `cat x | bash /dev/stdin`, rule: "pipe-to-interpreter", note: "ambiguous: the script-file argument IS stdin; safer reading"},
}

var strictUnparseable = []strictPair{
	{cmd: `echo "unterminated`, rule: "unparseable"},
	{cmd: `echo 'x`, rule: "unparseable"},
	{cmd: `if then fi`, rule: "unparseable"},
	{cmd: `(`, rule: "unparseable"},
	{cmd: `ls |`, rule: "unparseable"},
	{cmd: `ls &&`, rule: "unparseable"},
	{cmd: `fi`, rule: "unparseable"},
	{cmd: `case`, rule: "unparseable"},
	{cmd: `{ ls`, rule: "unparseable"},
	{cmd: `for do done`, rule: "unparseable"},
	{cmd: `$(`, rule: "unparseable"},
	{cmd: "echo `", rule: "unparseable"},
	{cmd: `))`, rule: "unparseable"},
	{cmd: `ls ;;`, rule: "unparseable"},
	{cmd: `rm -rf / )`, rule: "unparseable", note: "standard: unparseable is allowed unless a deny_pattern matches the raw string"},
	{cmd: `echo $((`, rule: "unparseable"},
	{cmd: `a=(`, rule: "unparseable"},
	{cmd: `done`, rule: "unparseable"},
}

// strictStillAllowed: strict refuses nothing static and harmless.
var strictStillAllowed = []tcase{
	{cmd: `ls -la`, mode: ModeStrict},
	{cmd: `git status && git diff`, mode: ModeStrict},
	{cmd: `echo hi | grep h`, mode: ModeStrict},
	{cmd: `x=ls; $x`, mode: ModeStrict, note: "literal value is static"},
	{cmd: `for x in ls pwd; do $x; done`, mode: ModeStrict},
	{cmd: `sh -c 'ls'`, mode: ModeStrict},
	{cmd: `eval "echo hi"`, mode: ModeStrict},
	{cmd: `command -v git`, mode: ModeStrict},
	{cmd: `cat data | sh script.sh`, mode: ModeStrict, note: "script-file argument: stdin is data"},
	{cmd: `cat x | python3 script.py`, mode: ModeStrict},
	{cmd: `cat x | sh -c 'cat > y'`, mode: ModeStrict},
	{cmd: `echo $x`, mode: ModeStrict, note: "dynamic argument, static name"},
	{cmd: `ls "$dir"`, mode: ModeStrict},
	{cmd: "cat <<'EOF'\nrm -rf /\nEOF", mode: ModeStrict},
	{cmd: `go test ./... 2>&1 | tail`, mode: ModeStrict},
	{cmd: `echo $(date)`, mode: ModeStrict},
}

// strictBuiltinsStillApply: the built-in rules refuse in strict with their own ids.
var strictBuiltinsStillApply = []tcase{
	{cmd: `rm -rf /`, mode: ModeStrict, want: "rm-root", match: "rm -rf /"},
	{cmd: `sudo id`, mode: ModeStrict, want: "privilege-escalation"},
	{cmd: `r''m -rf /`, mode: ModeStrict, want: "rm-root"},
	{cmd: `x=rm; $x -rf /`, mode: ModeStrict, want: "rm-root"},
	{cmd: `sh -c 'reboot'`, mode: ModeStrict, want: "power"},
}

func TestStrictMode(t *testing.T) {
	t.Parallel()
	runCases(t, "strict dynamic command name", pairs(strictDynamic))
	runCases(t, "strict pipe to interpreter", pairs(strictPipeToInterpreter))
	runCases(t, "strict unparseable", pairs(strictUnparseable))
	runCases(t, "strict static and harmless", strictStillAllowed)
	runCases(t, "strict built-in rules", strictBuiltinsStillApply)
}

// TestStrictResolvesLiteralSubstitutions: a substitution of a literal echo is
// decided statically, so strict mode judges the command it names.
func TestStrictResolvesLiteralSubstitutions(t *testing.T) {
	runCases(t, "literal substitution", []tcase{
		{cmd: `$(echo ls)`, mode: ModeStrict, want: allow},
		{cmd: "`echo ls` -la", mode: ModeStrict, want: allow},
		{cmd: `eval "$(echo ls)"`, mode: ModeStrict, want: allow},
		{cmd: `$(echo rm) -rf /`, mode: ModeStrict, want: "rm-root"},
	})
}
