package policy

import (
	"math/rand/v2"
	"os"
	"strconv"

	"mvdan.cc/sh/v3/syntax"
	"runtime"
	"strings"
	"testing"
	"time"
)

// hostileNestings build, for each construct the parser recurses on, a
// command of about n bytes that nests it as deep as n allows.
var hostileNestings = []struct {
	name string
	gen  func(n int) string
	flat bool // costs by its size, not its depth: refused at MaxCommandBytes, bounded below
}{
	{"(", func(n int) string { return strings.Repeat("(", n) }, false},
	{"( )", func(n int) string { return around("( ", "a", " )", n) }, false},
	{"$(", func(n int) string { return around("$(", "a", ")", n) }, false},
	{`"$(`, func(n int) string { return strings.Repeat(`"$(`, n/3) }, false},
	{"{", func(n int) string { return around("{ ", "a", "; }", n) }, false},
	{"`", func(n int) string { return strings.Repeat("`", n) }, true},
	{"`echo \\`", func(n int) string { return strings.Repeat("`echo \\`echo ", n/13) }, true},
	{"` \\` \\\\`", func(n int) string {
		var b strings.Builder // level k opens with k-1 backslashes
		for k := 0; b.Len()+k+1 <= n; k++ {
			b.WriteString(strings.Repeat("\\", k) + "`")
		}
		return b.String()
	}, false},
	{"$((", func(n int) string { return around("$((", "1", "))", n) }, false},
	{"$(( (", func(n int) string { return "$((" + around("(", "1", ")", n-5) + "))" }, false},
	{"$((!", func(n int) string { return "$((" + strings.Repeat("!", n-5) + "1))" }, false},
	{"$((**", func(n int) string { return "$((" + strings.Repeat("1**", n/3) + "1))" }, false},
	{"$((?:", func(n int) string { return "$((" + strings.Repeat("1?1:", n/4) + "1))" }, false},
	{"((=", func(n int) string { return "((" + strings.Repeat("a=", n/2) + "1))" }, false},
	{"let !", func(n int) string { return "let " + strings.Repeat("!", n-5) + "1" }, false},
	{"a[!", func(n int) string { return "a[" + strings.Repeat("!", n-5) + "1]=1" }, false},
	{"${", func(n int) string { return around("${a:-", "b", "}", n) }, false},
	{"${a[", func(n int) string { return around("${a[", "1", "]}", n) }, false},
	{"a=(", func(n int) string { return "a=(" + strings.Repeat("$(a=(", n/5) }, false},
	{"[[ (", func(n int) string { return "[[ " + around("( ", "a", " )", n-6) + " ]]" }, false},
	{"[[ !", func(n int) string { return "[[ " + strings.Repeat("! ", n/2-3) + "a ]]" }, false},
	{"[[ &&", func(n int) string { return "[[ " + strings.Repeat("a && ", n/5) + "a ]]" }, false},
	{"<(", func(n int) string { return "cat " + around("<(", "a", ")", n-4) }, false},
	{"if", func(n int) string { return around("if a; then ", "b", "; fi", n) }, false},
	{"while", func(n int) string { return around("while a; do ", "b", "; done", n) }, false},
	{"for", func(n int) string { return around("for a in b; do ", "c", "; done", n) }, false},
	{"case", func(n int) string { return around("case a in a) ", "b", ";; esac", n) }, false},
	{"time", func(n int) string { return strings.Repeat("time ", n/5) + "a" }, false},
	{"&&", func(n int) string { return strings.Repeat("a && ", n/5) + "a" }, false},
	{"||\\n", func(n int) string { return strings.Repeat("a ||\n", n/4) + "a" }, false},
	{"|", func(n int) string { return strings.Repeat("a|", n/2) + "a" }, true},
	{";", func(n int) string { return strings.Repeat("a;", n/2) }, true},
	{"words", func(n int) string { return "echo" + strings.Repeat(" a", n/2-3) }, true},
	{"{a,", func(n int) string { return "echo " + around("{a,", "b", "}", n-5) }, false},
	{"{a,b}", func(n int) string { return "echo " + strings.Repeat("{a,b}", n/5-1) }, true},
	{"<<A", func(n int) string { return strings.Repeat("cat <<A\nx\nA\n", n/12) }, true},
	{"<<A<<A", func(n int) string { return "cat" + strings.Repeat(" <<A", n/8) + "\n" + strings.Repeat("A\n", n/8) }, true},
	{"$(<<A", func(n int) string { return strings.Repeat("$(cat <<A\n)\nA\n", n/15) }, false},
	{"f() {", func(n int) string { return around("f() { ", "a", "; }", n) }, false},
	{"\\\\\\n$(", func(n int) string { return strings.Repeat("$\\\n(", n/4) }, false},
	{`"'"$(`, func(n int) string { return strings.Repeat(`"'"$(`, n/5) }, false},
	{"#)$(", func(n int) string { return strings.Repeat("$(#)\n", n/5) }, false},
	{"case )", func(n int) string { return strings.Repeat("$(case a in a) ", n/15) }, false},
	{"fi arg", func(n int) string { return strings.Repeat("if a; then echo fi; ", n/20) }, false},
}

