package fileagent

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The agent on a directory of the test's: the same code a holder runs, on the
// host's kernel. integration/ runs it in real holders, under races.

func call(t *testing.T, root string, stdin io.Reader, args ...string) (int, string, string) {
	t.Helper()
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	var out, errOut bytes.Buffer
	code := Main(root, args, stdin, &out, &errOut)
	return code, out.String(), errOut.String()
}

// framed is data as the executor sends it, with the end mark when complete.
func framed(data []byte, complete bool) io.Reader {
	var b bytes.Buffer
	fw := NewFrameWriter(&b)
	fw.Write(data)
	if complete {
		fw.End()
	}
	return &b
}

type entry struct {
	name, body, link string
	typ              byte
}

func tarOf(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: 0o644, Typeflag: e.typ, Linkname: e.link, Size: int64(len(e.body))}
		if e.typ == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, e.body)
	}
	tw.Close()
	return b.Bytes()
}

// tree lists what is under root: path -> content, "->target" or "/".
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			m[rel] = "->" + target
		case fi.IsDir():
			m[rel] = "/"
		default:
			data, _ := os.ReadFile(p)
			m[rel] = string(data)
		}
		return nil
	})
	return m
}

func TestPutAllOrNothing(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "keep"), []byte("old"), 0o644)
	archive := tarOf(t, entry{name: "d/", typ: tar.TypeDir}, entry{name: "d/a", body: "A"}, entry{name: "keep", body: "new"},
		entry{name: "d/l", typ: tar.TypeSymlink, link: "a"}, entry{name: "d/h", typ: tar.TypeLink, link: "d/a"})

	// Cut before the end mark: nothing lands, not even the directory.
	if code, _, msg := call(t, root, framed(archive, false), "put", "sub"); code != ExitCut {
		t.Fatalf("a cut upload: exit %d %q; want %d", code, msg, ExitCut)
	}
	if got := tree(t, root); len(got) != 1 || got["keep"] != "old" {
		t.Fatalf("after a cut upload: %v", got)
	}
	// Cut in the middle of a file.
	if code, _, _ := call(t, root, framed(archive[:700], false), "put", "."); code != ExitCut {
		t.Fatalf("an upload cut mid-file: exit %d", code)
	}
	if got := tree(t, root); len(got) != 1 || got["keep"] != "old" {
		t.Fatalf("after an upload cut mid-file: %v", got)
	}
	// A directory where a file goes: refused whole, naming it.
	os.Mkdir(filepath.Join(root, "x"), 0o755)
	os.WriteFile(filepath.Join(root, "x", "in"), nil, 0o644)
	bad := tarOf(t, entry{name: "new/a", body: "A"}, entry{name: "x", body: "file over a directory"})
	if code, _, msg := call(t, root, framed(bad, true), "put", "."); code != ExitWrongType || msg != "x" {
		t.Fatalf("a file over a directory: exit %d %q", code, msg)
	}
	if got := tree(t, root); len(got) != 3 || got["keep"] != "old" || got["x"] != "/" || got["x/in"] != "" {
		t.Fatalf("after a refused upload (new/ must be gone): %v", got)
	}
	// Complete: everything, links as links.
	if code, _, msg := call(t, root, framed(archive, true), "put", "."); code != 0 {
		t.Fatalf("put: exit %d %q", code, msg)
	}
	got := tree(t, root)
	want := map[string]string{"keep": "new", "d": "/", "d/a": "A", "d/l": "->a", "d/h": "A", "x": "/", "x/in": ""}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (tree %v)", k, got[k], v, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("tree %v, want %v", got, want)
	}
}

func TestNeverThroughALink(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644)
	os.Symlink(outside, filepath.Join(root, "d"))
	os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "f"))
	if code, _, msg := call(t, root, framed(tarOf(t, entry{name: "d/x", body: "x"}), true), "put", "."); code != ExitSymlink || msg != "d" {
		t.Errorf("an upload through a planted link: exit %d %q", code, msg)
	}
	if code, _, _ := call(t, root, framed([]byte("x"), true), "write", "d/x", "644"); code != ExitSymlink {
		t.Errorf("a write through a planted link: exit %d", code)
	}
	if _, err := os.Stat(filepath.Join(outside, "x")); err == nil {
		t.Fatal("a file landed outside the workspace")
	}
	for _, args := range [][]string{{"get", "f", "100"}, {"get", "d/secret", "100"}, {"archive", "d", "100"}, {"list", "d", "10"}} {
		code, out, _ := call(t, root, nil, args...)
		if code != ExitSymlink || strings.Contains(out, "secret") {
			t.Errorf("%v: exit %d, out %q; want a refusal", args, code, out)
		}
	}
	// Writing over a link replaces the link; removing a link removes the link.
	if code, _, _ := call(t, root, framed([]byte("mine"), true), "write", "f", "600"); code != 0 {
		t.Fatalf("write over a link: exit %d", code)
	}
	if code, _, _ := call(t, root, nil, "remove", "d"); code != 0 {
		t.Fatalf("remove a link: exit %d", code)
	}
	if data, _ := os.ReadFile(filepath.Join(outside, "secret")); string(data) != "secret" {
		t.Fatal("the link's target was written")
	}
	if got := tree(t, root); len(got) != 1 || got["f"] != "mine" {
		t.Fatalf("tree %v", got)
	}
}

