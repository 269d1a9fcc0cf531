// Command airlock-init is PID 1 of every sandbox airlock starts: it reads one
// command from its stdin (internal/initproto), runs it, frames its stdout and
// stderr exactly on its own stdout, reaps every process, forwards signals,
// ends everything at the deadline, and reports how the command ended,
// measured inside the sandbox: exit status, CPU time, the cgroup's peak memory,
// I/O bytes and OOM kills. Static (CGO_ENABLED=0), it runs in any image.
// docs/DESIGN.md, "The init".
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlock-sandbox/airlock/internal/fileagent"
	"github.com/airlock-sandbox/airlock/internal/initproto"
	"github.com/airlock-sandbox/airlock/internal/relay"
)

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case initproto.FilesArg: // the file agent, exec'd in a workspace's holder
			os.Exit(files(os.Args[2:]))
		case initproto.HoldArg: // PID 1 of a workspace's holder
			hold()
		case relay.Arg: // a run's way out to airlock's egress proxy, exec'd in its sandbox
			if err := relay.Sandbox(relay.Addr, os.Stdin, os.Stdout); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Exit(0)
		}
	}
	// Opened while the init may still open its own /proc files (oom.go).
	oom := openOOMScore()
	// No process of the sandbox may open the init's descriptors or read its
	// memory through /proc/1 (they run as the same user): a command could
	// otherwise write a forged report into the init's stdout.
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	startRelay()
	// What does not depend on the command is ready before it comes: a warm
	// sandbox waits here, and its run starts the moment the request is read.
	pre := prepare()
	pre.oom = oom
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	req, err := initproto.ReadRequest(in)
	if err != nil {
		out := &frames{w: bufio.NewWriterSize(os.Stdout, 64<<10)}
		out.write(initproto.Error, []byte(err.Error()))
		out.flush()
		os.Exit(125)
	}
	var out output = &frames{w: bufio.NewWriterSize(os.Stdout, 64<<10)}
	if req.Keep > 0 {
		out = &passthrough{keep: req.Keep, marker: req.Marker, streams: [2]*kept{{f: os.Stdout}, {f: os.Stderr}}}
	}
	rep := run(req, in, out, pre)
	out.report(&rep)
	if warm() {
		// The sandbox has served its one run; every process but the init is
		// gone. Its removal is the engine's work, which would slow the runs in
		// flight beside it: the init stays until the host says (SIGTERM) or
		// lingerAfterReport has passed, whichever comes first.
		select {
		case <-pre.sigs:
		case <-time.After(initproto.LingerAfterReport):
		}
	}
	os.Exit(rep.ExitCode)
}

// hold is PID 1 of a workspace's holder: it keeps the container, and so the
// workspace's tmpfs, alive until the engine stops it. Every other signal is
// ignored; nothing runs in a holder but the file agent.
func hold() {
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs)
	for s := range sigs {
		if s == syscall.SIGTERM || s == syscall.SIGINT {
			os.Exit(0)
		}
	}
}

// warm says whether the init runs in a sandbox started ahead of its run.
func warm() bool { return len(os.Args) > 1 && os.Args[1] == initproto.WarmArg }

// output is where the command's output and the report go: frames on stdout
// for a foreground run, which airlock reads as it comes; or, for a background
// job, the init's own stdout and stderr, which the engine's log keeps.
type output interface {
	// copy passes on what r yields as the command's stdout or stderr until
	// EOF, and returns the byte count.
	copy(r io.Reader, stream byte) int64
	// write passes on p as the command's stdout or stderr (the init's own
	// message for a command that could not start).
	write(stream byte, p []byte)
	// report ends the output with the report.
	report(rep *initproto.Report)
}

// frames writes frames to the init's stdout from several goroutines.
type frames struct {
	mu sync.Mutex
	w  *bufio.Writer
}

func (f *frames) write(kind byte, p []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	initproto.WriteFrame(f.w, kind, p)
}

func (f *frames) flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.w.Flush()
}

func (f *frames) copy(r io.Reader, kind byte) int64 {
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := r.Read(buf)
		if k > 0 {
			f.write(kind, buf[:k])
			f.flush() // the host shows output as it comes
			n += int64(k)
		}
		if err != nil {
			f.flush()
			return n
		}
	}
}

func (f *frames) report(rep *initproto.Report) {
	b, _ := json.Marshal(rep)
	f.write(initproto.Result, b)
	f.flush()
}

// passthrough is a background job's output: each stream unframed on the
// init's stream of the same name, up to keep bytes; the rest only counted,
// with its last TailBytes kept for the report.
type passthrough struct {
	keep    int64
	marker  string
	streams [2]*kept // stdout, stderr
}

type kept struct {
	f    *os.File
	mu   sync.Mutex
	n    int64 // bytes the command wrote
	last byte  // the last byte passed on
	tail []byte
}

func (p *passthrough) stream(s byte) *kept {
	if s == initproto.Stderr {
		return p.streams[1]
	}
	return p.streams[0]
}

