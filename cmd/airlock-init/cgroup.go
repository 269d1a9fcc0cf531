package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// The sandbox's own cgroup, as a private cgroup namespace shows it at
// /sys/fs/cgroup: v2 when cgroup.controllers is there, else v1's hierarchies.

func cgroupV2() bool {
	_, err := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	return err == nil
}

// memoryPeak is the cgroup's peak memory in bytes, 0 when it does not say
// (v2 before Linux 5.19, gVisor).
func memoryPeak() int64 {
	if cgroupV2() {
		return readInt("/sys/fs/cgroup/memory.peak")
	}
	return readInt("/sys/fs/cgroup/memory/memory.max_usage_in_bytes")
}

// oomKills is the count of processes the OOM killer ended in the cgroup, -1
// when the cgroup does not keep one (v1 before Linux 4.13, gVisor).
func oomKills() int64 {
	file, key := "/sys/fs/cgroup/memory/memory.oom_control", "oom_kill"
	if cgroupV2() {
		file = "/sys/fs/cgroup/memory.events"
	}
	if v, ok := keyed(file, key); ok {
		return v
	}
	return -1
}

// ioBytes is what the cgroup read from and wrote to block devices.
func ioBytes() (read, write int64) {
	if cgroupV2() {
		f, err := os.Open("/sys/fs/cgroup/io.stat")
		if err != nil {
			return 0, 0
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			for _, field := range strings.Fields(sc.Text()) {
				k, v, _ := strings.Cut(field, "=")
				n, _ := strconv.ParseInt(v, 10, 64)
				switch k {
				case "rbytes":
					read += n
				case "wbytes":
					write += n
				}
			}
		}
		return read, write
	}
	f, err := os.Open("/sys/fs/cgroup/blkio/blkio.throttle.io_service_bytes")
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 {
			continue
		}
		n, _ := strconv.ParseInt(fields[2], 10, 64)
		switch fields[1] {
		case "Read":
			read += n
		case "Write":
			write += n
		}
	}
	return read, write
}

func readInt(file string) int64 {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// keyed reads "key value" from a flat-keyed cgroup file.
func keyed(file, key string) (int64, bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+" "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}
