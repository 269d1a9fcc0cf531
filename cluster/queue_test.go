package cluster_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/cluster"
)

func TestClaimRespectsSlotsAndMemory(t *testing.T) {
	c := fresh(t)
	register(t, c, "small", 2, GiB)
	register(t, c, "big", 8, 8*GiB)
	a := enqueue(t, c, cluster.NewJob{Tenant: "t", Memory: 256 * MiB})
	b := enqueue(t, c, cluster.NewJob{Tenant: "t", Memory: 256 * MiB})
	huge := enqueue(t, c, cluster.NewJob{Tenant: "t", Memory: 4 * GiB})
	d := enqueue(t, c, cluster.NewJob{Tenant: "t", Memory: 256 * MiB})

	// Two slots: a and b; the 4 GiB job does not fit small's budget at all.
	j1, j2 := claim(t, c, "small"), claim(t, c, "small")
	if j1.ID != a.ID || j2.ID != b.ID {
		t.Fatalf("small claimed %s, %s; want %s, %s", j1.ID, j2.ID, a.ID, b.ID)
	}
	if j1.State != api.StatePlaced || j1.Node != "small" || j1.Attempt != 1 || j1.PlacedAt.IsZero() {
		t.Fatalf("claimed job = %+v", j1)
	}
	noWork(t, c, "small")
	// The big node takes the huge one first (it is older than d).
	if j := claim(t, c, "big"); j.ID != huge.ID {
		t.Fatalf("big claimed %s, want the 4 GiB job", j.ID)
	}
	// A slot freed on small takes d.
	run(t, c, j1)
	if j := claim(t, c, "small"); j.ID != d.ID {
		t.Fatalf("small claimed %s, want %s", j.ID, d.ID)
	}

	// Memory, not slots, can be what is short: two 300 MiB jobs on a 1 GiB
	// node leave no room for a 600 MiB one.
	c2 := fresh(t)
	register(t, c2, "n", 10, GiB)
	enqueue(t, c2, cluster.NewJob{Tenant: "t", Memory: 300 * MiB})
	enqueue(t, c2, cluster.NewJob{Tenant: "t", Memory: 300 * MiB})
	enqueue(t, c2, cluster.NewJob{Tenant: "t", Memory: 600 * MiB})
	claim(t, c2, "n")
	claim(t, c2, "n")
	noWork(t, c2, "n")
}

func TestWorkspaceAffinity(t *testing.T) {
	c := fresh(t)
	ctx := t.Context()
	register(t, c, "a", 4, 4*GiB)
	register(t, c, "b", 4, 4*GiB)
	if err := c.BindWorkspace(ctx, cluster.Workspace{ID: "ws_1", Tenant: "t", Node: "b"}); err != nil {
		t.Fatal(err)
	}
	j := enqueue(t, c, cluster.NewJob{Tenant: "t", Workspace: "ws_1"})
	noWork(t, c, "a")
	if got := claim(t, c, "b"); got.ID != j.ID || got.Workspace != "ws_1" {
		t.Fatalf("b claimed %+v", got)
	}

	// Another tenant's workspace, or one no node holds, is not found.
	for _, nj := range []cluster.NewJob{{Tenant: "u", Workspace: "ws_1"}, {Tenant: "t", Workspace: "ws_none"}} {
		nj.Spec = []byte(`{}`)
		if _, err := c.Enqueue(ctx, nj); !errors.Is(err, cluster.ErrNotFound) {
			t.Fatalf("enqueue on %s for %s = %v, want ErrNotFound", nj.Workspace, nj.Tenant, err)
		}
	}
}

