package integration

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

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

// A run plants links to the outside; no operation follows them.
func TestWorkspacePlantedLinksAreNotFollowed(t *testing.T) {
	ctx := context.Background()
	w := newWorkspace(t, executor.WorkspaceSpec{})
	res := runIn(t, w.ID, `echo secret-of-the-run > mine; ln -s /etc/passwd report.txt; ln -s / root; ln -s ../../../../var/lib/docker up;
		mkdir d; ln -s /etc d/etc; ln -s ../mine d/ok`)
	if res.ExitCode != 0 {
		t.Fatalf("plant: %+v", res)
	}
	caller := executor.Caller{}
	for _, p := range []string{"report.txt", "root/etc/passwd", "up/volumes", "d/etc/passwd"} {
		if rc, _, err := ex.OpenFile(ctx, w.ID, p, caller); !errors.Is(err, executor.ErrUnsafePath) {
			if rc != nil {
				b, _ := io.ReadAll(rc)
				rc.Close()
				t.Errorf("download %s read %q", p, b)
			}
			t.Errorf("download %s: %v, want a refused path", p, err)
		}
	}
	for _, p := range []string{"root", "up", "d/etc"} {
		if _, err := ex.OpenArchive(ctx, w.ID, p, caller); !errors.Is(err, executor.ErrUnsafePath) {
			t.Errorf("archive of %s: %v, want a refused path", p, err)
		}
		if _, err := ex.ListFiles(ctx, w.ID, p, caller); !errors.Is(err, executor.ErrUnsafePath) {
			t.Errorf("list %s: %v, want a refused path", p, err)
		}
		if err := ex.PutFile(ctx, w.ID, p+"/planted", 0, strings.NewReader("x"), caller); !errors.Is(err, executor.ErrUnsafePath) {
			t.Errorf("upload into %s: %v, want a refused path", p, err)
		}
	}
	// The directory holding links is archived with the links as links.
	rc, err := ex.OpenArchive(ctx, w.ID, "d", caller)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(rc)
	var got []string
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		got = append(got, h.Name+"->"+h.Linkname)
	}
	rc.Close()
	slices.Sort(got)
	if strings.Join(got, " ") != "etc->/etc ok->../mine" {
		t.Errorf("archive of d: %q", got)
	}
	list, err := ex.ListFiles(ctx, w.ID, "d", caller)
	if err != nil || len(list.Files) != 2 || list.Files[0].Type != "symlink" || list.Files[0].Target != "/etc" {
		t.Errorf("list d: %+v %v", list, err)
	}
	// Removing a link removes the link only.
	if err := ex.RemoveFile(ctx, w.ID, "d/ok", caller); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, w.ID, "mine"); got != "secret-of-the-run\n" {
		t.Errorf("mine = %q after removing a link to it", got)
	}
}

// A run swaps a directory for a link to the holder's /etc as fast as it can
// while airlock downloads through it: every download gets the workspace's file
// or a refusal, never a byte from outside (the CVE-2018-15664 race).
func TestWorkspaceSymlinkSwapRace(t *testing.T) {
	ctx := context.Background()
	w := newWorkspace(t, executor.WorkspaceSpec{})
	p, err := ex.Start(ctx, executor.Spec{Workspace: w.ID, Timeout: 60, Command: `mkdir -p real && echo inside > real/passwd
		while :; do mv real d; mv d real; ln -s /etc d; rm d; done`})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ex.Kill(ctx, p.ID, "KILL", 0)
		ex.Wait(ctx, p.ID)
		ex.Remove(ctx, p.ID)
	}()
	waitForFile(t, w.ID, "real/passwd")
	inside, refused := 0, 0
	for range 60 {
		rc, _, err := ex.OpenFile(ctx, w.ID, "d/passwd", executor.Caller{})
		if err != nil {
			// Each refusal is one the swap provoked: a link, a name gone, a
			// file where a directory was a moment before.
			if !errors.Is(err, executor.ErrUnsafePath) && !errors.Is(err, executor.ErrFileNotFound) && !errors.Is(err, executor.ErrWrongType) {
				t.Fatalf("download: %v", err)
			}
			refused++
			continue
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if string(b) != "inside\n" {
			t.Fatalf("download through the swapped link read %q", b)
		}
		inside++
	}
	t.Logf("%d downloads of the workspace's file, %d refused", inside, refused)
	if refused == 0 || inside == 0 {
		t.Errorf("the race never went both ways: the test proves nothing")
	}
}