func TestFifoNeverBlocks(t *testing.T) {
	root := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(root, "p"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "a"), []byte("a"), 0o644)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if code, _, _ := call(t, root, nil, "get", "p", "100"); code != ExitWrongType {
			t.Errorf("get of a fifo: exit %d", code)
		}
		code, out, _ := call(t, root, nil, "archive", ".", "100")
		if code != 0 {
			t.Errorf("archive beside a fifo: exit %d", code)
		}
		names := tarNames(t, out)
		if strings.Join(names, ",") != "a" {
			t.Errorf("archive entries %v; want only a", names)
		}
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a fifo blocked the agent")
	}
}

func tarNames(t *testing.T, data string) []string {
	t.Helper()
	var names []string
	tr := tar.NewReader(strings.NewReader(data))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
}

func TestSparseCountsWhole(t *testing.T) {
	root := t.TempDir()
	f, _ := os.Create(filepath.Join(root, "big"))
	f.Truncate(2 << 30)
	f.Close()
	if code, out, msg := call(t, root, nil, "get", "big", "16777216"); code != ExitTooLarge || out != "" {
		t.Errorf("a 2 GiB sparse file with a 16 MiB limit: exit %d %q, %d bytes out", code, msg, len(out))
	}
	if code, out, _ := call(t, root, nil, "archive", ".", "16777216"); code != ExitTooLarge || out != "" {
		t.Errorf("archive: exit %d, %d bytes out", code, len(out))
	}
	if code, _, _ := call(t, root, nil, "report", ".", "*", "100", "1000"); code != ExitTooLarge {
		t.Errorf("report: exit %d", code)
	}
}

func TestListRemoveUsage(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "d", "e"), 0o755)
	os.WriteFile(filepath.Join(root, "d", "e", "f"), []byte("abc"), 0o640)
	os.Symlink("../x", filepath.Join(root, "d", "l"))
	code, out, _ := call(t, root, nil, "list", "d", "10")
	var entries []Entry
	if err := json.Unmarshal([]byte(out), &entries); err != nil || code != 0 || len(entries) != 2 ||
		entries[0].Name != "e" || entries[0].Type != "dir" || entries[1].Type != "symlink" || entries[1].Target != "../x" {
		t.Fatalf("list: exit %d %q %v", code, out, err)
	}
	if code, _, msg := call(t, root, nil, "list", "nope", "10"); code != ExitNoFile || msg != "nope" {
		t.Errorf("list of a missing directory: %d %q", code, msg)
	}
	if code, _, _ := call(t, root, nil, "remove", "d"); code != 0 || len(tree(t, root)) != 0 {
		t.Fatalf("remove: exit %d, tree %v", code, tree(t, root))
	}
	code, out, _ = call(t, root, nil, "usage")
	var u Usage
	if err := json.Unmarshal([]byte(out), &u); err != nil || code != 0 {
		t.Fatalf("usage: %d %q", code, out)
	}
}

// A name swapped for a link to a secret (a file, or a directory for a link to
// a directory) while downloads run: each gets the workspace's own file or a
// refusal, never the secret.
func TestSwapsNeverLeak(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outside, "passwd"), []byte("SECRET"), 0o644)
	os.MkdirAll(filepath.Join(root, "d"), 0o755)
	os.WriteFile(filepath.Join(root, "d", "passwd"), []byte("mine"), 0o644)
	os.WriteFile(filepath.Join(root, "f"), []byte("mine"), 0o644)
	var stop atomic.Bool
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			// f <-> link to the secret; d <-> link to the directory holding it.
			os.Rename(filepath.Join(root, "f"), filepath.Join(root, "f.real"))
			os.Symlink(filepath.Join(outside, "passwd"), filepath.Join(root, "f"))
			os.Rename(filepath.Join(root, "d"), filepath.Join(root, "d.real"))
			os.Symlink(outside, filepath.Join(root, "d"))
			os.Remove(filepath.Join(root, "f"))
			os.Rename(filepath.Join(root, "f.real"), filepath.Join(root, "f"))
			os.Remove(filepath.Join(root, "d"))
			os.Rename(filepath.Join(root, "d.real"), filepath.Join(root, "d"))
			swaps.Add(1)
		}
	}()
	for i := 0; i < 2000; i++ {
		for _, args := range [][]string{{"get", "f", "100"}, {"get", "d/passwd", "100"}, {"archive", ".", "1000"}, {"archive", "d", "1000"}} {
			if _, out, _ := call(t, root, nil, args...); strings.Contains(out, "SECRET") {
				t.Fatalf("%v carried the secret after %d swaps", args, swaps.Load())
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	if swaps.Load() < 100 {
		t.Fatalf("only %d swaps: the race was not run", swaps.Load())
	}
	t.Logf("%d swaps during 8000 downloads", swaps.Load())
}
