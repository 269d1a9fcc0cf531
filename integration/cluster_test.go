package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	dockerclient "github.com/docker/docker/client"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/client"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/pgtest"
)

// Cluster mode with several `airlock serve` processes on one PostgreSQL and
// one engine: a job is enqueued on any node, claimed and run by a node with
// room, and answered for (get, list, logs, kill, wait) by any node. A node
// that dies loses its running jobs; one that was paused past its lease comes
// back to find them lost, and removes their containers without changing what
// the cluster decided. A restart of PostgreSQL loses nothing; a node cut off
// from it (a proxy between them) loses its running jobs, like a paused one
// (docs/cluster.md).
//
// The tests of a node's death, of a node fenced or cut off, and of placement
// run each node on a Docker engine of its own (startClusterApart,
// startEngine), as on hosts of their own: no node sees or touches another's
// containers, and a host's death takes its engine with it. The others share
// the machine's engine, where a node's containers are told apart by their
// io.airlock.node label.

// labelNode is the label every container of a cluster job carries: the id of
// the node that runs it.
const labelNode = "io.airlock.node"

// clusterLease is the nodes' lease (--lease 2): a node that stops heartbeating
// is dead 2 s later, and the next sweep (every second) takes its jobs.
const clusterLease = 2 * time.Second

// lostWithin bounds how long the cluster takes to declare a dead node's
// running jobs lost: a lease and a sweep interval, with room for a loaded
// 2-core machine.
const lostWithin = 15 * time.Second

// clusterNode is one `airlock serve` process of a test's cluster, and a
// client of its API.
type clusterNode struct {
	id     string
	proc   *serveProcess
	c      *client.Client
	engine *testEngine // nil: the machine's
}

// startCluster starts a throw-away PostgreSQL and n nodes on it, each with
// slots sandboxes and the extra flags (startClusterOn).
func startCluster(t *testing.T, n, slots int, extra ...string) []*clusterNode {
	t.Helper()
	pg := pgtest.New(t)
	return startClusterOn(t, slices.Repeat([]string{pg.URL()}, n), nil, slots, extra...)
}

// startClusterApart is startCluster with each node on a Docker engine of its
// own (startEngine), as on hosts of their own: a node neither sees nor
// touches another's containers.
func startClusterApart(t *testing.T, n, slots int, extra ...string) []*clusterNode {
	t.Helper()
	pg := pgtest.New(t)
	engines := make([]*testEngine, n)
	for i := range engines {
		engines[i] = startEngine(t)
	}
	return startClusterOn(t, slices.Repeat([]string{pg.URL()}, n), engines, slots, extra...)
}

// startClusterOn starts a node for each of the database URLs, which name one
// database (a URL each, so that a node can reach it another way: through a
// proxy), each on the engine of the same index (none, or nil: the
// machine's), with slots sandboxes and the extra flags. When the test ends,
// the nodes are stopped and every container carrying one of their ids is
// removed; a test that passed must have left none behind.
func startClusterOn(t *testing.T, databases []string, engines []*testEngine, slots int, extra ...string) []*clusterNode {
	t.Helper()
	n := len(databases)
	suffix := randomHex(3)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%c-%s", 'a'+i, suffix)
	}
	// Registered before the nodes start, so run after they stopped.
	t.Cleanup(func() { removeNodeContainers(t, ids) })
	nodes := make([]*clusterNode, n)
	for i, id := range ids {
		var eng *testEngine
		if i < len(engines) && engines[i] != nil {
			eng = engines[i]
			nodeEngines.Store(id, eng)
		}
		proc := startNode(t, eng, databases[i], id, append([]string{"--node-slots", strconv.Itoa(slots)}, extra...)...)
		c, err := client.New(proc.url, "")
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = &clusterNode{id: id, proc: proc, c: c, engine: eng}
	}
	// Registered after the nodes start, so run while they still serve: the
	// containers of ended jobs are their nodes' to remove.
	t.Cleanup(func() {
		if t.Failed() {
			return // removeNodeContainers cleans up
		}
		for _, id := range ids {
			if !eventually(20*time.Second, func() bool { return len(nodeContainers(t, id)) == 0 }) {
				t.Errorf("node %s left containers behind at the end of the test: %v", id, nodeContainers(t, id))
			}
		}
	})
	list, err := nodes[0].c.Nodes(t.Context())
	if err != nil {
		t.Fatalf("nodes: %v", err)
	}
	for _, id := range ids {
		if i := slices.IndexFunc(list.Nodes, func(s api.Node) bool { return s.ID == id }); i < 0 || !list.Nodes[i].Live {
			t.Fatalf("node %s is not listed live: %+v", id, list.Nodes)
		}
	}
	return nodes
}

// startNode starts `airlock serve` as node id of the cluster whose database
// is at dbURL, on engine eng (nil: the machine's), on a free port and a data dir of its own, with a 2 s lease,
// and waits until it is ready. The warm pool is off, so that every container with the node's label
// is one of its jobs, and the tenant's max_concurrent is raised out of the
// way of the nodes' slots; extra flags come after, and override these.
// When the test ends, the node gets SIGTERM (and SIGCONT, should the test
// have left it stopped), and its log is shown if the test failed.
func startNode(t *testing.T, eng *testEngine, dbURL, id string, extra ...string) *serveProcess {
	t.Helper()
	addr := freePort(t)
	s := &serveProcess{url: "http://" + addr, data: t.TempDir(), stderr: &lockedBuffer{}, exited: make(chan error, 1)}
	args := []string{"serve", "--listen", addr, "--data", s.data,
		"--database", dbURL, "--node-id", id, "--lease", "2",
		"--pool", "airlock/minimal=0", "--max-concurrent", "64"}
	if eng != nil {
		// A test engine holds only airlock/minimal: no debootstrap of
		// airlock/debian at each node's start.
		args = append(args, "--skip-image-builds")
	}
	s.cmd = exec.Command(airlockCLI(t), append(args, extra...)...)
	s.cmd.Env = os.Environ()
	if eng != nil {
		s.cmd.Env = eng.env()
	}
	s.cmd.Stderr = s.stderr
	var stdout lockedBuffer
	s.cmd.Stdout = &stdout
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := s.cmd.Wait()
		if out := stdout.String(); out != "" {
			err = fmt.Errorf("the server wrote to stdout: %q (exit: %v)", out, err)
		}
		s.exited <- err
	}()
	// Cleanups run last first: the log is shown once the node has stopped.
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node %s's log:\n%s", id, tail(s.stderr.String(), 8000))
		}
	})
	t.Cleanup(func() {
		// Both fail harmlessly on a process the test killed. A stopped
		// process takes the pending SIGTERM once continued.
		s.cmd.Process.Signal(syscall.SIGTERM)
		s.cmd.Process.Signal(syscall.SIGCONT)
		var err error
		select {
		case err = <-s.exited:
		case <-time.After(30 * time.Second):
			t.Errorf("node %s did not stop within 30 s of SIGTERM; killed", id)
			s.cmd.Process.Kill()
			err = <-s.exited
		}
		if err != nil && strings.Contains(err.Error(), "wrote to stdout") {
			t.Errorf("node %s: %v", id, err)
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(s.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s not ready: %v\n%s", id, err, s.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestClusterJobsAcrossNodes starts 100 short jobs through three nodes, each
// on an engine of its own, at once, while 300 foreground runs go through the same nodes, and answers for
// each job through the two nodes it was not started on: every job ran once, on
// one node, and its output is whole; every run completed with its own output.
// Then three long jobs are killed through nodes other than the one that runs
// them.
func TestClusterJobsAcrossNodes(t *testing.T) {
	nodes := startClusterApart(t, 3, 8)
	ctx := t.Context()
	run := randomHex(6) // the label of this run's jobs
	const jobs, runs = 100, 300
	short := map[string]string{"run": run, "kind": "short"}

	// The runs take turns with the jobs for the nodes' slots.
	var runsDone sync.WaitGroup
	runErrs := make(chan error, runs)
	next := make(chan int)
	for range 6 {
		runsDone.Go(func() {
			for i := range next {
				want := fmt.Sprintf("run-%d\n", i)
				r, err := nodes[i%3].c.Run(ctx, api.Spec{Command: fmt.Sprintf("echo run-%d", i), QueueTimeout: 300}, nil, nil)
				if err == nil && (r.State != api.StateCompleted || r.Stdout != want) {
					err = fmt.Errorf("run %d via node %s: %s %q %s; want completed %q", i, nodes[i%3].id, r.State, r.Stdout, r.Error, want)
				}
				runErrs <- err
			}
		})
	}
	go func() {
		for i := range runs {
			next <- i
		}
		close(next)
	}()
	defer func() {
		runsDone.Wait()
		close(runErrs)
		failed := 0
		for err := range runErrs {
			if err != nil && failed < 5 {
				t.Error(err)
			}
			if err != nil {
				failed++
			}
		}
		if failed > 0 {
			t.Errorf("%d of %d runs failed", failed, runs)
		}
	}()

	started := startConcurrently(t, jobs, 4, func(i int) (api.Process, error) {
		return nodes[i%3].c.Start(ctx, api.Spec{
			Command: fmt.Sprintf("echo job-%d; sleep 0.%d", i, i%9+1),
			Labels:  short, Timeout: 60, QueueTimeout: 60,
		})
	})
	ran := map[string]int{} // jobs by node
	for i, p := range started {
		checkStarted(t, nodes, p)
		startedVia, waitVia, logsVia := nodes[i%3], nodes[(i+1)%3], nodes[(i+2)%3]
		want := fmt.Sprintf("job-%d\n", i)
		r := waitEnd(t, waitVia, p.ID)
		if r.State != api.StateCompleted || r.ExitCode != 0 || r.Stdout != want {
			t.Errorf("job %d (%s), waited via node %s: state %s exit %d stdout %q error %q; want completed, 0, %q",
				i, p.ID, waitVia.id, r.State, r.ExitCode, r.Stdout, r.Error, want)
		}
		if r.Node != p.Node {
			t.Errorf("job %d (%s) started on node %s but ended on node %q: run twice?", i, p.ID, p.Node, r.Node)
		}
		ran[r.Node]++
		if l := stdoutOf(t, logsVia, p.ID); l != want {
			t.Errorf("job %d (%s): logs via node %s = %q, want %q", i, p.ID, logsVia.id, l, want)
		}
		if g, err := startedVia.c.Get(ctx, p.ID); err != nil || g.State != api.StateCompleted || g.Node != p.Node {
			t.Errorf("job %d (%s): get via node %s = state %s node %q, %v; want completed on %s", i, p.ID, startedVia.id, g.State, g.Node, err, p.Node)
		}
	}
	for _, n := range nodes {
		if ran[n.id] == 0 {
			t.Errorf("node %s ran none of the %d jobs (jobs by node: %v)", n.id, jobs, ran)
		}
	}
	want := make([]string, jobs)
	for i, p := range started {
		want[i] = p.ID
	}
	slices.Sort(want)
	for _, n := range nodes {
		l, err := n.c.List(ctx, api.ListOptions{Labels: short, Limit: 1000})
		if err != nil {
			t.Fatalf("list via node %s: %v", n.id, err)
		}
		var got []string
		for _, p := range l.Processes {
			got = append(got, p.ID)
			if p.State != api.StateCompleted || !slices.ContainsFunc(nodes, func(n *clusterNode) bool { return n.id == p.Node }) {
				t.Errorf("list via node %s: job %s is %s on node %q; want completed on one of the nodes", n.id, p.ID, p.State, p.Node)
			}
		}
		slices.Sort(got)
		if l.Total != jobs || !slices.Equal(got, want) {
			t.Errorf("list via node %s: total %d, %d jobs listed; want the %d jobs of the cluster", n.id, l.Total, len(got), jobs)
		}
	}

	// Long jobs, one started through each node, and each killed through
	// another node than its own.
	sleeper := api.Spec{Command: "sleep 300", Labels: map[string]string{"run": run, "kind": "sleeper"}, QueueTimeout: 60}
	var sleepers []api.Process
	for _, n := range nodes {
		p, err := n.c.Start(ctx, sleeper)
		if err != nil {
			t.Fatalf("start a sleeper via node %s: %v", n.id, err)
		}
		checkStarted(t, nodes, p)
		sleepers = append(sleepers, p)
	}
	// Every node's containers carry its id, and only its own jobs' do.
	for _, n := range nodes {
		mine := 0
		for _, p := range sleepers {
			if p.Node == n.id {
				mine++
			}
		}
		if !eventually(20*time.Second, func() bool { return len(nodeContainers(t, n.id)) == mine }) {
			t.Errorf("node %s runs %d sleepers; containers labelled %s=%s: %v", n.id, mine, labelNode, n.id, nodeContainers(t, n.id))
		}
	}
	for _, p := range sleepers {
		killer := otherNode(t, nodes, p.Node)
		waiter := otherNode(t, nodes, p.Node, killer.id)
		k, err := killer.c.Kill(ctx, p.ID, "", 5*time.Second)
		if err != nil || k.AlreadyEnded {
			t.Fatalf("kill %s (node %s) via node %s: %+v, %v", p.ID, p.Node, killer.id, k, err)
		}
		r := waitEnd(t, waiter, p.ID)
		if r.State != api.StateKilled || r.Node != p.Node {
			t.Errorf("sleeper %s killed via node %s, waited via node %s: state %s on node %q; want killed on node %s",
				p.ID, killer.id, waiter.id, r.State, r.Node, p.Node)
		}
	}
}

// TestClusterNodeDeath kills a node outright (SIGKILL), and stops its engine
// with it, as when its host dies; each node has an engine of its own, so no
// other can see or touch the dead node's containers. The jobs it ran become
// lost, once, and no other node runs them again; the other nodes' jobs run
// on; what its ended jobs wrote is still read from the database.
func TestClusterNodeDeath(t *testing.T) {
	nodes := startClusterApart(t, 3, 4)
	ctx := t.Context()
	run := randomHex(6)

	// Short jobs, two started through each node at once: their output is to
	// outlive the node that ran them.
	type shortJob struct {
		p    api.Process
		want string
	}
	var shorts []shortJob
	startShort := func(via *clusterNode, i int) (api.Process, error) {
		return via.c.Start(ctx, api.Spec{
			Command: fmt.Sprintf("echo short-%d; sleep 1", i),
			Labels:  map[string]string{"run": run, "kind": "short"}, Timeout: 60, QueueTimeout: 60,
		})
	}
	for i, p := range startConcurrently(t, 6, 6, func(i int) (api.Process, error) { return startShort(nodes[i%3], i) }) {
		checkStarted(t, nodes, p)
		shorts = append(shorts, shortJob{p, fmt.Sprintf("short-%d\n", i)})
	}
	for _, s := range shorts {
		if r := waitEnd(t, nodes[0], s.p.ID); r.State != api.StateCompleted || r.Node != s.p.Node {
			t.Fatalf("short job %s: state %s on node %q, want completed on %s", s.p.ID, r.State, r.Node, s.p.Node)
		}
	}

	sleeperLabels := map[string]string{"run": run, "kind": "sleeper"}
	var sleepers []api.Process
	for i := range 6 {
		p, err := nodes[i%3].c.Start(ctx, api.Spec{Command: "sleep 300", Labels: sleeperLabels, QueueTimeout: 60})
		if err != nil {
			t.Fatalf("start sleeper %d via node %s: %v", i, nodes[i%3].id, err)
		}
		checkStarted(t, nodes, p)
		sleepers = append(sleepers, p)
	}
	// Where each sleeper runs, as Get reports it.
	perNode := map[string]int{}
	for _, p := range sleepers {
		r, err := nodes[0].c.Get(ctx, p.ID)
		if err != nil || r.State != api.StateRunning || r.Node != p.Node {
			t.Fatalf("get sleeper %s: state %s node %q, %v; want running on %s", p.ID, r.State, r.Node, err, p.Node)
		}
		perNode[r.Node]++
	}
	endedOn := func(id string) int { // short jobs that ran on node id
		n := 0
		for _, s := range shorts {
			if s.p.Node == id {
				n++
			}
		}
		return n
	}
	// The victim: the node running the most sleepers among those that ran a
	// short job, else the one running the most.
	var victim *clusterNode
	for _, preferRan := range []bool{true, false} {
		for _, n := range nodes {
			if perNode[n.id] > 0 && (!preferRan || endedOn(n.id) > 0) && (victim == nil || perNode[n.id] > perNode[victim.id]) {
				victim = n
			}
		}
		if victim != nil {
			break
		}
	}
	// At least one job must have ended on it: start short jobs through it
	// until one runs there.
	for i := 0; endedOn(victim.id) == 0; i++ {
		if i == 20 || perNode[victim.id] >= 4 {
			t.Fatalf("none of %d short jobs started through node %s (running sleepers in %d of its 4 slots) ran there", i, victim.id, perNode[victim.id])
		}
		p, err := startShort(victim, 100+i)
		if err != nil {
			t.Fatalf("start a short job via node %s: %v", victim.id, err)
		}
		if r := waitEnd(t, victim, p.ID); r.State != api.StateCompleted || r.Node != p.Node {
			t.Fatalf("short job %s: state %s on node %q, want completed on %s", p.ID, r.State, r.Node, p.Node)
		}
		shorts = append(shorts, shortJob{p, fmt.Sprintf("short-%d\n", 100+i)})
	}
	var live []*clusterNode
	for _, n := range nodes {
		if n != victim {
			live = append(live, n)
		}
	}
	if got := nodeContainers(t, victim.id); len(got) < perNode[victim.id] {
		t.Fatalf("node %s runs %d sleepers, but only %d containers carry %s=%s: %v", victim.id, perNode[victim.id], len(got), labelNode, victim.id, got)
	}

	for _, n := range nodes {
		if n != victim && len(containersOn(t, n.engine, victim.id)) > 0 {
			t.Fatalf("node %s's engine holds containers of node %s", n.id, victim.id)
		}
	}

	// The host dies: the process, and its engine with it.
	t0 := time.Now()
	if err := victim.proc.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitProcessGone(t, victim.proc.cmd.Process.Pid)
	victim.engine.stop(t)
	t.Logf("node %s killed, and its engine stopped (%s), with %d of the 6 sleepers", victim.id, since(t0), perNode[victim.id])

	deadline := t0.Add(lostWithin)
	for _, p := range sleepers {
		if p.Node != victim.id {
			continue
		}
		r := waitState(t, live[0], p.ID, api.StateLost, time.Until(deadline))
		if r.ExitCode != 125 || !strings.Contains(r.Error, victim.id) || r.Node != victim.id {
			t.Errorf("lost sleeper %s: exit %d, error %q, node %q; want 125 and an error naming node %s", p.ID, r.ExitCode, r.Error, r.Node, victim.id)
		}
	}
	t.Logf("the dead node's jobs were lost %s after its death", since(t0))
	for _, p := range sleepers {
		if p.Node == victim.id {
			continue
		}
		if r, err := live[1].c.Get(ctx, p.ID); err != nil || r.State != api.StateRunning || r.Node != p.Node {
			t.Errorf("sleeper %s on the live node %s: state %s node %q, %v; want it running there", p.ID, p.Node, r.State, r.Node, err)
		}
	}
	// Listed through a live node, each sleeper is where Get says it is.
	l, err := live[1].c.List(ctx, api.ListOptions{Labels: sleeperLabels, Limit: 1000})
	if err != nil || l.Total != len(sleepers) {
		t.Fatalf("list the sleepers via node %s: total %d, %v; want %d", live[1].id, l.Total, err, len(sleepers))
	}
	for _, p := range l.Processes {
		want := api.StateRunning
		if p.Node == victim.id {
			want = api.StateLost
		}
		if p.State != want {
			t.Errorf("list: sleeper %s on node %s is %s, want %s", p.ID, p.Node, p.State, want)
		}
	}
	if list, err := live[0].c.Nodes(ctx); err != nil {
		t.Errorf("nodes: %v", err)
	} else if i := slices.IndexFunc(list.Nodes, func(s api.Node) bool { return s.ID == victim.id }); i < 0 || list.Nodes[i].Live {
		t.Errorf("the dead node %s is listed live, or not at all: %+v", victim.id, list.Nodes)
	}

	// What the dead node's ended jobs wrote is in the database.
	for i, s := range shorts {
		if s.p.Node != victim.id {
			continue
		}
		via := live[i%2]
		if got := stdoutOf(t, via, s.p.ID); got != s.want {
			t.Errorf("logs of %s, which ended on the dead node, via node %s: %q, want %q", s.p.ID, via.id, got, s.want)
		}
		if r, err := via.c.Get(ctx, s.p.ID); err != nil || r.State != api.StateCompleted || r.ExitCode != 0 {
			t.Errorf("get %s, which ended on the dead node: state %s exit %d, %v; want completed, 0", s.p.ID, r.State, r.ExitCode, err)
		}
	}

	for _, p := range sleepers {
		if p.Node == victim.id {
			continue
		}
		if r := killJob(t, live[0], p.ID); r.State != api.StateKilled {
			t.Errorf("sleeper %s: state %s after the kill, want killed", p.ID, r.State)
		}
	}
}

// TestClusterRetryAfterNodeDeath kills the node running two jobs, and
// stops its engine (each node has its own): the one
// that asked for a retry runs again, whole, on the other node and completes;
// the one that did not is lost, and never runs again.
func TestClusterRetryAfterNodeDeath(t *testing.T) {
	nodes := startClusterApart(t, 2, 4)
	ctx := t.Context()
	start := func(via *clusterNode, retry int) api.Process {
		t.Helper()
		p, err := via.c.Start(ctx, api.Spec{Command: "echo begun; sleep 4; echo done", Retry: retry, QueueTimeout: 60})
		if err != nil {
			t.Fatalf("start a job with retry %d via node %s: %v", retry, via.id, err)
		}
		checkStarted(t, nodes, p)
		return p
	}
	retried := start(nodes[0], 1)
	victim, survivor := nodes[0], nodes[1]
	if retried.Node == survivor.id {
		victim, survivor = survivor, victim
	}
	// The job without a retry must run on the victim too: started through it
	// until one does (it has free slots, so placement may still choose either).
	var once api.Process
	for i := 0; once.Node != victim.id; i++ {
		if i == 6 {
			t.Fatalf("6 jobs started through node %s, none runs there", victim.id)
		}
		once = start(victim, 0)
	}

	t0 := time.Now()
	if err := victim.proc.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitProcessGone(t, victim.proc.cmd.Process.Pid)
	victim.engine.stop(t)

	r := waitEnd(t, survivor, retried.ID)
	if r.State != api.StateCompleted || r.Node != survivor.id || r.Stdout != "begun\ndone\n" {
		t.Fatalf("the job with retry 1 after its node died: state %s on node %q, stdout %q, error %q; want completed on %s with its whole output",
			r.State, r.Node, r.Stdout, r.Error, survivor.id)
	}
	t.Logf("the retried job completed on node %s %s after the death", survivor.id, since(t0))
	if r := waitState(t, survivor, once.ID, api.StateLost, lostWithin); r.ExitCode != 125 || r.Node != victim.id {
		t.Fatalf("the job without retry: exit %d on node %q; want lost, 125, on %s", r.ExitCode, r.Node, victim.id)
	}
	time.Sleep(2 * time.Second) // a sweep or two more: it stays lost, and nothing runs it again
	if r, err := survivor.c.Get(ctx, once.ID); err != nil || r.State != api.StateLost {
		t.Fatalf("the lost job later: %s, %v", r.State, err)
	}
}

// TestClusterRefusedAtClaim: a node that claims a job it cannot run (its
// engine lacks the job's runtime, which the queuing node's has) ends it
// failed, naming itself and the runtime, without judging it again; the two
// nodes' audit logs taken together hold exactly one run.start and one
// run.finish for every job and run of the test, whichever node ended it.
func TestClusterRefusedAtClaim(t *testing.T) {
	requireRuntime(t, "runsc") // the machine's engine has it; a test engine never does
	pg := pgtest.New(t)
	nodes := startClusterOn(t, []string{pg.URL(), pg.URL()}, []*testEngine{nil, startEngine(t)}, 2)
	a, b := nodes[0], nodes[1]
	ctx := t.Context()
	if _, err := a.c.Drain(ctx, a.id, true); err != nil { // b claims every job
		t.Fatal(err)
	}
	var ids []string
	start := func(spec api.Spec) api.Process {
		t.Helper()
		spec.QueueTimeout = 60
		p, err := a.c.Start(ctx, spec)
		if err != nil {
			t.Fatalf("start %q via node %s: %v", spec.Command, a.id, err)
		}
		ids = append(ids, p.ID)
		return p
	}

	done := start(api.Spec{Command: "echo done"})
	if r := waitEnd(t, a, done.ID); r.State != api.StateCompleted || r.Node != b.id || r.Stdout != "done\n" {
		t.Fatalf("a job node %s can run: %s on %q, stdout %q; want completed on %s", b.id, r.State, r.Node, r.Stdout, b.id)
	}
	refused := start(api.Spec{Command: "echo refused", Runtime: "runsc"})
	r := waitEnd(t, a, refused.ID)
	if r.State != api.StateFailed || r.ExitCode != api.ExitFailed || !strings.Contains(r.Error, b.id) || !strings.Contains(r.Error, "runsc") || r.Stdout != "" {
		t.Fatalf("a job node %s cannot run: %s exit %d, error %q, stdout %q; want failed, %d, naming the node and runsc",
			b.id, r.State, r.ExitCode, r.Error, r.Stdout, api.ExitFailed)
	}
	t.Logf("refused at claim: %s", r.Error)
	sleeper := start(api.Spec{Command: "sleep 300"})
	waitState(t, a, sleeper.ID, api.StateRunning, 30*time.Second)
	if r := killJob(t, a, sleeper.ID); r.State != api.StateKilled || r.Node != b.id {
		t.Fatalf("a job killed via node %s: %s on %q; want killed on %s", a.id, r.State, r.Node, b.id)
	}
	// A foreground run runs on the node it came through: through the drained
	// one it is refused at once, and runs through the other.
	t0 := time.Now()
	if res, err := a.c.Run(ctx, api.Spec{Command: "echo never", QueueTimeout: 60}, nil, nil); !errors.Is(err, api.ErrNodeDraining) || since(t0) > 10*time.Second {
		t.Fatalf("a run through the drained node %s, answered after %s: %+v, %v; want 503 node_draining at once", a.id, since(t0), res, err)
	} else {
		t.Logf("a run through the drained node: %v", err)
	}
	var opened string
	res, err := b.c.Run(ctx, api.Spec{Command: "echo run", QueueTimeout: 60}, io.Discard, nil, client.Opened(func(id string) { opened = id }))
	if err != nil || res.State != api.StateCompleted || res.Stdout != "run\n" {
		t.Fatalf("a run via node %s: %+v, %v", b.id, res, err)
	}
	ids = append(ids, opened)
	if left := containersOn(t, nil, b.id); len(left) > 0 {
		t.Errorf("the machine's engine holds containers of node %s, whose engine is its own: %v", b.id, left)
	}

	// Every start has one finish, across the two logs; the finish may be
	// written a moment after the end is read.
	count := func() map[string][2]int {
		n := map[string][2]int{}
		for _, node := range nodes {
			data, _ := os.ReadFile(filepath.Join(node.proc.data, "audit.log"))
			for line := range strings.Lines(string(data)) {
				var ev struct{ Event, ID string }
				if json.Unmarshal([]byte(line), &ev) != nil {
					continue
				}
				c := n[ev.ID]
				switch ev.Event {
				case "run.start":
					c[0]++
				case "run.finish":
					c[1]++
				}
				n[ev.ID] = c
			}
		}
		return n
	}
	var got map[string][2]int
	ok := eventually(10*time.Second, func() bool {
		got = count()
		for _, id := range ids {
			if got[id] != [2]int{1, 1} {
				return false
			}
		}
		return true
	})
	if !ok {
		for _, id := range ids {
			if got[id] != [2]int{1, 1} {
				t.Errorf("job %s: %d run.start and %d run.finish across both nodes' audit logs; want one of each", id, got[id][0], got[id][1])
			}
		}
	}
	for id, c := range got {
		if id != "" && c != [2]int{1, 1} && !slices.Contains(ids, id) {
			t.Errorf("the audit logs name %s, no job of the test, with %d start(s) and %d finish(es)", id, c[0], c[1])
		}
	}
}

// TestClusterPausedNodeFenced stops a node (SIGSTOP) past its lease: the
// cluster declares its running jobs lost. When it is continued it finds them
// lost, kills and removes their containers, and nothing it writes late
// changes what the cluster decided.
func TestClusterPausedNodeFenced(t *testing.T) {
	nodes := startClusterApart(t, 2, 4)
	a, b := nodes[0], nodes[1]
	ctx := t.Context()
	sleeper := api.Spec{Command: "sleep 300", Labels: map[string]string{"run": randomHex(6)}, QueueTimeout: 60}

	// Started through B until at least two run, one of them on B: A has 4
	// slots, so the fifth start runs on B at the latest.
	var onA, onB []api.Process
	for i := 0; len(onA)+len(onB) < 2 || len(onB) == 0; i++ {
		if i == 6 {
			t.Fatalf("6 sleepers started through node %s, none runs there", b.id)
		}
		p, err := b.c.Start(ctx, sleeper)
		if err != nil {
			t.Fatalf("start a sleeper via node %s: %v", b.id, err)
		}
		checkStarted(t, nodes, p)
		if p.Node == b.id {
			onB = append(onB, p)
		} else {
			onA = append(onA, p)
		}
	}

	pid := b.proc.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	deadline := t0.Add(lostWithin)
	for _, p := range onB {
		r := waitState(t, a, p.ID, api.StateLost, time.Until(deadline))
		if r.ExitCode != 125 || !strings.Contains(r.Error, b.id) || r.Node != b.id {
			t.Errorf("lost sleeper %s: exit %d, error %q, node %q; want 125 and an error naming node %s", p.ID, r.ExitCode, r.Error, r.Node, b.id)
		}
	}
	t.Logf("the stopped node's %d jobs were lost %s after SIGSTOP", len(onB), since(t0))
	for _, p := range onA {
		if r, err := a.c.Get(ctx, p.ID); err != nil || r.State != api.StateRunning || r.Node != a.id {
			t.Errorf("sleeper %s on node %s: state %s node %q, %v; want it running there", p.ID, a.id, r.State, r.Node, err)
		}
	}
	// Nobody but B removes B's containers: while it is stopped, they run on.
	if got := nodeContainers(t, b.id); len(got) < len(onB) {
		t.Errorf("node %s is stopped with %d jobs, but %d containers carry its id: %v", b.id, len(onB), len(got), got)
	}

	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	t1 := time.Now()
	if !eventually(20*time.Second, func() bool { return len(nodeContainers(t, b.id)) == 0 }) {
		t.Fatalf("node %s, continued 20 s ago, still has containers of its lost jobs: %v", b.id, nodeContainers(t, b.id))
	}
	t.Logf("node %s removed its containers %s after SIGCONT", b.id, since(t1))
	// Its heartbeats make it live again.
	if !eventually(10*time.Second, func() bool {
		list, err := a.c.Nodes(ctx)
		return err == nil && slices.ContainsFunc(list.Nodes, func(s api.Node) bool { return s.ID == b.id && s.Live })
	}) {
		t.Errorf("node %s is not live again 10 s after SIGCONT", b.id)
	}
	// Whatever B tried to record about its jobs when it woke up (their ends,
	// as its containers were killed) was refused.
	time.Sleep(clusterLease)
	for _, p := range onB {
		for _, n := range nodes {
			r, err := n.c.Get(ctx, p.ID)
			if err != nil || r.State != api.StateLost || r.ExitCode != 125 || r.Node != b.id {
				t.Errorf("sleeper %s via node %s after B came back: state %s exit %d node %q, %v; want lost, 125, on %s",
					p.ID, n.id, r.State, r.ExitCode, r.Node, err, b.id)
			}
		}
	}

	for _, p := range onA {
		if r := killJob(t, a, p.ID); r.State != api.StateKilled {
			t.Errorf("sleeper %s: state %s after the kill, want killed", p.ID, r.State)
		}
	}
}

// TestClusterQueue fills a two-node cluster of one slot each: a job that finds
// no room within its queue_timeout is refused with 503, and nothing runs; one
// with a longer wait starts as soon as a slot frees.
func TestClusterQueue(t *testing.T) {
	nodes := startCluster(t, 2, 1)
	ctx := t.Context()
	run := randomHex(6)
	labels := func(kind string) map[string]string { return map[string]string{"run": run, "kind": kind} }

	var sleepers []api.Process
	for _, n := range nodes {
		p, err := n.c.Start(ctx, api.Spec{Command: "sleep 300", Labels: labels("sleeper"), QueueTimeout: 60})
		if err != nil {
			t.Fatalf("start a sleeper via node %s: %v", n.id, err)
		}
		checkStarted(t, nodes, p)
		sleepers = append(sleepers, p)
	}
	if sleepers[0].Node == sleepers[1].Node {
		t.Fatalf("both sleepers run on node %s, which has one slot", sleepers[0].Node)
	}

	// No room within 2 s: the start fails, naming the wait.
	t0 := time.Now()
	p, err := nodes[0].c.Start(ctx, api.Spec{Command: "echo never", Labels: labels("expired"), QueueTimeout: 2})
	d := since(t0)
	var ae *api.Error
	switch {
	case err == nil:
		t.Fatalf("a job started with no slot free: %+v", p)
	case !strings.Contains(err.Error(), "queue_timeout"):
		t.Errorf("start with no room: %v; want an error that says queue_timeout", err)
	case !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable:
		t.Errorf("start with no room: %#v; want a 503", err)
	}
	if d < 1500*time.Millisecond || d > 8*time.Second {
		t.Errorf("the start with queue_timeout 2 failed after %s, want about 2 s", d)
	}
	t.Logf("refused after %s: %v", d, err)

	// A job that may wait 30 s is answered at once, queued, by its id, and
	// starts when a slot frees.
	t0 = time.Now()
	q, err := nodes[1].c.Start(ctx, api.Spec{Command: "echo queued", Labels: labels("queued"), Timeout: 60, QueueTimeout: 30})
	if d := since(t0); err != nil || q.ID == "" || q.State != api.StateQueued || d > 8*time.Second {
		t.Fatalf("a start with both slots taken, answered after %s: %+v, %v; want it queued with its id at once", d, q, err)
	}
	time.Sleep(3 * time.Second)
	if r, err := nodes[0].c.Get(ctx, q.ID); err != nil || r.State != api.StateQueued {
		t.Fatalf("the queued job while both slots are taken, via node %s: %s, %v; want queued", nodes[0].id, r.State, err)
	}
	freed := sleepers[0]
	if r := killJob(t, otherNode(t, nodes, freed.Node), freed.ID); r.State != api.StateKilled {
		t.Fatalf("sleeper %s: state %s after the kill, want killed", freed.ID, r.State)
	}
	other := otherNode(t, nodes, freed.Node)
	r := waitEnd(t, other, q.ID)
	if r.Node != freed.Node {
		t.Errorf("the queued job ran on node %q; the only free slot was on %s", r.Node, freed.Node)
	}
	if r.State != api.StateCompleted || r.ExitCode != 0 || r.Stdout != "queued\n" || r.Node != freed.Node {
		t.Errorf("the queued job: state %s exit %d stdout %q node %q; want completed, 0, %q on %s",
			r.State, r.ExitCode, r.Stdout, r.Node, "queued\n", freed.Node)
	}
	if got := stdoutOf(t, other, q.ID); got != "queued\n" {
		t.Errorf("logs of the queued job via node %s: %q", other.id, got)
	}
	// The job refused for its queue_timeout never ran.
	l, err := nodes[1].c.List(ctx, api.ListOptions{Labels: labels("expired"), Limit: 1000})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	for _, p := range l.Processes {
		if p.State == api.StateRunning || p.State == api.StateCompleted || p.Node != "" {
			t.Errorf("the job refused for its queue_timeout is listed as %s on node %q", p.State, p.Node)
		}
	}

	if r := killJob(t, nodes[0], sleepers[1].ID); r.State != api.StateKilled {
		t.Errorf("sleeper %s: state %s after the kill, want killed", sleepers[1].ID, r.State)
	}
}

// TestClusterPostgresRestart stops PostgreSQL for longer than a lease while six
// jobs run on two nodes, and starts it again. While it is down, a start is
// refused at once with 503 and no node is ready; the jobs' sandboxes run on.
// Once it is back, both nodes are ready again and every job ends completed,
// once, on its own node, with its output. None is lost, although every node's
// lease lapsed during the outage: the sweep judges a node dead only after a
// whole lease since PostgreSQL started (docs/cluster.md, "When PostgreSQL is
// unreachable").
func TestClusterPostgresRestart(t *testing.T) {
	pg := pgtest.New(t)
	nodes := startClusterOn(t, []string{pg.URL(), pg.URL()}, nil, 4)
	ctx := t.Context()
	run := randomHex(6)
	labels := func(kind string) map[string]string { return map[string]string{"run": run, "kind": kind} }
	// outage is how long PostgreSQL stays down: longer than a lease.
	const outage = 3 * time.Second

	// Six jobs that outlast the outage, started through both nodes at once.
	// Two nodes of 4 slots run them at once, so each runs two at least.
	const jobs = 6
	started := startConcurrently(t, jobs, jobs, func(i int) (api.Process, error) {
		return nodes[i%2].c.Start(ctx, api.Spec{Command: fmt.Sprintf("sleep 8; echo done-%d", i),
			Labels: labels("outage"), Timeout: 60, QueueTimeout: 30})
	})
	perNode := map[string]int{}
	for _, p := range started {
		checkStarted(t, nodes, p)
		perNode[p.Node]++
	}
	for _, p := range started {
		via := otherNode(t, nodes, p.Node)
		if r, err := via.c.Get(ctx, p.ID); err != nil || r.State != api.StateRunning || r.Node != p.Node {
			t.Fatalf("job %s, via node %s: state %s node %q, %v; want it running on node %s when PostgreSQL stops",
				p.ID, via.id, r.State, r.Node, err, p.Node)
		}
	}
	for _, n := range nodes {
		if perNode[n.id] == 0 {
			t.Errorf("node %s runs none of the %d jobs (jobs by node: %v)", n.id, jobs, perNode)
		}
	}
	t.Logf("jobs by node: %v", perNode)

	// Should the test end while PostgreSQL is down, it is started again before
	// the nodes stop (cleanups run last first); otherwise this does nothing.
	t.Cleanup(func() { pg.Start(context.Background()) })
	if err := pg.Stop(ctx); err != nil {
		t.Fatalf("stop PostgreSQL: %v", err)
	}
	down := time.Now()

	// While it is down, a start is refused at once through either node: no
	// node can queue or place work. Neither node is ready.
	for _, n := range nodes {
		t0 := time.Now()
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		p, err := n.c.Start(sctx, api.Spec{Command: "echo never", Labels: labels("refused"), Timeout: 60, QueueTimeout: 30})
		cancel()
		var ae *api.Error
		switch {
		case err == nil:
			t.Errorf("a job started via node %s while PostgreSQL was down: %+v", n.id, p)
		case !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || ae.Code != "database_unavailable":
			t.Errorf("start via node %s while PostgreSQL was down, after %s: %v (%#v); want a 503 database_unavailable",
				n.id, since(t0), err, err)
		default:
			t.Logf("start via node %s refused after %s: %v", n.id, since(t0), err)
		}
		if status, code, err := readyz(n); err != nil || status != http.StatusServiceUnavailable || code != "database_unavailable" {
			t.Errorf("readyz of node %s while PostgreSQL was down: %d %q, %v; want 503 database_unavailable", n.id, status, code, err)
		}
	}

	time.Sleep(time.Until(down.Add(outage)))
	if err := pg.Start(ctx); err != nil {
		t.Fatalf("start PostgreSQL again: %v", err)
	}
	up := time.Now()
	// The nodes' last heartbeats were before the stop: every lease lapsed.
	t.Logf("PostgreSQL was down for %s (lease %s)", up.Sub(down).Round(time.Millisecond), clusterLease)

	// Both nodes are ready again within 20 s.
	for _, n := range nodes {
		var status int
		var code string
		var err error
		if !eventually(time.Until(up.Add(20*time.Second)), func() bool {
			status, code, err = readyz(n)
			return err == nil && status == http.StatusOK
		}) {
			t.Errorf("node %s is not ready 20 s after PostgreSQL started again: readyz %d %q, %v", n.id, status, code, err)
		}
	}
	t.Logf("both nodes ready %s after PostgreSQL started again", since(up))

	// Every job completes on the node that started it, once, with its output,
	// as read through the other node: none was lost.
	for i, p := range started {
		via := otherNode(t, nodes, p.Node)
		want := fmt.Sprintf("done-%d\n", i)
		r := waitEnd(t, via, p.ID)
		if r.State != api.StateCompleted || r.ExitCode != 0 || r.Stdout != want || r.Node != p.Node {
			t.Errorf("job %d (%s) on node %s, waited via node %s: state %s exit %d stdout %q node %q error %q; want completed, 0, %q on node %s",
				i, p.ID, p.Node, via.id, r.State, r.ExitCode, r.Stdout, r.Node, r.Error, want, p.Node)
		}
		if got := stdoutOf(t, via, p.ID); got != want {
			t.Errorf("job %d (%s): logs via node %s = %q, want %q", i, p.ID, via.id, got, want)
		}
	}
	for _, n := range nodes {
		l, err := n.c.List(ctx, api.ListOptions{Labels: labels("outage"), Limit: 100})
		if err != nil {
			t.Fatalf("list via node %s: %v", n.id, err)
		}
		if l.Total != jobs {
			t.Errorf("list via node %s: %d jobs, want %d", n.id, l.Total, jobs)
		}
		for _, p := range l.Processes {
			if p.State != api.StateCompleted {
				t.Errorf("list via node %s: job %s on node %s is %s (%s), want completed", n.id, p.ID, p.Node, p.State, p.Error)
			}
		}
		// The starts refused during the outage left nothing behind.
		if l, err := n.c.List(ctx, api.ListOptions{Labels: labels("refused"), Limit: 100}); err != nil || l.Total != 0 {
			t.Errorf("list the starts refused during the outage via node %s: total %d, %v; want none", n.id, l.Total, err)
		}
	}
	if list, err := nodes[0].c.Nodes(ctx); err != nil {
		t.Errorf("nodes: %v", err)
	} else {
		for _, n := range nodes {
			if i := slices.IndexFunc(list.Nodes, func(s api.Node) bool { return s.ID == n.id }); i < 0 || !list.Nodes[i].Live {
				t.Errorf("node %s is not listed live after the restart: %+v", n.id, list.Nodes)
			}
		}
	}

	// A job started after the restart runs.
	p, err := nodes[1].c.Start(ctx, api.Spec{Command: "echo after-restart", Labels: labels("after"), Timeout: 60, QueueTimeout: 30})
	if err != nil {
		t.Fatalf("start via node %s after the restart: %v", nodes[1].id, err)
	}
	checkStarted(t, nodes, p)
	via := otherNode(t, nodes, p.Node)
	if r := waitEnd(t, via, p.ID); r.State != api.StateCompleted || r.ExitCode != 0 || r.Stdout != "after-restart\n" || r.Node != p.Node {
		t.Errorf("the job started after the restart (%s, node %s), waited via node %s: state %s exit %d stdout %q node %q error %q; want completed, 0, %q",
			p.ID, p.Node, via.id, r.State, r.ExitCode, r.Stdout, r.Node, r.Error, "after-restart\n")
	}
}

// TestClusterNodeCutOff cuts node A off from PostgreSQL (a proxy between them
// closes A's connections and refuses new ones) while A, its container and the
// rest of the cluster run on. The cluster declares A's running job lost, and
// node B's job runs on; A is not ready. Once the connection is back, A finds
// its job lost, removes its container, is ready again, and answers lost for
// the job, as the cluster decided.
func TestClusterNodeCutOff(t *testing.T) {
	pg := pgtest.New(t, pgtest.WithTCP())
	proxy := startProxy(t, pg.Addr())
	viaProxy, err := url.Parse(pg.TCPURL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	viaProxy.Host = proxy.addr()
	nodes := startClusterOn(t, []string{viaProxy.String(), pg.URL()}, []*testEngine{startEngine(t), startEngine(t)}, 4)
	// Should the test end while A is cut off, A is reconnected before the
	// nodes stop (cleanups run last first).
	t.Cleanup(proxy.heal)
	a, b := nodes[0], nodes[1]
	ctx := t.Context()
	run := randomHex(6)
	sleeper := api.Spec{Command: "sleep 300", Labels: map[string]string{"run": run, "kind": "sleeper"}, QueueTimeout: 60}

	onA := startSleeperOn(t, nodes, a, sleeper)
	onB := startSleeperOn(t, nodes, b, sleeper)
	// The sleepers' containers, and no other: those of the sleepers that ran
	// elsewhere were removed when they were killed.
	for _, n := range nodes {
		if !eventually(20*time.Second, func() bool { return len(nodeContainers(t, n.id)) == 1 }) {
			t.Fatalf("node %s runs one sleeper; containers labelled %s=%s: %v", n.id, labelNode, n.id, nodeContainers(t, n.id))
		}
	}

	proxy.cut()
	t0 := time.Now()
	r := waitState(t, b, onA.ID, api.StateLost, lostWithin)
	if r.ExitCode != 125 || !strings.Contains(r.Error, a.id) || r.Node != a.id {
		t.Errorf("lost sleeper %s: exit %d, error %q, node %q; want 125 and an error naming node %s", onA.ID, r.ExitCode, r.Error, r.Node, a.id)
	}
	t.Logf("node %s's job was lost %s after the node was cut off", a.id, since(t0))
	if r, err := b.c.Get(ctx, onB.ID); err != nil || r.State != api.StateRunning || r.Node != b.id {
		t.Errorf("sleeper %s on node %s: state %s node %q, %v; want it running there", onB.ID, b.id, r.State, r.Node, err)
	}
	if status, code, err := readyz(a); err != nil || status != http.StatusServiceUnavailable || code != "database_unavailable" {
		t.Errorf("readyz of node %s while cut off: %d %q, %v; want 503 database_unavailable", a.id, status, code, err)
	}
	if status, code, err := readyz(b); err != nil || status != http.StatusOK {
		t.Errorf("readyz of node %s while node %s is cut off: %d %q, %v; want 200", b.id, a.id, status, code, err)
	}
	t.Logf("node %s's containers while it is cut off: %v", a.id, nodeContainers(t, a.id))

	proxy.heal()
	t1 := time.Now()
	deadline := t1.Add(20 * time.Second)
	if !eventually(time.Until(deadline), func() bool { return len(nodeContainers(t, a.id)) == 0 }) {
		t.Errorf("node %s, reconnected 20 s ago, still has the container of its lost job: %v", a.id, nodeContainers(t, a.id))
	}
	var status int
	var code string
	if !eventually(time.Until(deadline), func() bool {
		status, code, err = readyz(a)
		return err == nil && status == http.StatusOK
	}) {
		t.Errorf("node %s is not ready 20 s after it was reconnected: readyz %d %q, %v", a.id, status, code, err)
	}
	var got api.Result
	if !eventually(time.Until(deadline), func() bool {
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		got, err = a.c.Get(gctx, onA.ID)
		return err == nil && got.State == api.StateLost
	}) {
		t.Errorf("sleeper %s via node %s, 20 s after the node was reconnected: state %s exit %d node %q error %q, %v; want lost",
			onA.ID, a.id, got.State, got.ExitCode, got.Node, got.Error, err)
	}
	t.Logf("node %s removed its container, is ready and answers lost %s after it was reconnected", a.id, since(t1))

	// Whatever A tried to record about its job when it killed the container
	// (its end) was refused: the job stays lost, as every node answers.
	time.Sleep(clusterLease)
	for _, n := range nodes {
		r, err := n.c.Get(ctx, onA.ID)
		if err != nil || r.State != api.StateLost || r.ExitCode != 125 || r.Node != a.id || !strings.Contains(r.Error, a.id) {
			t.Errorf("sleeper %s via node %s after node %s was reconnected: state %s exit %d node %q error %q, %v; want lost, 125, on %s",
				onA.ID, n.id, a.id, r.State, r.ExitCode, r.Node, r.Error, err, a.id)
		}
	}

	// A takes work again.
	p, err := a.c.Start(ctx, api.Spec{Command: "echo after-heal", Labels: map[string]string{"run": run, "kind": "after"}, Timeout: 60, QueueTimeout: 30})
	if err != nil {
		t.Fatalf("start via node %s after it was reconnected: %v", a.id, err)
	}
	checkStarted(t, nodes, p)
	if r := waitEnd(t, a, p.ID); r.State != api.StateCompleted || r.ExitCode != 0 || r.Stdout != "after-heal\n" || r.Node != p.Node {
		t.Errorf("the job started via node %s after it was reconnected (%s, node %s): state %s exit %d stdout %q node %q error %q; want completed, 0, %q",
			a.id, p.ID, p.Node, r.State, r.ExitCode, r.Stdout, r.Node, r.Error, "after-heal\n")
	}

	if r := killJob(t, b, onB.ID); r.State != api.StateKilled {
		t.Errorf("sleeper %s: state %s after the kill, want killed", onB.ID, r.State)
	}
}

// startConcurrently starts n jobs from workers goroutines (start(i) starts
// the i-th) and returns them in order; any error fails the test, once all
// have returned.
func startConcurrently(t *testing.T, n, workers int, start func(i int) (api.Process, error)) []api.Process {
	t.Helper()
	procs := make([]api.Process, n)
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				if procs[i], errs[i] = start(i); errs[i] != nil {
					errs[i] = fmt.Errorf("job %d: %w", i, errs[i])
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("start %d jobs: %v", n, err)
	}
	return procs
}

// checkStarted checks the answer to a start: the job runs (or has already
// ended) on one of the nodes; it is not left queued.
func checkStarted(t *testing.T, nodes []*clusterNode, p api.Process) {
	t.Helper()
	if p.ID == "" || !slices.ContainsFunc(nodes, func(n *clusterNode) bool { return n.id == p.Node }) ||
		p.State == "" || p.State == "queued" || p.State == "placed" {
		t.Errorf("start answered job %q in state %q on node %q; want it running on one of the nodes", p.ID, p.State, p.Node)
	}
}

// otherNode is a node whose id is none of ids.
func otherNode(t *testing.T, nodes []*clusterNode, ids ...string) *clusterNode {
	t.Helper()
	for _, n := range nodes {
		if !slices.Contains(ids, n.id) {
			return n
		}
	}
	t.Fatalf("no node other than %v", ids)
	return nil
}

// waitEnd waits, via node n, for job id to end, for up to 2 minutes.
func waitEnd(t *testing.T, n *clusterNode, id string) api.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	r, err := n.c.Wait(ctx, id)
	if err != nil {
		t.Fatalf("wait for %s via node %s: %v (last seen %s)", id, n.id, err, r.State)
	}
	return r
}

// waitState polls job id via node n until it is in state, for up to within.
// Each Get is bounded: a node must answer for another's job without waiting
// on it.
func waitState(t *testing.T, n *clusterNode, id string, state api.State, within time.Duration) api.Result {
	t.Helper()
	var r api.Result
	var err error
	if !eventually(within, func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		r, err = n.c.Get(ctx, id)
		return err == nil && r.State == state
	}) {
		t.Fatalf("job %s via node %s: state %s (node %q, error %q), %v; want %s within %s",
			id, n.id, r.State, r.Node, r.Error, err, state, within.Round(time.Millisecond))
	}
	return r
}

// killJob sends SIGKILL to job id via node n and waits, via n, for its end.
func killJob(t *testing.T, n *clusterNode, id string) api.Result {
	t.Helper()
	if _, err := n.c.Kill(t.Context(), id, "SIGKILL", 0); err != nil {
		t.Fatalf("kill %s via node %s: %v", id, n.id, err)
	}
	return waitEnd(t, n, id)
}

// stdoutOf is job id's stdout as node n's logs give it, exact bytes.
func stdoutOf(t *testing.T, n *clusterNode, id string) string {
	t.Helper()
	l, err := n.c.Logs(t.Context(), id, api.LogsOptions{Stream: "stdout"})
	if err != nil {
		t.Errorf("logs of %s via node %s: %v", id, n.id, err)
	}
	return string(l.Stdout)
}

// nodeContainers lists the containers on the engine labelled as node id's:
// their short ids, names and states.
func nodeContainers(t *testing.T, id string) []string {
	t.Helper()
	eng, up := engineOf(id)
	if !up {
		return nil
	}
	return containersOf(t, eng, id)
}

// containersOn lists node id's containers on engine e (nil: the machine's).
func containersOn(t *testing.T, e *testEngine, id string) []string {
	t.Helper()
	if e == nil {
		return containersOf(t, docker, id)
	}
	return containersOf(t, e.c, id)
}

func containersOf(t *testing.T, eng *dockerclient.Client, id string) []string {
	t.Helper()
	f := filters.NewArgs(filters.Arg("label", executor.LabelManaged+"=true"), filters.Arg("label", labelNode+"="+id))
	list, err := eng.ContainerList(context.Background(), container.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Errorf("list the containers of node %s: %v", id, err)
		return nil
	}
	var out []string
	for _, c := range list {
		out = append(out, c.ID[:12]+" "+strings.Join(c.Names, ",")+" "+string(c.State))
	}
	return out
}

// removeContainers force-removes node id's containers, as a host that dies
// takes them with it, and checks that none is left.
func removeContainers(t *testing.T, id string) {
	t.Helper()
	eng, up := engineOf(id)
	if !up {
		return
	}
	f := filters.NewArgs(filters.Arg("label", executor.LabelManaged+"=true"), filters.Arg("label", labelNode+"="+id))
	list, err := eng.ContainerList(context.Background(), container.ListOptions{All: true, Filters: f})
	if err != nil {
		t.Errorf("list the containers of node %s: %v", id, err)
	}
	for _, c := range list {
		eng.ContainerRemove(context.Background(), c.ID, container.RemoveOptions{Force: true})
	}
	if !eventually(20*time.Second, func() bool { return len(nodeContainers(t, id)) == 0 }) {
		t.Errorf("containers of node %s still on the engine after their removal: %v", id, nodeContainers(t, id))
	}
}

// removeNodeContainers removes, at the end of a test, every container that
// carries one of the nodes' ids, whatever the test left.
func removeNodeContainers(t *testing.T, ids []string) {
	for _, id := range ids {
		if left := nodeContainers(t, id); len(left) > 0 {
			t.Logf("removing the containers node %s left: %v", id, left)
			removeContainers(t, id)
		}
	}
}

// waitProcessGone waits until process pid has died: it is gone, or a zombie
// not reaped yet.
func waitProcessGone(t *testing.T, pid int) {
	t.Helper()
	if !eventually(10*time.Second, func() bool {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		// The state follows the command name, which is in parentheses.
		s := string(stat)
		i := strings.LastIndexByte(s, ')')
		return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
	}) {
		t.Fatalf("process %d still alive 10 s after SIGKILL", pid)
	}
}

// eventually calls cond every 100 ms until it holds, for up to within, and
// reports whether it held.
func eventually(within time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(within); ; time.Sleep(100 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// tail is the last n bytes of s.
func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// startSleeperOn starts spec through node via until the job runs there, at
// most 8 times, then kills those that ran elsewhere.
func startSleeperOn(t *testing.T, nodes []*clusterNode, via *clusterNode, spec api.Spec) api.Process {
	t.Helper()
	var elsewhere []api.Process
	for range 8 {
		p, err := via.c.Start(t.Context(), spec)
		if err != nil {
			t.Fatalf("start a sleeper via node %s: %v", via.id, err)
		}
		checkStarted(t, nodes, p)
		if p.Node != via.id {
			elsewhere = append(elsewhere, p)
			continue
		}
		for _, o := range elsewhere {
			if r := killJob(t, nodeByID(t, nodes, o.Node), o.ID); r.State != api.StateKilled {
				t.Errorf("sleeper %s: state %s after the kill, want killed", o.ID, r.State)
			}
		}
		return p
	}
	t.Fatalf("8 sleepers started through node %s, none runs there", via.id)
	return api.Process{}
}

// nodeByID is the node whose id is id.
func nodeByID(t *testing.T, nodes []*clusterNode, id string) *clusterNode {
	t.Helper()
	i := slices.IndexFunc(nodes, func(n *clusterNode) bool { return n.id == id })
	if i < 0 {
		t.Fatalf("no node %q", id)
	}
	return nodes[i]
}

// readyz asks node n's /readyz, for up to 10 s: the status, and the error's
// code when it is not ready.
func readyz(n *clusterNode) (status int, code string, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", n.proc.url+"/readyz", nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var body struct{ Error *api.Error }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return resp.StatusCode, "", fmt.Errorf("readyz of node %s: %d, not JSON: %w", n.id, resp.StatusCode, err)
	}
	if body.Error != nil {
		code = body.Error.Code
	}
	return resp.StatusCode, code, nil
}

// pgProxy is a TCP proxy in front of PostgreSQL that a test can cut: every
// connection through it is closed, and new ones are closed as soon as they
// are accepted, until it heals.
type pgProxy struct {
	l      net.Listener
	target string
	wg     sync.WaitGroup // the accept loop and the connections' copies

	mu     sync.Mutex
	cutOff bool
	conns  map[net.Conn]bool // open, both sides
}

// startProxy listens on a free loopback port and forwards what it accepts to
// target, until the test ends.
func startProxy(t *testing.T, target string) *pgProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &pgProxy{l: l, target: target, conns: map[net.Conn]bool{}}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

// addr is the proxy's address, host:port.
func (p *pgProxy) addr() string { return p.l.Addr().String() }

func (p *pgProxy) accept() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return // closed
		}
		if !p.track(c) {
			c.Close()
			continue
		}
		p.wg.Go(func() { p.forward(c) })
	}
}

// forward copies between c and a connection to the target, both ways, until
// either side closes or the proxy is cut.
func (p *pgProxy) forward(c net.Conn) {
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		p.drop(c)
		return
	}
	if !p.track(up) {
		p.drop(c, up)
		return
	}
	p.wg.Go(func() {
		io.Copy(up, c)
		p.drop(c, up)
	})
	io.Copy(c, up)
	p.drop(c, up)
}

// track adds c to the open connections, unless the proxy is cut.
func (p *pgProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cutOff {
		return false
	}
	p.conns[c] = true
	return true
}

// drop closes connections and forgets them.
func (p *pgProxy) drop(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		c.Close()
		delete(p.conns, c)
	}
}

// cut closes every connection through the proxy, and those it accepts from
// now on, until heal.
func (p *pgProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutOff = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// heal lets new connections through again.
func (p *pgProxy) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutOff = false
}

// close stops the proxy: no connection is left open.
func (p *pgProxy) close() {
	p.l.Close()
	p.cut()
	p.wg.Wait()
}