// A tenant's limit holds across nodes, even when they all claim at once.
func TestTenantLimitClusterWide(t *testing.T) {
	c := fresh(t)
	ctx := t.Context()
	if err := c.SetTenant(ctx, cluster.Tenant{Name: "t", MaxRunning: 3}); err != nil {
		t.Fatal(err)
	}
	nodes := []string{"a", "b", "c", "d"}
	for _, n := range nodes {
		register(t, c, n, 10, 10*GiB)
	}
	for range 20 {
		enqueue(t, c, cluster.NewJob{Tenant: "t"})
	}
	other := enqueue(t, c, cluster.NewJob{Tenant: "u"})

	var mu sync.Mutex
	var claimed []cluster.Job
	var wg sync.WaitGroup
	for _, n := range nodes {
		for range 3 {
			wg.Go(func() {
				for {
					j, err := c.Claim(ctx, n)
					if errors.Is(err, cluster.ErrNoWork) {
						return
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					claimed = append(claimed, j)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	var ts, us int
	for _, j := range claimed {
		switch j.Tenant {
		case "t":
			ts++
		case "u":
			us++
			if j.ID != other.ID {
				t.Errorf("claimed %s of u", j.ID)
			}
		}
	}
	// The other tenant is not held up by t's limit.
	if ts != 3 || us != 1 {
		t.Fatalf("claimed %d of t (limit 3) and %d of u", ts, us)
	}
	// One ends: one more may go.
	for _, j := range claimed {
		if j.Tenant == "t" {
			run(t, c, j)
			break
		}
	}
	claim(t, c, "a")
	noWork(t, c, "b")
}

func TestQueueLimit(t *testing.T) {
	c := fresh(t)
	if err := c.SetTenant(t.Context(), cluster.Tenant{Name: "t", MaxQueued: 2}); err != nil {
		t.Fatal(err)
	}
	enqueue(t, c, cluster.NewJob{Tenant: "t"})
	enqueue(t, c, cluster.NewJob{Tenant: "t"})
	_, err := c.Enqueue(t.Context(), cluster.NewJob{Tenant: "t", Spec: []byte(`{}`)})
	if !errors.Is(err, cluster.ErrQueueFull) || !strings.Contains(err.Error(), "2 jobs waiting") {
		t.Fatalf("third enqueue = %v, want ErrQueueFull naming the limit", err)
	}
	enqueue(t, c, cluster.NewJob{Tenant: "u"}) // another tenant has room
	// A claimed job leaves the queue and frees a place.
	register(t, c, "a", 1, GiB)
	claim(t, c, "a")
	enqueue(t, c, cluster.NewJob{Tenant: "t"})
}

// One tenant's flood does not starve another: the tenant with fewer running
// jobs goes first, and each tenant's jobs go first in, first out.
func TestFairnessAndFIFO(t *testing.T) {
	c := fresh(t)
	register(t, c, "a", 6, 64*GiB)
	var flood []string
	for i := range 10 {
		flood = append(flood, enqueue(t, c, cluster.NewJob{ID: fmt.Sprintf("a%02d", i), Tenant: "a"}).ID)
	}
	b1 := enqueue(t, c, cluster.NewJob{ID: "b1", Tenant: "b"}).ID
	b2 := enqueue(t, c, cluster.NewJob{ID: "b2", Tenant: "b"}).ID
	var got []string
	for range 6 {
		got = append(got, claim(t, c, "a").ID)
	}
	want := []string{flood[0], b1, flood[1], b2, flood[2], flood[3]}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("claim order %v, want %v", got, want)
	}
}

func TestFIFO(t *testing.T) {
	c := fresh(t)
	register(t, c, "a", 1, GiB)
	var want []string
	for i := range 8 {
		want = append(want, enqueue(t, c, cluster.NewJob{ID: fmt.Sprintf("j%d", 7-i), Tenant: "t"}).ID)
	}
	var got []string
	for range want {
		j := claim(t, c, "a")
		got = append(got, j.ID)
		run(t, c, j)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

// A job nobody had room for ends at its queue timeout with a reason that names
// the wait; nothing ran.
func TestQueueTimeout(t *testing.T) {
	c := fresh(t)
	register(t, c, "a", 1, GiB)
	enqueue(t, c, cluster.NewJob{Tenant: "t"})
	busy := claim(t, c, "a")
	j := enqueue(t, c, cluster.NewJob{Tenant: "t", QueueTimeout: time.Second})
	if s, err := c.Sweep(t.Context()); err != nil || len(s.Expired) != 0 {
		t.Fatalf("sweep before the deadline = %+v, %v", s, err)
	}
	time.Sleep(1200 * time.Millisecond)
	// The slot frees only now: a job past its deadline is not placed, even
	// before a sweep ends it.
	run(t, c, busy)
	noWork(t, c, "a")
	s, err := c.Sweep(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Expired) != 1 || s.Expired[0] != j.ID {
		t.Fatalf("expired %v, want [%s]", s.Expired, j.ID)
	}
	got := get(t, c, j.ID)
	if got.State != api.StateExpired || got.ExitCode == nil || *got.ExitCode != api.ExitFailed ||
		!strings.Contains(got.Reason, "queue timeout of 1s") || got.EndedAt.IsZero() || !got.StartedAt.IsZero() {
		t.Fatalf("expired job = %+v", got)
	}
	if get(t, c, busy.ID).State != api.StateCompleted {
		t.Fatal("the sweep touched an ended job")
	}
}

// Many claimers race over one queue: every job is placed exactly once, and no
// node ever holds more than its slots.
func TestManyClaimers(t *testing.T) {
	c := fresh(t)
	ctx := t.Context()
	const jobs, slots = 300, 5
	nodes := []string{"a", "b", "c"}
	for _, n := range nodes {
		register(t, c, n, slots, 64*GiB)
	}
	for i := range jobs {
		enqueue(t, c, cluster.NewJob{ID: fmt.Sprintf("job%03d", i), Tenant: fmt.Sprintf("t%d", i%4)})
	}

	var mu sync.Mutex
	claims := map[string]string{} // job -> node
	var wg sync.WaitGroup
	// A watcher reads the nodes' load as the database sees it while they race.
	done := make(chan struct{})
	watched := make(chan int)
	go func() {
		looks := 0
		defer func() { watched <- looks }()
		for {
			select {
			case <-done:
				return
			default:
			}
			list, err := c.Nodes(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			for _, n := range list {
				if n.Running > n.Slots {
					t.Errorf("%s holds %d jobs, its slots are %d", n.ID, n.Running, n.Slots)
				}
			}
			looks++
		}
	}()
	for _, n := range nodes {
		for range 3 {
			wg.Go(func() {
				idle := 0
				for idle < 20 {
					j, err := c.Claim(ctx, n)
					if errors.Is(err, cluster.ErrNoWork) {
						idle++
						time.Sleep(5 * time.Millisecond)
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					idle = 0
					mu.Lock()
					if prev, dup := claims[j.ID]; dup {
						t.Errorf("%s claimed by %s and again by %s", j.ID, prev, n)
					}
					claims[j.ID] = n
					mu.Unlock()
					if err := c.Start(ctx, j.ID, j.Fence()); err != nil {
						t.Error(err)
					}
					if err := c.Finish(ctx, j.ID, j.Fence(), completed(j.ID)); err != nil {
						t.Error(err)
					}
				}
			})
		}
	}
	wg.Wait()
	close(done)
	t.Logf("the watcher looked at the nodes %d times", <-watched)
	if len(claims) != jobs {
		t.Fatalf("%d jobs claimed, want %d", len(claims), jobs)
	}
	per := map[string]int{}
	for id, n := range claims {
		j := get(t, c, id)
		if j.State != api.StateCompleted || j.Attempt != 1 || j.Node != n {
			t.Fatalf("%s = %s on %s attempt %d; want completed on %s at attempt 1", id, j.State, j.Node, j.Attempt, n)
		}
		per[n]++
	}
	t.Logf("jobs per node: %v", per)
}

// Expire and a kill in the queue say whether they ended the job: the caller
// audits that end, and only the call that made it does (one run.finish).
func TestQueueEndsSayWhoEndedThem(t *testing.T) {
	c := fresh(t)
	ctx := t.Context()
	j := enqueue(t, c, cluster.NewJob{Tenant: "t", QueueTimeout: 10 * time.Millisecond})
	time.Sleep(50 * time.Millisecond)
	if got, ended, err := c.Expire(ctx, j.ID); err != nil || !ended || got.State != api.StateExpired {
		t.Fatalf("the first expiry: %s, ended %v, %v; want expired by this call", got.State, ended, err)
	}
	if got, ended, err := c.Expire(ctx, j.ID); err != nil || ended || got.State != api.StateExpired {
		t.Fatalf("the second expiry: %s, ended %v, %v; want expired before, not by this call", got.State, ended, err)
	}
	k := enqueue(t, c, cluster.NewJob{Tenant: "t"})
	if got, ended, err := c.RequestKill(ctx, k.ID, "SIGKILL", 0); err != nil || !ended || got.State != api.StateKilled {
		t.Fatalf("a kill in the queue: %s, ended %v, %v; want killed by this call", got.State, ended, err)
	}
	if _, ended, err := c.RequestKill(ctx, k.ID, "SIGKILL", 0); err != nil || ended {
		t.Fatalf("a second kill: ended %v, %v; want nothing ended", ended, err)
	}
}
