package integration

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"

	"github.com/airlock-sandbox/airlock/executor"
)

// The hostile side of workspace transfers: a run on the same workspace swaps
// names while airlock reads and writes them, plants links and fifos, makes
// sparse files; callers send bombs and names too long. Each case asserts what
// the user would check: nothing from outside the workspace, no hang, nothing
// half-written, nothing unbounded on the host.

// swapper starts a job on ws that runs loop forever, counting its turns in
// the file n every 20; stop kills it and returns the count.
func swapper(t *testing.T, ws, rt, setup, loop string) (stop func() int) {
	t.Helper()
	ctx := context.Background()
	p, err := ex.Start(ctx, executor.Spec{Workspace: ws, Runtime: rt, Timeout: 300,
		Command: setup + `; i=0; while :; do ` + loop + `; i=$((i+1)); [ $((i % 20)) = 0 ] && echo $i > n.tmp && mv n.tmp n; done`})
	if err != nil {
		t.Fatal(err)
	}
	return func() int {
		n, _ := strconv.Atoi(strings.TrimSpace(readFile(t, ws, "n")))
		ex.Kill(ctx, p.ID, "KILL", 0)
		ex.Wait(ctx, p.ID)
		ex.Remove(ctx, p.ID)
		return n
	}
}

// download reads p (a file) or, with archive, the tree p, within a deadline:
// the bytes, or the refusal.
func download(ws, p string, archive bool) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var rc io.ReadCloser
	var err error
	if archive {
		rc, err = ex.OpenArchive(ctx, ws, p, executor.Caller{})
	} else {
		rc, _, err = ex.OpenFile(ctx, ws, p, executor.Caller{})
	}
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// TestWorkspaceSwapRaces: a job swaps a file for a link to the holder's
// /etc/passwd, a directory for a link to /etc, and a file for a fifo, as fast
// as it can, while files and archives are downloaded: every download is the
// workspace's own bytes or a refusal, none hangs, and the holder serves on.
func TestWorkspaceSwapRaces(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt string) {
		w := newWorkspace(t, executor.WorkspaceSpec{Size: 16 << 20})
		stop := swapper(t, w.ID, rt, `mkdir -p real && echo inside > real/passwd && echo inside > f && echo inside > g`,
			`mv f f.real; ln -s /etc/passwd f; mv real d; ln -s /etc real; rm real; mv d real; ln -s /etc d; rm d f; mv f.real f; mv g g.real; mkfifo g; rm g; mv g.real g`)
		waitForFile(t, w.ID, "n")
		var mu sync.Mutex
		counts := map[string]int{}
		var wg sync.WaitGroup
		for _, c := range []struct {
			path    string
			archive bool
			n       int
		}{{"f", false, 150}, {"real/passwd", false, 100}, {"g", false, 150}, {".", true, 60}, {"real", true, 60}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range c.n {
					b, err := download(w.ID, c.path, c.archive)
					mu.Lock()
					switch {
					case errors.Is(err, context.DeadlineExceeded):
						t.Errorf("a download of %s hung", c.path)
					case err != nil && !errors.Is(err, executor.ErrUnsafePath) && !errors.Is(err, executor.ErrFileNotFound) && !errors.Is(err, executor.ErrWrongType):
						t.Errorf("a download of %s: %v", c.path, err)
					case err != nil:
						counts["refused"]++
					case bytes.Contains(b, []byte("root:")) || bytes.Contains(b, []byte("nameserver")) || bytes.Contains(b, []byte("nobody:")):
						t.Errorf("a download of %s carried a file from outside the workspace: %q", c.path, b)
					default:
						counts["own"]++
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		swaps := stop()
		t.Logf("%s: %d swap rounds; downloads: %d of the workspace's own bytes, %d refused", rt, swaps, counts["own"], counts["refused"])
		if swaps < 50 || counts["refused"] == 0 || counts["own"] == 0 {
			t.Errorf("the race never went both ways (%d rounds, %v): the test proves nothing", swaps, counts)
		}
		// The holder serves on: no blocked reader, no fork refused.
		if err := ex.PutFile(context.Background(), w.ID, "after", 0, strings.NewReader("ok"), executor.Caller{}); err != nil {
			t.Fatalf("after the race: %v", err)
		}
		if got := readFile(t, w.ID, "after"); got != "ok" {
			t.Fatalf("after the race: %q", got)
		}
	})
}

// holderTmp lists the holder's own /tmp, which no upload may reach.
func holderTmp(t *testing.T, ws string) string {
	t.Helper()
	ctx := t.Context()
	exe, err := docker.ContainerExecCreate(ctx, "airlock-"+ws+"-holder", container.ExecOptions{Cmd: []string{"/bin/ls", "-A", "/tmp"}, AttachStdout: true, AttachStderr: true})
	if err != nil {
		t.Fatal(err)
	}
	hj, err := docker.ContainerExecAttach(ctx, exe.ID, container.ExecAttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer hj.Close()
	out, _ := io.ReadAll(hj.Reader)
	return string(out)
}

// TestWorkspaceUploadThroughPlantedLink: a run plants d -> /tmp; neither an
// archive entry d/x nor a file upload d/x lands in the holder's /tmp.
func TestWorkspaceUploadThroughPlantedLink(t *testing.T) {
	ctx := context.Background()
	w := newWorkspace(t, executor.WorkspaceSpec{})
	if res := runIn(t, w.ID, "ln -s /tmp d && ln -s /tmp/y e"); res.ExitCode != 0 {
		t.Fatalf("plant: %+v", res)
	}
	if err := ex.PutArchive(ctx, w.ID, ".", bytes.NewReader(tarOf(t, file("ok", "x"), file("d/x", "x"))), executor.Caller{}); !errors.Is(err, executor.ErrUnsafePath) {
		t.Errorf("an archive entry through a planted link: %v; want refused_path", err)
	}
	if err := ex.PutArchive(ctx, w.ID, "d", bytes.NewReader(tarOf(t, file("x", "x"))), executor.Caller{}); !errors.Is(err, executor.ErrUnsafePath) {
		t.Errorf("an archive into a planted link: %v; want refused_path", err)
	}
	if err := ex.PutFile(ctx, w.ID, "d/x", 0, strings.NewReader("x"), executor.Caller{}); !errors.Is(err, executor.ErrUnsafePath) {
		t.Errorf("a file through a planted link: %v; want refused_path", err)
	}
	if got := holderTmp(t, w.ID); got != "" {
		t.Errorf("the holder's /tmp holds %q", got)
	}
	// Writing at the link's own name replaces the link, and writes nothing through it.
	if err := ex.PutFile(ctx, w.ID, "e", 0, strings.NewReader("mine"), executor.Caller{}); err != nil {
		t.Fatal(err)
	}
	if res := runIn(t, w.ID, "test -L e || cat e; ls ok 2>&1"); res.Stdout != "mine"+"ls: ok: No such file or directory\n" {
		t.Errorf("after the uploads: %q (the refused archive must have left nothing, not even ok)", res.Stdout)
	}
}

// bombArchive writes a gzip-compressed tar whose one entry, named name,
// declares size bytes of zeros, and returns how many compressed bytes it
// managed to write before w refused more.
// The header is written by hand: Go's tar writer refuses a name like "./"
// for a regular file, and a hostile client does not use it.
func bombArchive(w io.WriteCloser, name string, size int64) int64 {
	cw := &countingWriter{w: w}
	zw, _ := gzip.NewWriterLevel(cw, gzip.BestCompression)
	zw.Write(rawHeader(name, size))
	zeros := make([]byte, 1<<20)
	for left := size; left > 0; left -= int64(len(zeros)) {
		if _, err := zw.Write(zeros[:min(left, int64(len(zeros)))]); err != nil {
			break
		}
	}
	zw.Write(make([]byte, 1024))
	zw.Close()
	w.Close()
	return cw.n.Load()
}

// rawHeader is a ustar header block for a regular file of size bytes named name.
func rawHeader(name string, size int64) []byte {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.Repeat("x", len(name)), Mode: 0o644, Size: size, Format: tar.FormatUSTAR})
	h := b.Bytes()[:512]
	copy(h, name)
	copy(h[148:156], "        ")
	sum := 0
	for _, c := range h {
		sum += int(c)
	}
	copy(h[148:156], fmt.Sprintf("%06o\x00 ", sum))
	return h
}

