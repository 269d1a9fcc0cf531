package main

import (
	"os"
	"strconv"
	"strings"
)

// oomScoreMax is the highest oom_score_adj: the OOM killer's first choice.
const oomScoreMax = "1000"

// oomScore is the init's own oom_score_adj, held open.
//
// A tmpfs filled past the memory limit holds pages no process owns, so the
// OOM killer of the sandbox's cgroup weighs its processes by their own
// memory alone, and the init's (a Go runtime) can be the largest: it would
// kill the init, and the run's report with it. The command and everything it
// starts get the highest score instead (its weight adds the whole limit), so
// the kernel always picks one of them. A process without CAP_SYS_RESOURCE
// can raise its oom_score_adj and put it back, never take it below where a
// privileged process left it: the init raises its own just while it starts
// the command, which inherits it at its fork, and then puts its own back.
// (The command may lower its own back to the init's too: it can then only
// make itself the equal of the init, and the engine's flag and the kernel's
// log still tell of the OOM kill.)
//
// The file is opened before the init makes itself non-dumpable, after which
// its /proc files are root's and the init, a plain user, could not open it.
type oomScore struct {
	f   *os.File
	own string // the init's own value, as it was at the start
}

// openOOMScore opens the init's oom_score_adj; nil when there is none to
// open (the command then starts with the init's).
func openOOMScore() *oomScore {
	f, err := os.OpenFile("/proc/self/oom_score_adj", os.O_RDWR, 0)
	if err != nil {
		return nil
	}
	buf := make([]byte, 16)
	n, _ := f.ReadAt(buf, 0) // io.EOF comes with the value
	own := strings.TrimSpace(string(buf[:n]))
	if _, err := strconv.Atoi(own); err != nil {
		f.Close()
		return nil
	}
	return &oomScore{f: f, own: own}
}

// startProcess is os.StartProcess with the child's oom_score_adj at the
// highest and the init's left as it was.
func (o *oomScore) startProcess(name string, argv []string, attr *os.ProcAttr) (*os.Process, error) {
	if o == nil {
		return os.StartProcess(name, argv, attr)
	}
	o.f.WriteAt([]byte(oomScoreMax), 0)
	defer o.f.WriteAt([]byte(o.own), 0)
	return os.StartProcess(name, argv, attr)
}
