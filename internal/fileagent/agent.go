package fileagent

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Root is where a holder mounts its workspace.
const Root = "/workspace"

// The agent's exit codes, which the executor maps to its errors. For
// ExitSymlink, ExitNoFile and ExitWrongType, stderr holds the path (relative
// to the workspace) that was refused; for the others, a message.
const (
	ExitFailed    = 1  // anything else
	ExitUsage     = 2  // the arguments are not an operation
	ExitSymlink   = 40 // a component of the path is a symbolic link
	ExitNoFile    = 41 // a component does not exist
	ExitWrongType = 42 // not a directory, or not a regular file, as the operation needs
	ExitFull      = 43 // the workspace is full (ENOSPC, EDQUOT)
	ExitTooLarge  = 44 // a file or tree whose apparent size is over the caller's limit
	ExitCut       = 45 // stdin ended without the end mark: nothing was written
	ExitNoSocket  = 46 // the init could not dial the socket it was given for the data (cmd/airlock-init)
)

// failure is an operation's refusal: an exit code, and what stderr says.
type failure struct {
	code int
	text string
}

func (f *failure) Error() string { return f.text }

func fail(code int, format string, args ...any) error {
	return &failure{code: code, text: fmt.Sprintf(format, args...)}
}

// Main runs the operation args names on the workspace at root, and returns
// the process's exit code. The operations:
//
//	put DIR              extract the framed tar on stdin into DIR (made if missing)
//	write PATH MODE      write the framed bytes on stdin as the file PATH, octal MODE
//	get PATH LIMIT       the regular file PATH as a one-entry tar on stdout
//	archive DIR LIMIT    the tree DIR as a tar on stdout, names relative to DIR
//	report DIR PATTERN FILES BYTES
//	                     the regular files of DIR whose names match PATTERN, as a tar
//	list DIR MAX         DIR's entries as a JSON array, sorted, at most MAX
//	remove PATH          delete PATH, a directory with all it holds
//	usage                the bytes and inodes the workspace's files take, as JSON
//
// LIMIT, FILES and BYTES bound what a read may send, by apparent sizes.
func Main(root string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	out := bufio.NewWriterSize(stdout, 256<<10)
	err := run(root, args, bufio.NewReaderSize(stdin, 256<<10), out)
	if ferr := out.Flush(); err == nil && ferr != nil {
		err = ferr
	}
	if err == nil {
		return 0
	}
	fmt.Fprint(stderr, err.Error())
	var f *failure
	if errors.As(err, &f) {
		return f.code
	}
	if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT) {
		return ExitFull
	}
	return ExitFailed
}

func run(root string, args []string, stdin io.Reader, stdout io.Writer) error {
	usage := fail(ExitUsage, "usage: files put DIR | write PATH MODE | get PATH LIMIT | archive DIR LIMIT | report DIR PATTERN FILES BYTES | list DIR MAX | remove PATH | usage")
	if len(args) == 0 {
		return usage
	}
	op, args := args[0], args[1:]
	var nums []int64
	want := map[string]int{"put": 1, "write": 2, "get": 2, "archive": 2, "report": 4, "list": 2, "remove": 1, "usage": 0}
	n, ok := want[op]
	if !ok || len(args) != n {
		return usage
	}
	for i, a := range args {
		if op == "write" && i == 1 {
			mode, err := strconv.ParseUint(a, 8, 32)
			if err != nil || mode > 0o777 {
				return usage
			}
			nums = append(nums, int64(mode))
			continue
		}
		if i == 0 || (op == "report" && i == 1) {
			continue
		}
		v, err := strconv.ParseInt(a, 10, 64)
		if err != nil || v < 0 {
			return usage
		}
		nums = append(nums, v)
	}
	fd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open the workspace: %w", err)
	}
	a := &agent{root: fd}
	defer unix.Close(fd)
	var rel string
	if len(args) > 0 {
		if rel, err = clean(args[0]); err != nil {
			return err
		}
	}
	switch op {
	case "put":
		return a.put(rel, &frameReader{r: stdin})
	case "write":
		return a.write(rel, uint32(nums[0]), &frameReader{r: stdin})
	case "get":
		return a.get(rel, nums[0], stdout)
	case "archive":
		return a.archive(rel, nums[0], stdout)
	case "report":
		return a.report(rel, args[1], int(nums[0]), nums[1], stdout)
	case "list":
		return a.list(rel, int(nums[0]), stdout)
	case "remove":
		return a.remove(rel)
	default:
		return a.usage(stdout)
	}
}

