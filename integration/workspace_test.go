package integration

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"

	"github.com/airlock-sandbox/airlock/executor"
)

// newWorkspace creates a workspace for the test and removes it after.
func newWorkspace(t *testing.T, spec executor.WorkspaceSpec) executor.Workspace {
	t.Helper()
	ctx := context.Background()
	w, err := ex.CreateWorkspace(ctx, spec, executor.Caller{})
	if err != nil {
		t.Fatalf("create workspace: %v", err)
	}
	t.Cleanup(func() {
		if err := ex.RemoveWorkspace(context.Background(), w.ID, executor.Caller{}); err != nil && !errors.Is(err, executor.ErrWorkspaceNotFound) {
			t.Errorf("remove workspace %s: %v", w.ID, err)
		}
	})
	return w
}

func runIn(t *testing.T, ws, command string) executor.Result {
	t.Helper()
	res, err := ex.Run(context.Background(), executor.Spec{Command: command, Workspace: ws, Timeout: 60})
	if err != nil {
		t.Fatalf("run %q: %v", command, err)
	}
	return res
}

// tarOf builds a tar archive from headers and contents (a header's Size is
// set from its content when the content is given).
func tarOf(t *testing.T, entries ...tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := e.h
		if h.Typeflag == tar.TypeReg && h.Size == 0 {
			h.Size = int64(len(e.data))
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, e.data)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

type tarEntry struct {
	h    tar.Header
	data string
}

func file(name, data string) tarEntry {
	return tarEntry{h: tar.Header{Typeflag: tar.TypeReg, Name: name}, data: data}
}

func readFile(t *testing.T, ws, p string) string {
	t.Helper()
	rc, _, err := ex.OpenFile(context.Background(), ws, p, executor.Caller{})
	if err != nil {
		t.Fatalf("open %s: %v", p, err)
	}
	defer rc.Close()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return string(b)
}

func TestWorkspaceFilesInAndOut(t *testing.T) {
	ctx := context.Background()
	w := newWorkspace(t, executor.WorkspaceSpec{Size: 16 << 20})
	arch := tarOf(t, tarEntry{h: tar.Header{Typeflag: tar.TypeDir, Name: "src/", Mode: 0o755}},
		file("src/main.sh", "echo from the workspace\n"),
		tarEntry{h: tar.Header{Typeflag: tar.TypeReg, Name: "run.sh", Mode: 0o4755}, data: "#!/bin/sh\nsh src/main.sh\n"})
	if err := ex.PutArchive(ctx, w.ID, ".", bytes.NewReader(arch), executor.Caller{}); err != nil {
		t.Fatal(err)
	}
	if err := ex.PutFile(ctx, w.ID, "notes/a.txt", 0o600, strings.NewReader("hello"), executor.Caller{}); err != nil {
		t.Fatal(err)
	}
	res := runIn(t, w.ID, `pwd; ./run.sh; stat -c '%a %u:%g %n' run.sh notes/a.txt; echo made > out.txt`)
	if res.ExitCode != 0 {
		t.Fatalf("run: %+v", res)
	}
	// setuid dropped, files owned by the sandbox user.
	want := "/workspace\nfrom the workspace\n755 65534:65534 run.sh\n600 65534:65534 notes/a.txt\n"
	if res.Stdout != want {
		t.Errorf("stdout = %q, want %q", res.Stdout, want)
	}
	if got := readFile(t, w.ID, "out.txt"); got != "made\n" {
		t.Errorf("out.txt = %q", got)
	}
	list, err := ex.ListFiles(ctx, w.ID, "", executor.Caller{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range list.Files {
		names = append(names, f.Name+":"+f.Type)
	}
	if got := strings.Join(names, " "); got != "notes:dir out.txt:file run.sh:file src:dir" {
		t.Errorf("listing = %s", got)
	}
	rc, err := ex.OpenArchive(ctx, w.ID, "src", executor.Caller{})
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(rc)
	h, err := tr.Next()
	if err != nil || h.Name != "main.sh" {
		t.Fatalf("archive of src: %v %+v", err, h)
	}
	rc.Close()
	if err := ex.RemoveFile(ctx, w.ID, "src", executor.Caller{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ex.OpenFile(ctx, w.ID, "src/main.sh", executor.Caller{}); !errors.Is(err, executor.ErrFileNotFound) {
		t.Errorf("removed file: %v, want not found", err)
	}
	got, err := ex.Workspace(ctx, w.ID, executor.Caller{})
	if err != nil || got.Lost || got.UsedBytes == nil || *got.UsedBytes == 0 {
		t.Errorf("workspace = %+v, %v", got, err)
	}
}

func TestWorkspaceConcurrentRuns(t *testing.T) {
	w := newWorkspace(t, executor.WorkspaceSpec{})
	var wg sync.WaitGroup
	results := make([]executor.Result, 2)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = runIn(t, w.ID, `echo `+string(rune('a'+i))+` > f`+string(rune('a'+i))+`; sleep 1; cat fa fb`)
		}()
	}
	wg.Wait()
	for _, r := range results {
		if r.ExitCode != 0 || r.Stdout != "a\nb\n" {
			t.Errorf("run: exit %d stdout %q stderr %q", r.ExitCode, r.Stdout, r.Stderr)
		}
	}
}

func TestWorkspaceSizeLimit(t *testing.T) {
	w := newWorkspace(t, executor.WorkspaceSpec{Size: 8 << 20})
	res := runIn(t, w.ID, `dd if=/dev/zero of=big bs=1M count=64`)
	if res.ExitCode == 0 || !strings.Contains(res.Stderr, "No space left on device") {
		t.Errorf("write past the size: exit %d stderr %q", res.ExitCode, res.Stderr)
	}
	res = runIn(t, w.ID, `rm big && echo ok > small && cat small`)
	if res.ExitCode != 0 || res.Stdout != "ok\n" {
		t.Errorf("next run: %+v", res)
	}
	// Inodes too: a workspace of 1 MiB holds 256 of them.
	w2 := newWorkspace(t, executor.WorkspaceSpec{Size: 1 << 20, Inodes: 64})
	res = runIn(t, w2.ID, `i=0; while [ $i -lt 200 ]; do touch f$i || exit 3; i=$((i+1)); done`)
	if res.ExitCode != 3 || !strings.Contains(res.Stderr, "No space left on device") {
		t.Errorf("inodes: exit %d stderr %q", res.ExitCode, res.Stderr)
	}
}

func TestWorkspaceRemovedLeavesNothing(t *testing.T) {
	ctx := context.Background()
	w, err := ex.CreateWorkspace(ctx, executor.WorkspaceSpec{}, executor.Caller{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ex.Start(ctx, executor.Spec{Command: "sleep 30", Workspace: w.ID})
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.RemoveWorkspace(ctx, w.ID, executor.Caller{}); !errors.Is(err, executor.ErrWorkspaceBusy) {
		t.Errorf("remove while a job runs: %v, want busy", err)
	}
	ex.Kill(ctx, p.ID, "KILL", 0)
	ex.Wait(ctx, p.ID)
	ex.Remove(ctx, p.ID)
	if err := ex.RemoveWorkspace(ctx, w.ID, executor.Caller{}); err != nil {
		t.Fatal(err)
	}
	vols, err := docker.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("name", w.ID))})
	if err != nil || len(vols.Volumes) != 0 {
		t.Errorf("volumes left: %v %v", vols.Volumes, err)
	}
	cs, err := docker.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", executor.LabelWorkspace+"="+w.ID))})
	if err != nil || len(cs) != 0 {
		t.Errorf("containers of the workspace left: %d %v", len(cs), err)
	}
}
