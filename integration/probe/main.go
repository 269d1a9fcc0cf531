// Command probe reports the kernel surface a sandbox exposes. Run inside an airlock
// sandbox, it tries each dangerous syscall, socket and path a hostile command would
// reach for, and prints one line per check:
//
//	blocked <check>: <what stopped it>
//	OPEN <check>: <what got through>
//
// The hostile battery (integration/hostile_test.go) feeds it into sandboxes and
// fails on every OPEN line it does not expect. Checks are harmless when they get
// through: a mount of an empty tmpfs, a keyring key, a hostname change inside the
// sandbox's own UTS namespace.
//
// With an argument it is a workload instead: `probe threads` starts OS threads until
// the kernel refuses one (a thread bomb), `probe fds` opens files until it may not
// and prints how many it got, `probe sigqueue PID SIGNAL...` sends each signal to
// PID as sigqueue(3) does (si_code SI_QUEUE, which a Go program takes for a fault
// of its own) and prints what the kernel answered.
//
// It is static (CGO_ENABLED=0) so that it runs in a FROM scratch image:
//
//	CGO_ENABLED=0 go build -ldflags='-s -w' -o bin/airlock-probe ./integration/probe
package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// check is one attempt; it returns nil when it got through, and the error that
// stopped it otherwise.
type check struct {
	name string
	try  func() error
}

// errOpen marks an attempt that succeeded; its text says what got through.
type errOpen struct{ what string }

func (e errOpen) Error() string { return e.what }

func opened(format string, args ...any) error { return errOpen{fmt.Sprintf(format, args...)} }

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "threads":
			threadBomb()
		case "fds":
			fmt.Printf("opened %d files\n", openFiles())
		case "sigqueue":
			sigqueue(os.Args[2:])
		default:
			fmt.Fprintf(os.Stderr, "probe: unknown workload %q\n", os.Args[1])
			os.Exit(2)
		}
		return
	}
	// unshare, setns and friends act on the calling thread: keep each check on one.
	runtime.LockOSThread()
	for _, c := range checks {
		report(c)
	}
}

// sigqueue sends each named signal to the pid that comes first, with si_code
// SI_QUEUE, and prints "sent NAME" or the error for each.
func sigqueue(args []string) {
	pid, err := strconv.Atoi(args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe sigqueue:", err)
		os.Exit(2)
	}
	for _, name := range args[1:] {
		sig := unix.SignalNum(name)
		if sig == 0 {
			fmt.Fprintf(os.Stderr, "probe sigqueue: unknown signal %q\n", name)
			os.Exit(2)
		}
		// struct siginfo: si_signo, si_errno, si_code, then the sender's fields.
		var info [128]byte
		*(*int32)(unsafe.Pointer(&info[0])) = int32(sig)
		*(*int32)(unsafe.Pointer(&info[8])) = -1 // SI_QUEUE
		*(*int32)(unsafe.Pointer(&info[16])) = int32(os.Getpid())
		*(*uint32)(unsafe.Pointer(&info[20])) = uint32(os.Getuid())
		if _, _, e := unix.Syscall(unix.SYS_RT_SIGQUEUEINFO, uintptr(pid), uintptr(sig), uintptr(unsafe.Pointer(&info[0]))); e != 0 {
			fmt.Printf("%s: %v\n", name, e)
			continue
		}
		fmt.Printf("sent %s\n", name)
	}
}

// threadBomb pins goroutines to OS threads that never return, so the Go runtime
// must make a new thread for each; it dies ("failed to create new OS thread") when
// the kernel refuses one.
func threadBomb() {
	for i := 0; ; i++ {
		go func() {
			runtime.LockOSThread()
			for {
				unix.Nanosleep(&unix.Timespec{Sec: 3600}, nil)
			}
		}()
		if i%100 == 0 {
			fmt.Printf("%d threads\n", i)
			time.Sleep(time.Millisecond)
		}
	}
}

// openFiles opens /dev/null until the descriptor limit stops it.
func openFiles() int {
	n := 0
	for {
		if _, err := unix.Open("/dev/null", unix.O_RDONLY, 0); err != nil {
			fmt.Printf("stopped by: %v\n", err)
			return n
		}
		n++
	}
}

