package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

func TestResolveLink(t *testing.T) {
	// The links the directory holds, by name: the lookup of resolveLink.
	links := map[string]string{
		"out/s1":   "..",
		"out/s2":   "s1/..",
		"out/deep": "x/y/z",
		"out/abs":  "/etc",
		"out/l1":   "l2",
		"out/l2":   "l1",
		"up":       "..",
	}
	lookup := func(name string) (string, bool, error) {
		target, ok := links[name]
		return target, ok, nil
	}
	for _, tc := range []struct {
		dir, target, want string
		err               error
	}{
		{"out", "a.txt", "out/a.txt", nil},
		{"out", "..", ".", nil},
		{"out", "../..", "", errClimbsOut},
		{"out", "/etc/passwd", "", errAbsolute},
		{"out", "s1/a.txt", "a.txt", nil},
		{"out", "s2", "", errClimbsOut},          // s1/.. reads as inside; s1 is ..
		{"out", "s2/etc", "", errClimbsOut},      // so is every chain through it
		{"out", "abs/passwd", "", errAbsolute},   // through a link to an absolute path
		{"out", "deep/../../../q", "out/q", nil}, // deeper through a link than it reads
		{"out", "missing/../../q", "q", nil},     // a missing name counts as a directory
		{"out", "l1", "", errTooManyHops},
		{"out", "../up/x", "", errClimbsOut}, // through a link of the directory
		{".", "out/s1/out/s1/out", "out", nil},
		{".", "", ".", nil},
	} {
		got, err := resolveLink(tc.dir, tc.target, lookup)
		if got != tc.want || !errors.Is(err, tc.err) {
			t.Errorf("%s -> %s: %q, %v; want %q, %v", tc.dir, tc.target, got, err, tc.want, tc.err)
		}
	}
	// 40 links deep resolves, as in the kernel; 41 does not.
	for n, want := range map[int]error{40: nil, 41: errTooManyHops} {
		chain := func(name string) (string, bool, error) {
			i, err := strconv.Atoi(name)
			if err != nil || i >= n {
				return "", false, nil
			}
			return strconv.Itoa(i + 1), true, nil
		}
		if _, err := resolveLink(".", "0", chain); !errors.Is(err, want) {
			t.Errorf("a chain of %d links: %v, want %v", n, err, want)
		}
	}
}

// entry is one entry of a hand-made archive.
type entry struct {
	name, link string
	kind       byte
	data       string
	size       int64 // when data is not given
}

func archive(t *testing.T, entries ...entry) io.Reader {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.kind, Mode: 0o644, Linkname: e.link}
		var body io.Reader
		switch e.kind {
		case tar.TypeDir:
			h.Mode = 0o755
		case tar.TypeReg:
			h.Size, body = int64(len(e.data)), strings.NewReader(e.data)
			if e.data == "" {
				h.Size, body = e.size, io.LimitReader(zeros{}, e.size)
			}
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if body != nil {
			if _, err := io.Copy(tw, body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func openRoot(t *testing.T, dir string) *os.Root {
	t.Helper()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return root
}

// Links are judged by where they lead, against the final set of links, in
// whatever order they come; those left out are named; the rest is written.
func TestUnpackArchiveLinks(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "d")
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a"), 0o644)
	os.Symlink("..", filepath.Join(dir, "hostup")) // held from before, leads out
	os.Symlink("sub", filepath.Join(dir, "hostin"))
	var warn strings.Builder
	err := unpackArchive(openRoot(t, dir), "out", archive(t,
		entry{name: "x/", kind: tar.TypeDir},
		entry{name: "x/a", kind: tar.TypeSymlink, link: "b/../../../etc"}, // inside until b comes
		entry{name: "x/b", kind: tar.TypeSymlink, link: ".."},
		entry{name: "s1", kind: tar.TypeSymlink, link: ".."},
		entry{name: "s2", kind: tar.TypeSymlink, link: "s1/.."},
		entry{name: "s3", kind: tar.TypeSymlink, link: "s2/etc"},
		entry{name: "abs", kind: tar.TypeSymlink, link: "/etc/passwd"},
		entry{name: "via", kind: tar.TypeSymlink, link: "../hostup/etc"},
		entry{name: "loop1", kind: tar.TypeSymlink, link: "loop2"},
		entry{name: "loop2", kind: tar.TypeSymlink, link: "loop1"},
		entry{name: "ok", kind: tar.TypeSymlink, link: "s1/a.txt"},
		entry{name: "okhost", kind: tar.TypeSymlink, link: "../hostin"},
		entry{name: "gone", kind: tar.TypeSymlink, link: "/etc"},
		entry{name: "gone", kind: tar.TypeReg, data: "a file now"}, // the later entry wins
		entry{name: "swap", kind: tar.TypeSymlink, link: "ok"},
		entry{name: "swap", kind: tar.TypeSymlink, link: "s2"},
		entry{name: "tos", kind: tar.TypeSymlink, link: "swap"},
	), 1<<20, &warn)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"x/a", "s2", "s3", "abs", "via", "loop1", "loop2", "swap", "tos"} {
		p := filepath.Join(dir, "out", name)
		if !strings.Contains(warn.String(), "leaving out "+p+": ") {
			t.Errorf("no warning names out/%s", name)
		}
		if target, err := os.Readlink(p); err == nil {
			t.Errorf("out/%s -> %s was written", name, target)
		}
	}
	for name, want := range map[string]string{"out/ok": "a", "out/gone": "a file now", "out/s1/a.txt": "a"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); string(b) != want {
			t.Errorf("%s: %q %v, want %q", name, b, err, want)
		}
	}
	for _, name := range []string{"out/x/b", "out/okhost"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s, leading inside, is not there: %v", name, err)
		}
	}
	if des, _ := os.ReadDir(base); len(des) != 1 {
		t.Errorf("outside the directory: %v", des)
	}
	if t.Failed() {
		t.Log(warn.String())
	}
}

