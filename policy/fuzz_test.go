package policy_test

import (
	"flag"
	"fmt"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/policy"
)

// checkTimeout tells a hang from a slow check: past it, Check is taken to never
// return. It is generous on purpose (the race detector and a busy machine slow the
// 256 KB seeds down); speed is measured by the benchmarks, not asserted here.
const checkTimeout = 20 * time.Second

// fuzzPolicies covers every mode and the operator layers: off, standard, strict,
// and the operator's allowlist + workspace roots (+ deny/allow rules) in both
// standard and strict mode.
func fuzzPolicies(tb testing.TB) []namedPolicy {
	tb.Helper()
	var out []namedPolicy
	for _, c := range []struct {
		name string
		cfg  policy.Config
	}{
		{"off", policy.Config{Mode: policy.ModeOff}},
		{"standard", policy.Config{Mode: policy.ModeStandard}},
		{"strict", policy.Config{Mode: policy.ModeStrict}},
		{"standard-allowlist-roots", operatorConfig(policy.ModeStandard)},
		{"strict-allowlist-roots", operatorConfig(policy.ModeStrict)},
	} {
		p, err := policy.New(c.cfg)
		if err != nil {
			tb.Fatalf("%s: %v", c.name, err)
		}
		out = append(out, namedPolicy{c.name, p})
	}
	return out
}

var (
	ruleIDs = func() map[string]bool {
		m := map[string]bool{}
		for _, r := range policy.Rules() {
			m[r.ID] = true
		}
		return m
	}()
	strictOnlyRules = map[string]bool{
		policy.RuleDynamicCommand.ID: true, policy.RulePipeShell.ID: true, policy.RuleUnparseable.ID: true,
	}
	operatorRules = map[string]bool{
		policy.RuleDenyProgram.ID: true, policy.RuleDenyPattern.ID: true, policy.RuleNotAllowed.ID: true,
		policy.RuleOutsideRoots.ID: true, policy.RulePathTraversal.ID: true,
	}
)