// report runs one check and prints its line; a panic is a blocked check's bug,
// not a sandbox hole, and is reported as OPEN so that it gets looked at.
func report(c check) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Printf("OPEN %s: probe panicked: %v\n", c.name, r)
		}
	}()
	err := c.try()
	var open errOpen
	switch {
	case err == nil:
		fmt.Printf("OPEN %s: succeeded\n", c.name)
	case errors.As(err, &open):
		fmt.Printf("OPEN %s: %s\n", c.name, open.what)
	default:
		fmt.Printf("blocked %s: %v\n", c.name, err)
	}
}

var checks = []check{
	// Sockets the network namespace or the seccomp profile must refuse.
	{"socket-raw", func() error { return socket(unix.AF_INET, unix.SOCK_RAW, unix.IPPROTO_ICMP) }},
	{"socket-packet", func() error { return socket(unix.AF_PACKET, unix.SOCK_RAW, int(htons(unix.ETH_P_ALL))) }},
	{"socket-vsock", func() error { return socket(unix.AF_VSOCK, unix.SOCK_STREAM, 0) }},
	{"socket-alg", func() error { return socket(unix.AF_ALG, unix.SOCK_SEQPACKET, 0) }},
	{"io_uring_setup", ioUringSetup},

	// Network egress: the sandbox has only a loopback interface.
	{"egress-tcp-1.1.1.1:53", func() error { return dial("tcp", "1.1.1.1:53") }},
	{"egress-udp-1.1.1.1:53", udpExchange},
	{"egress-tcp6", func() error { return dial("tcp", "[2606:4700:4700::1111]:53") }},
	{"egress-icmp", icmpEcho},
	{"cloud-metadata-169.254.169.254", func() error { return dial("tcp", "169.254.169.254:80") }},
	{"cloud-metadata-fd00:ec2::254", func() error { return dial("tcp", "[fd00:ec2::254]:80") }},
	{"dns-lookup", dnsLookup},
	{"interfaces-beyond-lo", interfacesBeyondLoopback},
	{"docker-socket", dockerSocket},

	// Namespaces and filesystems: CAP_SYS_ADMIN and the seccomp profile.
	{"mount-tmpfs", func() error { return unix.Mount("none", mkdir("/tmp/probe-mnt"), "tmpfs", 0, "") }},
	{"mount-proc", func() error { return unix.Mount("proc", mkdir("/tmp/probe-proc"), "proc", 0, "") }},
	{"unshare-user", func() error { return unix.Unshare(unix.CLONE_NEWUSER) }},
	{"unshare-mount", func() error { return unix.Unshare(unix.CLONE_NEWNS) }},
	{"unshare-net", func() error { return unix.Unshare(unix.CLONE_NEWNET) }},
	// clone3 is allowed under gVisor (its seccomp would turn the profile's
	// ENOSYS into EPERM, and no thread could start): a new namespace through
	// it must still be refused.
	{"clone3-newuser", func() error { return clone3(unix.CLONE_NEWUSER) }},
	{"clone3-newns", func() error { return clone3(unix.CLONE_NEWNS) }},
	{"clone3-newnet", func() error { return clone3(unix.CLONE_NEWNET) }},
	{"setns-pid1-mnt", setnsPID1},
	{"pivot_root", func() error { return unix.PivotRoot(mkdir("/tmp/probe-root"), mkdir("/tmp/probe-root/old")) }},
	{"chroot", func() error { return unix.Chroot("/tmp") }},
	{"open_by_handle_at", openByHandle},

	// Devices.
	{"mknod-char-device", func() error { return unix.Mknod("/tmp/probe-null", unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))) }},
	{"device-node-usable", deviceNodeUsable},
	{"open-/dev/mem", func() error { return openWrite("/dev/mem") }},
	{"open-/dev/kmsg", func() error { return openWrite("/dev/kmsg") }},

	// Kernel facilities the seccomp profile denies.
	{"add_key", addKey},
	{"keyctl", func() error { return errnoOf(unix.Syscall(unix.SYS_KEYCTL, unix.KEYCTL_JOIN_SESSION_KEYRING, 0, 0)) }},
	{"bpf", bpfMapCreate},
	{"perf_event_open", perfEventOpen},
	{"userfaultfd", func() error { return errnoOf(unix.Syscall(unix.SYS_USERFAULTFD, unix.O_CLOEXEC, 0, 0)) }},
	{"init_module", func() error { return errnoOf(unix.Syscall(unix.SYS_INIT_MODULE, 0, 0, 0)) }},
	{"kexec_load", func() error { return errnoOf(unix.Syscall6(unix.SYS_KEXEC_LOAD, 0, 0, 0, 0, 0, 0)) }},
	{"reboot", func() error { return unix.Reboot(unix.LINUX_REBOOT_CMD_CAD_OFF) }},
	{"iopl", func() error { return errnoOf(unix.Syscall(unix.SYS_IOPL, 3, 0, 0)) }},
	{"ptrace-pid1", ptracePID1},

	// Identity and time.
	{"sethostname", func() error { return unix.Sethostname([]byte("pwned")) }},
	{"settimeofday", func() error { tv := unix.NsecToTimeval(time.Now().UnixNano()); return unix.Settimeofday(&tv) }},
	{"clock_settime", func() error {
		ts := unix.NsecToTimespec(time.Now().UnixNano())
		return errnoOf(unix.Syscall(unix.SYS_CLOCK_SETTIME, unix.CLOCK_REALTIME, uintptr(unsafe.Pointer(&ts)), 0))
	}},
	{"setuid-0", func() error { return errnoOf(unix.RawSyscall(unix.SYS_SETUID, 0, 0, 0)) }},
	{"capabilities", capabilities},
	{"no_new_privs-unset", noNewPrivs},
	{"setuid-files", setuidFiles},
	{"raise-nofile", raiseNofile},

	// Host-facing kernel files: read-only or masked.
	{"write-/proc/sysrq-trigger", func() error { return openWrite("/proc/sysrq-trigger") }},
	{"write-/proc/sys/kernel/core_pattern", func() error { return openWrite("/proc/sys/kernel/core_pattern") }},
	{"write-/proc/sys/vm/drop_caches", func() error { return openWrite("/proc/sys/vm/drop_caches") }},
	{"write-/sys/kernel/uevent_helper", func() error { return openWrite("/sys/kernel/uevent_helper") }},
	{"write-/sys/fs/cgroup", cgroupWrite},
	{"read-/proc/kcore", func() error { return readSome("/proc/kcore") }},
	{"read-/proc/interrupts", func() error { return readSome("/proc/interrupts") }},
	{"read-/proc/keys", func() error { return readSome("/proc/keys") }},
	{"read-/proc/timer_list", func() error { return readSome("/proc/timer_list") }},
	{"read-/sys/firmware", func() error { return listSome("/sys/firmware") }},
}

