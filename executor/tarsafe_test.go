package executor

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"strings"
	"testing"
)

type entry struct {
	typ      byte
	name     string
	linkname string
	mode     int64
	size     int64 // declared size; defaults to len(data)
	data     string
}

func archiveOf(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Typeflag: e.typ, Name: e.name, Linkname: e.linkname, Mode: e.mode, Size: e.size, Format: tar.FormatGNU}
		if e.typ == tar.TypeReg && h.Size == 0 {
			h.Size = int64(len(e.data))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, e.data)
	}
	tw.Flush()
	return buf.Bytes()
}

func TestCheckArchiveRefusesHostileEntries(t *testing.T) {
	for _, tt := range []struct {
		name    string
		entries []entry
		want    error
		naming  string // the error must name this entry
	}{
		{"absolute name", []entry{{typ: tar.TypeReg, name: "/etc/passwd", data: "x"}}, ErrUnsafePath, "/etc/passwd"},
		{"dot-dot", []entry{{typ: tar.TypeReg, name: "a/../../escape", data: "x"}}, ErrUnsafePath, "a/../../escape"},
		{"dot-dot alone", []entry{{typ: tar.TypeDir, name: "../"}}, ErrUnsafePath, "../"},
		{"symlink to an absolute path", []entry{{typ: tar.TypeSymlink, name: "etc", linkname: "/etc"}}, ErrUnsafePath, "etc"},
		{"symlink climbing out", []entry{{typ: tar.TypeSymlink, name: "a/up", linkname: "../../x"}}, ErrUnsafePath, "a/up"},
		{"through a symlink of the archive", []entry{
			{typ: tar.TypeSymlink, name: "d", linkname: "sub"},
			{typ: tar.TypeReg, name: "d/f", data: "x"}}, ErrUnsafePath, "d/f"},
		{"hard link outside", []entry{{typ: tar.TypeLink, name: "h", linkname: "/etc/shadow"}}, ErrUnsafePath, "h"},
		{"hard link to nothing earlier", []entry{{typ: tar.TypeLink, name: "h", linkname: "later"}, {typ: tar.TypeReg, name: "later"}}, ErrUnsafePath, "h"},
		{"character device", []entry{{typ: tar.TypeChar, name: "null"}}, ErrUnsafePath, "null"},
		{"block device", []entry{{typ: tar.TypeBlock, name: "sda"}}, ErrUnsafePath, "sda"},
		{"fifo", []entry{{typ: tar.TypeFifo, name: "pipe"}}, ErrUnsafePath, "pipe"},
		{"newline in a name", []entry{{typ: tar.TypeReg, name: "a\nb", data: "x"}}, ErrUnsafePath, `a\nb`},
		{"invalid UTF-8", []entry{{typ: tar.TypeReg, name: "bad\xff", data: "x"}}, ErrUnsafePath, `bad\xff`},
		{"tar bomb by size", []entry{{typ: tar.TypeReg, name: "big", size: 1 << 40}}, ErrWorkspaceFull, ""},
		{"tar bomb by count", manyEntries(101), ErrWorkspaceFull, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := checkArchive(bytes.NewReader(archiveOf(t, tt.entries...)), &out, 1<<20, 100, 65534, 65534)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if tt.naming != "" && !strings.Contains(err.Error(), tt.naming) {
				t.Errorf("error %q does not name the entry %q", err, tt.naming)
			}
		})
	}
}

func manyEntries(n int) []entry {
	var es []entry
	for i := range n {
		es = append(es, entry{typ: tar.TypeReg, name: strings.Repeat("f", i+1)})
	}
	return es
}

func TestCheckArchiveNeutralisesAndKeeps(t *testing.T) {
	in := archiveOf(t,
		entry{typ: tar.TypeDir, name: "./src/", mode: 0o2755},
		entry{typ: tar.TypeReg, name: "./src/run", mode: 0o4755, data: "#!/bin/sh\n"},
		entry{typ: tar.TypeReg, name: "ro", mode: 0o400, data: "r"},
		entry{typ: tar.TypeSymlink, name: "src/link", linkname: "../ro"},
		entry{typ: tar.TypeLink, name: "hard", linkname: "./src/run"},
		entry{typ: tar.TypeReg, name: "naïve.txt", data: "unicode"},
	)
	// gzip, as `tar czf` sends it.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(in)
	zw.Close()
	var out bytes.Buffer
	if err := checkArchive(&gz, &out, 1<<20, 100, 1000, 1001); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(&out)
	var got []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Uid != 1000 || h.Gid != 1001 {
			t.Errorf("%s owned by %d:%d", h.Name, h.Uid, h.Gid)
		}
		got = append(got, h.Name+" "+string(h.Typeflag)+" "+strings.TrimLeft(octal(h.Mode), "0")+" "+h.Linkname)
	}
	want := []string{"src/ 5 755 ", "src/run 0 755 ", "ro 0 600 ", "src/link 2 644 ../ro", "hard 1 644 src/run", "naïve.txt 0 644 "}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("clean archive:\n got %q\nwant %q", got, want)
	}
}

func octal(m int64) string {
	const digits = "01234567"
	s := ""
	for ; m > 0; m /= 8 {
		s = string(digits[m%8]) + s
	}
	return "0" + s
}

func TestCheckArchiveRefusesGarbage(t *testing.T) {
	var out bytes.Buffer
	err := checkArchive(strings.NewReader(strings.Repeat("not a tar archive ", 100)), &out, 1<<20, 100, 0, 0)
	if !errors.Is(err, ErrUnsafePath) {
		t.Errorf("garbage: %v", err)
	}
	// A gzip bomb: a huge zero file compresses to little, and is refused by its header.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "zeros", Size: 1 << 30, Mode: 0o644})
	io.CopyN(tw, zeroReader{}, 64<<20)
	zw.Close()
	if err := checkArchive(&gz, &out, 1<<20, 100, 0, 0); !errors.Is(err, ErrWorkspaceFull) {
		t.Errorf("gzip bomb: %v", err)
	}
}

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func TestWorkspacePath(t *testing.T) {
	for in, want := range map[string]string{"": ".", "/": ".", "src/": "src", "/a//b/./c": "a/b/c", "naïve": "naïve"} {
		if got, err := workspacePath("path", in); err != nil || got != want {
			t.Errorf("workspacePath(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"..", "a/../..", "a/..", "x\ny", "bad\xff", "nul\x00", strings.Repeat("n", 256), "a/" + strings.Repeat("é", 128)} {
		if _, err := workspacePath("path", in); !errors.Is(err, ErrUnsafePath) {
			t.Errorf("workspacePath(%q): %v, want an invalid path", in, err)
		}
	}
}
