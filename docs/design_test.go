// Package docs holds airlock's documents; its test keeps DESIGN.md's package
// table true to the code.
package docs

import (
	"bufio"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/airlock-sandbox/airlock/"

// TestDesignImportTable: every package of the module has a row in DESIGN.md's
// table ("The house"), and each row's "imports of ours" are exactly the
// package's own imports of the module (not its tests').
func TestDesignImportTable(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], module)
		if strings.HasPrefix(pkg, "integration") || pkg == "docs" || !strings.HasPrefix(f[0], module) {
			continue // the tests' own programs, and this package
		}
		ours := []string{}
		for _, imp := range f[1:] {
			if strings.HasPrefix(imp, module) {
				ours = append(ours, strings.TrimPrefix(imp, module))
			}
		}
		slices.Sort(ours)
		imports[pkg] = ours
	}

	f, err := os.Open("DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string][]string{} // package -> listed imports; nil for "all of the above"
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		cells := strings.Split(sc.Text(), "|")
		if len(cells) != 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		var listed []string
		switch col := strings.TrimSpace(cells[3]); col {
		case "none":
			listed = []string{}
		case "all of the above":
		default:
			for _, p := range strings.Split(col, ",") {
				listed = append(listed, strings.TrimSpace(p))
			}
			slices.Sort(listed)
		}
		for _, p := range strings.Split(cells[1], ",") {
			rows[strings.Trim(strings.TrimSpace(p), "`")] = listed
		}
	}
	for pkg, got := range imports {
		want, ok := rows[pkg]
		switch {
		case !ok:
			t.Errorf("package %s has no row in DESIGN.md's table", pkg)
		case want != nil && !slices.Equal(got, want):
			t.Errorf("DESIGN.md says %s imports %v of ours; it imports %v", pkg, want, got)
		}
	}
	for pkg := range rows {
		if _, ok := imports[pkg]; !ok {
			t.Errorf("DESIGN.md's table has a row for %s, which is no package", pkg)
		}
	}
}

// TestReadmeLayout: the README's layout table names every directory that
// holds a package of the module.
func TestReadmeLayout(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}", module+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		dir := strings.TrimPrefix(pkg, module)
		// A package under a listed directory is named by its row
		// (cluster/member under cluster/, integration/bench under integration/).
		listed := false
		for d := dir; d != "." && !listed; d = path.Dir(d) {
			listed = strings.Contains(string(readme), "| `"+d+"/` |")
		}
		if !listed {
			t.Errorf("the README's layout table has no row for %s/", dir)
		}
	}
}