func socket(domain, typ, proto int) error {
	fd, err := unix.Socket(domain, typ, proto)
	if err != nil {
		return err
	}
	unix.Close(fd)
	return opened("socket(%d, %d, %d) = fd %d", domain, typ, proto, fd)
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// clone3 forks with flags through clone3(2); a child that comes to be exits
// at once, and the fork counts as opened.
func clone3(flags uint64) error {
	args := struct {
		flags, pidfd, childTID, parentTID, exitSignal, stack, stackSize, tls, setTID, setTIDSize, cgroup uint64
	}{flags: flags, exitSignal: uint64(unix.SIGCHLD)}
	pid, _, errno := unix.RawSyscall(unix.SYS_CLONE3, uintptr(unsafe.Pointer(&args)), unsafe.Sizeof(args), 0)
	if errno != 0 {
		return errno
	}
	if pid == 0 { // the child, in the new namespace
		unix.RawSyscall(unix.SYS_EXIT_GROUP, 0, 0, 0)
	}
	var ws unix.WaitStatus
	unix.Wait4(int(pid), &ws, 0, nil)
	return opened("made process %d in a new namespace", int(pid))
}

func errnoOf(r1, _ uintptr, errno unix.Errno) error {
	if errno != 0 {
		return errno
	}
	return opened("returned %d", int(r1))
}

// mkdir makes a scratch directory under /tmp (an exec tmpfs in every sandbox).
func mkdir(path string) string {
	os.MkdirAll(path, 0o755)
	return path
}

func ioUringSetup() error {
	var params [120]byte // struct io_uring_params
	return errnoOf(unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params[0])), 0))
}

