package main

import (
	"archive/tar"
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
// in the host directory root. Nothing lands outside root: every write goes
// through an os.Root, and a link whose target would lead outside is refused.
func unpackArchive(root *os.Root, prefix string, r io.Reader) error {
	tr := tar.NewReader(r)
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
		if dir := path.Dir(name); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		mode := fs.FileMode(h.Mode) & fs.ModePerm
		switch h.Typeflag {
		case tar.TypeDir:
			if err := root.MkdirAll(name, mode|0o700); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := writeRootFile(root, name, mode, tr); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if strings.HasPrefix(h.Linkname, "/") || escapes(path.Join(path.Dir(name), h.Linkname)) {
				return fmt.Errorf("archive entry %q: a link to %q would lead outside the directory", h.Name, h.Linkname)
			}
			root.Remove(name)
			if err := root.Symlink(h.Linkname, name); err != nil {
				return err
			}
		case tar.TypeLink:
			target, err := hostPath(path.Join(prefix, h.Linkname))
			if err != nil {
				return fmt.Errorf("archive entry %q: %w", h.Name, err)
			}
			root.Remove(name)
			if err := root.Link(target, name); err != nil {
				return err
			}
		}
	}
}

// writeRootFile writes r to name under root, replacing what was there (a link
// is replaced, not followed).
func writeRootFile(root *os.Root, name string, mode fs.FileMode, r io.Reader) error {
	if fi, err := root.Lstat(name); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if err := root.Remove(name); err != nil {
			return err
		}
	}
	f, err := root.OpenFile(name, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
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
