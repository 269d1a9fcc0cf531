package policy

import (
	"encoding/json"
	"maps"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// The checker's fast paths (docs/policy.md, Speed) must answer exactly as the
// plain code they stand for: these tests compare them on the corpus, on the
// edges of what they look for, and on random text.

// randomTexts returns n texts of fewer than maxLen bytes drawn from alphabet,
// the same for the same seed.
func randomTexts(seed uint64, alphabet string, n, maxLen int) []string {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	out := make([]string, n)
	for k := range out {
		b := make([]byte, rng.IntN(maxLen))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		out[k] = string(b)
	}
	return out
}

func fastPathInputs(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("testdata/agent_commands.json")
	if err != nil {
		t.Fatal(err)
	}
	var in []string
	if err := json.Unmarshal(data, &in); err != nil {
		t.Fatal(err)
	}
	for _, w := range bindingWords {
		in = append(in, w, w[:len(w)-1], w[:2], w[:1], "x"+w, w+"y", " "+w+" ", "a"+w[:2], w[:2]+"\n"+w[2:])
	}
	return append(in, randomTexts(1, "fosetlcunaiprdmgyx =(/\t\n\u00a0\xff", 20_000, 12)...)
}

func TestMayBindAsContains(t *testing.T) {
	plain := func(src string) bool {
		if strings.ContainsAny(src, "=(") {
			return true
		}
		for _, w := range bindingWords {
			if strings.Contains(src, w) {
				return true
			}
		}
		return false
	}
	for _, s := range fastPathInputs(t) {
		if got, want := mayBind(s), plain(s); got != want {
			t.Errorf("mayBind(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestCommandNameAsTrimSpace(t *testing.T) {
	plain := func(s string) string {
		s = strings.TrimSpace(s)
		if i := strings.LastIndexByte(s, '/'); i >= 0 {
			s = s[i+1:]
		}
		return s
	}
	in := append(fastPathInputs(t), "", " ", "rm", " rm", "rm ", "\u00a0rm", "rm\u0085", "/bin/rm", "/bin/ rm ",
		"\t/usr/bin/rm\n", "ｒｍ", "\xff", "rm\xff", "\u2003/bin/rm\u2003", "\v\f\r")
	for _, s := range in {
		if got, want := commandName(s), plain(s); got != want {
			t.Errorf("commandName(%q) = %q, want %q", s, got, want)
		}
	}
}

func TestWordLitAsLit(t *testing.T) {
	p := syntax.NewParser(syntax.Variant(syntax.LangBash))
	for _, src := range []string{`a`, `'a'`, `"a"`, `a'b'`, `a$b`, `$b`, `a\ b`, `"$a"b`, `a{b,c}`, `''`} {
		f, err := p.Parse(strings.NewReader("x "+src), "")
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		w := f.Stmts[0].Cmd.(*syntax.CallExpr).Args[1]
		if got, want := wordLit(w), w.Lit(); got != want {
			t.Errorf("wordLit(%s) = %q, want %q", src, got, want)
		}
	}
}

func TestKindOfAsNameKinds(t *testing.T) {
	in := fastPathInputs(t)
	for name := range nameEntries {
		in = append(in, name, name+"x", name[:len(name)-1])
	}
	for _, s := range in {
		if got, want := entryOf(s), nameEntries[s]; got != want {
			t.Errorf("entryOf(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestIsLitWordHoldsNoCommands: the walk steps over a word isLitWord accepts
// as a word mayHoldCommands rejects.
func TestIsLitWordHoldsNoCommands(t *testing.T) {
	p := syntax.NewParser(syntax.Variant(syntax.LangBash))
	n := 0
	for _, src := range fastPathInputs(t) {
		f, err := p.Parse(strings.NewReader(src), "")
		if err != nil {
			continue
		}
		syntax.Walk(f, func(node syntax.Node) bool {
			if w, ok := node.(*syntax.Word); ok && isLitWord(w) {
				n++
				if mayHoldCommands(w) {
					t.Errorf("%q: word %q: isLitWord, but mayHoldCommands", src, w.Lit())
				}
			}
			return true
		})
	}
	if n == 0 {
		t.Error("no literal words seen")
	}
}

// TestCollectTellsForkBombsAsSpawnsItself: collect's walk tells the fork
// bombs (treeWalk.body) that spawnsItself, its own walk of each function
// body, tells.
func TestCollectTellsForkBombsAsSpawnsItself(t *testing.T) {
	in := append(fastPathInputs(t),
		":(){ :|:& };:", "bomb(){ bomb|bomb& }; bomb", "f(){ f & f; }; f", "f(){ f; }; f", "f(){ f; f; }",
		"f(){ (f &); f; }", "f(){ f & }", "f(){ g(){ f|:; }; }", "f(){ g(){ g|:; }; }", "f(){ g(){ f; }; f; }",
		"f(){ :& >$(f); }", "f(){ : >$(f) & }", "f(){ : >$(f) & f; }", "f(){ { f; } & }", "f(){ echo $(f) | cat; }",
		"f(){ x=$(f); f; }", "f(){ f() { f; }; f; }", "f(){ a | { b & f; }; }", "f(){ cat <<EOF\n$(f)\nEOF\n}",
		"f(){ cat <<EOF &\n$(f) $(f)\nEOF\n}", "function f { f | f & }", "f(){ f 2>$(f); }", "f(){ : & } >$(f)",
		"f(){ (f) & }", "f(){ coproc f; }", "f(){ time f | :; }", "f(){ [[ $(f) ]]; f; }", "f(){ for i in $(f); do f; done; }",
		"f() { case $(f) in *) f|: ;; esac; }", "f(){ x=${y:-$(f)}; f; }", "f(){ g & }; g(){ f|f; }", "f(){ echo; } &")
	p := Default()
	bombs := 0
	for _, src := range in {
		f, err := parse(src)
		if err != nil {
			continue
		}
		want := map[string]bool{}
		syntax.Walk(f, func(n syntax.Node) bool {
			if fd, ok := n.(*syntax.FuncDecl); ok && fd.Name != nil && spawnsItself(fd.Name.Value, fd.Body) {
				want[fd.Name.Value] = true
			}
			return true
		})
		bombs += len(want)
		c := p.newChecker()
		c.collect(src, f)
		if !c.done() && !maps.Equal(c.bombs, want) {
			t.Errorf("%q: collect tells the fork bombs %v, spawnsItself %v", src, c.bombs, want)
		}
	}
	if bombs < 10 {
		t.Errorf("only %d fork bombs among the inputs", bombs)
	}
}

// spawnsItself reports whether a function body calls the function in a pipeline,
// in the background, or more than once: the shape of every fork bomb.
func spawnsItself(name string, body *syntax.Stmt) bool {
	v := &selfCalls{name: name}
	if body.Background {
		v.walkForked(body.Cmd)
	} else {
		v.root = body
		walk(body, v)
	}
	return v.forkedCall || v.calls >= 2
}

// selfCalls is the visitor of spawnsItself: it counts the calls of a function
// in its body, and those that run in a fork (a pipeline or the background).
type selfCalls struct {
	name       string
	calls      int
	forkedCall bool        // a call runs in a fork
	inFork     bool        // the walk is inside a fork
	root       syntax.Node // where the current walk started
}

func (v *selfCalls) enter(n syntax.Node) bool {
	switch n := n.(type) {
	case *syntax.Word:
		return mayHoldCommands(n) // a call is only inside a substitution
	case *syntax.Stmt:
		if n.Background && n != v.root {
			v.walkForked(n.Cmd)
			return false
		}
	case *syntax.BinaryCmd:
		if n.Op == syntax.Pipe || n.Op == syntax.PipeAll {
			v.walkForked(n.X)
			v.walkForked(n.Y)
			return false
		}
	case *syntax.CallExpr:
		if len(n.Args) > 0 && wordLit(n.Args[0]) == v.name {
			v.calls++
			v.forkedCall = v.forkedCall || v.inFork
		}
	}
	return true
}

func (v *selfCalls) leave() {}

// walkForked walks n as a command that runs in a fork.
func (v *selfCalls) walkForked(n syntax.Node) {
	if n == nil {
		return // a statement of redirections only: f(){ >x & }
	}
	inFork, root := v.inFork, v.root
	v.inFork, v.root = true, n
	walk(n, v)
	v.inFork, v.root = inFork, root
}

// TestFunctionAsFuncs: the filter of function names never hides a function
// from funcs, and lets through few names that are none.
func TestFunctionAsFuncs(t *testing.T) {
	in := fastPathInputs(t)
	rng := rand.New(rand.NewPCG(3, 4))
	passed := 0
	for round := 0; round < 200; round++ {
		c := &checker{funcs: map[string]funcDef{}}
		for range rng.IntN(20) {
			name := in[rng.IntN(len(in))]
			c.funcs[name] = funcDef{src: name}
			c.funcNames.add(name)
		}
		for _, name := range in[:2000] {
			got, gotOK := c.function(name)
			want, wantOK := c.funcs[name]
			if got != want || gotOK != wantOK {
				t.Fatalf("function(%q) = %v, %v; funcs has %v, %v", name, got, gotOK, want, wantOK)
			}
			if c.funcNames.mayHold(name) && !wantOK {
				passed++
			}
		}
	}
	if passed > 200*2000/4 {
		t.Errorf("the filter let through %d of %d names that are no function", passed, 200*2000)
	}
}

// TestReplayAsWalk: the judging of a script collect walked through, replayed
// from the events collect recorded, judges as the judging walk of the tree
// (docs/policy.md, Speed): the same decision, the same trace, the same steps.
func TestReplayAsWalk(t *testing.T) {
	strict, err := New(Config{Mode: ModeStrict, WorkspaceRoots: []string{"/workspace"},
		Allowlist: []ProgramRule{{Program: "ls"}, {Program: "git"}, {Program: "echo"}}})
	if err != nil {
		t.Fatal(err)
	}
	in := append(fastPathInputs(t), "f(){ rm -rf /; }; f", "x=rm; $x -rf /", "a=1; echo $a | sh", "declare x=$(id); let y=1",
		"for i in a b; do echo $i; done >/etc/x", "f(){ g | sh; }; f a b", `x='rm -rf /'; sh -c "$x"`, "a=b; cat <<EOF | sh\nrm\nEOF")
	judged := 0
	for _, p := range []*Policy{Default(), strict} {
		for _, src := range in {
			f, err := parse(src)
			if err != nil || !mayBind(src) {
				continue
			}
			judged++
			replayed := p.newChecker()
			replayed.trace = []Step{}
			replayed.script(src, 0)

			// script, with the judging walk in place of collect's record
			walked := p.newChecker()
			walked.trace = []Step{}
			walked.judgedBefore(src)
			before := walked.stateSize()
			walked.collect(src, f)
			walked.markSureFunctions(f)
			walked.events = walked.events[:0]
			if walked.stateSize() != before {
				walked.generation++
			}
			walked.walk(src, f, 0)

			if d, want := replayed.decision(), walked.decision(); d != want {
				t.Errorf("%q: replayed %+v, walked %+v", src, d, want)
			}
			if !slices.Equal(replayed.trace, walked.trace) {
				t.Errorf("%q: replayed trace %v, walked %v", src, replayed.trace, walked.trace)
			}
			if replayed.steps != walked.steps && min(replayed.steps, walked.steps) <= maxSteps {
				t.Errorf("%q: replayed in %d steps, walked in %d", src, replayed.steps, walked.steps)
			}
		}
	}
	if judged < 1000 {
		t.Errorf("only %d scripts judged", judged)
	}
}

// TestStringRunnersAsStringRunner: unwrap asks stringRunner only about the
// names of stringRunners; it finds no script for any other.
func TestStringRunnersAsStringRunner(t *testing.T) {
	in := fastPathInputs(t)
	for name := range nameEntries {
		in = append(in, name)
	}
	argvs := [][]word{nil, {{s: "-c"}, {s: "rm -rf /"}}, {{s: "host"}, {s: "rm"}}, {{s: ":::"}, {s: "rm"}},
		{{s: "lock"}, {s: "-c"}, {s: "x"}}, {{s: "-n"}, {s: "1"}, {s: "ls"}}}
	for _, name := range in {
		for _, args := range argvs {
			if _, ok := stringRunner(name, args); ok && kindOf(name)&kindStringRunner == 0 {
				t.Errorf("stringRunner(%q, %v) runs a string, but %q is not among stringRunners", name, args, name)
			}
		}
	}
	for _, name := range stringRunners {
		found := false
		for _, args := range argvs {
			_, ok := stringRunner(name, args)
			found = found || ok
		}
		if !found {
			t.Errorf("stringRunner runs no string for %q, of stringRunners", name)
		}
	}
}

// TestSedCommandsAsRegexp: sedCommands, which skips scripts with no e before
// a blank, finds what sedExec finds.
func TestSedCommandsAsRegexp(t *testing.T) {
	plain := func(script string) []string {
		var out []string
		for _, m := range sedExec.FindAllStringSubmatch(script, -1) {
			out = append(out, m[1])
		}
		return out
	}
	in := append(fastPathInputs(t), "e rm -rf /", "1e rm", "$e\trm", "/x/,/y/ !e id", "s/a/b/;e id", "{e id}",
		"s/the end/x/", "e", "e\n", "ee  x", "s/x/y/e", "1 e  ls;2e\tpwd")
	in = append(in, randomTexts(5, "e \t;{}/$!,0123456789sxy\n\\", 20_000, 16)...)
	found := 0
	for _, s := range in {
		got, want := sedCommands(s), plain(s)
		if !slices.Equal(got, want) {
			t.Errorf("sedCommands(%q) = %q, want %q", s, got, want)
		}
		found += len(want)
	}
	if found < 100 {
		t.Errorf("only %d e commands among the inputs", found)
	}
}

func TestSystemPathAgainAsSystemPath(t *testing.T) {
	in := fastPathInputs(t)
	for _, s := range []string{"/proc/self/root/proc/self/root/dev/sda", "/proc/1/root/proc/thread-self/root",
		"/proc/self/root", "/proc/", "/proc", "//proc/self/root/dev/sda", "/proc/self/rootx/dev/sda", "", ".", "/"} {
		in = append(in, s, s+"/..", "/"+s, "/proc/self/root"+s)
	}
	for _, s := range in {
		for _, f := range strings.Fields(s) {
			in = append(in, f)
		}
	}
	for _, s := range in {
		p := systemPath(s)
		if got, want := systemPathAgain(p), systemPath(p); got != want {
			t.Errorf("systemPathAgain(%q) = %q, want %q", p, got, want)
		}
		if got, want := isSystemBlockDevice(systemPathAgain(p)), isBlockDevice(p); got != want {
			t.Errorf("isSystemBlockDevice(systemPathAgain(%q)) = %v, want isBlockDevice's %v", p, got, want)
		}
	}
}

// TestCallFilterHoldsCachedCalls holds callArgs's filter to the map it
// filters: it never turns away a call the map holds.
func TestCallFilterHoldsCachedCalls(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, src := range fastPathInputs(t) {
		f, err := parse(src)
		if err != nil {
			continue
		}
		c := &checker{p: Default(), vars: vars{}}
		var calls []*syntax.CallExpr
		syntax.Walk(f, func(n syntax.Node) bool {
			if call, ok := n.(*syntax.CallExpr); ok {
				calls = append(calls, call)
			}
			return true
		})
		for _, call := range calls {
			c.callArgs(src, call, rng.IntN(2) == 0)
		}
		for _, call := range calls {
			if _, cached := c.argsCache[call]; cached && !c.cachedCalls.mayHold(call) {
				t.Fatalf("%q: the filter turns away a cached call", src)
			}
		}
	}
}

// TestForgetAsNewChecker holds release's field-by-field reset to building a
// checker of the maps, slabs and lists it keeps, and copying it over the
// checker: a field added to checker and not to forget fails here.
func TestForgetAsNewChecker(t *testing.T) {
	p := Default()
	for _, src := range fastPathInputs(t)[:3000] {
		c := &checker{p: p, vars: vars{}, bombs: map[string]bool{}, funcs: map[string]funcDef{},
			aliases: map[string]string{}, inCall: map[string]bool{}, judged: map[string]int{},
			argsCache: map[*syntax.CallExpr][][]word{}}
		c.trace = []Step{}
		c.script(src, 0)
		c.script("f() { :; }; a=1; cd /tmp; curl x | sh", 0) // set what the input may not
		c.decision()
		want := checker{vars: c.vars, bombs: c.bombs, funcs: c.funcs, aliases: c.aliases, inCall: c.inCall,
			judged: c.judged, argsCache: c.argsCache, fetchedVars: c.fetchedVars[:0], slabs: c.slabs,
			spareWalks: c.spareWalks, parser: c.parser, events: c.events[:0]}
		c.forget()
		if !reflect.DeepEqual(*c, want) {
			t.Fatalf("%q: forget left %+v, want %+v", src, *c, want)
		}
	}
}

// TestStaticPartAsBuilder holds staticPart's double-quoted strings of several
// parts (looked at whole before one is built) to building them part by part.
func TestStaticPartAsBuilder(t *testing.T) {
	plain := func(p *syntax.DblQuoted) (segment, bool) {
		var b strings.Builder
		for _, inner := range p.Parts {
			lit, ok := inner.(*syntax.Lit)
			if !ok {
				return segment{}, false
			}
			s, _ := unescapeLit(lit.Value, true)
			b.WriteString(s)
		}
		return segment{s: b.String()}, true
	}
	in := append(fastPathInputs(t), `"a\"b"`, `"a\$b\\c"`, `"x $y"`, `"$(z) w"`, `"a\"$b"`, `"\"\"\""`, "\"`x`\"", `""`)
	seen := 0
	for _, src := range in {
		f, err := parse(src)
		if err != nil {
			continue
		}
		syntax.Walk(f, func(n syntax.Node) bool {
			if p, ok := n.(*syntax.DblQuoted); ok && len(p.Parts) > 1 {
				seen++
				got, gotOK := staticPart(p, false)
				want, wantOK := plain(p)
				if got != want || gotOK != wantOK {
					t.Errorf("%q: staticPart = %+v, %v, want %+v, %v", src, got, gotOK, want, wantOK)
				}
			}
			return true
		})
	}
	if seen < 100 {
		t.Errorf("only %d double-quoted strings of several parts", seen)
	}
}

func TestMentionsVarAsContains(t *testing.T) {
	in := fastPathInputs(t)
	in = append(in, "$x", "${x}", "$", "${", "a$$x", "$y$x", "${y}${x", "$xy", "x$", "$$", "${{x", "$ {x")
	for _, s := range in {
		for _, name := range []string{"x", "xy", "URL", "a", "f", "o", ""} {
			want := strings.Contains(s, "$"+name) || strings.Contains(s, "${"+name)
			if got := mentionsVar(s, name); got != want {
				t.Errorf("mentionsVar(%q, %q) = %v, want %v", s, name, got, want)
			}
		}
	}
}

// TestStateChangedAsStateSize holds stateChanged to comparing stateSize, on
// a checker's first script (an empty state) and on a second.
func TestStateChangedAsStateSize(t *testing.T) {
	in := fastPathInputs(t)
	changed := 0
	for i, src := range in {
		c := &checker{p: Default(), vars: vars{}, bombs: map[string]bool{}, funcs: map[string]funcDef{},
			aliases: map[string]string{}, inCall: map[string]bool{}, judged: map[string]int{}}
		for _, s := range []string{src, in[(i*7919)%len(in)]} {
			f, err := parse(s)
			if err != nil {
				continue
			}
			before := c.stateSize()
			c.collect(s, f)
			want := c.stateSize() != before
			if got := c.stateChanged(before); got != want {
				t.Fatalf("%q after a state of size %d: stateChanged = %v, want %v", s, before, got, want)
			}
			if want {
				changed++
			}
		}
	}
	if changed < 100 {
		t.Errorf("only %d scripts changed the state", changed)
	}
}