func dial(network, addr string) error {
	c, err := net.DialTimeout(network, addr, 2*time.Second)
	if err != nil {
		return err
	}
	c.Close()
	return opened("connected to %s", addr)
}

// udpExchange sends a DNS query: UDP has no handshake, so only a sent datagram
// and an answer prove egress.
func udpExchange() error {
	c, err := net.DialTimeout("udp", "1.1.1.1:53", 2*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	query := []byte("\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01")
	if _, err := c.Write(query); err != nil {
		return err
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	buf := make([]byte, 512)
	n, err := c.Read(buf)
	if err != nil {
		return err
	}
	return opened("%d-byte answer from 1.1.1.1", n)
}

// icmpEcho tries an unprivileged ping socket, then sends an echo request.
func icmpEcho() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	echo := []byte{8, 0, 0, 0, 0, 1, 0, 1}
	if err := unix.Sendto(fd, echo, 0, &unix.SockaddrInet4{Addr: [4]byte{1, 1, 1, 1}}); err != nil {
		return err
	}
	return opened("ICMP echo sent to 1.1.1.1")
}

func dnsLookup() error {
	addrs, err := net.LookupHost("example.com")
	if err != nil {
		return err
	}
	return opened("example.com is %v", addrs)
}

func interfacesBeyondLoopback() error {
	ifs, err := net.Interfaces()
	if err != nil {
		return err
	}
	var names []string
	for _, i := range ifs {
		if i.Flags&net.FlagLoopback == 0 {
			names = append(names, i.Name)
		}
	}
	if len(names) > 0 {
		return opened("interfaces %v", names)
	}
	return errors.New("only loopback")
}

func dockerSocket() error {
	for _, p := range []string{"/var/run/docker.sock", "/run/docker.sock", "/run/containerd/containerd.sock"} {
		if c, err := net.DialTimeout("unix", p, time.Second); err == nil {
			c.Close()
			return opened("connected to %s", p)
		}
	}
	return errors.New("no engine socket reachable")
}

func setnsPID1() error {
	fd, err := unix.Open("/proc/1/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	return unix.Setns(fd, unix.CLONE_NEWNS)
}

// openByHandle is the "shocker" escape: a file handle opened relative to a mount
// can name any inode of that file system, outside the container's view.
func openByHandle() error {
	h := unix.NewFileHandle(1, make([]byte, 8))
	fd, err := unix.OpenByHandleAt(unix.AT_FDCWD, h, unix.O_RDONLY)
	if err != nil {
		return err
	}
	unix.Close(fd)
	return opened("opened an inode by handle")
}

// deviceNodeUsable tries to read through a device node made in /tmp: even where
// mknod itself works, nodev on the tmpfs must make the node inert.
func deviceNodeUsable() error {
	path := "/tmp/probe-zero"
	if err := unix.Mknod(path, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 5))); err != nil {
		return fmt.Errorf("mknod: %w", err)
	}
	defer os.Remove(path)
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Read(make([]byte, 1)); err != nil {
		return err
	}
	return opened("read from a device node made in /tmp")
}

// processKeyring is KEY_SPEC_PROCESS_KEYRING (-2) as the syscall takes it.
var processKeyring = func() uintptr { id := int64(unix.KEY_SPEC_PROCESS_KEYRING); return uintptr(id) }()

// ptracePID1 attaches to the sandbox's init. When that works it waits for the
// init to stop and lets it go again: a tracer that exits first can leave the
// init stopped, and the run would then hang until its timeout.
func ptracePID1() error {
	if err := unix.PtraceAttach(1); err != nil {
		return err
	}
	var ws unix.WaitStatus
	unix.Wait4(1, &ws, unix.WALL, nil)
	unix.PtraceDetach(1)
	return opened("attached to the init")
}

func addKey() error {
	typ, _ := unix.BytePtrFromString("user")
	desc, _ := unix.BytePtrFromString("probe")
	payload := []byte("x")
	return errnoOf(unix.Syscall6(unix.SYS_ADD_KEY, uintptr(unsafe.Pointer(typ)), uintptr(unsafe.Pointer(desc)),
		uintptr(unsafe.Pointer(&payload[0])), 1, processKeyring, 0))
}

