package fileagent

import (
	"archive/tar"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"time"

	"golang.org/x/sys/unix"
)

// Entry is one file of a listing, as api.FileInfo has it.
type Entry struct {
	Name    string    `json:"name"`
	Type    string    `json:"type"` // file, dir, symlink, or other (a fifo, a socket)
	Size    int64     `json:"size"`
	Mode    string    `json:"mode"` // permission bits in octal, e.g. "0644"
	ModTime time.Time `json:"mtime"`
	Target  string    `json:"target,omitempty"`
}

// Usage is what the workspace's files take.
type Usage struct {
	Bytes  int64 `json:"bytes"`
	Inodes int64 `json:"inodes"`
}

func mtime(st *unix.Stat_t) time.Time { return time.Unix(st.Mtim.Unix()).UTC() }

// get writes the regular file rel as a one-entry tar.
func (a *agent) get(rel string, limit int64, w io.Writer) error {
	dir, name := split(rel)
	dirfd, err := a.dir(dir, nil)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	f, st, err := openFile(dirfd, name, rel)
	if err != nil {
		return err
	}
	defer f.Close()
	if st.Size > limit {
		return fail(ExitTooLarge, "%s is %d bytes (its apparent size: a sparse file counts whole)", rel, st.Size)
	}
	tw := tar.NewWriter(w)
	if err := writeFile(tw, f, st, name); err != nil {
		return err
	}
	return tw.Close()
}

// writeFile writes f, opened and checked, as the entry name: exactly the size
// fstat gave, or an error if the file shrank meanwhile.
func writeFile(tw *tar.Writer, f *os.File, st *unix.Stat_t, name string) error {
	h := &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: int64(st.Mode & 0o777), Size: st.Size, ModTime: mtime(st), Format: tar.FormatPAX}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	if n, err := io.Copy(tw, io.LimitReader(f, st.Size)); err != nil || n != st.Size {
		return fmt.Errorf("%s changed while it was read (%d of %d bytes): %v", name, n, st.Size, err)
	}
	return nil
}

