package executor

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/internal/engine"
	"github.com/airlock-sandbox/airlock/internal/fileagent"
	"github.com/airlock-sandbox/airlock/internal/initproto"
	"github.com/airlock-sandbox/airlock/internal/relay"
)

// Files move in and out of a workspace through its holder: airlock execs its
// file agent there (airlock-init files ..., internal/fileagent), as the
// workspace's owner, with the path as an argument and the data on stdin or
// stdout. The agent opens every path from a descriptor of the workspace's root
// down, never through a link, and checks what it opened on the descriptor, so
// a run that swaps names at the same moment cannot lead it outside; uploads
// are staged and committed whole or not at all. The holder mounts nothing
// writable but this workspace. Archives are checked on airlock's side as they
// stream (tarsafe.go) (docs/DESIGN.md, "Workspaces").

// maxListing bounds the entries one listing returns.
const maxListing = 10000

// holderExec runs the file agent's operation args in the holder of r, feeding
// stdin and writing stdout. It maps the agent's exit codes to errors.
func (e *Executor) holderExec(ctx context.Context, r workspaceRecord, args []string, stdin io.Reader, stdout io.Writer) error {
	u, err := e.workspaceUse(ctx, r.ID)
	if err != nil {
		return err
	}
	if u.holder == "" {
		return fmt.Errorf("%w: %s must be deleted and created again", ErrWorkspaceLost, r.ID)
	}
	var stderr bytes.Buffer
	cmd := append([]string{engine.InitPath, initproto.FilesArg}, args...)
	code, err := e.eng.Exec(ctx, u.holder, r.Owner, cmd, stdin, stdout, &limitedWriter{w: &stderr, n: 4096})
	if err != nil {
		return e.engineErr("workspace file operation", err)
	}
	what := stderr.String()
	switch code {
	case 0:
		return nil
	case fileagent.ExitSymlink:
		return fmt.Errorf("%w: %q is a symbolic link; airlock does not follow links in a workspace", ErrUnsafePath, what)
	case fileagent.ExitNoFile:
		return fmt.Errorf("%w: %q", ErrFileNotFound, what)
	case fileagent.ExitWrongType:
		return fmt.Errorf("%w: %q is not of the kind this operation needs (a directory, or a regular file)", ErrWrongType, what)
	case fileagent.ExitFull:
		return fmt.Errorf("%w: %s holds %s and %d inodes at most; nothing of the upload was written", ErrWorkspaceFull, r.ID, formatBytes(r.Size), r.Inodes)
	case fileagent.ExitTooLarge:
		return overLimit(what)
	case fileagent.ExitCut:
		return &SpecError{Field: "body", Reason: what}
	case fileagent.ExitNoSocket:
		return fmt.Errorf("%w: %s", errNoSocket, what)
	case 126, 127:
		// A holder made before the file agent existed has no init mounted.
		return fmt.Errorf("%w: %s was made by an older airlock, whose holder has no file agent; its runs still work, but its files move only once it is deleted and created again",
			ErrWorkspaceLost, r.ID)
	}
	return fmt.Errorf("workspace file operation failed (exit %d): %s", code, strings.TrimSpace(what))
}

// errNoSocket is an agent that could not dial the socket it was given.
var errNoSocket = errors.New("the file agent could not reach airlock's socket")

// overLimit is a read the agent refused because the files' apparent sizes
// pass the bound it was given: a refused path to the caller.
type overLimit string

func (o overLimit) Error() string { return ErrUnsafePath.Error() + ": " + string(o) }
func (o overLimit) Unwrap() error { return ErrUnsafePath }

// overSize says, of a download the agent refused for its size, that the
// workspace's size is the bound: more than the workspace could hold never
// reaches the caller's disk.
func (r workspaceRecord) overSize(err error) error {
	if o, ok := err.(overLimit); ok {
		return overLimit(fmt.Sprintf("%s, more than the workspace's size of %s could hold", string(o), formatBytes(r.Size)))
	}
	return err
}