func (p *passthrough) write(s byte, b []byte) {
	k := p.stream(s)
	k.mu.Lock()
	defer k.mu.Unlock()
	if room := p.keep - k.n; room > 0 {
		pass := b[:min(int64(len(b)), room)]
		k.f.Write(pass)
		k.last = pass[len(pass)-1]
	}
	k.n += int64(len(b))
	k.tail = append(k.tail, b...)
	if over := len(k.tail) - initproto.TailBytes; over > 0 {
		k.tail = append(k.tail[:0], k.tail[over:]...)
	}
}

func (p *passthrough) copy(r io.Reader, s byte) int64 {
	buf := make([]byte, 32<<10)
	for {
		k, err := r.Read(buf)
		if k > 0 {
			p.write(s, buf[:k])
		}
		if err != nil {
			return p.stream(s).n
		}
	}
}

// report writes the marker and the report on stdout, at the start of a line:
// the engine's log then has it as a message of its own (it cuts messages at
// newlines), which airlock tells from the command's output by the marker.
func (p *passthrough) report(rep *initproto.Report) {
	for i, k := range p.streams {
		if k.n > p.keep {
			if i == 0 {
				rep.StdoutTail = k.tail
			} else {
				rep.StderrTail = k.tail
			}
		}
	}
	var line []byte
	if out := p.streams[0]; out.n > 0 && out.last != '\n' {
		rep.NewlineAdded = true
		line = append(line, '\n')
	}
	b, _ := json.Marshal(rep)
	line = append(line, p.marker...)
	line = append(line, b...)
	line = append(line, '\n')
	os.Stdout.Write(line)
}

// forwarded are the signals the init passes on to every process of the sandbox
// (a kill from the host arrives at PID 1); it ignores faults (signals.go).
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// prepared is what run needs that no request changes.
type prepared struct {
	sigs       chan os.Signal
	oom        *oomScore
	oomBefore  int64 // the cgroup's OOM kills before the command
	outR, outW *os.File
	errR, errW *os.File
	err        error // of the pipes
}

// files runs the file agent. With "--socket PATH" first, the operation's
// data (an upload's input, a download's output) goes over a connection to
// that Unix socket, where airlock listens, instead of the exec's stdin or
// stdout; a socket it cannot dial exits fileagent.ExitNoSocket before
// anything is read or written.
func files(args []string) int {
	in, out := io.Reader(os.Stdin), io.Writer(os.Stdout)
	if len(args) >= 3 && args[0] == "--socket" {
		conn, err := net.Dial("unix", args[1])
		if err != nil {
			fmt.Fprint(os.Stderr, err)
			return fileagent.ExitNoSocket
		}
		defer conn.Close()
		if args = args[2:]; args[0] == "put" || args[0] == "write" {
			in = conn
		} else {
			out = conn
		}
	}
	return fileagent.Main(fileagent.Root, args, in, out, os.Stderr)
}

// startRelay starts the sandbox's way out when airlock mounted a relay socket
// for it (internal/relay): it listens on relay.Addr before any command starts.
// Without it, or if the port is taken, the sandbox has no way out.
func startRelay() {
	if _, err := os.Lstat(relay.Socket); err != nil {
		return
	}
	ln, err := net.Listen("tcp", relay.Addr)
	if err != nil {
		return
	}
	_, err = os.Lstat(relay.PassFD)
	go relay.Forward(ln, relay.Socket, err == nil)
}

func prepare() prepared {
	p := prepared{sigs: make(chan os.Signal, 8), oomBefore: oomKills()}
	ignoreFaults()
	signal.Notify(p.sigs, append(forwarded, syscall.Signal(initproto.ForceKill))...)
	var err1, err2 error
	p.outR, p.outW, err1 = os.Pipe()
	p.errR, p.errW, err2 = os.Pipe()
	p.err = firstErr(err1, err2)
	// The first look into a directory of a fresh root costs milliseconds (the
	// overlay looks through the image's layers). A warm sandbox, which waits
	// for its request anyway, looks at everything in the PATH's directories
	// now, so that finding the command later hits the kernel's cache; a cold
	// start goes straight on.
	if !warm() {
		return p
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			os.Stat(filepath.Join(dir, e.Name()))
		}
	}
	return p
}

