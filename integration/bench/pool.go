package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

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
	if cfg.InitPath == "" {
		return fmt.Errorf("the pool needs airlock's init: build it (make build) or set AIRLOCK_INIT")
	}
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
			if err := waitIdle(1); err != nil {
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
	fmt.Fprintf(w, "\nwarm pool: `echo hi` from a warm sandbox, n=%d per method, one of each per round (the pool refilled between)\n", *n)
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
			if err := waitIdle(1); err != nil {
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

	// Under load: 8 callers for -d, with the pool and without.
	if err := waitIdle(poolSize); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n8 callers for %s\truns/s\tp50\tp99\n", *duration)
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
