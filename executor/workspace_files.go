package executor

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Files move in and out of a workspace through its holder: airlock execs
// busybox there, as the workspace's owner, with the path as an argument and the
// data on stdin or stdout. The holder mounts nothing writable but this
// workspace (its root is read-only, its /tmp a 1 MiB tmpfs), so whatever a run
// planted in the workspace, an operation can reach neither the host nor another
// workspace. Archives are checked on airlock's side before a byte reaches the
// workspace (tarsafe.go), and every operation refuses a path that passes
// through a symbolic link (docs/DESIGN.md, "Workspaces").

// The exit codes of the holder's scripts.
const (
	exitSymlink   = 40 // a component of the path is a symbolic link
	exitNoFile    = 41 // a component does not exist
	exitWrongType = 42 // not a directory, or not a regular file, as the operation needs
)

// walkScript enters the directory $1 from /workspace, one component at a time:
// none may be a symbolic link, and each must exist unless $2 is "create" (then
// it is made). After each step the physical working directory must still be
// inside /workspace, so that a run swapping a directory for a link while an
// operation walks (the race of CVE-2018-15664) cannot lead it out: the
// operation then acts in the directory it holds, never on a path. $3, when
// set, is a name in that directory, which the operation checks itself.
const walkScript = `set -f
cd /workspace || exit 1
c=
IFS=/
for part in $1; do
  [ "$part" = . ] && continue
  c="$c$part/"
  if [ -L "$part" ]; then printf '%s' "$c" >&2; exit 40; fi
  if [ ! -e "$part" ]; then
    if [ "$2" = create ]; then mkdir -- "$part" || exit 1; else printf '%s' "$c" >&2; exit 41; fi
  fi
  if [ ! -d "$part" ]; then printf '%s' "$c" >&2; exit 42; fi
  cd -P -- "$part" 2>/dev/null || { printf '%s' "$c" >&2; exit 41; }
  case $(pwd -P) in /workspace|/workspace/*) ;; *) printf '%s' "$c" >&2; exit 40;; esac
done
unset IFS
set +f
n=$c$3
`

// The operations, each run after walkScript, in the directory it entered.
const (
	extractScript = `exec tar -x -o -f -`
	// putFileScript extracts a one-file archive whose file is $3: a directory
	// there is not replaced (tar would fail on it, unexplained).
	putFileScript = `if [ -L "$3" ]; then printf '%s' "$n" >&2; exit 40; fi
if [ -d "$3" ]; then printf '%s' "$n" >&2; exit 42; fi
exec tar -x -o -f -`
	fileScript = `if [ -L "$3" ]; then printf '%s' "$n" >&2; exit 40; fi
[ -e "$3" ] || { printf '%s' "$n" >&2; exit 41; }
[ -f "$3" ] || { printf '%s' "$n" >&2; exit 42; }
exec tar -c -f - -- "$3"`
	dirScript  = `exec tar -c -f - .`
	listScript = `i=0
for f in .* *; do
  case $f in .|..) continue;; esac
  [ -e "$f" ] || [ -L "$f" ] || continue
  i=$((i+1))
  if [ $i -gt $4 ]; then exit 0; fi
  stat -c '%s %f %Y' -- "$f" || continue
  printf '%s\0' "$f"
  if [ -L "$f" ]; then printf '%s\0' "$(readlink -- "$f")"; fi
done`
	removeScript = `[ -e "$3" ] || [ -L "$3" ] || { printf '%s' "$n" >&2; exit 41; }
exec rm -rf -- "$3"`
	usageScript = `stat -f -c '%b %f %S %c %d' /workspace`
)

// maxListing bounds the entries one listing returns.
const maxListing = 10000

