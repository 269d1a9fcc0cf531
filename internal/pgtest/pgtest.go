// Package pgtest starts a throw-away PostgreSQL server for tests: initdb into a
// temporary directory, a postmaster listening on a unix socket there (and on a
// loopback TCP port when asked), and everything stopped and removed at the end.
//
// A test that needs PostgreSQL fails when it cannot start one; it never skips.
// The server binaries are found with `pg_config --bindir`, else under
// /usr/lib/postgresql/*/bin (Debian's layout); .ci/install-postgresql installs them.
//
// initdb and postgres refuse to run as root. When the test runs as root, both are
// run as the `postgres` system user, which owns the temporary directory.
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// startTimeout bounds how long a postmaster may take to accept connections.
const startTimeout = 60 * time.Second

// stopTimeout bounds a fast shutdown before the postmaster is told to quit at once.
const stopTimeout = 30 * time.Second

// Server is one throw-away PostgreSQL. It is safe for concurrent use.
type Server struct {
	bin  string // directory of initdb and postgres
	dir  string // the temporary directory: socket, data/, log
	port int
	tcp  bool
	cred *syscall.Credential // nil unless the test runs as root

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
	log  *os.File
}

// Option changes how Start sets the server up.
type Option func(*Server) error

// WithTCP makes the server listen on a loopback TCP port too (chosen free at
// Start, kept across Restart), for tests that put something between client and
// server.
func WithTCP() Option {
	return func(s *Server) error {
		s.tcp = true
		return nil
	}
}

// New starts a server for t and stops it when t ends. It fails t when the server
// cannot start.
func New(t testing.TB, opts ...Option) *Server {
	t.Helper()
	s, err := Start(context.Background(), opts...)
	if s != nil {
		t.Cleanup(func() {
			if err := s.Close(); err != nil {
				t.Errorf("pgtest: %v", err)
			}
		})
	}
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return s
}

