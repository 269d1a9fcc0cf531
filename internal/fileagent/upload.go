package fileagent

import (
	"archive/tar"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// upload stages an upload's entries under temporary names beside their
// destinations, then commits them all, or removes them all.
type upload struct {
	a       *agent
	created []string          // directories the upload made, in order
	staged  []staged          // files and links, in the archive's order
	byName  map[string]staged // staged files by destination, for hard links
	buf     []byte            // the copy buffer of every file
}

type staged struct {
	dir, tmp, name string
}

// put extracts the tar archive r (already checked by airlock: clean relative
// names, regular files, directories, links inside, hard links to earlier
// files) into the directory rel, all or nothing.
func (a *agent) put(rel string, r io.Reader) error {
	u := &upload{a: a, byName: map[string]staged{}}
	err := u.extract(rel, r)
	if err == nil {
		// The archive's end is not the upload's: the end mark must follow.
		if _, err = io.Copy(io.Discard, r); err == nil {
			err = u.commit()
		}
	}
	if err != nil {
		u.rollback()
		return cutOr(err)
	}
	return nil
}

// write writes r as the regular file rel with mode, all or nothing.
func (a *agent) write(rel string, mode uint32, r io.Reader) error {
	if rel == "." {
		return fail(ExitWrongType, ".")
	}
	u := &upload{a: a, byName: map[string]staged{}}
	err := u.file(rel, mode, time.Now(), r)
	if err == nil {
		err = u.commit()
	}
	if err != nil {
		u.rollback()
		return cutOr(err)
	}
	return nil
}

func cutOr(err error) error {
	if errors.Is(err, ErrCut) {
		return fail(ExitCut, "%v; nothing was written", err)
	}
	return err
}

func (u *upload) extract(rel string, r io.Reader) error {
	fd, err := u.a.dir(rel, &u.created)
	if err != nil {
		return err
	}
	unix.Close(fd)
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name, err := clean(strings.TrimSuffix(h.Name, "/")) // a directory's name may end in /
		if err != nil || name == "." {
			return fail(ExitFailed, "archive entry %q is not a clean relative name", h.Name)
		}
		dest := path.Join(rel, name)
		if _, err := clean(dest); err != nil {
			return err
		}
		mode := uint32(h.Mode) & 0o777
		switch h.Typeflag {
		case tar.TypeDir:
			fd, err := u.a.dir(dest, &u.created)
			if err != nil {
				return err
			}
			err = unix.Fchmod(fd, mode|0o700)
			unix.Close(fd)
			if err != nil {
				return err
			}
		case tar.TypeReg:
			if err := u.file(dest, mode, h.ModTime, tr); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := u.stage(dest, func(dirfd int, tmp string) error { return unix.Symlinkat(h.Linkname, dirfd, tmp) }); err != nil {
				return err
			}
		case tar.TypeLink:
			src, ok := u.byName[path.Join(rel, h.Linkname)]
			if !ok {
				return fail(ExitFailed, "archive entry %q is a hard link to %q, not a file earlier in the archive", h.Name, h.Linkname)
			}
			srcfd, err := u.a.dir(src.dir, nil)
			if err != nil {
				return err
			}
			err = u.stage(dest, func(dirfd int, tmp string) error { return unix.Linkat(srcfd, src.tmp, dirfd, tmp, 0) })
			unix.Close(srcfd)
			if err != nil {
				return err
			}
		default:
			return fail(ExitFailed, "archive entry %q is of a kind the agent does not write", h.Name)
		}
	}
}

// file stages the regular file dest, its bytes read from r.
func (u *upload) file(dest string, mode uint32, mod time.Time, r io.Reader) error {
	err := u.stage(dest, func(dirfd int, tmp string) error {
		fd, err := unix.Openat(dirfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return err
		}
		f := os.NewFile(uintptr(fd), dest)
		defer f.Close()
		if u.buf == nil {
			u.buf = make([]byte, 1<<20)
		}
		if _, err := io.CopyBuffer(struct{ io.Writer }{f}, r, u.buf); err != nil {
			return err
		}
		if err := unix.Fchmod(fd, mode); err != nil {
			return err
		}
		ts := []unix.Timespec{unix.NsecToTimespec(mod.UnixNano()), unix.NsecToTimespec(mod.UnixNano())}
		return unix.UtimesNanoAt(dirfd, tmp, ts, unix.AT_SYMLINK_NOFOLLOW)
	})
	if err == nil {
		u.byName[dest] = u.staged[len(u.staged)-1]
	}
	return err
}

// stage makes dest's directory (recording what it made), refuses a directory
// at dest, and has make create the entry under a temporary name beside it.
func (u *upload) stage(dest string, make func(dirfd int, tmp string) error) error {
	dir, name := split(dest)
	dirfd, err := u.a.dir(dir, &u.created)
	if err != nil {
		return err
	}
	defer unix.Close(dirfd)
	if st, err := lstat(dirfd, name); err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
		return fail(ExitWrongType, "%s", dest)
	}
	tmp := tempName()
	// Staged before it is written: a failure half-way is rolled back too.
	u.staged = append(u.staged, staged{dir: dir, tmp: tmp, name: name})
	return make(dirfd, tmp)
}

func tempName() string {
	var b [8]byte
	rand.Read(b[:])
	return ".airlock-upload-" + hex.EncodeToString(b[:])
}

// commit renames every staged entry into place, after checking again that no
// destination is a directory. A run that makes one a directory between the
// check and the rename gets the upload refused from that entry on.
func (u *upload) commit() error {
	for _, s := range u.staged {
		if err := u.at(s.dir, func(dirfd int) error {
			if st, err := lstat(dirfd, s.name); err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
				return fail(ExitWrongType, "%s", path.Join(s.dir, s.name))
			}
			return nil
		}); err != nil {
			return err
		}
	}
	for i, s := range u.staged {
		if err := u.at(s.dir, func(dirfd int) error { return unix.Renameat(dirfd, s.tmp, dirfd, s.name) }); err != nil {
			u.staged = u.staged[i:]
			if err == unix.EISDIR || err == unix.ENOTEMPTY || err == unix.EEXIST {
				return fail(ExitWrongType, "%s", path.Join(s.dir, s.name))
			}
			return err
		}
	}
	u.staged, u.created = nil, nil
	return nil
}

// rollback removes what the upload staged and the directories it made.
func (u *upload) rollback() {
	for _, s := range u.staged {
		u.at(s.dir, func(dirfd int) error { return unix.Unlinkat(dirfd, s.tmp, 0) })
	}
	for i := len(u.created) - 1; i >= 0; i-- {
		dir, name := split(u.created[i])
		u.at(dir, func(dirfd int) error { return unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR) })
	}
}

// at calls fn with the directory rel, opened beneath the root.
func (u *upload) at(rel string, fn func(dirfd int) error) error {
	fd, err := u.a.dir(rel, nil)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return fn(fd)
}