// archive writes the tree rel as a tar archive: directories, regular files
// and symbolic links (as links); fifos, sockets and devices are left out. The
// regular files' apparent sizes may total at most limit, counted before the
// first byte is sent and again while sending.
func (a *agent) archive(rel string, limit int64, w io.Writer) error {
	top, err := a.dir(rel, nil)
	if err != nil {
		return err
	}
	defer unix.Close(top)
	var total int64
	err = walk(top, "", func(dirfd int, name, entry string, st *unix.Stat_t) error {
		if st.Mode&unix.S_IFMT == unix.S_IFREG {
			if total += st.Size; total > limit {
				return fail(ExitTooLarge, "%s holds files of %d bytes or more (apparent sizes: a sparse file counts whole)", rel, total)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	total = 0
	err = walk(top, "", func(dirfd int, name, entry string, st *unix.Stat_t) error {
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: entry + "/", Mode: int64(st.Mode & 0o777), ModTime: mtime(st), Format: tar.FormatPAX})
		case unix.S_IFLNK:
			target, err := readlink(dirfd, name)
			if err != nil {
				return nil // gone or swapped since: left out
			}
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: entry, Linkname: target, Mode: 0o777, ModTime: mtime(st), Format: tar.FormatPAX})
		case unix.S_IFREG:
			f, fst, err := openFile(dirfd, name, entry)
			if err != nil {
				return nil // swapped for a link, a fifo, a directory since: left out
			}
			defer f.Close()
			if total += fst.Size; total > limit {
				return fail(ExitTooLarge, "%s grew to files of %d bytes or more while it was read", rel, total)
			}
			return writeFile(tw, f, fst, entry)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// walk calls fn for every entry under the directory dirfd, depth first, in
// name order, with the entry's lstat; directories are entered by descriptor,
// never through a link.
func walk(dirfd int, prefix string, fn func(dirfd int, name, entry string, st *unix.Stat_t) error) error {
	list, err := names(dirfd)
	if err != nil {
		return err
	}
	for _, name := range list {
		st, err := lstat(dirfd, name)
		if err != nil {
			continue // gone since
		}
		entry := path.Join(prefix, name)
		if err := fn(dirfd, name, entry, st); err != nil {
			return err
		}
		if st.Mode&unix.S_IFMT == unix.S_IFDIR {
			sub, err := openDir(dirfd, name)
			if err != nil {
				continue // swapped since
			}
			err = walk(sub, entry, fn)
			unix.Close(sub)
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func readlink(dirfd int, name string) (string, error) {
	buf := make([]byte, 4096)
	n, err := unix.Readlinkat(dirfd, name, buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// report writes, as a tar archive, the regular files of the directory rel
// whose names match pattern, at most files of them; their sizes, read on the
// descriptors, may total at most bytes, checked before any is read.
func (a *agent) report(rel, pattern string, files int, bytes int64, w io.Writer) error {
	if _, err := path.Match(pattern, ""); err != nil {
		return fail(ExitFailed, "pattern %q: %v", pattern, err)
	}
	dirfd, err := a.dir(rel, nil)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	list, err := names(dirfd)
	if err != nil {
		return err
	}
	var matched []string
	var total int64
	for _, name := range list {
		if ok, _ := path.Match(pattern, name); !ok || len(matched) == files {
			continue
		}
		f, st, err := openFile(dirfd, name, name)
		if err != nil {
			continue // not a regular file: a report is never read through a link
		}
		f.Close()
		if total += st.Size; total > bytes {
			return fail(ExitTooLarge, "the reports total more than %d bytes", bytes)
		}
		matched = append(matched, name)
	}
	tw := tar.NewWriter(w)
	total = 0
	for _, name := range matched {
		f, st, err := openFile(dirfd, name, name)
		if err != nil {
			continue
		}
		if total += st.Size; total > bytes {
			f.Close()
			return fail(ExitTooLarge, "the reports total more than %d bytes", bytes)
		}
		err = writeFile(tw, f, st, name)
		f.Close()
		if err != nil {
			return err
		}
	}
	return tw.Close()
}

// list writes the entries of the directory rel as JSON, at most max.
func (a *agent) list(rel string, max int, w io.Writer) error {
	dirfd, err := a.dir(rel, nil)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	list, err := names(dirfd)
	if err != nil {
		return err
	}
	entries := []Entry{}
	for _, name := range list {
		if len(entries) == max {
			break
		}
		st, err := lstat(dirfd, name)
		if err != nil {
			continue
		}
		e := Entry{Name: name, Size: st.Size, Mode: fmt.Sprintf("%04o", st.Mode&0o7777), ModTime: mtime(st), Type: "other"}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
			e.Type = "file"
		case unix.S_IFDIR:
			e.Type = "dir"
		case unix.S_IFLNK:
			e.Type = "symlink"
			e.Target, _ = readlink(dirfd, name)
		}
		entries = append(entries, e)
	}
	return json.NewEncoder(w).Encode(entries)
}

// remove deletes rel: a file or link (never followed), or a directory with
// everything in it.
func (a *agent) remove(rel string) error {
	if rel == "." {
		return fail(ExitFailed, "the workspace's root is not removed")
	}
	dir, name := split(rel)
	dirfd, err := a.dir(dir, nil)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	if _, err := lstat(dirfd, name); err != nil {
		return fail(ExitNoFile, "%s", rel)
	}
	return removeAt(dirfd, name)
}

// removeAt removes name from dirfd, emptying it first when it is a directory.
func removeAt(dirfd int, name string) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err != unix.EISDIR && err != unix.EPERM {
		if err == unix.ENOENT {
			return nil
		}
		return err
	}
	sub, err := openDir(dirfd, name)
	if err != nil {
		return err
	}
	list, err := names(sub)
	for _, child := range list {
		if err == nil {
			err = removeAt(sub, child)
		}
	}
	unix.Close(sub)
	if err != nil {
		return err
	}
	return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
}

// usage writes what the workspace's files take.
func (a *agent) usage(w io.Writer) error {
	var s unix.Statfs_t
	if err := unix.Fstatfs(a.root, &s); err != nil {
		return err
	}
	return json.NewEncoder(w).Encode(Usage{
		Bytes:  int64(s.Blocks-s.Bfree) * int64(s.Bsize),
		Inodes: int64(s.Files - s.Ffree),
	})
}
