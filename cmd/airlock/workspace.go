package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/airlock-sandbox/airlock/executor"
)

const workspaceUsage = `Usage:
  airlock workspace create [--size 256m --inodes N --ttl 2h --label K=V --json]
  airlock workspace ls [--json]
  airlock workspace rm ID...
  airlock workspace put ID LOCAL [PATH]     upload a file or a directory (to PATH, default its name)
  airlock workspace get ID PATH [LOCAL]     download a file (to LOCAL, or - for stdout) or a directory
  airlock workspace ls-files ID [PATH] [--json]

Every subcommand takes --server URL (or $AIRLOCK_SERVER) to act on a server's workspaces.
`

// workspaceCmd is `airlock workspace SUBCOMMAND`.
func workspaceCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, workspaceUsage)
		return errReported
	}
	sub, args := args[0], args[1:]
	fs := flag.NewFlagSet("airlock workspace "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, workspaceUsage) }
	server := serverFlag(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	var size, ttl string
	var inodes int64
	labels := kvFlag{}
	if sub == "create" {
		fs.StringVar(&size, "size", "", "bytes the workspace holds, e.g. 256m (held in the engine host's memory)")
		fs.Int64Var(&inodes, "inodes", 0, "files and directories it holds (default one per 4 KiB)")
		fs.StringVar(&ttl, "ttl", "", "remove it this long after its creation, e.g. 2h")
		fs.Var(&labels, "label", "label K=V (repeatable)")
	}
	if err := fs.Parse(args); err != nil {
		return errReported
	}
	args = fs.Args()
	need := map[string][2]int{"create": {0, 0}, "ls": {0, 0}, "rm": {1, -1}, "put": {2, 3}, "get": {2, 3}, "ls-files": {1, 2}}
	n, ok := need[sub]
	if !ok {
		fmt.Fprint(stderr, workspaceUsage)
		return fmt.Errorf("workspace: unknown subcommand %q", sub)
	}
	if len(args) < n[0] || n[1] >= 0 && len(args) > n[1] {
		fmt.Fprint(stderr, workspaceUsage)
		return errReported
	}
	b, err := openBackend(*server, nil)
	if err != nil {
		return err
	}
	defer b.Close()

	switch sub {
	case "create":
		spec := executor.WorkspaceSpec{Inodes: inodes}
		if spec.Size, err = parseBytes("size", size); err != nil {
			return err
		}
		if spec.TTL, err = parseSeconds("ttl", ttl); err != nil {
			return err
		}
		if len(labels) > 0 {
			spec.Labels = labels
		}
		w, err := b.CreateWorkspace(ctx, spec)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, w)
		}
		fmt.Fprintln(stdout, w.ID)
	case "ls":
		list, err := b.Workspaces(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, list)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSIZE\tCREATED\tEXPIRES")
		for _, w := range list {
			exp := "-"
			if w.ExpiresAt != nil {
				exp = w.ExpiresAt.Format("2006-01-02 15:04:05")
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", w.ID, humanBytes(w.Size), w.CreatedAt.Format("2006-01-02 15:04:05"), exp)
		}
		return tw.Flush()
	case "rm":
		var errs []error
		for _, id := range args {
			if err := b.RemoveWorkspace(ctx, id); err != nil {
				errs = append(errs, err)
				continue
			}
			fmt.Fprintln(stdout, id)
		}
		return errors.Join(errs...)
	case "put":
		dst := filepath.Base(args[1])
		if len(args) == 3 {
			dst = args[2]
		}
		return putLocal(ctx, b, args[0], args[1], dst, stderr)
	case "get":
		local := filepath.Base(args[1])
		if len(args) == 3 {
			local = args[2]
		}
		return getToLocal(ctx, b, args[0], args[1], local, stdout, stderr)
	case "ls-files":
		dir := ""
		if len(args) == 2 {
			dir = args[1]
		}
		list, err := b.ListFiles(ctx, args[0], dir)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, list)
		}
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		for _, f := range list.Files {
			name := fmt.Sprintf("%q", f.Name)
			if !strings.ContainsAny(f.Name, " \t\"\\") && strings.Trim(name, `"`) == f.Name {
				name = f.Name
			}
			if f.Target != "" {
				name += " -> " + f.Target
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", f.Mode, f.Type, f.Size, f.ModTime.Format("2006-01-02 15:04:05"), name)
		}
		if list.Truncated {
			fmt.Fprintln(tw, "(more entries not listed)")
		}
		return tw.Flush()
	}
	return nil
}

// putLocal uploads the host file or directory src to dst in the workspace;
// "-" reads stdin into the file dst.
func putLocal(ctx context.Context, b backend, id, src, dst string, warn io.Writer) error {
	if src == "-" {
		return b.PutFile(ctx, id, dst, 0, os.Stdin)
	}
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		f, err := os.Open(src)
		if err != nil {
			return err
		}
		defer f.Close()
		return b.PutFile(ctx, id, dst, fi.Mode().Perm(), f)
	}
	archive := packDir(src, warn)
	defer archive.Close()
	return b.PutArchive(ctx, id, dst, archive)
}

// getToLocal downloads the file or directory p of the workspace to the host
// path local ("-": a file to stdout). A directory lands inside local, and
// nothing of it outside local; no more than the workspace's size is written.
func getToLocal(ctx context.Context, b backend, id, p, local string, stdout, warn io.Writer) error {
	w, err := b.Workspace(ctx, id)
	if err != nil {
		return err
	}
	rc, info, err := b.OpenFile(ctx, id, p)
	if errors.Is(err, executor.ErrWrongType) {
		if err := os.MkdirAll(local, 0o755); err != nil {
			return err
		}
		root, err := os.OpenRoot(local)
		if err != nil {
			return err
		}
		defer root.Close()
		arch, err := b.OpenArchive(ctx, id, p)
		if err != nil {
			return err
		}
		defer arch.Close()
		return unpackArchive(root, ".", arch, w.Size, warn)
	}
	if err != nil {
		return err
	}
	defer rc.Close()
	if info.Size > w.Size {
		return fmt.Errorf("%s is %s, %w", p, humanBytes(info.Size), errOverSize(w.Size))
	}
	if local == "-" {
		_, err := io.CopyN(stdout, rc, info.Size)
		return err
	}
	f, err := os.Create(local)
	if err != nil {
		return err
	}
	if err := writeSparse(f, rc, info.Size); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// copyBack brings the workspace's p into the host directory of tree, at the
// same relative path, after a run (--copy-back). Its links are written when
// the tree finishes.
func copyBack(ctx context.Context, b backend, id string, tree *hostTree, p string) error {
	clean, err := hostPath(filepath.ToSlash(p))
	if err != nil {
		return fmt.Errorf("--copy-back %s: %w", p, err)
	}
	rc, info, err := b.OpenFile(ctx, id, clean)
	if errors.Is(err, executor.ErrWrongType) {
		arch, err := b.OpenArchive(ctx, id, clean)
		if err != nil {
			return err
		}
		defer arch.Close()
		return tree.unpack(clean, arch)
	}
	if err != nil {
		return err
	}
	defer rc.Close()
	return tree.file(clean, parseMode(info.Mode), info.Size, rc)
}

func parseMode(s string) os.FileMode {
	var m uint32
	if _, err := fmt.Sscanf(s, "%o", &m); err != nil || m == 0 {
		return 0o644
	}
	return os.FileMode(m) & os.ModePerm
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%.0fMiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%dB", n)
}
