package policy_test

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/policy"
)

var decisionsFile = flag.String("decisions", "", "write every decision and Explain trace of the known inputs to this file")

// decisionInputs are every input the tests know: the corpus, the fuzz seeds and
// the fuzzers' stored findings, and every string literal of the package's tests.
func decisionInputs(t *testing.T) []string {
	in := append(loadAgentCommands(t), fuzzSeeds()...)
	files, err := filepath.Glob("testdata/fuzz/*/*")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "string("); ok {
				if s, err := strconv.Unquote(strings.TrimSuffix(v, ")")); err == nil {
					in = append(in, s)
				}
			}
		}
	}
	tests, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range tests {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					in = append(in, s)
				}
			}
			return true
		})
	}
	slices.Sort(in)
	return slices.Compact(in)
}

// TestDecisionsDump writes, for every known input under every fuzz policy and
// one that denies writes, the decision and trace of Check, Explain, CheckArgv
// and ExplainArgv, so that a change meant to keep decisions can be compared
// byte for byte: go test -run TestDecisionsDump ./policy/ -decisions FILE.
func TestDecisionsDump(t *testing.T) {
	if *decisionsFile == "" {
		t.Skip("no -decisions file")
	}
	pols := fuzzPolicies(t)
	denyWrite, err := policy.New(policy.Config{DenyWritePaths: []string{"~/.bash_history", "/etc/**", "/var/log/*.log"}})
	if err != nil {
		t.Fatal(err)
	}
	pols = append(pols, namedPolicy{"standard-deny-write", denyWrite})
	out, err := os.Create(*decisionsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	w := bufio.NewWriter(out)
	inputs := decisionInputs(t)
	for _, input := range inputs {
		sum := sha256.Sum256([]byte(input))
		id := hex.EncodeToString(sum[:8])
		argvs := [][]string{strings.Fields(input)}
		if strings.Contains(input, "\x00") {
			argvs = append(argvs, strings.Split(input, "\x00"))
		}
		for _, np := range pols {
			record := func(kind string, v ...any) {
				data, err := json.Marshal(v)
				if err != nil {
					t.Fatal(err)
				}
				w.WriteString(id + " " + np.name + " " + kind + " ")
				w.Write(data)
				w.WriteByte('\n')
			}
			record("check", np.p.Check(input))
			d, steps := np.p.Explain(input)
			record("explain", d, steps)
			for i, argv := range argvs {
				kind := "argv" + strconv.Itoa(i)
				record(kind, np.p.CheckArgv(argv))
				d, steps := np.p.ExplainArgv(argv)
				record("explain-"+kind, d, steps)
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d inputs, %d policies", len(inputs), len(pols))
}