// clean checks a path as the executor gives it: relative to the workspace,
// clean, no "..", every component at most 255 bytes, the whole at most 4096.
// The executor checked it already; the agent does not trust that.
func clean(p string) (string, error) {
	if p == "" || p == "." {
		return ".", nil
	}
	if len(p) > 4096 || strings.HasPrefix(p, "/") || path.Clean(p) != p {
		return "", fail(ExitFailed, "path %q is not clean and relative", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." || len(part) > 255 {
			return "", fail(ExitFailed, "path %q has a component that is \"..\" or over 255 bytes", p)
		}
	}
	return p, nil
}

// agent acts on one workspace, from a descriptor of its root.
type agent struct {
	root int
}

// dir opens the directory rel beneath the root, one component at a time, none
// followed if it is a link. With created set, missing components are made,
// and their paths appended to *created.
func (a *agent) dir(rel string, created *[]string) (int, error) {
	fd, err := unix.Dup(a.root)
	if err != nil {
		return -1, err
	}
	if rel == "." {
		return fd, nil
	}
	walked := ""
	for _, part := range strings.Split(rel, "/") {
		walked = path.Join(walked, part)
		next, err := openDir(fd, part)
		if err == unix.ENOENT && created != nil {
			if merr := unix.Mkdirat(fd, part, 0o755); merr == nil {
				*created = append(*created, walked)
			} else if merr != unix.EEXIST {
				unix.Close(fd)
				return -1, fmt.Errorf("make %s: %w", walked, merr)
			}
			next, err = openDir(fd, part)
		}
		if err != nil {
			cerr := classify(fd, part, walked, err, true)
			unix.Close(fd)
			return -1, cerr
		}
		unix.Close(fd)
		fd = next
	}
	return fd, nil
}

func openDir(dirfd int, name string) (int, error) {
	return unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
}

// openFile opens the regular file name in dirfd for reading: never through a
// link, never blocking (a fifo), and checked to be a regular file on the
// descriptor it opened.
func openFile(dirfd int, name, rel string) (*os.File, *unix.Stat_t, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, classify(dirfd, name, rel, err, false)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, nil, fail(ExitWrongType, "%s", rel)
	}
	return os.NewFile(uintptr(fd), rel), &st, nil
}

// classify turns the failure to open name (in dirfd) into the agent's refusal,
// by what is there now.
func classify(dirfd int, name, rel string, err error, wantDir bool) error {
	switch err {
	case unix.ELOOP: // O_NOFOLLOW met a link
		return fail(ExitSymlink, "%s", rel)
	case unix.ENOENT:
		return fail(ExitNoFile, "%s", rel)
	}
	var st unix.Stat_t
	if serr := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); serr != nil {
		if serr == unix.ENOENT {
			return fail(ExitNoFile, "%s", rel)
		}
		return fmt.Errorf("%s: %w", rel, err)
	}
	switch kind := st.Mode & unix.S_IFMT; {
	case kind == unix.S_IFLNK:
		return fail(ExitSymlink, "%s", rel)
	case wantDir && kind != unix.S_IFDIR, !wantDir && kind != unix.S_IFREG:
		return fail(ExitWrongType, "%s", rel)
	}
	return fmt.Errorf("%s: %w", rel, err)
}

// names reads the names in the directory dirfd, sorted.
func names(dirfd int) ([]string, error) {
	fd, err := unix.Dup(dirfd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), "dir")
	defer f.Close()
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	list, err := f.Readdirnames(-1)
	sort.Strings(list)
	return list, err
}

// lstat is fstatat without following a link.
func lstat(dirfd int, name string) (*unix.Stat_t, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return nil, err
	}
	return &st, nil
}

// split is path.Dir and path.Base of a clean relative path.
func split(rel string) (dir, name string) { return path.Dir(rel), path.Base(rel) }
