package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-sandbox/airlock/internal/initproto"
)

// Output copied as frames from two goroutines reads back as the same bytes,
// stream by stream, and the report is the last frame.
func TestFramesKeepStreamsApart(t *testing.T) {
	var buf bytes.Buffer
	f := &frames{w: bufio.NewWriter(&buf)}
	out := bytes.Repeat([]byte("out-"), 40<<10) // several 32 KiB reads
	errs := bytes.Repeat([]byte("err-"), 10<<10)
	var wg sync.WaitGroup
	wg.Go(func() { f.copy(bytes.NewReader(out), initproto.Stdout) })
	wg.Go(func() { f.copy(bytes.NewReader(errs), initproto.Stderr) })
	wg.Wait()
	f.report(&initproto.Report{ExitCode: 3, StdoutBytes: int64(len(out))})

	var gotOut, gotErr bytes.Buffer
	var rep initproto.Report
	last := byte(0)
	err := initproto.ReadFrames(&buf, func(kind byte, p []byte) error {
		last = kind
		switch kind {
		case initproto.Stdout:
			gotOut.Write(p)
		case initproto.Stderr:
			gotErr.Write(p)
		case initproto.Result:
			return json.Unmarshal(p, &rep)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(gotOut.Bytes(), out) || !bytes.Equal(gotErr.Bytes(), errs) {
		t.Errorf("streams: %d and %d bytes back of %d and %d", gotOut.Len(), gotErr.Len(), len(out), len(errs))
	}
	if last != initproto.Result || rep.ExitCode != 3 || rep.StdoutBytes != int64(len(out)) {
		t.Errorf("last frame %d, report %+v", last, rep)
	}
}

// A background job's stream passes on its first keep bytes, counts all, and
// keeps the last TailBytes for the report.
func TestPassthroughKeepsCountsAndTails(t *testing.T) {
	file, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	p := &passthrough{keep: 10, streams: [2]*kept{{f: file}, {f: file}}}
	data := strings.Repeat("0123456789", initproto.TailBytes/10+100)
	if n := p.copy(strings.NewReader(data), initproto.Stdout); n != int64(len(data)) {
		t.Errorf("counted %d bytes of %d", n, len(data))
	}
	if kept, _ := os.ReadFile(file.Name()); string(kept) != "0123456789" {
		t.Errorf("passed on %q; want the first 10 bytes", kept)
	}
	k := p.stream(initproto.Stdout)
	if len(k.tail) != initproto.TailBytes || string(k.tail) != data[len(data)-initproto.TailBytes:] {
		t.Errorf("tail of %d bytes; want the last %d", len(k.tail), initproto.TailBytes)
	}
}

func TestKeyedCgroupFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "memory.events")
	os.WriteFile(file, []byte("low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\n"), 0o644)
	for key, want := range map[string]int64{"oom": 2, "oom_kill": 1, "max": 12} {
		if n, ok := keyed(file, key); !ok || n != want {
			t.Errorf("%s = %d, %v; want %d", key, n, ok, want)
		}
	}
	if _, ok := keyed(file, "oom_group_kill"); ok {
		t.Error("a key the file lacks was found")
	}
	if _, ok := keyed(filepath.Join(t.TempDir(), "none"), "oom"); ok {
		t.Error("a file that does not exist gave a value")
	}
}

// lookPath finds a command as execvp would: regular executable files on the
// env's PATH, in order; a name with a slash as it is.
func TestLookPath(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(a, "tool"), []byte("#!/bin/sh\n"), 0o644) // not executable
	os.Mkdir(filepath.Join(a, "dir"), 0o755)
	os.WriteFile(filepath.Join(b, "tool"), []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(b, "dir"), []byte("#!/bin/sh\n"), 0o755)
	env := []string{"HOME=/", "PATH=" + a + ":" + b}
	for name, want := range map[string]string{"tool": filepath.Join(b, "tool"), "dir": filepath.Join(b, "dir"), "./x": "./x"} {
		if got, err := lookPath(name, env); err != nil || got != want {
			t.Errorf("lookPath(%q) = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := lookPath("missing", env); !errors.Is(err, errNotFound) {
		t.Errorf("lookPath(missing): %v", err)
	}
	if _, err := lookPath("tool", []string{"HOME=/"}); !errors.Is(err, errNotFound) {
		t.Errorf("lookPath with no PATH: %v", err)
	}
}