func waitForFile(t *testing.T, ws, p string) {
	t.Helper()
	for range 100 {
		if rc, _, err := ex.OpenFile(context.Background(), ws, p, executor.Caller{}); err == nil {
			rc.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s never appeared", p)
}

// Hostile archives through the real engine: refused whole, nothing written.
func TestWorkspaceHostileArchivesWriteNothing(t *testing.T) {
	ctx := context.Background()
	w := newWorkspace(t, executor.WorkspaceSpec{Size: 4 << 20})
	for name, arch := range map[string][]byte{
		"absolute":  tarOf(t, file("ok", "x"), file("/etc/evil", "x")),
		"dot-dot":   tarOf(t, file("ok", "x"), file("../../evil", "x")),
		"link out":  tarOf(t, file("ok", "x"), tarEntry{h: tar.Header{Typeflag: tar.TypeSymlink, Name: "l", Linkname: "/etc"}}),
		"device":    tarOf(t, file("ok", "x"), tarEntry{h: tar.Header{Typeflag: tar.TypeChar, Name: "null", Devmajor: 1, Devminor: 3}}),
		"through":   tarOf(t, tarEntry{h: tar.Header{Typeflag: tar.TypeSymlink, Name: "s", Linkname: "."}}, file("s/x", "x")),
		"too large": tarOf(t, file("ok", "x"), tarEntry{h: tar.Header{Typeflag: tar.TypeReg, Name: "big", Size: 8 << 20}, data: strings.Repeat("z", 8<<20)}),
	} {
		if err := ex.PutArchive(ctx, w.ID, ".", bytes.NewReader(arch), executor.Caller{}); err == nil {
			t.Errorf("%s: archive accepted", name)
		}
	}
	list, err := ex.ListFiles(ctx, w.ID, "", executor.Caller{})
	if err != nil || len(list.Files) != 0 {
		t.Errorf("after refused archives the workspace holds %+v (%v)", list.Files, err)
	}
}

// Another tenant's workspace does not exist for the caller; a run cannot name it.
func TestWorkspaceTenancy(t *testing.T) {
	ctx := context.Background()
	alpha, beta := executor.Caller{Tenant: "alpha"}, executor.Caller{Tenant: "beta", MaxWorkspaces: 1}
	w, err := ex.CreateWorkspace(ctx, executor.WorkspaceSpec{}, alpha)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.RemoveWorkspace(ctx, w.ID, alpha)
	if _, err := ex.Workspace(ctx, w.ID, beta); !errors.Is(err, executor.ErrWorkspaceNotFound) {
		t.Errorf("beta reads alpha's workspace: %v", err)
	}
	if err := ex.PutFile(ctx, w.ID, "x", 0, strings.NewReader("x"), beta); !errors.Is(err, executor.ErrWorkspaceNotFound) {
		t.Errorf("beta writes alpha's workspace: %v", err)
	}
	if err := ex.RemoveWorkspace(ctx, w.ID, beta); !errors.Is(err, executor.ErrWorkspaceNotFound) {
		t.Errorf("beta removes alpha's workspace: %v", err)
	}
	if ws, _ := ex.Workspaces(ctx, beta); len(ws) != 0 {
		t.Errorf("beta lists %v", ws)
	}
	spec := executor.Spec{Command: "true", Workspace: w.ID}
	a, err := ex.Admit(spec, beta)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := ex.Execute(ctx, a); !errors.Is(err, executor.ErrInvalidSpec) || !strings.Contains(err.Error(), "workspace") {
		t.Errorf("beta runs on alpha's workspace: %v %+v", err, res)
	}
	b, err := ex.CreateWorkspace(ctx, executor.WorkspaceSpec{}, beta)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.RemoveWorkspace(ctx, b.ID, beta)
	if _, err := ex.CreateWorkspace(ctx, executor.WorkspaceSpec{}, beta); !errors.Is(err, executor.ErrWorkspaceQuota) {
		t.Errorf("beta's second workspace: %v, want its limit", err)
	}
}

// The files outlive the executor: a new one (a restarted server) finds them.
// When the holder is stopped (as an engine restart stops it), the workspace
// says its files are lost, and runs on it are refused.
func TestWorkspacePersistsAndReportsLoss(t *testing.T) {
	ctx := context.Background()
	w := newWorkspace(t, executor.WorkspaceSpec{})
	runIn(t, w.ID, "echo kept > kept.txt")
	other, err := executor.New()
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	res, err := other.Run(ctx, executor.Spec{Command: "cat kept.txt", Workspace: w.ID})
	if err != nil || res.Stdout != "kept\n" {
		t.Fatalf("second executor: %v %+v", err, res)
	}
	if err := docker.ContainerStop(ctx, "airlock-"+w.ID+"-holder", container.StopOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := ex.Workspace(ctx, w.ID, executor.Caller{})
	if err != nil || !got.Lost {
		t.Errorf("workspace after its holder stopped: %+v %v", got, err)
	}
	if _, err := ex.Run(ctx, executor.Spec{Command: "true", Workspace: w.ID}); !errors.Is(err, executor.ErrInvalidSpec) || !strings.Contains(err.Error(), "lost") {
		t.Errorf("run on a lost workspace: %v", err)
	}
}

func TestWorkspaceTTLReaping(t *testing.T) {
	ctx := context.Background()
	w := newWorkspace(t, executor.WorkspaceSpec{TTL: 1})
	kept := newWorkspace(t, executor.WorkspaceSpec{})
	busy := newWorkspace(t, executor.WorkspaceSpec{TTL: 1})
	p, err := ex.Start(ctx, executor.Spec{Command: "sleep 30", Workspace: busy.ID})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ex.Kill(ctx, p.ID, "KILL", 0)
		ex.Wait(ctx, p.ID)
		ex.Remove(ctx, p.ID)
	}()
	time.Sleep(1100 * time.Millisecond)
	reaped, err := ex.ReapWorkspaces(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(reaped) != 1 || reaped[0] != w.ID {
		t.Errorf("reaped %v, want only %s (%s is in use, %s has no ttl)", reaped, w.ID, busy.ID, kept.ID)
	}
	if _, err := ex.Workspace(ctx, w.ID, executor.Caller{}); !errors.Is(err, executor.ErrWorkspaceNotFound) {
		t.Errorf("reaped workspace: %v", err)
	}
}

// gVisor sees the same files, bounded the same way.
func TestWorkspaceUnderGVisor(t *testing.T) {
	requireRuntime(t, "runsc")
	w := newWorkspace(t, executor.WorkspaceSpec{Size: 8 << 20})
	if err := ex.PutFile(context.Background(), w.ID, "in.txt", 0, strings.NewReader("from airlock"), executor.Caller{}); err != nil {
		t.Fatal(err)
	}
	res, err := ex.Run(context.Background(), executor.Spec{Runtime: "runsc", Workspace: w.ID,
		Command: "cat in.txt; echo; echo out > out.txt; dd if=/dev/zero of=big bs=1M count=64"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Stdout, "from airlock\n") || !strings.Contains(res.Stderr, "No space left") {
		t.Errorf("runsc: %+v", res)
	}
	if got := readFile(t, w.ID, "out.txt"); got != "out\n" {
		t.Errorf("out.txt = %q", got)
	}
}

// airlock/debian, built offline by `make images`, has the toolchain a
// project's tests need, and runs as nobody on a read-only root.
func TestDebianImageToolchain(t *testing.T) {
	res, err := ex.Run(context.Background(), executor.Spec{Image: "airlock/debian", Timeout: 60,
		Command: "python3 -m pytest --version && git --version && make --version && diff --version && patch --version && " +
			"id -u && ! touch /usr/bin/x 2>/dev/null && ls /etc/ssl/certs/ca-certificates.crt"})
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 || !strings.Contains(res.Stdout, "pytest ") || !strings.Contains(res.Stdout, "\n65534\n") {
		t.Errorf("airlock/debian: exit %d\n%s\n%s", res.ExitCode, res.Stdout, res.Stderr)
	}
}
