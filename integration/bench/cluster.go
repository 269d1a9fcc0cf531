package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/airlock-sandbox/airlock/cluster/peer"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/pgtest"
	"github.com/airlock-sandbox/airlock/server"
)

// benchNode is one airlock node in this process: a Service on its own
// executor and data dir, as `airlock serve --database` wires it.
type benchNode struct {
	id    string
	svc   *server.Service
	ex    *executor.Executor
	close func()
}

func newBenchNode(database, id string) (*benchNode, error) {
	dir, err := os.MkdirTemp("", "airlock-bench-node-")
	if err != nil {
		return nil, err
	}
	ecfg := executor.DefaultConfig()
	ecfg.DataDir = dir
	ex, err := executor.New(executor.WithConfig(ecfg), executor.WithPool(map[string]int{*image: 2}))
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	closeEx := func() { ex.Close(); os.RemoveAll(dir) }
	cfg := server.DefaultConfig()
	cfg.DataDir = ex.DataDir()
	cfg.AuditLog = filepath.Join(ex.DataDir(), "audit.log")
	cfg.TenantDefaults.MaxConcurrent = 1000
	cfg.Cluster.Database, cfg.Cluster.NodeID, cfg.Cluster.Lease, cfg.Cluster.Slots = database, id, 2, 64
	svc, err := server.NewService(ex, cfg, slog.New(slog.DiscardHandler), "bench", server.WithPeers(peer.Dial))
	if err != nil {
		closeEx()
		return nil, err
	}
	return &benchNode{id: id, svc: svc, ex: ex, close: func() { svc.Close(context.Background(), true); closeEx() }}, nil
}

