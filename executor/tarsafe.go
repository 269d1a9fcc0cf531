package executor

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// owner is the workspace owner's uid and gid, for the headers of uploads.
func (r workspaceRecord) owner() (uid, gid int) {
	u, g, _ := strings.Cut(r.Owner, ":")
	fmt.Sscan(u, &uid)
	fmt.Sscan(g, &gid)
	return uid, gid
}

// checkArchive reads a caller's tar (or gzip-compressed tar) archive and writes
// a clean copy to out, or refuses the whole of it with an error naming the
// first bad entry. The copy holds only directories, regular files, symbolic
// links that stay inside the archive's tree, and hard links to files earlier in
// it; names are relative, with no ".." and no control characters; modes keep
// their permission bits only; owners are uid:gid. The declared sizes may total
// at most maxBytes and the entries maxEntries, every entry counted whatever its
// name: a tar bomb is refused before anything lands (the agent commits only a
// whole archive), whatever its compression.
func checkArchive(in io.Reader, out io.Writer, maxBytes, maxEntries int64, uid, gid int) error {
	br := bufio.NewReader(in)
	var src io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("%w: archive: %v", ErrUnsafePath, err)
		}
		defer zr.Close()
		src = zr
	}
	tr := tar.NewReader(src)
	tw := tar.NewWriter(out)
	var total, entries int64
	buf := make([]byte, 1<<20)
	links := map[string]bool{} // symbolic links in the archive: nothing may pass through them
	files := map[string]bool{} // regular files, which hard links may name
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%w: archive: %v", ErrUnsafePath, err)
		}
		name, err := entryName(h.Name)
		if err != nil {
			return fmt.Errorf("%w: archive entry %q %v", ErrUnsafePath, h.Name, err)
		}
		// Every entry counts, whatever its name: one named "./" is skipped
		// below, but its declared size is read (and decompressed) all the same.
		if entries++; entries > maxEntries {
			return fmt.Errorf("%w: the archive has more than %d entries, the workspace's inode limit", ErrWorkspaceFull, maxEntries)
		}
		if h.Size > 0 {
			if total += h.Size; total > maxBytes {
				return fmt.Errorf("%w: the archive's entries total more than %s, the workspace's size", ErrWorkspaceFull, formatBytes(maxBytes))
			}
		}
		if name == "." {
			continue
		}
		refuse := func(format string, args ...any) error {
			return fmt.Errorf("%w: archive entry %q %s", ErrUnsafePath, h.Name, fmt.Sprintf(format, args...))
		}
		for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
			if links[dir] {
				return refuse("passes through the symbolic link %q of the same archive", dir)
			}
		}
		clean := &tar.Header{Name: name, Mode: h.Mode & 0o777, ModTime: h.ModTime, Uid: uid, Gid: gid, Format: tar.FormatGNU}
		switch h.Typeflag {
		case tar.TypeDir:
			clean.Typeflag, clean.Name, clean.Mode = tar.TypeDir, name+"/", clean.Mode|0o700
		case tar.TypeReg, tar.TypeRegA:
			clean.Typeflag, clean.Size, clean.Mode = tar.TypeReg, h.Size, clean.Mode|0o600
			files[name] = true
		case tar.TypeSymlink:
			if err := checkLinkTarget(name, h.Linkname); err != nil {
				return refuse("%v", err)
			}
			clean.Typeflag, clean.Linkname = tar.TypeSymlink, h.Linkname
			links[name] = true
		case tar.TypeLink:
			target, err := entryName(h.Linkname)
			if err != nil || !files[target] {
				return refuse("is a hard link to %q, which is not a file earlier in the archive", h.Linkname)
			}
			clean.Typeflag, clean.Linkname = tar.TypeLink, target
		case tar.TypeChar, tar.TypeBlock:
			return refuse("is a device node")
		case tar.TypeFifo:
			return refuse("is a fifo")
		default:
			return refuse("is of a kind airlock does not extract (tar type %q)", h.Typeflag)
		}
		if err := tw.WriteHeader(clean); err != nil {
			return refuse("cannot be written: %v", err)
		}
		if clean.Size > 0 {
			if _, err := io.CopyBuffer(tw, tr, buf); err != nil {
				return fmt.Errorf("%w: archive entry %q: %v", ErrUnsafePath, h.Name, err)
			}
		}
	}
	return tw.Close()
}

// entryName checks an archive entry's name and returns it clean and relative.
func entryName(name string) (string, error) {
	if strings.HasPrefix(name, "/") {
		return "", errors.New("is an absolute path")
	}
	if err := checkName(name); err != nil {
		return "", err
	}
	if len(name) > 4096 {
		return "", fmt.Errorf("is a name of %d bytes; at most 4096", len(name))
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", errors.New("contains \"..\"")
		}
		if len(part) > 255 {
			return "", fmt.Errorf("has a component of %d bytes; at most 255", len(part))
		}
	}
	return path.Clean(name), nil
}

// checkLinkTarget refuses a symbolic link at name whose target is absolute or
// climbs out of the archive's tree.
func checkLinkTarget(name, target string) error {
	if target == "" || strings.HasPrefix(target, "/") {
		return fmt.Errorf("is a symbolic link to the absolute path %q", target)
	}
	if err := checkName(target); err != nil {
		return fmt.Errorf("is a symbolic link whose target %v", err)
	}
	if resolved := path.Join(path.Dir(name), target); resolved == ".." || strings.HasPrefix(resolved, "../") {
		return fmt.Errorf("is a symbolic link to %q, outside the archive", target)
	}
	return nil
}