// No entry is written through a link: not one the directory held before
// (inside or not), and not a hard link it held to a file elsewhere.
func TestUnpackArchiveWritesThroughNoLink(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "real"), 0o755)
	os.WriteFile(filepath.Join(dir, "real", "f"), []byte("old"), 0o644)
	os.Symlink("real", filepath.Join(dir, "d"))
	os.Symlink("real/f", filepath.Join(dir, "lf"))
	os.WriteFile(filepath.Join(dir, "other"), []byte("other"), 0o644)
	os.Link(filepath.Join(dir, "other"), filepath.Join(dir, "hard"))
	var warn strings.Builder
	err := unpackArchive(openRoot(t, dir), ".", archive(t,
		entry{name: "d/f", kind: tar.TypeReg, data: "new"},
		entry{name: "lf", kind: tar.TypeReg, data: "new"},
		entry{name: "hard", kind: tar.TypeReg, data: "new"},
		entry{name: "h2", kind: tar.TypeLink, link: "lf"},
	), 1<<20, &warn)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"real/f": "old", "other": "other", "d/f": "new", "lf": "new", "hard": "new", "h2": "new"} {
		if b, err := os.ReadFile(filepath.Join(dir, name)); string(b) != want {
			t.Errorf("%s: %q %v, want %q", name, b, err, want)
		}
	}
	if fi, err := os.Lstat(filepath.Join(dir, "d")); err != nil || !fi.IsDir() {
		t.Errorf("d is not a directory: %v", err)
	}
	// A hard link to what is not a file of the archive (a link the host held).
	err = unpackArchive(openRoot(t, dir), ".", archive(t, entry{name: "h3", kind: tar.TypeLink, link: "real"}), 1<<20, &warn)
	if err == nil || !strings.Contains(err.Error(), "hard link") {
		t.Errorf("a hard link to a directory of the host: %v", err)
	}
}

// An archive whose files total more than the limit stops at the entry that
// passes it, naming the limit, having written no more than the limit.
func TestUnpackArchiveBound(t *testing.T) {
	dir := t.TempDir()
	err := unpackArchive(openRoot(t, dir), ".", archive(t,
		entry{name: "a", kind: tar.TypeReg, data: strings.Repeat("x", 600<<10)},
		entry{name: "b", kind: tar.TypeReg, data: strings.Repeat("y", 300<<10)},
		entry{name: "c", kind: tar.TypeReg, data: strings.Repeat("z", 200<<10)},
		entry{name: "d", kind: tar.TypeReg, data: "d"},
	), 1<<20, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `"c"`) || !strings.Contains(err.Error(), "the workspace's size of 1MiB") {
		t.Fatalf("err %v, want entry c refused, naming 1MiB", err)
	}
	var total int64
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if fi, err := d.Info(); err == nil && fi.Mode().IsRegular() {
			total += fi.Size()
		}
		return nil
	})
	if total > 1<<20 {
		t.Errorf("wrote %d bytes, more than the limit", total)
	}
	if _, err := os.Stat(filepath.Join(dir, "c")); err == nil {
		t.Errorf("c, past the limit, was written")
	}
}

// Zeros land as holes; data lands as data.
func TestWriteSparse(t *testing.T) {
	dir := t.TempDir()
	root := openRoot(t, dir)
	tree := newHostTree(root, 64<<20, io.Discard)
	data := make([]byte, 32<<20+100)
	copy(data[5<<20:], "in the middle")
	copy(data[len(data)-3:], "end")
	if err := tree.file("f", 0o644, int64(len(data)), bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "f"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read back %d bytes, %v: not what was written", len(got), err)
	}
	fi, _ := os.Stat(filepath.Join(dir, "f"))
	if used := fi.Sys().(*syscall.Stat_t).Blocks * 512; used > 1<<20 {
		t.Errorf("32 MiB of zeros take %d bytes on disk", used)
	}
	if err := tree.file("g", 0o644, int64(len(data))+1, bytes.NewReader(data)); err == nil {
		t.Errorf("a short stream was taken as whole")
	}
}

// BenchmarkWriteSparse writes 64 MiB of data (the worst case: every block is
// looked at and written) and 64 MiB of zeros, against a plain copy.
func BenchmarkWriteSparse(b *testing.B) {
	data := make([]byte, 64<<20)
	for i := range data {
		data[i] = byte(i*7 + 1)
	}
	for _, bc := range []struct {
		name   string
		data   []byte
		sparse bool
	}{{"data/sparse", data, true}, {"data/copy", data, false}, {"zeros/sparse", make([]byte, 64<<20), true}, {"zeros/copy", make([]byte, 64<<20), false}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.data)))
			p := filepath.Join(b.TempDir(), "f")
			for b.Loop() {
				f, err := os.Create(p)
				if err != nil {
					b.Fatal(err)
				}
				if bc.sparse {
					err = writeSparse(f, bytes.NewReader(bc.data), int64(len(bc.data)))
				} else {
					_, err = io.Copy(f, bytes.NewReader(bc.data))
				}
				if err != nil {
					b.Fatal(err)
				}
				f.Close()
			}
		})
	}
}
