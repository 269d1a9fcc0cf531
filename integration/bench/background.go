package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"

	"github.com/airlock-sandbox/airlock/executor"
)

var jobs = flag.Int("jobs", 200, "background jobs tracked while List and Get are timed (0 skips)")

// background starts *jobs background jobs and times what an agent platform polls
// while they run: Get of one job and List of the first page, each against the
// engine's own call for the same thing (ContainerInspect of one of the jobs'
// containers, ContainerList filtered to them), in the same run.
func (b *bench) background(ctx context.Context, w *tabwriter.Writer) (err error) {
	if *jobs <= 0 {
		return nil
	}
	ex, closeEx, err := newJobExecutor()
	if err != nil {
		return err
	}
	defer closeEx()

	ids := make([]string, *jobs)
	containers := make([]string, *jobs)
	var startLat []time.Duration
	var mu sync.Mutex
	defer func() { // every job ends and its container goes, whatever happened
		var wg sync.WaitGroup
		for _, id := range ids {
			if id == "" {
				continue
			}
			wg.Go(func() {
				ex.Kill(context.WithoutCancel(ctx), id, "SIGKILL", 0)
				wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
				defer cancel()
				if _, werr := ex.Wait(wctx, id); werr != nil {
					mu.Lock()
					err = fmt.Errorf("job %s did not end: %w", id, werr)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}()

	t0 := time.Now()
	work := make(chan int)
	var wg sync.WaitGroup
	var startErr error
	for range 8 {
		wg.Go(func() {
			for i := range work {
				s := time.Now()
				p, err := ex.Start(ctx, executor.Spec{Command: "sleep 3600", Image: *image, Labels: map[string]string{"bench": b.session}})
				mu.Lock()
				if err != nil && startErr == nil {
					startErr = err
				}
				ids[i] = p.ID
				startLat = append(startLat, time.Since(s))
				mu.Unlock()
			}
		})
	}
	for i := range *jobs {
		work <- i
	}
	close(work)
	wg.Wait()
	if startErr != nil {
		return startErr
	}
	startAll := time.Since(t0)
	for i, id := range ids {
		r, err := ex.Get(ctx, id)
		if err != nil {
			return err
		}
		containers[i] = r.ContainerID
	}
	time.Sleep(2 * time.Second) // let every watcher settle into its steady state

	const calls = 500
	pick := func() int { return rand.IntN(len(ids)) }
	get, err := timeCalls(calls, func() error { _, err := ex.Get(ctx, ids[pick()]); return err })
	if err != nil {
		return err
	}
	inspect, err := timeCalls(calls, func() error { _, err := b.cli.ContainerInspect(ctx, containers[pick()]); return err })
	if err != nil {
		return err
	}
	list, err := timeCalls(calls/5, func() error { _, err := ex.List(ctx, executor.ListOptions{}); return err })
	if err != nil {
		return err
	}
	f := filters.NewArgs(filters.Arg("label", executor.LabelStore))
	engineList, err := timeCalls(calls/5, func() error {
		_, err := b.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
		return err
	})
	if err != nil {
		return err
	}
	rate, err := throughputOf(8, 3*time.Second, func() error { _, err := ex.Get(ctx, ids[pick()]); return err })
	if err != nil {
		return err
	}

	httpGet, httpRate, err := httpGets(ctx, ex, ids, 8, 3*time.Second)
	if err != nil {
		return err
	}

	slices.Sort(startLat)
	fmt.Fprintf(w, "\nbackground: %d jobs (`sleep 3600`) started at concurrency 8 in %.1f s; Start p50 %s, p99 %s\n",
		*jobs, startAll.Seconds(), ms(percentile(startLat, 0.5)), ms(percentile(startLat, 0.99)))
	fmt.Fprintf(w, "while all %d run, each watched by airlock:\n", *jobs)
	fmt.Fprintln(w, "call\tp50\tp99\tbaseline (engine)\tp50\tp99\tratio p50\tratio p99")
	row := func(name string, a []time.Duration, base string, c []time.Duration) {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%.2fx\t%.2fx\n", name, us(percentile(a, 0.5)), us(percentile(a, 0.99)),
			base, us(percentile(c, 0.5)), us(percentile(c, 0.99)), ratio(percentile(a, 0.5), percentile(c, 0.5)), ratio(percentile(a, 0.99), percentile(c, 0.99)))
	}
	row("Get(id)", get, "ContainerInspect", inspect)
	row("List(first 50)", list, "ContainerList", engineList)
	row("GET /v1/processes/{id}", httpGet, "Get(id)", get)
	fmt.Fprintf(w, "throughput, 8 callers\tGet(id) %.0f/s\tGET /v1/processes/{id} %.0f/s (%.2fx)\n", rate, httpRate, httpRate/rate)
	return w.Flush()
}

// floods has a background job write 1 GB as fast as it can, as lines and as one
// line, and prints how many bytes airlock counted against how many were written:
// past the per-job cap the count comes from following the engine's log, which
// this engine can let fall behind a flood.
func floods(ctx context.Context, w *tabwriter.Writer) error {
	ex, closeEx, err := newJobExecutor()
	if err != nil {
		return err
	}
	defer closeEx()
	const written = 1_000_000_000
	fmt.Fprintf(w, "\nbackground flood of %d bytes, alone (count past the 64 MiB cap)\n", written)
	fmt.Fprintln(w, "shape\tcounted\tcounted / written\tseconds\tMB/s")
	for _, f := range []struct{ name, cmd string }{
		{"1000-byte lines", `x=$(head -c 989 /dev/zero | tr '\0' x); awk -v s="$x" 'BEGIN{for(i=0;i<1000000;i++) printf "%09d %s\n", i, s}'`},
		{"one line, no newline", `x=$(head -c 991 /dev/zero | tr '\0' x); awk -v s="$x" 'BEGIN{for(i=0;i<1000000;i++) printf "%09d%s", i, s}'`},
	} {
		t0 := time.Now()
		p, err := ex.Start(ctx, executor.Spec{Command: f.cmd, Image: *image})
		if err != nil {
			return err
		}
		r, err := ex.Wait(ctx, p.ID)
		if err != nil {
			return err
		}
		if r.State != executor.StateCompleted {
			return fmt.Errorf("flood %q: %s %d %s", f.name, r.State, r.ExitCode, r.Error)
		}
		secs := time.Since(t0).Seconds()
		fmt.Fprintf(w, "%s\t%d\t%.4f\t%.1f\t%.0f\n", f.name, r.StdoutBytes, float64(r.StdoutBytes)/written, secs, written/secs/1e6)
		ex.Remove(ctx, p.ID)
	}
	return w.Flush()
}

// newJobExecutor opens an executor on a data dir of its own, which close removes.
func newJobExecutor() (ex *executor.Executor, close func(), err error) {
	dir, err := os.MkdirTemp("", "airlock-bench-data-")
	if err != nil {
		return nil, nil, err
	}
	cfg := executor.DefaultConfig()
	cfg.DataDir = dir
	if ex, err = executor.New(executor.WithConfig(cfg)); err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return ex, func() { ex.Close(); os.RemoveAll(dir) }, nil
}

// timeCalls runs fn n times in a row and returns the sorted latencies.
func timeCalls(n int, fn func() error) ([]time.Duration, error) {
	lat := make([]time.Duration, 0, n)
	for range n {
		t := time.Now()
		if err := fn(); err != nil {
			return nil, err
		}
		lat = append(lat, time.Since(t))
	}
	slices.Sort(lat)
	return lat, nil
}

// throughputOf calls fn from c goroutines for d and returns the calls per second.
func throughputOf(c int, d time.Duration, fn func() error) (float64, error) {
	var (
		mu    sync.Mutex
		total int
		first error
		wg    sync.WaitGroup
	)
	end := time.Now().Add(d)
	for range c {
		wg.Go(func() {
			n := 0
			for time.Now().Before(end) {
				if err := fn(); err != nil {
					mu.Lock()
					first = err
					mu.Unlock()
					return
				}
				n++
			}
			mu.Lock()
			total += n
			mu.Unlock()
		})
	}
	wg.Wait()
	return float64(total) / d.Seconds(), first
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }
