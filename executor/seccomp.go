package executor

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/moby/profiles/seccomp"
)

// seccompProfile is airlock's seccomp profile as the engine takes it (JSON): the
// engine's current default, which already denies io_uring_* and AF_VSOCK/AF_ALG
// sockets, made certain of both. A 20.10 engine's own default allows all three, so
// airlock always sends its profile instead of relying on the engine's.
//
// socketcall(2) goes too: 32-bit x86 programs create sockets through it, and seccomp
// cannot see socket's family behind it, so it would reopen AF_VSOCK. 64-bit programs
// never use it; 32-bit ones lose sockets, which a sandbox without network can spare.
var seccompProfile = sync.OnceValue(func() string {
	p := seccomp.DefaultProfile()
	for i := range p.Syscalls {
		p.Syscalls[i].Names = slices.DeleteFunc(p.Syscalls[i].Names, func(name string) bool {
			return strings.HasPrefix(name, "io_uring") ||
				// socket is allowed only through the per-family rules, which skip AF_VSOCK.
				name == "socket" && len(p.Syscalls[i].Args) == 0 ||
				name == "socketcall"
		})
	}
	p.Syscalls = slices.DeleteFunc(p.Syscalls, func(s *seccomp.Syscall) bool { return len(s.Names) == 0 })
	b, err := json.Marshal(p)
	if err != nil {
		panic("marshal seccomp profile: " + err.Error())
	}
	return string(b)
})

// SeccompProfile returns airlock's seccomp profile as JSON, the form the engine (and
// `docker run --security-opt seccomp=FILE`) takes.
func SeccompProfile() string { return seccompProfile() }
