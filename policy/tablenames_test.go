package policy

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// modelFiles are the files of the model: the table of programs and what
// compiles it, and the languages of code. Only they may name programs.
var modelFiles = map[string]bool{"programs.go": true, "argroles.go": true, "code.go": true}

// namedOutsideTable are the program names the judging code still names
// (issue 37 moves them into the table): the list may only shrink. A name
// new code spells in a string literal outside modelFiles fails the test;
// a name taken out of the code must be taken off the list.
var namedOutsideTable = map[string][]string{
	"builtin.go":    {"awk", "badblocks", "blkdiscard", "cfdisk", "chgrp", "chmod", "chown", "chroot", "clear", "cryptsetup", "diskpart", "fdisk", "find", "format", "gawk", "gdisk", "halt", "init", "ip6tables", "iptables", "kexec", "kill", "loginctl", "machinectl", "mawk", "mkdosfs", "mke2fs", "mkexfatfs", "mkfs", "mkisofs", "mkntfs", "mkreiserfs", "mkswap", "mount", "nawk", "nft", "nvme", "parted", "poweroff", "reboot", "reset", "rm", "service", "setenforce", "sfdisk", "sgdisk", "shutdown", "suspend", "systemctl", "systemd-run", "telinit", "ufw", "umount", "wipefs"},
	"check.go":      {"alias", "echo", "file", "find", "getopts", "mapfile", "printf", "read", "readarray", "set"},
	"commands.go":   {".", ":", "[", "at", "awk", "batch", "cd", "curl", "declare", "eval", "export", "file", "find", "flock", "gawk", "gsed", "hash", "ld.so", "local", "mapfile", "mawk", "nawk", "parallel", "popd", "printf", "pushd", "read", "readarray", "readonly", "sed", "sh", "source", "tclsh", "test", "time", "trap", "typeset", "unset", "wait", "wget"},
	"complexity.go": {"[[", "declare", "export", "let", "local", "readonly", "time", "typeset"},
	"follow.go":     {"echo", "exec", "printf"},
	"rules.go":      {"chroot", "mkfs", "mount"},
	"words.go":      {"echo", "printf"},
}

// TestNoProgramNamesOutsideTable checks that no code outside the model names
// a program of the table in a string literal, but for namedOutsideTable.
func TestNoProgramNamesOutsideTable(t *testing.T) {
	found := programNamesInCode(t)
	for file, names := range found {
		allowed := map[string]bool{}
		for _, n := range namedOutsideTable[file] {
			allowed[n] = true
		}
		for _, n := range names {
			if !allowed[n] {
				t.Errorf("%s names the program %q: make it a property of the table (programs.go)", file, n)
			}
		}
	}
	for file, names := range namedOutsideTable {
		have := map[string]bool{}
		for _, n := range found[file] {
			have[n] = true
		}
		for _, n := range names {
			if !have[n] {
				t.Errorf("%s no longer names %q: take it off namedOutsideTable", file, n)
			}
		}
	}
}

// programNamesInCode returns, by file, the table's program names that
// string literals of the package's non-test code outside modelFiles spell.
func programNamesInCode(t *testing.T) map[string][]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") || modelFiles[file] {
			continue
		}
		src, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, file, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			if _, ok := n.(*ast.ImportSpec); ok {
				return false // a package's path, not a program
			}
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err == nil && programs[s] != nil && !seen[s] {
				seen[s] = true
				out[file] = append(out[file], s)
			}
			return true
		})
		sort.Strings(out[file])
	}
	return out
}
