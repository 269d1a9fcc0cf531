package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// The host's side of moving files: a directory packed as a tar archive for an
// upload, and an archive or a file unpacked into a host directory after a run.

// packDir streams dir as a tar archive: directories, regular files and symbolic
// links as links (never followed); links that lead outside dir (absolute, or
// up past it), sockets, fifos and devices are skipped and named on warn. Names
// are relative to dir.
func packDir(dir string, warn io.Writer) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(dir, p)
			if err != nil || rel == "." {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			link := ""
			switch {
			case info.Mode()&fs.ModeSymlink != 0:
				if link, err = os.Readlink(p); err != nil {
					return err
				}
				// A checkout may hold links it does not control (secret ->
				// /home/me/.netrc): the workspace refuses them, so they stay
				// behind, named, and the rest goes up.
				if strings.HasPrefix(link, "/") || escapes(path.Join(path.Dir(filepath.ToSlash(rel)), filepath.ToSlash(link))) {
					fmt.Fprintf(warn, "airlock: skipping %s: a link to %s, outside the directory\n", p, link)
					return nil
				}
			case !info.Mode().IsRegular() && !info.IsDir():
				fmt.Fprintf(warn, "airlock: skipping %s: not a file, directory or link\n", p)
				return nil
			}
			h, err := tar.FileInfoHeader(info, link)
			if err != nil {
				return err
			}
			h.Name, h.Uname, h.Gname = filepath.ToSlash(rel), "", ""
			if info.IsDir() {
				h.Name += "/"
			}
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			if info.Mode().IsRegular() {
				f, err := os.Open(p)
				if err != nil {
					return err
				}
				defer f.Close()
				if _, err := io.CopyN(tw, f, info.Size()); err != nil {
					return fmt.Errorf("%s: %w", p, err)
				}
			}
			return nil
		})
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	return pr
}

// unpackArchive extracts a tar archive (as a workspace gives it) under prefix
// in the host directory root, writing at most limit bytes of file contents
// (the workspace's size), and names on warn every link it leaves out.
func unpackArchive(root *os.Root, prefix string, r io.Reader, limit int64, warn io.Writer) error {
	t := newHostTree(root, limit, warn)
	err := t.unpack(prefix, r)
	return errors.Join(err, t.finish())
}

// hostTree writes what comes back from a workspace (archives and single
// files) into a host directory, so that nothing of it leads outside, by the
// kernel's reading of links as much as by their text:
//
//   - Nothing is written through a link, inside or out: each directory on the
//     way to an entry is a real directory (a link there is replaced by one),
//     and an entry replaces what is at its name, never opening it.
//   - Symbolic links are resolved, not read: each target is walked component
//     by component through the links the directory will hold (those of the
//     archives and those it held before), as the kernel would, at most 40
//     links deep; a link that would reach an absolute path or climb above the
//     directory is left out and named on warn.
//   - A link written later can change where an earlier one leads (a -> b/c,
//     then b -> ..). So links are not written as they come: they are kept
//     until finish, which resolves every one against the final set (the
//     directory as the files left it, plus all the links) before writing any,
//     and then writes those that stay inside. Leaving a link out cannot move
//     another: a link whose walk passes through one left out goes where that
//     one went, so it is left out too.
//   - Each archive or file writes at most limit bytes of contents; runs of
//     zero blocks are seeked over, so the holes of a sparse file stay holes.
//
// A hostTree serves one command: every copy-back of a run goes through one, so
// that a later copy-back cannot change where an earlier one's links lead.
type hostTree struct {
	root  *os.Root
	limit int64
	warn  io.Writer
	// links are the symbolic links to write at finish, in the order they
	// came; pending maps a name to its entry in links.
	links   []hostLink
	pending map[string]int
}

type hostLink struct {
	name, target string
	dropped      bool // a later entry took its name, or a place under it
}

func newHostTree(root *os.Root, limit int64, warn io.Writer) *hostTree {
	return &hostTree{root: root, limit: limit, warn: warn, pending: map[string]int{}}
}