// Start initialises a database cluster in a new temporary directory and starts a
// postmaster on it. Close stops it and removes the directory. On error the
// returned Server, when not nil, still needs Close.
func Start(ctx context.Context, opts ...Option) (*Server, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, port: 5432}
	for _, o := range opts {
		if err := o(s); err != nil {
			return nil, err
		}
	}
	if os.Geteuid() == 0 {
		if s.cred, err = postgresUser(); err != nil {
			return nil, err
		}
	}
	// A short path: a unix socket's path must fit in 107 bytes.
	s.dir, err = os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, fmt.Errorf("make temp dir: %w", err)
	}
	if s.cred != nil {
		if err := os.Chown(s.dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return s, fmt.Errorf("give %s to postgres: %w", s.dir, err)
		}
	}
	if s.tcp {
		if s.port, err = freePort(); err != nil {
			return s, err
		}
	}
	initdb := exec.CommandContext(ctx, filepath.Join(bin, "initdb"),
		"--pgdata", s.dataDir(), "--username", "postgres", "--auth", "trust",
		"--encoding", "UTF8", "--locale", "C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	initdb.Env = s.env()
	if out, err := initdb.CombinedOutput(); err != nil {
		return s, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	return s, s.Start(ctx)
}

// URL is a connection URL for the database "postgres" as its superuser, over the
// unix socket.
func (s *Server) URL() string { return s.DatabaseURL("postgres") }

// DatabaseURL is a connection URL for the database name, over the unix socket.
func (s *Server) DatabaseURL(name string) string {
	q := url.Values{"host": {s.dir}, "port": {strconv.Itoa(s.port)}, "sslmode": {"disable"}}
	return (&url.URL{Scheme: "postgres", User: url.User("postgres"), Path: "/" + name, RawQuery: q.Encode()}).String()
}

// TCPURL is a connection URL for the database name over loopback TCP; it is
// empty unless the server was started WithTCP.
func (s *Server) TCPURL(name string) string {
	if !s.tcp {
		return ""
	}
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable", s.Addr(), url.PathEscape(name))
}

// Addr is the server's loopback TCP address ("127.0.0.1:port"), or "" without WithTCP.
func (s *Server) Addr() string {
	if !s.tcp {
		return ""
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
}

// Dir is the server's temporary directory (its socket, data/ and postgres.log).
func (s *Server) Dir() string { return s.dir }

// CreateDatabase creates an empty database and returns its URL, so that each
// test can have a database of its own on one server.
func (s *Server) CreateDatabase(ctx context.Context, name string) (string, error) {
	conn, err := pgconn.Connect(ctx, s.URL())
	if err != nil {
		return "", fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	ident := `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
	if _, err := conn.Exec(ctx, "create database "+ident).ReadAll(); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return s.DatabaseURL(name), nil
}

// Start starts the postmaster on the existing data directory and waits until it
// accepts connections. Starting a running server is an error.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return errors.New("start postgres: already running")
	}
	listen := ""
	if s.tcp {
		listen = "127.0.0.1"
	}
	log, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open postgres log: %w", err)
	}
	// The server is for tests: durability against a power cut is not needed, and
	// a clean shutdown still writes everything out, so Restart loses nothing.
	cmd := exec.Command(filepath.Join(s.bin, "postgres"),
		"-D", s.dataDir(),
		"-k", s.dir,
		"-p", strconv.Itoa(s.port),
		"-c", "listen_addresses="+listen,
		"-c", "fsync=off",
		"-c", "synchronous_commit=off",
		"-c", "full_page_writes=off",
		"-c", "max_connections=300",
		"-c", "shared_buffers=32MB",
		"-c", "logging_collector=off",
	)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.Env = s.env()
	// Pdeathsig: if the test binary dies (a panic, a -timeout), the postmaster
	// shuts down at once instead of outliving it. SIGQUIT is its immediate shutdown.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred, Setpgid: true, Pdeathsig: syscall.SIGQUIT}
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start postgres: %w", err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	s.cmd, s.done, s.log = cmd, done, log

	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for {
		conn, err := pgconn.Connect(ctx, s.URL())
		if err == nil {
			conn.Close(ctx)
			return nil
		}
		select {
		case <-done:
			s.cmd, s.done, s.log = nil, nil, nil
			log.Close()
			return fmt.Errorf("start postgres: it exited (%v)\n%s", cmd.ProcessState, s.logTail())
		case <-ctx.Done():
			s.stopLocked()
			return fmt.Errorf("start postgres: not ready after %s: %w\n%s", startTimeout, err, s.logTail())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Stop shuts the postmaster down (a fast shutdown: sessions are ended, data is
// written out) and waits for it. Stopping a stopped server does nothing.
func (s *Server) Stop(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopLocked()
}

// Restart stops the server and starts it again on the same data directory,
// socket and port, as a PostgreSQL restarted under load would be.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.Stop(ctx); err != nil {
		return err
	}
	return s.Start(ctx)
}

// Close stops the server and removes its directory.
func (s *Server) Close() error {
	if s.dir == "" {
		return nil
	}
	err := s.Stop(context.Background())
	if rerr := os.RemoveAll(s.dir); rerr != nil && err == nil {
		err = fmt.Errorf("remove %s: %w", s.dir, rerr)
	}
	return err
}

func (s *Server) stopLocked() error {
	if s.cmd == nil {
		return nil
	}
	defer func() {
		s.log.Close()
		s.cmd, s.done, s.log = nil, nil, nil
	}()
	// SIGINT is the fast shutdown; SIGQUIT the immediate one, if that hangs.
	if err := s.cmd.Process.Signal(syscall.SIGINT); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("stop postgres: %w", err)
	}
	select {
	case <-s.done:
		return nil
	case <-time.After(stopTimeout):
	}
	s.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-s.done:
		return fmt.Errorf("stop postgres: no fast shutdown within %s; quit it", stopTimeout)
	case <-time.After(stopTimeout):
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
		return fmt.Errorf("stop postgres: killed after %s", 2*stopTimeout)
	}
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }
func (s *Server) logPath() string { return filepath.Join(s.dir, "postgres.log") }

// env is a minimal environment: no PG* variable of the caller's leaks in.
func (s *Server) env() []string {
	env := []string{"PATH=" + os.Getenv("PATH"), "LC_ALL=C", "TZ=UTC"}
	if s.cred != nil {
		env = append(env, "HOME="+s.dir)
	} else if h := os.Getenv("HOME"); h != "" {
		env = append(env, "HOME="+h)
	}
	return env
}

func (s *Server) logTail() string {
	b, _ := os.ReadFile(s.logPath())
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	return string(bytes.TrimSpace(b))
}

// binDir finds the directory of initdb and postgres.
func binDir() (string, error) {
	var tried []string
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		d := strings.TrimSpace(string(out))
		if usable(d) {
			return d, nil
		}
		tried = append(tried, d)
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	// Newest major version first.
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if usable(d) {
			return d, nil
		}
		tried = append(tried, d)
	}
	return "", fmt.Errorf("find PostgreSQL's initdb and postgres: not in pg_config --bindir nor /usr/lib/postgresql/*/bin (tried %q); run .ci/install-postgresql", tried)
}

func usable(dir string) bool {
	for _, name := range []string{"initdb", "postgres"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Mode()&0o111 == 0 {
			return false
		}
	}
	return true
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// postgresUser is the credential of the postgres system user, which the server
// runs as when the test runs as root.
func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root, PostgreSQL must run as the postgres user: %w", err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("postgres user's uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("postgres user's gid %q: %w", u.Gid, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}, nil
}

// freePort asks the kernel for a free loopback port. Another process may take it
// before the postmaster binds it; the start then fails and says so.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
