package executor

import (
	"bytes"
	"errors"

	"golang.org/x/sys/unix"
)

// kernelOOM reports whether the kernel's log records an OOM kill in the memory
// cgroup of container cid (its full id, which the cgroup's path holds under
// either cgroup driver and version).
//
// The engine's OOM flag can miss a kill in a sandbox's first moments: containerd's
// shim arms its OOM monitor just after the process starts, and a balloon can fill
// its limit before that. The kernel logs every OOM kill, with the cgroup, before
// the process dies. Reading its log needs /dev/kmsg on the engine's own kernel and
// root (or CAP_SYSLOG); without them this reports false and the engine's flag is
// all there is. The kernel also rate-limits its OOM report (a burst of 10 per 5 s),
// so in a storm of OOM kills some go unlogged. It only ever adds an OOM the
// engine missed: a false here never overrides the engine.
func kernelOOM(cid string) bool {
	if cid == "" {
		return false
	}
	// Non-blocking raw reads: each read is one record, EAGAIN is the end. (An
	// os.File would wait in the poller for new records instead.)
	fd, err := unix.Open("/dev/kmsg", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	buf := make([]byte, 8192)
	for range 1 << 20 { // the ring holds far fewer records; a bound all the same
		n, err := unix.Read(fd, buf)
		switch {
		case errors.Is(err, unix.EPIPE): // the record was overwritten as we read: go on
			continue
		case err != nil || n <= 0:
			return false
		case oomRecordOf(buf[:n], cid):
			return true
		}
	}
	return false
}

// oomRecordOf reports whether a kernel log record tells of an OOM kill in the
// cgroup of container cid: "oom-kill:constraint=CONSTRAINT_MEMCG,...,
// oom_memcg=/docker/<cid>,..." (kernels since 4.19), or "Task in /docker/<cid>
// killed as a result of limit of ..." (older ones).
func oomRecordOf(rec []byte, cid string) bool {
	return bytes.Contains(rec, []byte(cid)) &&
		(bytes.Contains(rec, []byte("oom-kill:")) || bytes.Contains(rec, []byte("killed as a result of limit of")))
}
