package integration

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// writeTree writes files (relative path: content) under dir.
func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// The CI line: a checkout's files in, `make test` on them, the reports back,
// the command's exit code out, and no workspace left behind.
func TestCLIWorkspaceFromAndCopyBack(t *testing.T) {
	dir := t.TempDir()
	project := map[string]string{
		"Makefile": "test:\n\tmkdir -p reports\n\tpython3 -m pytest -q -p no:cacheprovider --junitxml=reports/junit.xml\n",
	}
	for k, v := range pythonProject {
		project[k] = v
	}
	writeTree(t, dir, project)
	before := managedVolumes(t.Context())

	stdout, stderr, code := airlock(t, "", "run", "--image", "airlock/debian", "--workspace-from", dir,
		"--copy-back", "reports", "--copy-back", "calc.py", "--", "make test")
	if code != 2 || !strings.Contains(stdout, "1 failed, 1 passed") { // make exits 2 when a recipe fails
		t.Fatalf("failing tests: exit %d\n%s\n%s", code, stdout, stderr)
	}
	report, err := os.ReadFile(filepath.Join(dir, "reports", "junit.xml"))
	if err != nil || !strings.Contains(string(report), `failures="1"`) {
		t.Errorf("the report did not come back: %v %s", err, report)
	}

	writeTree(t, dir, map[string]string{"calc.py": fixedCalc})
	stdout, stderr, code = airlock(t, "", "run", "--image", "airlock/debian", "--workspace-from", dir, "--copy-back", "reports", "--", "make test")
	if code != 0 || !strings.Contains(stdout, "2 passed") {
		t.Fatalf("fixed: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if report, _ := os.ReadFile(filepath.Join(dir, "reports", "junit.xml")); !strings.Contains(string(report), `failures="0"`) {
		t.Errorf("the new report did not replace the old: %s", report)
	}
	if after := managedVolumes(t.Context()); len(after) != len(before) {
		t.Errorf("workspaces left: before %v, after %v", before, after)
	}
}

// A checkout holding links that lead out (absolute, or up past it) still runs:
// those links stay behind, each named in a warning, and the links that stay
// inside go up as links.
func TestCLIWorkspaceFromSkipsLinksOut(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.txt": "a\n", "sub/b.txt": "b\n"})
	for link, target := range map[string]string{"secret": "/home/me/.netrc", "up": "../outside", "sub/up2": "../../x", "ok": "a.txt", "sub/ok2": "../a.txt"} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	stdout, stderr, code := airlock(t, "", "run", "--workspace-from", dir, "--",
		"cat ok sub/ok2; for f in secret up sub/up2; do test -e $f || test -L $f && echo present $f; done; true")
	if code != 0 || stdout != "a\na\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want the run with the links inside", code, stdout, stderr)
	}
	for _, name := range []string{"secret", "up", "sub/up2"} {
		if !strings.Contains(stderr, filepath.Join(dir, name)+": a link to") {
			t.Errorf("no warning names %s: %q", name, stderr)
		}
	}
}

// --copy-back refuses what would land outside the directory, before anything runs;
// a link the run planted is not followed on the way back.
func TestCLICopyBackRefusesEscapes(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"a.txt": "a"})
	for _, p := range []string{"../outside", "/etc/passwd", "a/../../x"} {
		if _, stderr, code := airlock(t, "", "run", "--workspace-from", dir, "--copy-back", p, "--", "true"); code != 125 || !strings.Contains(stderr, "outside") {
			t.Errorf("--copy-back %s: exit %d: %s", p, code, stderr)
		}
	}
	// A link leading out is left out, named; the rest comes back and the
	// command's exit code stands.
	_, stderr, code := airlock(t, "", "run", "--workspace-from", dir, "--copy-back", "out",
		"--", "mkdir out && echo b > out/b.txt && ln -s /etc/passwd out/pw && ln -s ../../../../etc out/up")
	if code != 0 {
		t.Errorf("links out: exit %d, want the command's 0: %s", code, stderr)
	}
	for _, name := range []string{"pw", "up"} {
		if !strings.Contains(stderr, filepath.Join(dir, "out", name)+": ") {
			t.Errorf("no warning names out/%s: %s", name, stderr)
		}
		if _, err := os.Lstat(filepath.Join(dir, "out", name)); err == nil {
			t.Errorf("the link out/%s, leading out, landed in the directory", name)
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "out", "b.txt")); string(b) != "b\n" {
		t.Errorf("out/b.txt did not come back: %q %v", b, err)
	}
}

// Copy-back resolves each link as the kernel would, through the links it
// writes and those the directory held before: every link that would reach
// outside is left out, named, whatever its text looks like; the links that
// stay inside work; nothing is written through a link.
func TestCLICopyBackLinkChains(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "checkout")
	writeTree(t, dir, map[string]string{"a.txt": "a\n", "sub/deep/f.txt": "deep\n"})
	for link, target := range map[string]string{
		"hostup": "..",       // leads out: stays behind on upload, but is on the host
		"hostin": "sub/deep", // inside: goes up as a link
		"wdir":   "sub/deep", // the run makes it a directory
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	entries := func() []string {
		des, err := os.ReadDir(base)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, de := range des {
			names = append(names, de.Name())
		}
		return names
	}
	before := entries()
	script := strings.Join([]string{
		"mkdir out && cd out",
		"ln -s .. s1 && ln -s s1/.. s2", // s2 reads as inside, reaches the parent
		"for i in 3 4 5 6 7 8 9 10 11 12; do ln -s s$((i-1))/.. s$i; done",
		"ln -s s12/etc etc && ln -s etc/passwd pw",      // a chain towards /etc
		"ln -s s1 r && ln -s r/../x rel",                // relative through an earlier link
		"ln -s ok b && ln -s b a && rm b && ln -s s2 b", // a link to a link later replaced
		"ln -s ../hostup/etc viahost",                   // through a link the host held before
		"ln -s s1/a.txt ok && ln -s ../hostin/f.txt okhost && ln -s ok okok",
		"cd .. && rm wdir && mkdir wdir && echo new > wdir/f.txt",
	}, " && ")
	_, stderr, code := airlock(t, "", "run", "--workspace-from", dir, "--copy-back", "out", "--copy-back", "wdir", "--", script)
	if code != 0 {
		t.Fatalf("exit %d, want the command's 0: %s", code, stderr)
	}
	out := []string{"s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "etc", "pw", "rel", "a", "b", "viahost"}
	for _, name := range out {
		p := filepath.Join(dir, "out", name)
		if !strings.Contains(stderr, p+": ") {
			t.Errorf("no warning names out/%s", name)
		}
		if target, err := os.Readlink(p); err == nil {
			t.Errorf("out/%s -> %s, leading out, landed in the directory", name, target)
		}
	}
	for name, want := range map[string]string{"out/s1/a.txt": "a\n", "out/ok": "a\n", "out/okok": "a\n", "out/okhost": "deep\n",
		"sub/deep/f.txt": "deep\n", "wdir/f.txt": "new\n"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); string(b) != want {
			t.Errorf("%s: %q %v, want %q", name, b, err, want)
		}
	}
	if fi, err := os.Lstat(filepath.Join(dir, "wdir")); err != nil || !fi.IsDir() {
		t.Errorf("wdir is not a directory: %v %v: a file was written through the link", fi, err)
	}
	if after := entries(); strings.Join(after, " ") != strings.Join(before, " ") {
		t.Errorf("outside the directory: before %v, after %v", before, after)
	}
	if t.Failed() {
		t.Logf("stderr:\n%s", stderr)
	}
}