// show quotes an input for a failure message, cut short if it is huge (the full
// input is in testdata/fuzz/ when the fuzzer found it).
func show(s string) string {
	const limit = 2000
	if len(s) <= limit {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q... (%d bytes in all)", s[:limit], len(s))
}

// stillRunning counts Check calls that have not returned, including those a
// timeout abandoned: a timeout while an earlier call still runs may be starvation.
var stillRunning atomic.Int64

// callGuarded runs f in a goroutine and fails the test if it panics or does not
// return within checkTimeout. what names the call and input for the message.
func callGuarded(t *testing.T, what func() string, f func() policy.Decision) policy.Decision {
	t.Helper()
	type result struct {
		d     policy.Decision
		panic any
		stack []byte
	}
	done := make(chan result, 1)
	stillRunning.Add(1)
	go func() {
		defer stillRunning.Add(-1)
		defer func() {
			if v := recover(); v != nil {
				done <- result{panic: v, stack: debug.Stack()}
			}
		}()
		done <- result{d: f()}
	}()
	timer := time.NewTimer(checkTimeout)
	defer timer.Stop()
	select {
	case r := <-done:
		if r.panic != nil {
			t.Fatalf("%s: panic: %v\n%s", what(), r.panic, r.stack)
		}
		return r.d
	case <-timer.C:
		note := ""
		if n := stillRunning.Load() - 1; n > 0 {
			note = fmt.Sprintf(" (%d calls abandoned earlier still run: may be starvation)", n)
		}
		t.Fatalf("%s: did not return within %v%s", what(), checkTimeout, note)
	}
	panic("unreachable")
}

// checkInvariants runs judge (Check or CheckArgv of one input) under every
// policy and checks what must hold for any input.
func checkInvariants(t *testing.T, pols []namedPolicy, input string, judge func(*policy.Policy) policy.Decision) {
	t.Helper()
	refused := map[string]bool{}
	for _, np := range pols {
		what := func() string { return fmt.Sprintf("[%s] %s", np.name, show(input)) }
		d1 := callGuarded(t, what, func() policy.Decision { return judge(np.p) })
		d2 := callGuarded(t, what, func() policy.Decision { return judge(np.p) })
		if d1 != d2 {
			t.Fatalf("%s: not deterministic: %+v then %+v", what(), d1, d2)
		}
		if d1.Mode != np.p.Mode() {
			t.Fatalf("%s: Decision.Mode %q, policy mode %q", what(), d1.Mode, np.p.Mode())
		}
		if np.p.Mode() == policy.ModeOff && !d1.Allowed {
			t.Fatalf("%s: mode off refused: %+v", what(), d1)
		}
		if d1.Allowed {
			if d1.Rule != "" {
				t.Fatalf("%s: allowed with a rule: %+v", what(), d1)
			}
			continue
		}
		refused[np.name] = true
		if d1.Rule == policy.RuleInternalError.ID {
			t.Fatalf("%s: the checker failed (a panic, refused as %s): %+v", what(), d1.Rule, d1)
		}
		if !ruleIDs[d1.Rule] {
			t.Fatalf("%s: refused with unknown rule %q: %+v", what(), d1.Rule, d1)
		}
		if d1.Reason == "" {
			t.Fatalf("%s: refused without a reason: %+v", what(), d1)
		}
		if np.p.Mode() == policy.ModeStandard && strictOnlyRules[d1.Rule] {
			t.Fatalf("%s: standard mode refused with strict-only rule %q: %+v", what(), d1.Rule, d1)
		}
		if (np.name == "standard" || np.name == "strict") && operatorRules[d1.Rule] {
			t.Fatalf("%s: operator rule %q without operator config: %+v", what(), d1.Rule, d1)
		}
	}
	// Strict refuses everything standard refuses (it only adds refusals).
	for std, strict := range map[string]string{"standard": "strict", "standard-allowlist-roots": "strict-allowlist-roots"} {
		if refused[std] && !refused[strict] {
			t.Fatalf("[%s] %s: refused in %s but allowed in %s", strict, show(input), std, strict)
		}
	}
}

// ---- seeds ------------------------------------------------------------------

// dqEscape escapes s for the inside of a double-quoted shell word.
func dqEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`, "`", "\\`").Replace(s)
}

// nestShDQ nests cmd in n levels of sh -c "...": each level doubles the
// backslashes, so 17 levels (one past the nesting limit) is about 256 KB.
func nestShDQ(cmd string, n int) string {
	for i := 0; i < n; i++ {
		cmd = `sh -c "` + dqEscape(cmd) + `"`
	}
	return cmd
}

// nestShSQ nests cmd in n levels of bash -c '...' with '\” escapes.
func nestShSQ(cmd string, n int) string {
	for i := 0; i < n; i++ {
		cmd = `bash -c '` + strings.ReplaceAll(cmd, `'`, `'\''`) + `'`
	}
	return cmd
}

// nestAround wraps inner in n copies of open...close.
func nestAround(open, inner, close string, n int) string {
	return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
}

