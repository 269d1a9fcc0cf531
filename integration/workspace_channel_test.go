package integration

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/airlock-sandbox/airlock/executor"
)

// TestWorkspaceTransferChannels: a workspace's files move over a socket in
// the holder's relay directory when the executor made it, and over the exec's
// stdio when it did not (a holder made by another airlock, with another
// socket directory). Both ways carry the same bytes, in and out, and leave
// no socket behind.
func TestWorkspaceTransferChannels(t *testing.T) {
	ctx := context.Background()
	w := newWorkspace(t, executor.WorkspaceSpec{})
	cfg := executor.DefaultConfig()
	cfg.DataDir = t.TempDir()
	cfg.Egress.SocketDir = t.TempDir()
	other, err := executor.New(executor.WithConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	// The package's executor made the holder, with its relay directory.
	// (in the engine's own directory under the default socket directory).
	found, _ := filepath.Glob(filepath.Join(os.TempDir(), "airlock-relay-"+strconv.Itoa(os.Getuid()), "*", "airlock-"+w.ID+"-holder"))
	if len(found) != 1 {
		t.Fatalf("the holder has no relay directory, or several: %v", found)
	}
	holderDir := found[0]
	payload := make([]byte, 3<<20+17)
	rand.Read(payload)
	for _, way := range []struct {
		name string
		ex   *executor.Executor
	}{{"socket", ex}, {"exec", other}} {
		t.Run(way.name, func(t *testing.T) {
			if err := way.ex.PutFile(ctx, w.ID, way.name+".bin", 0o600, bytes.NewReader(payload), executor.Caller{}); err != nil {
				t.Fatal(err)
			}
			for _, by := range []*executor.Executor{ex, other} {
				rc, info, err := by.OpenFile(ctx, w.ID, way.name+".bin", executor.Caller{})
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(rc)
				rc.Close()
				if err != nil || !bytes.Equal(got, payload) || info.Size != int64(len(payload)) {
					t.Errorf("read back: %d bytes of %d (size %d), equal %v, err %v", len(got), len(payload), info.Size, bytes.Equal(got, payload), err)
				}
			}
			// A cut upload writes nothing, over either channel.
			err := way.ex.PutFile(ctx, w.ID, way.name+".cut", 0o600, io.MultiReader(bytes.NewReader(payload[:1<<20]), failing{}), executor.Caller{})
			if err == nil {
				t.Fatal("a cut upload succeeded")
			}
			if _, _, err := way.ex.OpenFile(ctx, w.ID, way.name+".cut", executor.Caller{}); err == nil {
				t.Error("a cut upload left a file")
			}
		})
	}
	if left, _ := os.ReadDir(holderDir); len(left) != 0 {
		t.Errorf("sockets left in the holder's relay directory: %v", left)
	}
}

// failing is a body that breaks: a client gone mid-upload.
type failing struct{}

func (failing) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }
