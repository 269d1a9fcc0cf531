package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/go-units"

	"github.com/airlock-sandbox/airlock/executor"
)

// poolSize is the warm pool of the bench: enough for 8 callers.
const poolSize = 8

// pool measures `echo hi` from a warm sandbox (airlock's init waiting for its
// command) against `docker run --rm` and the bare API in the same run, through
// the library and HTTP, alone and under 8 callers, beside the host's floor: a
// fork and exec of `true`.
func (b *bench) pool(ctx context.Context, w *tabwriter.Writer) error {
	cfg := executor.DefaultConfig()
	dir, err := os.MkdirTemp("", "airlock-bench-pool-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cfg.DataDir = dir
	warm, err := executor.New(executor.WithConfig(cfg), executor.WithPool(map[string]int{*image: poolSize}))
	if err != nil {
		return err
	}
	defer warm.Close()
	waitIdle := func(n int) error {
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			for _, st := range warm.PoolStats() {
				if st.Key.Image == *image && st.Idle >= n {
					return nil
				}
			}
		}
		return fmt.Errorf("the pool never had %d warm sandboxes", n)
	}
	// settled waits for a full pool and for the engine to be done with the
	// sandboxes used before: a timed run has no start or removal beside it.
	settled := func() error {
		if err := waitIdle(poolSize); err != nil {
			return err
		}
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			cs, err := b.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: filters.NewArgs(filters.Arg("label", "io.airlock.pool"))})
			if err != nil {
				return err
			}
			if len(cs) <= poolSize {
				// A refill's init warms itself for a few milliseconds after
				// its start: as between an agent's runs, let it finish.
				time.Sleep(250 * time.Millisecond)
				return nil
			}
		}
		return fmt.Errorf("used sandboxes still on the engine after a minute")
	}
	echo := executor.Spec{Argv: []string{"echo", "hi"}}
	// Each timed call finds a warm sandbox: the loops wait for the refill
	// before they start the clock.
	viaPool := func() error {
		res, err := warm.Run(ctx, echo)
		if err != nil {
			return err
		}
		return check(res.Stdout, res.Stderr, res.ExitCode)
	}
	floor := func() error { return exec.Command("true").Run() }

	var pooled, docker, bare, fork []time.Duration
	for round := range warmup + *n {
		for _, m := range []struct {
			fn  func() error
			out *[]time.Duration
		}{{viaPool, &pooled}, {func() error { return b.viaDockerRun(ctx) }, &docker}, {func() error { return b.viaAPI(ctx) }, &bare}, {floor, &fork}} {
			if err := settled(); err != nil {
				return err
			}
			t0 := time.Now()
			if err := m.fn(); err != nil {
				return err
			}
			if round >= warmup {
				*m.out = append(*m.out, time.Since(t0))
			}
		}
	}
	for _, l := range [][]time.Duration{pooled, docker, bare, fork} {
		slices.Sort(l)
	}
	fmt.Fprintf(w, "\nwarm pool: `echo hi` from a warm sandbox, n=%d per method, one of each per round (before each: the pool full, the used sandboxes gone, 250 ms of quiet)\n", *n)
	fmt.Fprintln(w, "method\tp50\tp90\tp99")
	for _, r := range []struct {
		name string
		l    []time.Duration
	}{{"pooled executor.Run", pooled}, {"docker run --rm", docker}, {"bare Docker API (cold floor)", bare}, {"fork+exec `true` on the host", fork}} {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", r.name, ms(percentile(r.l, 0.5)), ms(percentile(r.l, 0.9)), ms(percentile(r.l, 0.99)))
	}
	fmt.Fprintf(w, "docker run / pooled\t%.1fx\t%.1fx\t%.1fx\n", ratio(percentile(docker, 0.5), percentile(pooled, 0.5)),
		ratio(percentile(docker, 0.9), percentile(pooled, 0.9)), ratio(percentile(docker, 0.99), percentile(pooled, 0.99)))
	w.Flush()

	// Through HTTP, alternating with the library.
	h, err := newHTTPServer(warm, "bench-token-"+randomHex(8))
	if err != nil {
		return err
	}
	viaHTTP := func() error {
		var r executor.Result
		if err := h.do(ctx, "POST", "/v1/processes", echo, &r); err != nil {
			return err
		}
		return check(r.Stdout, r.Stderr, r.ExitCode)
	}
	var lib, api []time.Duration
	for range warmup + *n {
		for _, m := range []struct {
			fn  func() error
			out *[]time.Duration
		}{{viaPool, &lib}, {viaHTTP, &api}} {
			if err := settled(); err != nil {
				return err
			}
			t0 := time.Now()
			if err := m.fn(); err != nil {
				h.close()
				return err
			}
			*m.out = append(*m.out, time.Since(t0))
		}
	}
	h.close()
	lib, api = lib[warmup:], api[warmup:]
	slices.Sort(lib)
	slices.Sort(api)
	fmt.Fprintf(w, "pooled over HTTP\tp50 %s (library %s, +%s)\tp99 %s (library %s)\n", ms(percentile(api, 0.5)), ms(percentile(lib, 0.5)),
		ms(percentile(api, 0.5)-percentile(lib, 0.5)), ms(percentile(api, 0.99)), ms(percentile(lib, 0.99)))

	if err := waitIdle(poolSize); err != nil {
		return err
	}
	if err := idleCost(ctx, b, w, warm); err != nil {
		return err
	}

	// A burst of 8 callers within a pool sized for it: every run a hit.
	burst, err := executor.New(executor.WithConfig(cfg), executor.WithPool(map[string]int{*image: burstPool}))
	if err != nil {
		return err
	}
	defer burst.Close()
	t0 := time.Now()
	for deadline := t0.Add(5 * time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if idle := poolIdle(burst); idle >= burstPool {
			break
		} else if time.Now().After(deadline) {
			return fmt.Errorf("the burst pool filled %d of %d", idle, burstPool)
		}
	}
	fill := time.Since(t0)
	time.Sleep(time.Second) // the last starts' inits warm themselves
	lat, err := burstOf(ctx, burst, 8, burstPool/8)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n8 callers, %d runs from a pool of %d (filled in %s: %.1f starts/s, the refill rate this engine allows)\tp50 %s\tp90 %s\tp99 %s\n",
		len(lat), burstPool, ms(fill), float64(burstPool)/fill.Seconds(), ms(percentile(lat, 0.5)), ms(percentile(lat, 0.9)), ms(percentile(lat, 0.99)))

	// Sustained: 8 callers for -d, with the pool and without. Every run
	// consumes a sandbox, so past the pool's size the rate is the engine's.
	if err := waitIdle(poolSize); err != nil {
		return err
	}
	fmt.Fprintf(w, "8 callers for %s\truns/s\tp50\tp99\n", *duration)
	for _, c := range []struct {
		name string
		ex   *executor.Executor
	}{{fmt.Sprintf("pool of %d", poolSize), warm}, {"no pool (cold starts)", b.ex}} {
		rate, lat, err := underLoad(ctx, c.ex, 8, *duration)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s\t%.1f\t%s\t%s\n", c.name, rate, ms(percentile(lat, 0.5)), ms(percentile(lat, 0.99)))
	}
	for _, st := range warm.PoolStats() {
		if st.Key.Image == *image && st.Key.Workspace == "" {
			fmt.Fprintf(w, "pool: %d hits, %d misses; last refill took %s\n", st.Hits, st.Misses, ms(st.LastRefill))
		}
	}
	return w.Flush()
}

// burstPool is the pool of the burst: 8 runs for each of 8 callers.
const burstPool = 64

func poolIdle(e *executor.Executor) int {
	for _, st := range e.PoolStats() {
		if st.Key.Image == *image && st.Key.Workspace == "" {
			return st.Idle
		}
	}
	return 0
}

// burstOf runs `echo hi` n times from each of c callers at once and returns
// the sorted latencies.
func burstOf(ctx context.Context, ex *executor.Executor, c, n int) ([]time.Duration, error) {
	var (
		mu    sync.Mutex
		lat   []time.Duration
		first error
		wg    sync.WaitGroup
	)
	for range c {
		wg.Go(func() {
			for range n {
				t0 := time.Now()
				res, err := ex.Run(ctx, executor.Spec{Argv: []string{"echo", "hi"}})
				if err == nil {
					err = check(res.Stdout, res.Stderr, res.ExitCode)
				}
				mu.Lock()
				lat = append(lat, time.Since(t0))
				if err != nil && first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(lat)
	return lat, first
}

// idleCost prints what the warm sandboxes of e cost while they wait: the
// engine's figures of their CPU over a few seconds and their memory.
func idleCost(ctx context.Context, b *bench, w *tabwriter.Writer, e *executor.Executor) error {
	time.Sleep(5 * time.Second) // past the warm-up of the latest refills
	cs, err := b.cli.ContainerList(ctx, container.ListOptions{Filters: filters.NewArgs(filters.Arg("label", "io.airlock.pool"))})
	if err != nil {
		return err
	}
	var cpuNS, mem uint64
	var n int
	var lastErr error
	stats := func(id string) (container.StatsResponse, error) {
		var s container.StatsResponse
		st, err := b.cli.ContainerStatsOneShot(ctx, id)
		if err != nil {
			return s, err
		}
		defer st.Body.Close()
		return s, json.NewDecoder(st.Body).Decode(&s)
	}
	for _, c := range cs {
		first, err := stats(c.ID)
		if err != nil {
			lastErr = err
			continue
		}
		time.Sleep(2 * time.Second)
		second, err := stats(c.ID)
		if err != nil {
			lastErr = err
			continue
		}
		cpuNS += second.CPUStats.CPUUsage.TotalUsage - first.CPUStats.CPUUsage.TotalUsage
		mem += second.MemoryStats.Usage
		n++
		if n == 3 {
			break
		}
	}
	if n == 0 {
		return fmt.Errorf("no warm sandbox to measure among %d: %v", len(cs), lastErr)
	}
	fmt.Fprintf(w, "a warm sandbox while it waits (%d measured, 2 s each)\tCPU %.3f ms/s\tmemory %s\n",
		n, float64(cpuNS)/float64(n)/2/1e6, units.BytesSize(float64(mem)/float64(n)))
	return w.Flush()
}

// underLoad runs `echo hi` from c callers for d and returns the runs per
// second and the sorted latencies.
func underLoad(ctx context.Context, ex *executor.Executor, c int, d time.Duration) (float64, []time.Duration, error) {
	var (
		mu    sync.Mutex
		lat   []time.Duration
		first error
		wg    sync.WaitGroup
	)
	end := time.Now().Add(d)
	for range c {
		wg.Go(func() {
			for time.Now().Before(end) {
				t0 := time.Now()
				res, err := ex.Run(ctx, executor.Spec{Argv: []string{"echo", "hi"}})
				if err == nil {
					err = check(res.Stdout, res.Stderr, res.ExitCode)
				}
				mu.Lock()
				if err != nil && first == nil {
					first = err
				}
				lat = append(lat, time.Since(t0))
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	slices.Sort(lat)
	return float64(len(lat)) / d.Seconds(), lat, first
}