// upload runs the agent's operation args with the bytes produce writes as its
// stdin, framed, and the end mark only when produce succeeds: the agent writes
// nothing of an upload that produce (a check, a body read) cut short. The
// bytes are streamed once, never spooled.
func (e *Executor) upload(ctx context.Context, r workspaceRecord, args []string, produce func(w io.Writer) error) error {
	if conn, d := e.holderDial(ctx, r, args); conn != nil {
		perr := framed(conn, produce)
		if perr != nil {
			conn.Close() // no end mark: the agent writes nothing
		} else {
			conn.(*net.UnixConn).CloseWrite()
		}
		<-d.ended
		conn.Close()
		return uploadVerdict(d.result, perr)
	} else if d != nil {
		return d.result
	}
	pr, pw := io.Pipe()
	produced := make(chan error, 1)
	go func() {
		err := framed(pw, produce)
		pw.CloseWithError(cmpErr(err, io.EOF))
		produced <- err
	}()
	err := e.holderExec(ctx, r, args, endAtError{pr}, io.Discard)
	pr.CloseWithError(errors.New("the workspace's agent has ended")) // a producer still writing stops
	return uploadVerdict(err, <-produced)
}

// framed writes what produce writes to w as the agent's frames, and the end
// mark only when produce succeeds. Buffered: the engine's copy to an exec's
// stdin writes what each read gives, and a frame's header alone is 4 bytes.
func framed(w io.Writer, produce func(w io.Writer) error) error {
	bw := bufio.NewWriterSize(w, 256<<10)
	fw := fileagent.NewFrameWriter(bw)
	err := produce(fw)
	if err == nil {
		err = fw.End()
	}
	if err == nil {
		err = bw.Flush()
	}
	return err
}

// uploadVerdict is an upload's outcome from the agent's (err) and the
// producer's (perr). When the agent saw its input end without the end mark,
// the check's or the body's own error says why; otherwise the agent refused
// first, and the producer's error is only that it could write no more.
func uploadVerdict(err, perr error) error {
	var cut *SpecError
	if perr != nil && (err == nil || errors.As(err, &cut) && cut.Field == "body") {
		return perr
	}
	return err
}

// endAtError ends a stream at its reader's first error: a producer that failed
// has the agent's stdin end without the end mark, which the agent answers with
// ExitCut, not the engine with a failed exec.
type endAtError struct{ r io.Reader }

func (e endAtError) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		err = io.EOF
	}
	return n, err
}

// limitedWriter keeps the first n bytes written and discards the rest.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

// workspacePath checks a path inside a workspace as a caller gives it ("",
// "src/main.go", "/src/"): relative to /workspace, with no "..", valid UTF-8,
// no control characters, at most 4096 bytes and 255 a component. It returns
// it cleaned, "." for the root. A path it refuses is ErrUnsafePath, naming field.
func workspacePath(field, p string) (string, error) {
	bad := func(reason string) (string, error) {
		return "", fmt.Errorf("%w: %s: %q %s", ErrUnsafePath, field, p, reason)
	}
	if len(p) > 4096 {
		return bad("is longer than 4096 bytes")
	}
	if err := checkName(p); err != nil {
		return bad(err.Error())
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return bad("contains \"..\"; paths stay inside the workspace")
		}
		if len(part) > 255 {
			return bad(fmt.Sprintf("has a component of %d bytes; at most 255", len(part)))
		}
	}
	return path.Clean("./" + strings.TrimLeft(p, "/")), nil
}

// checkName refuses names that are not valid UTF-8 or hold a control character.
func checkName(name string) error {
	if !utf8.ValidString(name) {
		return errors.New("is not valid UTF-8")
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("contains the control character %U", r)
		}
	}
	return nil
}

// PutArchive extracts a tar or tar.gz archive into dir of the caller's
// workspace, creating dir. The archive is checked as it streams (see
// checkArchive), and the agent commits it only once it has arrived whole: an
// entry that is absolute, climbs with "..", links outside, is a device or
// fifo, or passes the workspace's size or inode limit refuses the whole
// archive with an error naming the entry, and nothing of it is written.
// Setuid, setgid and sticky bits are dropped, and the files are owned by the
// workspace's owner.
func (e *Executor) PutArchive(ctx context.Context, id, dir string, archive io.Reader, c Caller) error {
	r, err := e.workspaceRecord(ctx, id, c)
	if err != nil {
		return err
	}
	if dir, err = workspacePath("path", dir); err != nil {
		return err
	}
	uid, gid := r.owner()
	return e.upload(ctx, r, []string{"put", dir}, func(w io.Writer) error {
		return checkArchive(archive, w, r.Size, r.Inodes, uid, gid)
	})
}