// around wraps inner in as many open...close as fit in n bytes.
func around(open, inner, close string, n int) string {
	k := max((n-len(inner))/(len(open)+len(close)), 1)
	return strings.Repeat(open, k) + inner + strings.Repeat(close, k)
}

// TestTooComplexRefusesHostileInputs sends each construct nested as deep as
// the library's limit (MaxCommandBytes) and the HTTP doors' (128 KiB) allow:
// each is refused as too-complex at once, the flat ones at the library's
// size, and none takes long or allocates more than a real script of 128 KiB
// would (5 MB; a flat one up to the token bound, about 10 MB).
func TestTooComplexRefusesHostileInputs(t *testing.T) {
	p := Default()
	for _, size := range []int{MaxCommandBytes, 128 << 10} {
		for _, h := range hostileNestings {
			src := h.gen(size)
			if len(src) > MaxCommandBytes {
				src = src[:MaxCommandBytes]
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			d := p.Check(src)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			if d.Rule != RuleTooComplex.ID && (!h.flat || size == MaxCommandBytes) {
				t.Errorf("%s, %d bytes: %+v, want too-complex", h.name, len(src), d)
			}
			if took > 2*time.Second {
				t.Errorf("%s, %d bytes: took %v", h.name, len(src), took)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
				t.Errorf("%s, %d bytes: allocated %d bytes", h.name, len(src), alloc)
			}
		}
	}
}

// TestDeepCommandSubstitutionDoesNotKillTheProcess: about 900 KB of "$(
// overflowed the parser's stack, which no recover catches, so the process
// died before the fail-closed guard could refuse the command.
func TestDeepCommandSubstitutionDoesNotKillTheProcess(t *testing.T) {
	src := strings.Repeat(`"$(`, 300_000)
	if d := Default().Check(src); d.Rule != RuleTooComplex.ID {
		t.Fatalf("%d bytes of \"$(: %+v, want too-complex", len(src), d)
	}
}

// nesting is how deep the parser nested src's tree: the levels of the nodes
// it built by recursion on the deepest path, or the longest chain of && and
// || (which the parser reads in a loop, and the check walks by recursion).
// The left operand of a binary operator of arithmetic or [[ ]] is read
// before the operator, at the level around it.
func nesting(f *syntax.File) int {
	var deepest int
	var visit func(n syntax.Node, depth int, parent syntax.Node)
	visit = func(n syntax.Node, depth int, parent syntax.Node) {
		switch p := parent.(type) {
		case *syntax.BinaryArithm:
			if p.X == n {
				depth--
			}
		case *syntax.BinaryTest:
			if p.X == n && nests(p, nil) {
				depth--
			}
		}
		if nests(n, parent) {
			depth++
		}
		if b, ok := n.(*syntax.BinaryCmd); ok && (b.Op == syntax.AndStmt || b.Op == syntax.OrStmt) {
			deepest = max(deepest, depth+chain(b))
		}
		deepest = max(deepest, depth)
		syntax.Walk(n, func(c syntax.Node) bool {
			if c == n || c == nil {
				return c == n
			}
			visit(c, depth, n)
			return false
		})
	}
	visit(f, 0, nil)
	return deepest
}

// chain is the length of the chain of && and || that ends with b.
func chain(b *syntax.BinaryCmd) int {
	n := 0
	for {
		n++
		x, ok := b.X.Cmd.(*syntax.BinaryCmd)
		if !ok || (x.Op != syntax.AndStmt && x.Op != syntax.OrStmt) || b.X.Negated || len(b.X.Redirs) > 0 {
			return n
		}
		b = x
	}
}

// nests reports whether the parser (or the check's walk) recursed to build n.
func nests(n, parent syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.CmdSubst, *syntax.Subshell, *syntax.Block, *syntax.WhileClause, *syntax.ForClause,
		*syntax.CaseClause, *syntax.ArithmExp, *syntax.ArithmCmd, *syntax.ParenArithm, *syntax.BinaryArithm,
		*syntax.UnaryArithm, *syntax.TestClause, *syntax.ParenTest, *syntax.ProcSubst, *syntax.DblQuoted,
		*syntax.ArrayExpr, *syntax.TimeClause:
		return true
	case *syntax.IfClause:
		p, ok := parent.(*syntax.IfClause)
		return !ok || p.Else != n // an elif is read in a loop
	case *syntax.ParamExp:
		return !n.Short
	case *syntax.BinaryTest:
		return n.Op == syntax.AndTest || n.Op == syntax.OrTest
	case *syntax.UnaryTest:
		return n.Op == syntax.TsNot
	}
	return false
}