// cluster measures cluster mode on this engine: what placement through
// PostgreSQL adds to a background `echo hi` (start answered, and start to
// end) against a server without a database, the throughput of 1, 2 and 3
// nodes, and the time from a node's death to its job being reported lost.
func (b *bench) cluster(ctx context.Context, w *tabwriter.Writer) error {
	pg, err := pgtest.Start(ctx)
	if err != nil {
		return fmt.Errorf("start PostgreSQL: %w", err)
	}
	defer pg.Close()

	single, err := newBenchNode("", "")
	if err != nil {
		return err
	}
	defer single.close()
	var nodes []*benchNode
	defer func() {
		for _, n := range nodes {
			n.close()
		}
	}()
	for i := range 3 {
		n, err := newBenchNode(pg.URL(), fmt.Sprintf("bench-%d", i+1))
		if err != nil {
			return err
		}
		nodes = append(nodes, n)
	}
	echo := executor.Spec{Argv: []string{"echo", "hi"}, Image: *image}
	job := func(start, end *benchNode) (answered, ended time.Duration, err error) {
		t := time.Now()
		p, err := start.svc.Start(ctx, server.Anonymous, echo, "bench", "")
		if err != nil {
			return 0, 0, err
		}
		answered = time.Since(t)
		r, err := end.svc.Wait(ctx, server.Anonymous, p.ID, time.Minute)
		if err == nil && r.State != executor.StateCompleted {
			err = fmt.Errorf("job %s: %s %s", p.ID, r.State, r.Error)
		}
		return answered, time.Since(t), err
	}

	// Latency: one job at a time, single node and one cluster node in turns.
	var soloA, soloE, clA, clE []time.Duration
	for range *n {
		a, e, err := job(single, single)
		if err != nil {
			return err
		}
		soloA, soloE = append(soloA, a), append(soloE, e)
		if a, e, err = job(nodes[0], nodes[0]); err != nil {
			return err
		}
		clA, clE = append(clA, a), append(clE, e)
	}
	for _, l := range [][]time.Duration{soloA, soloE, clA, clE} {
		slices.Sort(l)
	}
	fmt.Fprintf(w, "\nCluster mode: a background `echo hi` (%d of each, in turns), PostgreSQL on a unix socket\n", *n)
	fmt.Fprintln(w, "\tstart answered p50\tp90\tstart to end p50\tp90")
	for _, r := range []struct {
		name       string
		ans, ended []time.Duration
	}{{"one server, no database", soloA, soloE}, {"cluster node (queue, claim, start, launch, finish)", clA, clE}} {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.name, ms(percentile(r.ans, 0.5)), ms(percentile(r.ans, 0.9)),
			ms(percentile(r.ended, 0.5)), ms(percentile(r.ended, 0.9)))
	}
	fmt.Fprintf(w, "cluster / single (p50)\t%.2fx\t\t%.2fx\n", ratio(percentile(clA, 0.5), percentile(soloA, 0.5)),
		ratio(percentile(clE, 0.5), percentile(soloE, 0.5)))

	// Foreground runs from the warm pool, one at a time, in turns: what the
	// queue (enqueue, claim, start; the end is recorded after the answer) adds.
	run := func(n *benchNode) (time.Duration, error) {
		time.Sleep(300 * time.Millisecond) // the pool refills between runs (a start takes ~250 ms), as between an agent's
		t := time.Now()
		r, err := n.svc.Run(ctx, server.Anonymous, echo, "bench", "", server.RunFollower{})
		if err == nil && r.State != executor.StateCompleted {
			err = fmt.Errorf("run: %s %s", r.State, r.Error)
		}
		return time.Since(t), err
	}
	var soloR, clR []time.Duration
	for range *n {
		d, err := run(single)
		if err != nil {
			return err
		}
		soloR = append(soloR, d)
		if d, err = run(nodes[0]); err != nil {
			return err
		}
		clR = append(clR, d)
	}
	slices.Sort(soloR)
	slices.Sort(clR)
	fmt.Fprintf(w, "\nforeground `echo hi` from the warm pool (%d of each, in turns)\tp50\tp90\tp99\n", *n)
	fmt.Fprintf(w, "one server, no database\t%s\t%s\t%s\n", ms(percentile(soloR, 0.5)), ms(percentile(soloR, 0.9)), ms(percentile(soloR, 0.99)))
	fmt.Fprintf(w, "cluster node\t%s\t%s\t%s\n", ms(percentile(clR, 0.5)), ms(percentile(clR, 0.9)), ms(percentile(clR, 0.99)))
	fmt.Fprintf(w, "cluster / single\t%.2fx\t%.2fx\t%.2fx\n", ratio(percentile(clR, 0.5), percentile(soloR, 0.5)),
		ratio(percentile(clR, 0.9), percentile(soloR, 0.9)), ratio(percentile(clR, 0.99), percentile(soloR, 0.99)))

	// Throughput: 8 callers for a few seconds, each starting through the nodes
	// in turn and waiting for its job's end through the next.
	fmt.Fprintln(w, "\nthroughput, 8 callers, `echo hi` jobs started and waited for\tjobs/s")
	for k := 1; k <= 3; k++ {
		var done atomic.Int64
		var werr error
		var mu sync.Mutex
		stop := time.Now().Add(*duration)
		var wg sync.WaitGroup
		for c := range 8 {
			wg.Go(func() {
				for i := c; time.Now().Before(stop); i++ {
					if _, _, err := job(nodes[i%k], nodes[(i+1)%k]); err != nil {
						mu.Lock()
						werr = err
						mu.Unlock()
						return
					}
					done.Add(1)
				}
			})
		}
		wg.Wait()
		if werr != nil {
			return werr
		}
		fmt.Fprintf(w, "%d node(s) on this one engine\t%.1f\n", k, float64(done.Load())/duration.Seconds())
	}

	// A node's death: node 3 stops heartbeating (its service closes, its job
	// runs on); node 1 reports the job lost once the lease (2 s) has run out
	// and a sweep (every 1 s) has seen it.
	var id string
	for range 20 {
		p, err := nodes[2].svc.Start(ctx, server.Anonymous, executor.Spec{Command: "sleep 3600", Image: *image}, "bench", "")
		if err != nil {
			return err
		}
		if p.Node == nodes[2].id {
			id = p.ID
			break
		}
		nodes[2].svc.Kill(ctx, server.Anonymous, p.ID, "SIGKILL", 0, "bench", "")
	}
	if id == "" {
		return fmt.Errorf("no job landed on node %s in 20 starts", nodes[2].id)
	}
	dead := nodes[2]
	nodes = nodes[:2]
	t := time.Now()
	dead.svc.Close(ctx, false)
	for {
		r, err := nodes[0].svc.Get(ctx, server.Anonymous, id)
		if err != nil {
			return err
		}
		if r.State == executor.StateLost {
			break
		}
		if time.Since(t) > time.Minute {
			return fmt.Errorf("job %s of a dead node is still %s after a minute", id, r.State)
		}
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Fprintf(w, "node death to its job reported lost (lease 2 s, sweep every 1 s)\t%s\n", ms(time.Since(t)))
	dead.ex.Kill(ctx, id, "SIGKILL", 0)
	dead.ex.Wait(ctx, id)
	dead.ex.Close()
	os.RemoveAll(dead.ex.DataDir())
	return w.Flush()
}