// PutFile writes one file at p in the caller's workspace, creating its
// directories, with mode's permission bits (0644 when 0). The file replaces
// what was at p only once all of content has arrived; a directory at p is
// ErrWrongType.
func (e *Executor) PutFile(ctx context.Context, id, p string, mode fs.FileMode, content io.Reader, c Caller) error {
	r, err := e.workspaceRecord(ctx, id, c)
	if err != nil {
		return err
	}
	clean, err := workspacePath("path", p)
	if err != nil {
		return err
	}
	if clean == "." {
		return &SpecError{Field: "path", Reason: "names the workspace's root, not a file"}
	}
	if mode == 0 {
		mode = 0o644
	}
	return e.upload(ctx, r, []string{"write", clean, strconv.FormatUint(uint64(mode.Perm()), 8)}, func(w io.Writer) error {
		if _, err := io.Copy(w, content); err != nil {
			return fmt.Errorf("read the upload: %w", err)
		}
		return nil
	})
}

// OpenFile opens the regular file at p in the caller's workspace for reading.
// A path through a symbolic link, or one that is a link, is refused; so is a
// file whose apparent size (a sparse file counts whole) is over the
// workspace's size.
func (e *Executor) OpenFile(ctx context.Context, id, p string, c Caller) (io.ReadCloser, FileInfo, error) {
	r, err := e.workspaceRecord(ctx, id, c)
	if err != nil {
		return nil, FileInfo{}, err
	}
	clean, err := workspacePath("path", p)
	if err != nil {
		return nil, FileInfo{}, err
	}
	out, done := e.holderStream(ctx, r, []string{"get", clean, strconv.FormatInt(r.Size, 10)})
	tr := tar.NewReader(out)
	h, err := tr.Next()
	if err != nil {
		done.close()
		return nil, FileInfo{}, r.overSize(done.err(err))
	}
	info := FileInfo{Name: path.Base(clean), Type: "file", Size: h.Size, Mode: fmt.Sprintf("%04o", h.Mode&0o777), ModTime: h.ModTime.UTC()}
	return &streamReader{Reader: tr, done: done}, info, nil
}

// OpenArchive reads the directory dir of the caller's workspace as a tar
// archive, names relative to dir. Links are archived as links, never followed;
// fifos, sockets and devices a run made are left out; no setuid bit survives;
// the files' apparent sizes total at most the workspace's size, or nothing is
// sent.
func (e *Executor) OpenArchive(ctx context.Context, id, dir string, c Caller) (io.ReadCloser, error) {
	r, err := e.workspaceRecord(ctx, id, c)
	if err != nil {
		return nil, err
	}
	clean, err := workspacePath("path", dir)
	if err != nil {
		return nil, err
	}
	out, done := e.holderStream(ctx, r, []string{"archive", clean, strconv.FormatInt(r.Size, 10)})
	// The first block tells an archive from a refusal before the caller
	// writes anything: the agent refuses before it sends a byte.
	first := make([]byte, 512)
	if _, err := io.ReadFull(out, first); err != nil {
		done.close()
		return nil, r.overSize(done.err(err))
	}
	return &streamReader{Reader: io.MultiReader(bytes.NewReader(first), out), done: done}, nil
}

// holderStream runs the agent's operation args in the holder, its stdout read
// from the reader it returns. done.err turns a read error into the
// operation's own error once it has ended.
func (e *Executor) holderStream(ctx context.Context, r workspaceRecord, args []string) (io.Reader, *execDone) {
	if conn, d := e.holderDial(ctx, r, args); conn != nil {
		d.conn = conn
		return socketStream{conn, d}, d
	} else if d != nil {
		return errReader{d.result}, d
	}
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	d := &execDone{ended: make(chan struct{}), cancel: cancel, pipe: pr}
	go func() {
		d.result = e.holderExec(ctx, r, args, nil, pw)
		pw.CloseWithError(cmpErr(d.result, io.EOF))
		close(d.ended)
	}()
	return pr, d
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// execDone is a holder operation streaming its output.
type execDone struct {
	ended  chan struct{}
	result error
	cancel context.CancelFunc
	pipe   *io.PipeReader // the exec's stdout, or
	conn   net.Conn       // the agent's connection to airlock's socket
}

// holderDial runs the agent's operation args in the holder of r with its data
// over a Unix socket airlock listens on in the holder's relay directory
// (startHolder), which bypasses the engine's exec stream: it returns the
// agent's connection once it dialed. It returns no connection and no
// operation when the holder has no such directory here (made by another
// airlock, or where the engine cannot see airlock's files) or the agent could
// not dial: the caller then uses the exec's stdio. An operation without a
// connection has ended with its result.
func (e *Executor) holderDial(ctx context.Context, r workspaceRecord, args []string) (net.Conn, *execDone) {
	base, ok := e.relaySockets(ctx, "runc")
	if !ok {
		return nil, nil
	}
	name := NewID()[:8] + ".sock" // short: a Unix socket's path has 107 bytes (relayPathRoom)
	sock := filepath.Join(base, r.holder(), name)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, nil // no directory: a holder made without one
	}
	defer func() {
		ln.Close()
		os.Remove(sock)
	}()
	if err := os.Chmod(sock, 0o666); err != nil {
		return nil, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	d := &execDone{ended: make(chan struct{}), cancel: cancel}
	go func() {
		d.result = e.holderExec(ctx, r, append([]string{"--socket", path.Join(relay.SocketDir, name)}, args...), nil, io.Discard)
		close(d.ended)
	}()
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := ln.Accept(); err == nil {
			accepted <- c
		}
		close(accepted)
	}()
	select {
	case c := <-accepted:
		if c != nil {
			return c, d
		}
	case <-d.ended:
	}
	ln.Close()
	if c := <-accepted; c != nil { // dialed just as it ended
		return c, d
	}
	<-d.ended
	if errors.Is(d.result, errNoSocket) {
		return nil, nil
	}
	return nil, d
}