// scanDepth is the deepest nesting the scan counted in src.
func scanDepth(src string) (int, bool) {
	s := scanner{src: src, openOK: true}
	ok := s.run()
	return s.deepest, ok
}

// nestingFragments are the pieces random scripts are made of: every opener
// and closer the scan knows, in and out of place, quotes, comments,
// here-documents, line continuations and reserved words as arguments.
var nestingFragments = []string{
	"$(", ")", "(", "((", "))", "{ ", "; }", "}", "{", `"`, "'", "`", "\\`", "${a:-", "${a[", "]", "$((", "$[",
	"[[ ", " ]]", " ! ", " && ", " || ", "|", "&", ";", ";;", "\n", "\\\n", "#", " # ", "<<A\n", "<<'A'\n",
	"<<-A\n", "\nA\n", "\n\tA\n", "<<<", "<(", ">(", "@(", "a", "a ", " a", "a=", "a[", "a[1]=", "=", "+",
	"!", "-", "*", "?", ":", "let ", "time ", "coproc ", "function f ", "f() ", "if a; then ", "; fi", "fi",
	"while a; do ", "for x in a; do ", "; done", "done", "case a in ", "a) ", "(a) ", ";; esac", "esac",
	"then ", "do ", "else ", "elif a; then ", "in ", "declare ", "echo ", "$'", "\\", "$\"", "$a", "$",
	"\"a\"#", "$a#", "'a'#", "#)", "\\`", "\\\\`", "a=(", "$#",
}