func bpfMapCreate() error {
	attr := struct{ mapType, keySize, valueSize, maxEntries uint32 }{unix.BPF_MAP_TYPE_ARRAY, 4, 4, 1}
	return errnoOf(unix.Syscall(unix.SYS_BPF, unix.BPF_MAP_CREATE, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr)))
}

func perfEventOpen() error {
	attr := unix.PerfEventAttr{Type: unix.PERF_TYPE_SOFTWARE, Config: unix.PERF_COUNT_SW_CPU_CLOCK, Size: uint32(unsafe.Sizeof(unix.PerfEventAttr{}))}
	fd, err := unix.PerfEventOpen(&attr, 0, -1, -1, 0)
	if err != nil {
		return err
	}
	unix.Close(fd)
	return opened("perf event fd %d", fd)
}

func capabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return err
	}
	if eff := uint64(data[1].Effective)<<32 | uint64(data[0].Effective); eff != 0 {
		return opened("effective capabilities %#x", eff)
	}
	if prm := uint64(data[1].Permitted)<<32 | uint64(data[0].Permitted); prm != 0 {
		return opened("permitted capabilities %#x", prm)
	}
	return errors.New("no effective or permitted capabilities")
}

func noNewPrivs() error {
	v, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	if err != nil {
		return err
	}
	if v != 1 {
		return opened("no_new_privs is %d: a setuid binary would gain its owner's rights", v)
	}
	return errors.New("no_new_privs is set")
}

// setuidFiles looks for setuid or setgid programs in the image: with
// no_new_privs they gain nothing, but none should be there to try.
func setuidFiles() error {
	var found []string
	var walk func(dir string)
	walk = func(dir string) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return
		}
		for _, e := range entries {
			p := strings.TrimSuffix(dir, "/") + "/" + e.Name()
			var st unix.Stat_t
			if unix.Lstat(p, &st) != nil {
				continue
			}
			switch {
			case st.Mode&unix.S_IFMT == unix.S_IFDIR:
				if p != "/proc" && p != "/sys" && p != "/dev" {
					walk(p)
				}
			case st.Mode&(unix.S_ISUID|unix.S_ISGID) != 0:
				found = append(found, p)
			}
		}
	}
	walk("/")
	if len(found) > 0 {
		return opened("setuid/setgid files: %v", found)
	}
	return errors.New("no setuid or setgid files")
}

func raiseNofile() error {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return err
	}
	want := unix.Rlimit{Cur: lim.Max + 1, Max: lim.Max + 1}
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &want); err != nil {
		return err
	}
	return opened("raised nofile above %d", lim.Max)
}

func openWrite(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	f.Close()
	return opened("opened %s for writing", path)
}

// cgroupWrite tries to change the sandbox's own limits and to make a child group.
func cgroupWrite() error {
	var last error
	for _, p := range []string{"/sys/fs/cgroup/pids/pids.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/pids.max", "/sys/fs/cgroup/memory.max"} {
		last = openWrite(p)
		if errors.As(last, new(errOpen)) {
			return last
		}
	}
	for _, dir := range []string{"/sys/fs/cgroup/pids/probe", "/sys/fs/cgroup/probe"} {
		if err := os.Mkdir(dir, 0o755); err == nil {
			os.Remove(dir)
			return opened("made cgroup %s", dir)
		}
	}
	return fmt.Errorf("no cgroup file writable: %w", last)
}

// readSome reads from a file that must be masked (empty, /dev/null), absent or
// unreadable.
func readSome(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	buf := make([]byte, 4096)
	n, err := f.Read(buf)
	if n == 0 {
		if err == nil {
			err = errors.New("empty")
		}
		return fmt.Errorf("masked (%w)", err)
	}
	return opened("read %d bytes: %q", n, firstLine(buf[:n]))
}

func listSome(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) > 0 {
		return opened("%d entries", len(entries))
	}
	return errors.New("masked (empty)")
}

func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	if len(line) > 60 {
		line = line[:60]
	}
	return string(line)
}
