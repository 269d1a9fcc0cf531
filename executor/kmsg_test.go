package executor

import "testing"

func TestOOMRecordOf(t *testing.T) {
	const cid = "d0090e1e33d177695e4efb8a620c179b115a043f9814d58b2a392bc9f415d90a"
	for _, tc := range []struct {
		rec  string
		want bool
	}{
		// /dev/kmsg records as kernel 6.18 writes them, cgroup v1 with the cgroupfs driver.
		{"6,2571,2486963902,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=" + cid + ",mems_allowed=0,oom_memcg=/docker/" + cid + ",task_memcg=/docker/" + cid + ",task=awk,pid=28598,uid=65534\n", true},
		// cgroup v2 with the systemd driver.
		{"6,90,1000,-;oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/system.slice/docker-" + cid + ".scope,task_memcg=/system.slice/docker-" + cid + ".scope,task=awk,pid=1,uid=0\n", true},
		// kernels before 4.19.
		{"3,5,100,-;Task in /docker/" + cid + " killed as a result of limit of /docker/" + cid + "\n", true},
		// another container's kill, and a record that names this one but no kill.
		{"6,2572,2486963929,-;oom-kill:constraint=CONSTRAINT_MEMCG,oom_memcg=/docker/ed1e22fafd5cf2a14965d98ee8d1b68bf5dc093dac78788f53cfb85c83b66cda,task=awk\n", false},
		{"6,12,100,-;docker0: port 1(veth" + cid[:7] + ") entered blocking state " + cid + "\n", false},
	} {
		if got := oomRecordOf([]byte(tc.rec), cid); got != tc.want {
			t.Errorf("oomRecordOf(%.60q...) = %v, want %v", tc.rec, got, tc.want)
		}
	}
}

// kernelOOM must come back, with false, whatever the machine allows: no
// /dev/kmsg, no permission, or simply no such record.
func TestKernelOOMOfAnUnknownContainer(t *testing.T) {
	if kernelOOM("0000000000000000000000000000000000000000000000000000000000000000") || kernelOOM("") {
		t.Fatal("an OOM kill found for a container that never existed")
	}
}