// A copy-back or download writes no more to the host than the workspace could
// hold, whatever size a sparse file claims; zeros land as holes.
func TestCLICopyBackBounded(t *testing.T) {
	for _, tc := range []struct{ path, script string }{
		{"big", "truncate -s 2G big"},
		{"out", "mkdir out && echo x > out/a && truncate -s 2G out/big"},
	} {
		dir := t.TempDir()
		writeTree(t, dir, map[string]string{"a.txt": "a"})
		_, stderr, code := airlock(t, "", "run", "--workspace-from", dir, "--workspace-size", "16m", "--copy-back", tc.path, "--", tc.script)
		if code != 125 || !strings.Contains(stderr, "the workspace's size of 16MiB") {
			t.Errorf("--copy-back %s of a 2 GiB sparse file: exit %d, want 125 and the limit named: %s", tc.path, code, stderr)
		}
		big := filepath.Join(dir, tc.path)
		if tc.path == "out" {
			big = filepath.Join(dir, "out", "big")
		}
		assertAtMost(t, big, 16<<20)
	}

	dir := t.TempDir()
	_, stderr, code := airlock(t, "", "run", "--workspace-from", dir, "--workspace-size", "16m", "--copy-back", "half",
		"--", "truncate -s 8M half && printf x >> half")
	if code != 0 {
		t.Fatalf("a sparse file within the size: exit %d: %s", code, stderr)
	}
	fi, err := os.Stat(filepath.Join(dir, "half"))
	if err != nil || fi.Size() != 8<<20+1 {
		t.Fatalf("half: %v %v, want 8 MiB and a byte", fi, err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Blocks*512 > 1<<20 {
		t.Errorf("half takes %d bytes on the host's disk, want its zeros as holes", st.Blocks*512)
	}

	id, stderr, code := airlock(t, "", "workspace", "create", "--size", "16m")
	id = strings.TrimSpace(id)
	if code != 0 {
		t.Fatalf("create: %s", stderr)
	}
	defer airlock(t, "", "workspace", "rm", id)
	if _, stderr, code := airlock(t, "", "run", "--workspace", id, "--", "mkdir d && truncate -s 2G d/big big"); code != 0 {
		t.Fatalf("run: %s", stderr)
	}
	for _, p := range []string{"big", "d"} {
		local := filepath.Join(t.TempDir(), "got")
		_, stderr, code := airlock(t, "", "workspace", "get", id, p, local)
		if code == 0 || !strings.Contains(stderr, "the workspace's size of 16MiB") {
			t.Errorf("get %s: exit %d, want a failure naming the limit: %s", p, code, stderr)
		}
		if p == "d" {
			local = filepath.Join(local, "big")
		}
		assertAtMost(t, local, 16<<20)
	}
}

// assertAtMost fails unless the host file p is absent or holds at most n bytes.
func assertAtMost(t *testing.T, p string, n int64) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		return
	}
	if st := fi.Sys().(*syscall.Stat_t); fi.Size() > n || st.Blocks*512 > n {
		t.Errorf("%s: %d bytes, %d on disk, more than %d", p, fi.Size(), st.Blocks*512, n)
	}
}

// The workspace subcommands, end to end through the local engine.
func TestCLIWorkspaceCommands(t *testing.T) {
	id, stderr, code := airlock(t, "", "workspace", "create", "--size", "8m", "--label", "who=cli")
	id = strings.TrimSpace(id)
	if code != 0 || !strings.HasPrefix(id, "ws_") {
		t.Fatalf("create: %d %q %s", code, id, stderr)
	}
	defer airlock(t, "", "workspace", "rm", id)
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{"src/main.sh": "echo hi\n", "README": "read me"})
	if _, stderr, code := airlock(t, "", "workspace", "put", id, filepath.Join(dir, "src"), "app"); code != 0 {
		t.Fatalf("put dir: %s", stderr)
	}
	if _, stderr, code := airlock(t, "data", "workspace", "put", id, "-", "notes/data.txt"); code != 0 {
		t.Fatalf("put stdin: %s", stderr)
	}
	out, stderr, code := airlock(t, "", "run", "--workspace", id, "--", "sh app/main.sh; cat notes/data.txt")
	if code != 0 || out != "hi\ndata" {
		t.Fatalf("run: %d %q %s", code, out, stderr)
	}
	if out, _, _ := airlock(t, "", "workspace", "ls-files", id); !strings.Contains(out, "dir") || !strings.Contains(out, "app") || !strings.Contains(out, "notes") {
		t.Errorf("ls-files: %s", out)
	}
	if out, _, _ := airlock(t, "", "workspace", "get", id, "notes/data.txt", "-"); out != "data" {
		t.Errorf("get -: %q", out)
	}
	back := filepath.Join(t.TempDir(), "back")
	if _, stderr, code := airlock(t, "", "workspace", "get", id, "app", back); code != 0 {
		t.Fatalf("get dir: %s", stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(back, "main.sh")); string(b) != "echo hi\n" {
		t.Errorf("got back %q", b)
	}
	if out, _, _ := airlock(t, "", "workspace", "ls"); !strings.Contains(out, id) {
		t.Errorf("ls: %s", out)
	}
	if _, stderr, code := airlock(t, "", "workspace", "rm", id); code != 0 {
		t.Errorf("rm: %s", stderr)
	}
	if _, stderr, code := airlock(t, "", "workspace", "get", id, "notes/data.txt", "-"); code == 0 || !strings.Contains(stderr, "no such workspace") {
		t.Errorf("get after rm: %d %s", code, stderr)
	}
}