// unpack extracts a tar archive under prefix, links kept for finish.
func (t *hostTree) unpack(prefix string, r io.Reader) error {
	tr := tar.NewReader(r)
	var total int64
	files := map[string]bool{} // regular files this archive wrote, for its hard links
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name, err := hostPath(path.Join(prefix, h.Name))
		if err != nil {
			return fmt.Errorf("archive entry %q: %w", h.Name, err)
		}
		if name == "." {
			continue
		}
		delete(files, name)
		mode := fs.FileMode(h.Mode) & fs.ModePerm
		switch h.Typeflag {
		case tar.TypeDir:
			if err := t.place(name); err != nil {
				return err
			}
			err = t.mkdirs(name, mode|0o700)
		case tar.TypeReg:
			if h.Size > t.limit-total {
				return fmt.Errorf("archive entry %q (%s): the files would total %w", h.Name, humanBytes(h.Size), t.overLimit())
			}
			total += h.Size
			err = t.writeFile(name, mode, h.Size, tr)
			files[name] = err == nil
		case tar.TypeSymlink:
			err = t.addLink(name, h.Linkname)
		case tar.TypeLink:
			target, perr := hostPath(path.Join(prefix, h.Linkname))
			if perr != nil || !files[target] {
				return fmt.Errorf("archive entry %q: a hard link to %q, not a file earlier in the archive", h.Name, h.Linkname)
			}
			err = t.hardLink(target, name)
		}
		if err != nil {
			return err
		}
	}
}

// file writes one file of size bytes, read from r, at name.
func (t *hostTree) file(name string, mode fs.FileMode, size int64, r io.Reader) error {
	if size > t.limit {
		return fmt.Errorf("%s is %s, %w", name, humanBytes(size), t.overLimit())
	}
	return t.writeFile(name, mode, size, r)
}

func (t *hostTree) overLimit() error { return errOverSize(t.limit) }

// errOverSize says why a copy stopped: the workspace could not have held more.
func errOverSize(size int64) error {
	return fmt.Errorf("more than the workspace's size of %s, the most a copy-back or download writes to the host", humanBytes(size))
}

// place makes ready for an entry at name: the directories above it real
// directories, and any link kept for its name or a place above it dropped
// (the later entry wins, as it would in the workspace).
func (t *hostTree) place(name string) error {
	for p := name; p != "."; p = path.Dir(p) {
		if i, ok := t.pending[p]; ok {
			t.links[i].dropped = true
			delete(t.pending, p)
		}
	}
	return t.mkdirs(path.Dir(name), 0o755)
}

// mkdirs makes dir and every directory above it real directories: missing
// ones are made (dir itself with perm), links are replaced, never followed.
func (t *hostTree) mkdirs(dir string, perm fs.FileMode) error {
	if dir == "." {
		return nil
	}
	parts := strings.Split(dir, "/")
	for i := range parts {
		p := strings.Join(parts[:i+1], "/")
		mode := fs.FileMode(0o755)
		if i == len(parts)-1 {
			mode = perm
		}
		fi, err := t.root.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return err
		case fi.IsDir():
			continue
		case fi.Mode()&fs.ModeSymlink != 0:
			if err := t.root.Remove(p); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: a file is where a directory goes", p)
		}
		if err := t.root.Mkdir(p, mode); err != nil {
			return err
		}
	}
	return nil
}

// clear removes the file or link at name, so that what is written there is
// new: a hard link the host held to a file elsewhere is not written through.
func (t *hostTree) clear(name string) error {
	fi, err := t.root.Lstat(name)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("%s: a directory is where a file goes", name)
	}
	return t.root.Remove(name)
}

func (t *hostTree) writeFile(name string, mode fs.FileMode, size int64, r io.Reader) error {
	if err := t.place(name); err != nil {
		return err
	}
	if err := t.clear(name); err != nil {
		return err
	}
	f, err := t.root.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if err := writeSparse(f, r, size); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", name, err)
	}
	return f.Close()
}

func (t *hostTree) hardLink(target, name string) error {
	if err := t.place(name); err != nil {
		return err
	}
	if fi, err := t.root.Lstat(target); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: a hard link to %s, no longer a file", name, target)
	}
	if err := t.clear(name); err != nil {
		return err
	}
	return t.root.Link(target, name)
}

// addLink keeps a symbolic link for finish. A directory where it goes stays:
// the link is left out rather than the directory's files removed.
func (t *hostTree) addLink(name, target string) error {
	if err := t.place(name); err != nil {
		return err
	}
	if fi, err := t.root.Lstat(name); err == nil && fi.IsDir() {
		fmt.Fprintf(t.warn, "airlock: leaving out %s: a link to %s, where the directory has a directory\n", t.hostName(name), target)
		return nil
	}
	t.pending[name] = len(t.links)
	t.links = append(t.links, hostLink{name: name, target: target})
	return nil
}

// maxLookups bounds the names finish looks up over all links: a few seconds
// of work, far more than a real tree's links need.
const maxLookups = 1 << 24