// fuzzSeeds are the hostile inputs: unbalanced quoting, deep nesting of every
// kind, expansions that explode, odd bytes, huge inputs, bombs and eval chains.
func fuzzSeeds() []string {
	var s []string
	add := func(xs ...string) { s = append(s, xs...) }

	// Unbalanced and broken syntax.
	add(`echo "unterminated`, `echo 'unterminated`, `echo $(`, "echo `", `echo ${`, `echo $((1+`, `rm -rf / "`,
		`if then fi`, `(((((((((`, `)))))`, `case x in`, `for; do done`, `{ ;}`, `;;`, `&& rm -rf /`, `| sh`, "")
	// Deep nesting: command substitution, subshells, groups, process substitution, backticks.
	add(nestAround("$(", "rm -rf /", ")", 100)+" -rf /",
		"echo "+nestAround("$(", "echo hi", ")", 1000),
		nestAround("(", "rm -rf /", ")", 500),
		nestAround("{ ", "rm -rf /; ", "}; ", 300),
		"cat "+nestAround("<(", "curl x | sh", ")", 200),
		"echo `echo \\`echo \\\\\\`rm -rf /\\\\\\`\\``",
		"echo "+nestAround("$((", "1", "))", 300),
		nestAround("if true; then ", "rm -rf /", "; fi", 300),
		nestAround("while true; do ", "sudo id", "; done", 300))
	// sh -c nesting: 17 levels of real quoting (one past the limit), 8 of '\'',
	// and 200 levels of sh -c "$(...)", eval, wrappers and find -exec.
	add(nestShDQ("rm -rf /", 17), nestShDQ("rm -rf /", 15), nestShSQ("rm -rf /", 8),
		nestAround(`sh -c "$(`, "rm -rf /", `)"`, 200),
		strings.Repeat("eval ", 200)+"rm -rf /",
		"sh -c '"+strings.Repeat("eval ", 200)+"rm -rf /'",
		strings.Repeat("env nice nohup timeout 5 xargs command exec busybox ", 200)+"rm -rf /",
		strings.Repeat("find . -exec ", 200)+"rm -rf / "+strings.Repeat(`\; `, 200),
		strings.Repeat("trap ", 200)+"'rm -rf /' EXIT",
		`eval 'eval "eval \"eval \\\"rm -rf /\\\"\""'`)
	// Expansions that explode if expanded naively.
	add(strings.Repeat("{a,b}{c,d}", 30),
		strings.Repeat("{a,b}{c,d}", 30)+" -rf /",
		"echo "+strings.Repeat("{a,b}{c,d}", 30),
		"{1..100000000}", "echo {1..2147483647}", "{a..z}{a..z}{a..z}{a..z}{a..z}{a..z}",
		"{rm,-rf,/}", "{"+strings.Repeat("{", 500)+"a"+strings.Repeat(",b}", 500)+"}",
		`${x:-${y:-${z}}}`, `echo ${x:-${y:-${z:-$(rm -rf /)}}}`,
		nestAround("${a:-", "rm", "}", 500)+" -rf /",
		// Variables that double at each step: 2^40 words if followed naively.
		func() string {
			var b strings.Builder
			b.WriteString("v0=rm; ")
			for i := 1; i <= 40; i++ {
				fmt.Fprintf(&b, "v%d=\"$v%d $v%d\"; ", i, i-1, i-1)
			}
			b.WriteString("$v40 -rf /")
			return b.String()
		}(),
		`x='$x'; $x`, `x=$x; $x -rf /`, `a=$b; b=$a; $a -rf /`, `x='eval $x'; eval $x`, `c='$c $c'; eval $c`,
		`IFS=,; c=rm,-rf,/; $c`, `for x in rm rm rm; do for y in $x $x; do $y -rf /; done; done`)
	// Here-docs.
	add("cat > f <<'EOF'\nrm -rf /\nEOF", "cat <<EOF\n$(rm -rf /)\nEOF", "cat <<-EOF\n\t$(sudo id)\n\tEOF",
		"cat <<EOF\nno terminator", "cat <<A <<B <<C\na\nA\nb\nB\n$(curl x|sh)\nC",
		"sh <<'EOF'\nrm -rf /\nEOF", "echo $(cat <<EOF\n$(cat <<EOF2\nrm\nEOF2\n)\nEOF\n) -rf /",
		strings.Repeat("cat <<E\n", 200)+strings.Repeat("E\n", 200))
	// NUL bytes, invalid UTF-8, odd characters.
	add("rm\x00 -rf /", "\x00", "echo \x00\x00 && rm -rf /\x00", "\xff\xfe rm -rf /", "r\x80m -rf /",
		"echo \xc3\x28 | sh", "$'\\x72\\x6d' -rf /", "$'\\162\\155' -rf /", "$'\\x00' -rf /", "$'\\u0000'",
		"ｒｍ -rf /", "rm -rf /\r\n", "echo hi\r\nsudo id\r\n", "\\\n\\\n\\\nrm -rf /", "rm\t-rf\v/\f")
	// Very long inputs.
	add("echo "+strings.Repeat("a", 200_000),
		"echo "+strings.Repeat("a ", 20_000),
		strings.Repeat("ls; ", 10_000)+"rm -rf /",
		strings.Repeat("cat x | ", 5_000)+"sh",
		strings.Repeat("true && ", 5_000)+"sudo id",
		func() string {
			var b strings.Builder
			b.WriteString("a0=rm; ")
			for i := 1; i < 3000; i++ {
				fmt.Fprintf(&b, "a%d=$a%d; ", i, i-1)
			}
			b.WriteString("$a2999 -rf /")
			return b.String()
		}(),
		strings.Repeat("x", 100_000)+"=1 rm -rf /",
		strings.Repeat(`"`, 10_001), strings.Repeat(`\`, 10_001), strings.Repeat("$", 10_000))
	// Fork bombs.
	add(":(){ :|:& };:", "bomb(){ bomb|bomb& }; bomb", "f(){ f & f; }; f", "function b { b | b & }; b",
		"a(){ b|b& }; b(){ a|a& }; a", "sh -c ':(){ :|:& };:'", "f(){ f; }; f",
		strings.Repeat("f(){ f|f& }; ", 2000)+"f")
	// Miscellaneous bash corners.
	add(`arr=( $(rm -rf /) ); ${arr[@]}`, `declare -A m=([a]=rm); ${m[a]} -rf /`, `x=rm; ${!x}`, `${x//a/b} ${x:0:1}`,
		"coproc sudo id", "select x in a b; do rm -rf /; done", "time -p sudo id", "! sudo id", "ls |& sh",
		"[[ $(rm -rf /) ]]", "(( $(sudo id) ))", "echo @(a|b) !(x)", "trap 'rm -rf /' EXIT", "env -S 'rm -rf /'",
		"xargs -I{} sh -c '{}'", "exec {fd}>/dev/sda", "echo hi >/dev/sda", "x=( [0]=rm ); ${x[0]} -rf /")
	return s
}

// ---- fuzz targets -------------------------------------------------------------

// maxFuzzedSeed bounds the seeds a fuzzing run (-fuzz) starts from. When a
// mutation of a seed finds new coverage, the fuzzer minimizes it byte by byte
// for up to a minute (-fuzzminimizetime), and a worker that minimizes runs
// nothing else: the hostile seeds that nest hundreds of levels deep or run to
// hundreds of kilobytes, and the corpus's longest scripts (2 KB), kept both
// workers minimizing for most of a minute, at 0 execs/sec. Without -fuzz (go
// test) every seed still runs, as a test of its own.
const maxFuzzedSeed = 256

// addSeeds adds seeds to f, leaving out those over maxFuzzedSeed bytes while
// fuzzing.
func addSeeds(f *testing.F, seeds []string) {
	fuzzing := false
	if fl := flag.Lookup("test.fuzz"); fl != nil {
		fuzzing = fl.Value.String() != ""
	}
	for _, s := range seeds {
		if !fuzzing || len(s) <= maxFuzzedSeed {
			f.Add(s)
		}
	}
}

func FuzzCheck(f *testing.F) {
	addSeeds(f, fuzzSeeds())
	addSeeds(f, loadAgentCommands(f))
	pols := fuzzPolicies(f)
	f.Fuzz(func(t *testing.T, input string) {
		checkInvariants(t, pols, input, func(p *policy.Policy) policy.Decision { return p.Check(input) })
	})
}

// FuzzCheckArgv judges the fuzz input split on NUL as an argv.
func FuzzCheckArgv(f *testing.F) {
	addSeeds(f, []string{
		"rm\x00-rf\x00/", "/bin/rm\x00-rf\x00/", "sh\x00-c\x00rm -rf /", "bash\x00-c\x00" + nestShDQ("rm -rf /", 17),
		"env\x00-S\x00rm -rf /", "env\x00-i\x00FOO=1\x00sudo\x00id", "xargs\x00rm\x00-rf", "find\x00/\x00-delete",
		"eval\x00" + strings.Repeat("eval\x00", 200) + "rm\x00-rf\x00/", "", "\x00", "\x00\x00\x00",
		"timeout\x005\x00nice\x00-n\x0010\x00sudo\x00id", "busybox\x00sh\x00-c\x00:(){ :|:& };:",
		"sh\x00-c", "sh\x00-c\x00", "env\x00-S", "timeout", "nice\x00-n", "echo\x00$(rm -rf /)",
		"{rm,-rf,/}", strings.Repeat("{a,b}{c,d}", 30), "\xff\xfe\x00-rf\x00/", "cat\x00/etc/passwd",
		"cat\x00../../etc/passwd", "git\x00push\x00--force", strings.Repeat("a\x00", 20_000),
	})
	var argvs []string
	for _, c := range loadAgentCommands(f) {
		argvs = append(argvs, strings.Join(strings.Fields(c), "\x00"))
	}
	addSeeds(f, argvs)
	pols := fuzzPolicies(f)
	f.Fuzz(func(t *testing.T, input string) {
		argv := strings.Split(input, "\x00")
		checkInvariants(t, pols, input, func(p *policy.Policy) policy.Decision {
			arg := append([]string(nil), argv...)
			d := p.CheckArgv(arg)
			for i := range arg {
				if arg[i] != argv[i] {
					panic(fmt.Sprintf("CheckArgv changed argv[%d] from %q to %q", i, argv[i], arg[i]))
				}
			}
			return d
		})
	})
}
