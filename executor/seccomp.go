package executor

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/moby/profiles/seccomp"
	"github.com/opencontainers/runtime-spec/specs-go"
)

// seccompProfile is airlock's seccomp profile as the engine takes it (JSON): the
// engine's current default, which already denies io_uring_* and AF_VSOCK/AF_ALG
// sockets, made certain of both. A 20.10 engine's own default allows all three, so
// airlock always sends its profile instead of relying on the engine's.
//
// socketcall(2) goes too: 32-bit x86 programs create sockets through it, and seccomp
// cannot see socket's family behind it, so it would reopen AF_VSOCK. 64-bit programs
// never use it; 32-bit ones lose sockets, which a sandbox without network can spare.
//
// mknod and mknodat are allowed only for files, FIFOs and sockets, never for device
// nodes. Under runc the missing CAP_MKNOD already refuses devices; gVisor (runsc)
// does not check that capability and ignores nodev, so without this rule a sandbox
// there could make and use device nodes. mkfifo keeps working everywhere.
var seccompProfile = sync.OnceValue(func() string { return buildSeccompProfile(false) })

// seccompProfileGVisor is seccompProfile for runsc, but that clone3 is
// allowed. The engine's default answers clone3 with ENOSYS, so that glibc
// falls back to clone; gVisor (20221219) applies the profile itself and answers
// every refused call with EPERM instead, so no glibc program could start a
// thread there (pip, git, Python's threading: google/gvisor#14688). Under
// gVisor, clone3 reaches gVisor's own kernel, which either lacks it (ENOSYS,
// the fall-back) or creates a thread or process in the sandbox; namespaces
// still need capabilities the sandbox does not have.
var seccompProfileGVisor = sync.OnceValue(func() string { return buildSeccompProfile(true) })

// seccompProfileFor is the profile of a sandbox under runtime.
func seccompProfileFor(runtime string) string {
	if runtime == "runsc" {
		return seccompProfileGVisor()
	}
	return seccompProfile()
}

func buildSeccompProfile(allowClone3 bool) string {
	p := seccomp.DefaultProfile()
	if allowClone3 {
		for _, sc := range p.Syscalls {
			if slices.Equal(sc.Names, []string{"clone3"}) && sc.Action == specs.ActErrno {
				sc.Action, sc.ErrnoRet = specs.ActAllow, nil
			}
		}
	}
	for i := range p.Syscalls {
		p.Syscalls[i].Names = slices.DeleteFunc(p.Syscalls[i].Names, func(name string) bool {
			return strings.HasPrefix(name, "io_uring") ||
				// socket is allowed only through the per-family rules, which skip AF_VSOCK.
				name == "socket" && len(p.Syscalls[i].Args) == 0 ||
				name == "socketcall" ||
				// mknod is allowed only through mknodRules.
				(name == "mknod" || name == "mknodat") && len(p.Syscalls[i].Args) == 0
		})
	}
	p.Syscalls = slices.DeleteFunc(p.Syscalls, func(s *seccomp.Syscall) bool { return len(s.Names) == 0 })
	p.Syscalls = append(p.Syscalls, mknodRules()...)
	b, err := json.Marshal(p)
	if err != nil {
		panic("marshal seccomp profile: " + err.Error())
	}
	return string(b)
}

// Linux file types in a mode (include/uapi/linux/stat.h).
const (
	modeTypeMask = 0o170000 // S_IFMT
	modeRegular  = 0o100000 // S_IFREG; a type of 0 means regular too
	modeFIFO     = 0o010000 // S_IFIFO
	modeSocket   = 0o140000 // S_IFSOCK
)

// mknodRules allow mknod(path, mode, dev) and mknodat(dirfd, path, mode, dev) when
// the mode's file type is not a character or block device. Rules for one syscall
// are ORed, so each allowed type is a rule of its own.
func mknodRules() []*seccomp.Syscall {
	var rules []*seccomp.Syscall
	for _, call := range []struct {
		name    string
		modeArg uint
	}{{"mknod", 1}, {"mknodat", 2}} {
		for _, fileType := range []uint64{0, modeRegular, modeFIFO, modeSocket} {
			rules = append(rules, &seccomp.Syscall{LinuxSyscall: specs.LinuxSyscall{
				Names:  []string{call.name},
				Action: specs.ActAllow,
				Args:   []specs.LinuxSeccompArg{{Index: call.modeArg, Value: modeTypeMask, ValueTwo: fileType, Op: specs.OpMaskedEqual}},
			}})
		}
	}
	return rules
}

// SeccompProfile returns airlock's seccomp profile as JSON, the form the engine (and
// `docker run --security-opt seccomp=FILE`) takes.
func SeccompProfile() string { return seccompProfile() }