// finish resolves every kept link against the final set and writes those
// that stay inside the directory; the others are named on warn.
func (t *hostTree) finish() error {
	links, final := t.links, t.pending
	t.links, t.pending = nil, map[string]int{}
	seen := map[string]hostLookup{}
	lookups := 0
	lookup := func(name string) (string, bool, error) {
		if lookups++; lookups > maxLookups {
			return "", false, errTooManyLookups
		}
		if i, ok := final[name]; ok {
			return links[i].target, true, nil
		}
		if l, ok := seen[name]; ok {
			return l.target, l.isLink, nil
		}
		var l hostLookup
		if fi, err := t.root.Lstat(name); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			target, err := t.root.Readlink(name)
			if err != nil {
				return "", false, err
			}
			l = hostLookup{target, true}
		}
		seen[name] = l
		return l.target, l.isLink, nil
	}
	verdicts := make([]error, len(links))
	for i, l := range links {
		if !l.dropped {
			_, verdicts[i] = resolveLink(path.Dir(l.name), l.target, lookup)
		}
	}
	if lookups > maxLookups {
		// Past the budget a verdict may rest on a link not judged: none stands.
		for i := range verdicts {
			verdicts[i] = errTooManyLookups
		}
	}
	var errs []error
	for i, l := range links {
		switch {
		case l.dropped:
		case verdicts[i] != nil:
			fmt.Fprintf(t.warn, "airlock: leaving out %s: a link to %s, which %v\n", t.hostName(l.name), l.target, verdicts[i])
		default:
			if err := t.clear(l.name); err != nil {
				errs = append(errs, err)
				continue
			}
			if err := t.root.Symlink(l.target, l.name); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

type hostLookup struct {
	target string
	isLink bool
}

func (t *hostTree) hostName(name string) string {
	return filepath.Join(t.root.Name(), filepath.FromSlash(name))
}

// maxLinkHops is how many links one path may pass through, as in the kernel
// (MAXSYMLINKS): a deeper chain is refused, as the kernel would refuse it.
const maxLinkHops = 40

var (
	errAbsolute       = errors.New("would reach an absolute path")
	errClimbsOut      = errors.New("would climb out of the directory")
	errTooManyHops    = fmt.Errorf("passes through more than %d links", maxLinkHops)
	errTooManyLookups = errors.New("was not judged: too many links to resolve")
)

// resolveLink resolves target, the text of a link in the directory dir (a
// path under the root, with no link in it), as the kernel would: component by
// component, substituting for each name that lookup reports as a link that
// link's target, at most maxLinkHops times. It returns the path reached,
// relative to the root, or why it leads outside: an absolute path, a climb
// above the root, too many links. A name that is not there counts as a
// directory, the way it would be if one were made there later.
func resolveLink(dir, target string, lookup func(name string) (target string, isLink bool, err error)) (string, error) {
	var at []string
	if dir != "." && dir != "" {
		at = strings.Split(dir, "/")
	}
	if strings.HasPrefix(target, "/") {
		return "", errAbsolute
	}
	todo := strings.Split(target, "/")
	for hops := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if len(at) == 0 {
				return "", errClimbsOut
			}
			at = at[:len(at)-1]
			continue
		}
		at = append(at, c)
		next, isLink, err := lookup(strings.Join(at, "/"))
		if err != nil {
			return "", err
		}
		if !isLink {
			continue
		}
		if hops++; hops > maxLinkHops {
			return "", errTooManyHops
		}
		if strings.HasPrefix(next, "/") {
			return "", errAbsolute
		}
		at = at[:len(at)-1]
		todo = append(strings.Split(next, "/"), todo...)
	}
	if len(at) == 0 {
		return ".", nil
	}
	return strings.Join(at, "/"), nil
}

// writeSparse writes the size bytes of r to f, a new empty file, seeking over
// every whole block of zeros instead of writing it: a sparse file's holes stay
// holes, and a run of zeros costs the host no disk.
func writeSparse(f *os.File, r io.Reader, size int64) error {
	const block = 4 << 10
	buf := make([]byte, 256<<10)
	var zero [block]byte
	isZero := func(b []byte) bool { return len(b) == block && bytes.Equal(b, zero[:]) }
	for off := int64(0); off < size; {
		n, err := io.ReadFull(r, buf[:min(int64(len(buf)), size-off)])
		if err != nil {
			return err
		}
		for i := 0; i < n; {
			start := i
			for i < n && !isZero(buf[i:min(i+block, n)]) {
				i = min(i+block, n)
			}
			if start < i {
				if _, err := f.WriteAt(buf[start:i], off+int64(start)); err != nil {
					return err
				}
			}
			for i < n && isZero(buf[i:min(i+block, n)]) {
				i += block
			}
		}
		off += int64(n)
	}
	return f.Truncate(size) // the length, when the file ends in a hole
}

// hostPath checks a relative path that names a place under a host directory.
func hostPath(p string) (string, error) {
	clean := path.Clean(p)
	if strings.HasPrefix(p, "/") || escapes(clean) {
		return "", errors.New("would land outside the directory")
	}
	return clean, nil
}

func escapes(clean string) bool { return clean == ".." || strings.HasPrefix(clean, "../") }