func run(req initproto.Request, in *bufio.Reader, out output, pre prepared) initproto.Report {
	rep := initproto.Report{OOMKills: -1}
	oomBefore, sigs := pre.oomBefore, pre.sigs

	env := append(os.Environ(), req.Env...)
	if req.TrustPEM != "" {
		if err := writeTrustBundle(req.TrustPEM); err != nil {
			return failStart(out, req.Argv[0], err)
		}
	}
	path, err := lookPath(req.Argv[0], env)
	if err != nil {
		return failStart(out, req.Argv[0], err)
	}
	stdin, err := os.Open(os.DevNull)
	if req.Stdin {
		var w *os.File
		if stdin, w, err = os.Pipe(); err == nil {
			go func() {
				io.Copy(w, in) // a command that stops reading its stdin ends the copy with EPIPE
				w.Close()
			}()
		}
	}
	if err != nil {
		return failStart(out, req.Argv[0], err)
	}
	outR, outW, errR, errW := pre.outR, pre.outW, pre.errR, pre.errW
	if pre.err != nil {
		return failStart(out, req.Argv[0], pre.err)
	}
	rep.Started = time.Now().UnixNano()
	proc, err := pre.oom.startProcess(path, req.Argv, &os.ProcAttr{Dir: req.Dir, Env: env, Files: []*os.File{stdin, outW, errW}})
	stdin.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		return failStart(out, req.Argv[0], err)
	}

	var copies sync.WaitGroup
	copies.Go(func() { rep.StdoutBytes = out.copy(outR, initproto.Stdout); outR.Close() })
	copies.Go(func() { rep.StderrBytes = out.copy(errR, initproto.Stderr); errR.Close() })

	exited := make(chan syscall.WaitStatus, 1)
	reaped := make(chan struct{})
	go reap(proc.Pid, exited, reaped)

	var deadline <-chan time.Time
	if req.TimeoutMS > 0 {
		deadline = time.After(time.Duration(req.TimeoutMS) * time.Millisecond)
	}
	var kill <-chan time.Time
	var status syscall.WaitStatus
wait:
	for {
		select {
		case status = <-exited:
			break wait
		case s := <-sigs:
			if s == syscall.Signal(initproto.ForceKill) { // the host's SIGKILL, with a report
				syscall.Kill(-1, syscall.SIGKILL)
				continue
			}
			syscall.Kill(-1, s.(syscall.Signal))
		case <-deadline:
			rep.TimedOut = true
			syscall.Kill(-1, syscall.SIGTERM)
			kill = time.After(time.Duration(req.GraceMS) * time.Millisecond)
		case <-kill:
			syscall.Kill(-1, syscall.SIGKILL)
		}
	}
	rep.Ended = time.Now().UnixNano()
	// Nothing the command started outlives it.
	syscall.Kill(-1, syscall.SIGKILL)
	<-reaped
	copies.Wait()

	switch {
	case status.Signaled():
		rep.ExitCode, rep.Signal = 128+int(status.Signal()), unix.SignalName(status.Signal())
	default:
		rep.ExitCode = status.ExitStatus()
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru) == nil {
		rep.CPUUserNS, rep.CPUSystemNS = ru.Utime.Nano(), ru.Stime.Nano()
		rep.MemoryPeak = ru.Maxrss << 10
	}
	if peak := memoryPeak(); peak > 0 {
		rep.MemoryPeak = peak
	}
	rep.IORead, rep.IOWrite = ioBytes()
	if oomBefore >= 0 {
		if after := oomKills(); after >= oomBefore {
			rep.OOMKills = after - oomBefore
		}
	}
	return rep
}

// reap waits for every child of the init: the command's own status goes to
// exited; reaped closes when no child is left after the command has ended.
func reap(pid int, exited chan<- syscall.WaitStatus, reaped chan<- struct{}) {
	done := false
	for {
		var ws syscall.WaitStatus
		p, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil: // ECHILD: nobody left
			if !done {
				exited <- ws
			}
			close(reaped)
			return
		case p == pid:
			done = true
			exited <- ws
		}
	}
}

// failStart reports a command that could not start as a shell would: 127 when
// it was not found, 126 when it could not be executed.
func failStart(out output, name string, err error) initproto.Report {
	code := 126
	if os.IsNotExist(err) || err == errNotFound {
		code = 127
	}
	msg := fmt.Sprintf("airlock: %s: %v\n", name, err)
	out.write(initproto.Stderr, []byte(msg))
	now := time.Now().UnixNano()
	return initproto.Report{ExitCode: code, Started: now, Ended: now, StderrBytes: int64(len(msg))} // nothing ran: no OOM kill
}

var errNotFound = fmt.Errorf("command not found")

// lookPath finds name as execvp would, in the PATH of env.
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", errNotFound
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// systemBundles are where images keep their authorities (Debian, Alpine,
// Fedora, openSUSE), as Go's crypto/x509 looks for them.
var systemBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem",
	"/etc/ssl/cert.pem",
}

// writeTrustBundle writes the image's own authorities, when it has some,
// and then extra, to initproto.TrustBundlePath: the run's clients trust
// both, airlock's authority for the hosts of its secrets.
func writeTrustBundle(extra string) error {
	var b []byte
	for _, p := range systemBundles {
		if data, err := os.ReadFile(p); err == nil {
			b = append(data, '\n')
			break
		}
	}
	b = append(b, extra...)
	if err := os.MkdirAll(filepath.Dir(initproto.TrustBundlePath), 0o755); err != nil {
		return fmt.Errorf("write the trust bundle: %w", err)
	}
	if err := os.WriteFile(initproto.TrustBundlePath, b, 0o644); err != nil {
		return fmt.Errorf("write the trust bundle: %w", err)
	}
	return nil
}