// socketStream reads the agent's connection; its end is the operation's
// result: a cut stream is the operation's error, never a short success.
type socketStream struct {
	conn net.Conn
	d    *execDone
}

func (s socketStream) Read(p []byte) (int, error) {
	n, err := s.conn.Read(p)
	if err == io.EOF {
		<-s.d.ended
		err = cmpErr(s.d.result, io.EOF)
	}
	return n, err
}

// errReader fails every read with its error.
type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// err is the operation's error when it failed, else readErr.
func (d *execDone) err(readErr error) error {
	<-d.ended
	if d.result != nil {
		return d.result
	}
	if readErr == io.EOF {
		return fmt.Errorf("%w: the holder sent nothing", ErrFileNotFound)
	}
	return readErr
}

func (d *execDone) close() {
	d.cancel()
	if d.pipe != nil {
		d.pipe.Close()
	}
	if d.conn != nil {
		d.conn.Close()
	}
	<-d.ended
}

// streamReader is a file or archive being read from a workspace.
type streamReader struct {
	io.Reader
	done *execDone
}

func (s *streamReader) Close() error {
	s.done.close()
	return nil
}

// ListFiles lists the directory dir of the caller's workspace, sorted by name,
// at most maxListing entries. Links are reported with their targets, never followed.
func (e *Executor) ListFiles(ctx context.Context, id, dir string, c Caller) (FileList, error) {
	r, err := e.workspaceRecord(ctx, id, c)
	if err != nil {
		return FileList{}, err
	}
	clean, err := workspacePath("path", dir)
	if err != nil {
		return FileList{}, err
	}
	var out bytes.Buffer
	if err := e.holderExec(ctx, r, []string{"list", clean, strconv.Itoa(maxListing + 1)}, nil, &out); err != nil {
		return FileList{}, err
	}
	files := []FileInfo{}
	if err := json.Unmarshal(out.Bytes(), &files); err != nil {
		return FileList{}, fmt.Errorf("workspace listing: %w", err)
	}
	list := FileList{Path: clean, Files: files}
	if len(files) > maxListing {
		list.Files, list.Truncated = files[:maxListing], true
	}
	return list, nil
}

// RemoveFile deletes the file or directory (with its contents) at p in the
// caller's workspace. A link is removed, never followed.
func (e *Executor) RemoveFile(ctx context.Context, id, p string, c Caller) error {
	r, err := e.workspaceRecord(ctx, id, c)
	if err != nil {
		return err
	}
	clean, err := workspacePath("path", p)
	if err != nil {
		return err
	}
	if clean == "." {
		return &SpecError{Field: "path", Reason: "names the workspace's root; delete the workspace instead"}
	}
	return e.holderExec(ctx, r, []string{"remove", clean}, nil, io.Discard)
}

// workspaceUsage reads the bytes and inodes the workspace's files take.
func (e *Executor) workspaceUsage(ctx context.Context, r workspaceRecord) (used, inodes int64, err error) {
	var out bytes.Buffer
	if err := e.holderExec(ctx, r, []string{"usage"}, nil, &out); err != nil {
		return 0, 0, err
	}
	var u fileagent.Usage
	if err := json.Unmarshal(out.Bytes(), &u); err != nil {
		return 0, 0, fmt.Errorf("workspace usage: %q: %w", out.String(), err)
	}
	return u.Bytes, u.Inodes, nil
}
