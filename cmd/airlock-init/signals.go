package main

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// faults are the signals that tell a process of its own fault: the kernel
// sends them to the thread that faulted, and abort(3) raises SIGABRT in its
// own process. From any other process they mean nothing, so the init passes
// none of them on, as the engine's own init (tini) does not; it has the
// kernel ignore them instead.
//
// The Go runtime crashes on each of them sent by another process unless the
// program asks for it, and even then when the sender used sigqueue(3): a
// signal whose si_code is SI_QUEUE looks to the runtime like the program's
// own fault, and os/signal can neither receive nor ignore it. Only the
// kernel's SIG_IGN keeps it away. The runtime still counts itself the
// handler, so the command is started with each of them back at SIG_DFL, as a
// program expects. A real fault of the init's own still ends it: the kernel
// puts SIG_DFL back to deliver one.
var faults = []syscall.Signal{
	unix.SIGSEGV, unix.SIGBUS, unix.SIGFPE, unix.SIGILL,
	unix.SIGTRAP, unix.SIGABRT, unix.SIGSYS, unix.SIGSTKFLT,
}

// ignoreFaults has the kernel ignore every signal of faults sent to the init.
func ignoreFaults() {
	// struct sigaction as rt_sigaction(2) takes it: the handler first, then
	// the flags, the restorer and the mask, all zero; the kernel's sigset_t
	// is 8 bytes (64 signals).
	var act [4]uintptr
	act[0] = 1 // SIG_IGN
	for _, s := range faults {
		unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(s), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
	}
}