// randomScript builds a script of nested constructs, with closers the
// parser does not take as closers (quoted, commented, in a here-document,
// reserved words as arguments) between them.
func randomScript(rng *rand.Rand, depth int) string {
	if depth == 0 || rng.IntN(5) == 0 {
		return [...]string{"a", "echo a", "echo ')' \\) \"}\"", "echo fi done esac } ]]", "a # ) } fi\n", "true"}[rng.IntN(6)]
	}
	in, in2 := randomScript(rng, depth-1), randomScript(rng, depth-1)
	switch rng.IntN(24) {
	case 0:
		return "echo $(" + in + ")"
	case 1:
		return "( " + in + " )"
	case 2:
		return "{ " + in + "; }"
	case 3:
		return `echo "$(` + in + `)"`
	case 4:
		return "echo `" + strings.ReplaceAll(in, "`", "\\`") + "`"
	case 5:
		return "if " + in + "; then " + in2 + "; elif a; then " + in + "; else " + in2 + "; fi"
	case 6:
		return "while " + in + "; do " + in2 + "; done"
	case 7:
		return "case a in a) " + in + ";; (b|c) " + in2 + ";; esac"
	case 8:
		return "echo ${a:-$(" + in + ")}"
	case 9:
		return "echo $(( (1 + $(" + in + ")) * 2 ))"
	case 10:
		return "[[ ! ( -f a && $(" + in + ") ) ]]"
	case 11:
		return in + " && " + in2 + " || " + in
	case 12:
		return "cat <<A\n$(" + in + ")\nA\n" + in2
	case 13:
		return "f() { " + in + "; }; f"
	case 14:
		return in + " # )\n" + in2
	case 15:
		return "a=($(" + in + ") b)"
	case 16:
		return "echo $\\\n(" + in + ")"
	case 17:
		return "cat <(" + in + ")"
	case 18:
		return "for x in a b; do " + in + "; done"
	case 19:
		return "time " + in
	case 20:
		return "cat <<'A'\n)\nA\n" + in
	case 21:
		return "x=$(" + in + ")#)"
	case 22:
		return "coproc { " + in + "; }"
	}
	return "function g { " + in + "; }"
}

// TestScanCountsWhatTheParserNests holds the scan to the parser: for every
// script the parser takes, the scan counts at least as many levels as the
// tree has on its deepest path. Scripts from the corpus, the hostile
// constructs below the bound, and random scripts of the fragments above.
func TestScanCountsWhatTheParserNests(t *testing.T) {
	in := fastPathInputs(t)
	for _, h := range hostileNestings {
		for _, n := range []int{10, 100, 400, 1000} {
			in = append(in, h.gen(n))
		}
	}
	seed, n := uint64(23), 200_000
	if testing.Short() {
		n = 20_000
	}
	if v := os.Getenv("SCAN_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
		n *= 10
	}
	rng := rand.New(rand.NewPCG(seed, 1))
	for range n {
		var b strings.Builder
		for range 1 + rng.IntN(30) {
			b.WriteString(nestingFragments[rng.IntN(len(nestingFragments))])
		}
		in = append(in, b.String())
	}
	for range n / 7 {
		in = append(in, randomScript(rng, 1+rng.IntN(7)))
	}
	parsed := 0
	for _, src := range in {
		f, err := parse(src)
		if err != nil {
			continue
		}
		parsed++
		want := nesting(f)
		if got, ok := scanDepth(src); ok && got < want {
			t.Errorf("%q: the scan counted %d levels, the tree has %d", src, got, want)
		}
	}
	t.Logf("%d of %d scripts parsed", parsed, len(in))
}

// TestTooComplexAllocatesNothing: the scan runs before every parse, so it
// must cost next to nothing beside it.
func TestTooComplexAllocatesNothing(t *testing.T) {
	src := strings.Repeat("if [ -f \"$x\" ]; then echo $(cat <<A\n${y:-z}\nA\n) | grep -c 'a(' && (( i++ )); fi\n", 100)
	if n := testing.AllocsPerRun(100, func() { tooComplex(src) }); n != 0 {
		t.Fatalf("tooComplex allocated %v times", n)
	}
}

// BenchmarkTooComplex times the scan over the corpus, to compare with
// BenchmarkCorpusPass's parse.
func BenchmarkTooComplex(b *testing.B) {
	cmds := fastPathInputs(&testing.T{})[:1000]
	b.ReportAllocs()
	for b.Loop() {
		for _, c := range cmds {
			tooComplex(c)
		}
	}
}
