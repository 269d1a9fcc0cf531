package policy

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// The checker's fast paths (docs/policy.md, Speed) must answer exactly as the
// plain code they stand for: these tests compare them on the corpus, on the
// edges of what they look for, and on random text.

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
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "fosetlcunaiprdmgyx =(/\t\n\u00a0\xff"
	for range 20_000 {
		b := make([]byte, rng.IntN(12))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		in = append(in, string(b))
	}
	return in
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
	for name := range nameKinds {
		in = append(in, name, name+"x", name[:len(name)-1])
	}
	for _, s := range in {
		if got, want := kindOf(s), nameKinds[s]; got != want {
			t.Errorf("kindOf(%q) = %v, want %v", s, got, want)
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