// holderExec runs script in the holder of r with args ($1...), feeding stdin and
// writing stdout. It maps the scripts' exit codes and a full workspace to errors.
func (e *Executor) holderExec(ctx context.Context, r workspaceRecord, script string, args []string, stdin io.Reader, stdout io.Writer) error {
	u, err := e.workspaceUse(ctx, r.ID)
	if err != nil {
		return err
	}
	if u.holder == "" {
		return fmt.Errorf("%w: %s must be deleted and created again", ErrWorkspaceLost, r.ID)
	}
	var stderr bytes.Buffer
	cmd := append([]string{"/bin/sh", "-c", walkScript + script, "sh"}, args...)
	code, err := e.eng.Exec(ctx, u.holder, r.Owner, cmd, stdin, stdout, &limitedWriter{w: &stderr, n: 4096})
	if err != nil {
		return e.engineErr("workspace file operation", err)
	}
	what := strings.TrimSuffix(stderr.String(), "/")
	switch {
	case code == 0:
		return nil
	case code == exitSymlink:
		return fmt.Errorf("%w: %q is a symbolic link; airlock does not follow links in a workspace", ErrUnsafePath, what)
	case code == exitNoFile:
		return fmt.Errorf("%w: %q", ErrFileNotFound, what)
	case code == exitWrongType:
		return fmt.Errorf("%w: %q is not of the kind this operation needs (a directory, or a regular file)", ErrWrongType, what)
	case strings.Contains(stderr.String(), "No space left") || strings.Contains(stderr.String(), "Disk quota"):
		return fmt.Errorf("%w: %s holds %s and %d inodes at most", ErrWorkspaceFull, r.ID, formatBytes(r.Size), r.Inodes)
	case strings.Contains(stderr.String(), "Is a directory") || strings.Contains(stderr.String(), "Not a directory"):
		// An archive's file where the workspace has a directory, or the reverse.
		return fmt.Errorf("%w: %s", ErrWrongType, strings.TrimPrefix(strings.TrimSpace(stderr.String()), "tar: "))
	}
	return fmt.Errorf("workspace file operation failed (exit %d): %s", code, strings.TrimSpace(stderr.String()))
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
// workspace, creating dir. The archive is checked whole before any byte lands
// (see checkArchive): an entry that is absolute, climbs with "..", links
// outside, is a device or fifo, or passes the workspace's size or inode limit
// refuses the whole archive with an error naming the entry. Setuid, setgid and
// sticky bits are dropped, and the files are owned by the workspace's owner.
func (e *Executor) PutArchive(ctx context.Context, id, dir string, archive io.Reader, c Caller) error {
	r, err := e.workspaceRecord(ctx, id, c)
	if err != nil {
		return err
	}
	if dir, err = workspacePath("path", dir); err != nil {
		return err
	}
	return e.putArchive(ctx, r, dir, "", archive)
}

// putArchive checks archive and extracts it into dir (checked) of r's
// workspace; file, when set, is the one file of a PutFile's archive.
func (e *Executor) putArchive(ctx context.Context, r workspaceRecord, dir, file string, archive io.Reader) error {
	spool, err := os.CreateTemp("", "airlock-upload-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(spool.Name())
	defer spool.Close()
	uid, gid := r.owner()
	if err := checkArchive(archive, spool, r.Size, r.Inodes, uid, gid); err != nil {
		return err
	}
	if _, err := spool.Seek(0, io.SeekStart); err != nil {
		return err
	}
	script, args := extractScript, []string{dir, "create"}
	if file != "" {
		script, args = putFileScript, append(args, file)
	}
	return e.holderExec(ctx, r, script, args, bufio.NewReader(spool), io.Discard)
}

// PutFile writes one file at p in the caller's workspace, creating its
// directories, with mode's permission bits (0644 when 0).
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
	// One code path for every upload: the file becomes a one-entry archive.
	data, err := io.ReadAll(io.LimitReader(content, maxFileBody+1))
	if err != nil {
		return err
	}
	if len(data) > maxFileBody {
		return fmt.Errorf("%w: a single upload is at most %s; send a tar archive for more", ErrWorkspaceFull, formatBytes(maxFileBody))
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	h := &tar.Header{Typeflag: tar.TypeReg, Name: path.Base(clean), Mode: int64(mode.Perm()), Size: int64(len(data)), ModTime: time.Now(), Format: tar.FormatGNU}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	tw.Write(data)
	if err := tw.Close(); err != nil {
		return err
	}
	return e.putArchive(ctx, r, path.Dir(clean), path.Base(clean), &buf)
}

// maxFileBody bounds one PutFile: it is held in memory.
const maxFileBody = 256 << 20

// OpenFile opens the regular file at p in the caller's workspace for reading.
// A path through a symbolic link, or one that is a link, is refused.
func (e *Executor) OpenFile(ctx context.Context, id, p string, c Caller) (io.ReadCloser, FileInfo, error) {
	r, err := e.workspaceRecord(ctx, id, c)
	if err != nil {
		return nil, FileInfo{}, err
	}
	clean, err := workspacePath("path", p)
	if err != nil {
		return nil, FileInfo{}, err
	}
	tr, done := e.holderStream(ctx, r, fileScript, path.Dir(clean), path.Base(clean))
	h, err := tr.Next()
	if err != nil {
		done.close()
		return nil, FileInfo{}, done.err(err)
	}
	if h.Typeflag != tar.TypeReg {
		done.close()
		return nil, FileInfo{}, fmt.Errorf("%w: %q is not a regular file", ErrWrongType, clean)
	}
	info := FileInfo{Name: path.Base(clean), Type: "file", Size: h.Size, Mode: fmt.Sprintf("%04o", h.Mode&0o777), ModTime: h.ModTime.UTC()}
	return &streamReader{Reader: tr, done: done}, info, nil
}

// OpenArchive reads the directory dir of the caller's workspace as a tar
// archive, names relative to dir. Links are archived as links, never followed;
// fifos, sockets and devices a run made are left out; no setuid bit survives.
func (e *Executor) OpenArchive(ctx context.Context, id, dir string, c Caller) (io.ReadCloser, error) {
	r, err := e.workspaceRecord(ctx, id, c)
	if err != nil {
		return nil, err
	}
	clean, err := workspacePath("path", dir)
	if err != nil {
		return nil, err
	}
	tr, done := e.holderStream(ctx, r, dirScript, clean, "")
	// The first header tells an archive from a refusal before the caller writes anything.
	first, err := tr.Next()
	if err != nil && err != io.EOF {
		done.close()
		return nil, done.err(err)
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(copyArchive(tr, first, pw))
		done.close()
	}()
	return &streamReader{Reader: pr, done: done, pipe: pr}, nil
}

// copyArchive rewrites the holder's archive for a caller: only directories,
// regular files, links; permission bits only; names without "./".
func copyArchive(tr *tar.Reader, h *tar.Header, w io.Writer) error {
	tw := tar.NewWriter(w)
	for ; h != nil; h, _ = nextHeader(tr) {
		name := strings.TrimPrefix(h.Name, "./")
		if name == "" || name == "." {
			continue
		}
		out := &tar.Header{Name: name, Mode: h.Mode & 0o777, ModTime: h.ModTime, Typeflag: h.Typeflag, Format: tar.FormatPAX}
		switch h.Typeflag {
		case tar.TypeDir:
		case tar.TypeReg:
			out.Size = h.Size
		case tar.TypeSymlink:
			out.Linkname = h.Linkname
		case tar.TypeLink:
			out.Linkname = strings.TrimPrefix(h.Linkname, "./")
		default:
			continue
		}
		if err := tw.WriteHeader(out); err != nil {
			return err
		}
		if out.Size > 0 {
			if _, err := io.Copy(tw, tr); err != nil {
				return err
			}
		}
	}
	return tw.Close()
}

func nextHeader(tr *tar.Reader) (*tar.Header, error) {
	h, err := tr.Next()
	if err != nil {
		return nil, err
	}
	return h, nil
}

// holderStream runs script on p in the holder, its stdout read as a tar stream.
// done.err turns a read error into the script's own error once it has ended.
func (e *Executor) holderStream(ctx context.Context, r workspaceRecord, script, dir, name string) (*tar.Reader, *execDone) {
	ctx, cancel := context.WithCancel(ctx)
	pr, pw := io.Pipe()
	d := &execDone{ended: make(chan struct{}), cancel: cancel, pipe: pr}
	go func() {
		d.result = e.holderExec(ctx, r, script, []string{dir, "", name}, nil, pw)
		pw.CloseWithError(cmpErr(d.result, io.EOF))
		close(d.ended)
	}()
	return tar.NewReader(pr), d
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
	pipe   *io.PipeReader
}

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
	d.pipe.Close()
	<-d.ended
}

// streamReader is a file or archive being read from a workspace.
type streamReader struct {
	io.Reader
	done *execDone
	pipe *io.PipeReader
}

func (s *streamReader) Close() error {
	if s.pipe != nil {
		s.pipe.Close()
	}
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
	if err := e.holderExec(ctx, r, listScript, []string{clean, "", "", strconv.Itoa(maxListing + 1)}, nil, &out); err != nil {
		return FileList{}, err
	}
	files, err := parseListing(out.Bytes())
	if err != nil {
		return FileList{}, err
	}
	list := FileList{Path: clean, Files: files}
	if len(files) > maxListing {
		list.Files, list.Truncated = files[:maxListing], true
	}
	return list, nil
}

// parseListing reads listScript's output: per entry, a line "size rawmode
// mtime", the name and NUL, and for a link its target and NUL.
func parseListing(b []byte) ([]FileInfo, error) {
	files := []FileInfo{}
	for len(b) > 0 {
		line, rest, ok := bytes.Cut(b, []byte("\n"))
		if !ok {
			return nil, fmt.Errorf("workspace listing: truncated entry")
		}
		f := strings.Fields(string(line))
		if len(f) != 3 {
			return nil, fmt.Errorf("workspace listing: bad line %q", line)
		}
		size, err1 := strconv.ParseInt(f[0], 10, 64)
		raw, err2 := strconv.ParseUint(f[1], 16, 32)
		mtime, err3 := strconv.ParseInt(f[2], 10, 64)
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("workspace listing: bad line %q", line)
		}
		name, rest, ok := bytes.Cut(rest, []byte{0})
		if !ok {
			return nil, fmt.Errorf("workspace listing: truncated name")
		}
		fi := FileInfo{Name: string(name), Size: size, Mode: fmt.Sprintf("%04o", raw&0o7777), ModTime: time.Unix(mtime, 0).UTC()}
		switch raw & 0o170000 {
		case 0o100000:
			fi.Type = "file"
		case 0o040000:
			fi.Type = "dir"
		case 0o120000:
			fi.Type = "symlink"
			var target []byte
			if target, rest, ok = bytes.Cut(rest, []byte{0}); !ok {
				return nil, fmt.Errorf("workspace listing: truncated link target")
			}
			fi.Target = string(target)
		default:
			fi.Type = "other"
		}
		files = append(files, fi)
		b = rest
	}
	return files, nil
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
	// Every component but the last must be a real directory; the last may be a link.
	return e.holderExec(ctx, r, removeScript, []string{path.Dir(clean), "", path.Base(clean)}, nil, io.Discard)
}

// workspaceUsage reads the bytes and inodes the workspace's files take.
func (e *Executor) workspaceUsage(ctx context.Context, r workspaceRecord) (used, inodes int64, err error) {
	var out bytes.Buffer
	if err := e.holderExec(ctx, r, usageScript, []string{"."}, nil, &out); err != nil {
		return 0, 0, err
	}
	var blocks, free, bsize, files, ffree int64
	if _, err := fmt.Sscan(out.String(), &blocks, &free, &bsize, &files, &ffree); err != nil {
		return 0, 0, fmt.Errorf("workspace usage: %q: %w", out.String(), err)
	}
	return (blocks - free) * bsize, files - ffree, nil
}