type countingWriter struct {
	w io.Writer
	n atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// TestWorkspaceBombsAndSpool: an entry named "./" declaring 4 GiB is refused
// at its header, as any other name is; and uploads leave nothing in the
// host's temporary directory, however many run at once: nothing is spooled.
func TestWorkspaceBombsAndSpool(t *testing.T) {
	ctx := context.Background()
	w := newWorkspace(t, executor.WorkspaceSpec{Size: 16 << 20})
	for _, name := range []string{"./", ".", "big"} {
		pr, pw := io.Pipe()
		sent := make(chan int64, 1)
		go func() { sent <- bombArchive(pw, name, 4<<30) }()
		start := time.Now()
		err := ex.PutArchive(ctx, w.ID, ".", pr, executor.Caller{})
		pr.CloseWithError(errors.New("done"))
		n := <-sent
		if !errors.Is(err, executor.ErrWorkspaceFull) {
			t.Errorf("a 4 GiB entry named %q: %v; want workspace_full", name, err)
		}
		if took := time.Since(start); took > 10*time.Second || n > 8<<20 {
			t.Errorf("a 4 GiB entry named %q: refused after %v and %d compressed bytes; want at its header", name, took, n)
		}
	}

	// Eight archive uploads at once, each 8 MiB of content, while the
	// host's temporary directory is watched for anything of airlock's.
	var peak atomic.Int64
	watching := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-watching:
				return
			case <-time.After(5 * time.Millisecond):
			}
			var total int64
			matches, _ := filepath.Glob(filepath.Join(os.TempDir(), "airlock-upload-*"))
			for _, m := range matches {
				if fi, err := os.Stat(m); err == nil {
					total += fi.Size()
				}
			}
			if total > peak.Load() {
				peak.Store(total)
			}
		}
	}()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ws := newWorkspace(t, executor.WorkspaceSpec{Size: 16 << 20})
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			zw.Write(tarOf(t, tarEntry{h: tar.Header{Typeflag: tar.TypeReg, Name: "data", Size: 8 << 20}, data: strings.Repeat(strconv.Itoa(i), 8<<20)}))
			zw.Close()
			if err := ex.PutArchive(ctx, ws.ID, ".", &b, executor.Caller{}); err != nil {
				t.Errorf("upload %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	close(watching)
	<-watched
	if peak.Load() != 0 {
		t.Errorf("uploads spooled %d bytes in the host's temporary directory", peak.Load())
	}
}

// TestWorkspaceRefusedUploadChangesNothing: a file larger than the free space,
// an archive that fits the size limit but not the free space, and a name with
// a component over 255 bytes are refused whole: nothing of them is left, and
// the workspace takes what it took before.
func TestWorkspaceRefusedUploadChangesNothing(t *testing.T) {
	ctx := context.Background()
	w := newWorkspace(t, executor.WorkspaceSpec{Size: 8 << 20})
	if res := runIn(t, w.ID, "head -c 5000000 /dev/zero > filler && echo old > keep"); res.ExitCode != 0 {
		t.Fatalf("fill: %+v", res)
	}
	used := func() int64 {
		ws, err := ex.Workspace(ctx, w.ID, executor.Caller{})
		if err != nil || ws.UsedBytes == nil {
			t.Fatalf("workspace: %+v %v", ws, err)
		}
		return *ws.UsedBytes
	}
	before := used()
	big := strings.Repeat("b", 4<<20)
	if err := ex.PutFile(ctx, w.ID, "keep", 0, strings.NewReader(big), executor.Caller{}); !errors.Is(err, executor.ErrWorkspaceFull) {
		t.Errorf("a file over the free space: %v; want workspace_full", err)
	}
	arch := tarOf(t, file("new/a", strings.Repeat("a", 2<<20)), file("new/b", strings.Repeat("b", 2<<20)))
	if err := ex.PutArchive(ctx, w.ID, ".", bytes.NewReader(arch), executor.Caller{}); !errors.Is(err, executor.ErrWorkspaceFull) {
		t.Errorf("an archive over the free space: %v; want workspace_full", err)
	}
	long := strings.Repeat("n", 300)
	if err := ex.PutArchive(ctx, w.ID, ".", bytes.NewReader(tarOf(t, file("short", "x"), file("d/"+long, "x"))), executor.Caller{}); !errors.Is(err, executor.ErrUnsafePath) {
		t.Errorf("a 300-byte component: %v; want refused_path", err)
	}
	if err := ex.PutFile(ctx, w.ID, long, 0, strings.NewReader("x"), executor.Caller{}); !errors.Is(err, executor.ErrUnsafePath) {
		t.Errorf("a 300-byte file name: %v; want refused_path", err)
	}
	if got := readFile(t, w.ID, "keep"); got != "old\n" {
		t.Errorf("keep = %.20q after a refused upload over it", got)
	}
	list, err := ex.ListFiles(ctx, w.ID, "", executor.Caller{})
	if err != nil || len(list.Files) != 2 {
		t.Errorf("after refused uploads the workspace holds %+v (%v); want filler and keep", list.Files, err)
	}
	if after := used(); after != before {
		t.Errorf("the workspace takes %d bytes, %d before the refused uploads", after, before)
	}
}

// TestWorkspaceSparseFilesBounded: a 2 GiB sparse file in a 16 MiB workspace
// is refused for download, alone or in an archive, at once; a report pattern
// over a 9 GiB sparse file is refused before it is read.
func TestWorkspaceSparseFilesBounded(t *testing.T) {
	ctx := context.Background()
	w := newWorkspace(t, executor.WorkspaceSpec{Size: 16 << 20})
	if res := runIn(t, w.ID, "mkdir reports && truncate -s 2G big && truncate -s 9G reports/a.xml"); res.ExitCode != 0 {
		t.Fatalf("sparse files: %+v", res)
	}
	start := time.Now()
	if _, err := download(w.ID, "big", false); !errors.Is(err, executor.ErrUnsafePath) || !strings.Contains(err.Error(), "apparent size") {
		t.Errorf("download of a 2 GiB sparse file: %v; want a refusal naming its apparent size", err)
	}
	if _, err := download(w.ID, ".", true); !errors.Is(err, executor.ErrUnsafePath) {
		t.Errorf("archive holding a 2 GiB sparse file: %v; want a refusal", err)
	}
	res, err := ex.Run(ctx, executor.Spec{Command: "true", Workspace: w.ID, Report: "junit:reports/*.xml"})
	if err != nil || res.Tests == nil || !strings.Contains(res.Tests.Error, "total more than") {
		t.Errorf("a report over a 9 GiB sparse file: %+v %v", res.Tests, err)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Errorf("the refusals took %v; want them before any read", took)
	}
}
