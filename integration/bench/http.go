package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/server"
)

// httpServer is the HTTP API over ex, on a loopback port, as `airlock serve` wires
// it (with or without a token).
type httpServer struct {
	url, token string
	client     *http.Client
	close      func()
}

func newHTTPServer(ex *executor.Executor, token string) (*httpServer, error) {
	dir, err := os.MkdirTemp("", "airlock-bench-audit-")
	if err != nil {
		return nil, err
	}
	cfg := server.DefaultConfig()
	cfg.DataDir = ex.DataDir()
	cfg.AuditLog = filepath.Join(dir, "audit.log")
	cfg.TenantDefaults.MaxConcurrent = 1000
	if token != "" {
		cfg.Tokens = []server.Token{{Token: token, Tenant: "bench"}}
	}
	svc, err := server.NewService(ex, cfg, slog.New(slog.DiscardHandler), "bench")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	streams, cancel := context.WithCancel(context.Background())
	ts := httptest.NewServer(server.Handler(svc, streams))
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	return &httpServer{url: ts.URL, token: token, client: &http.Client{Transport: tr}, close: func() {
		cancel()
		ts.Close()
		tr.CloseIdleConnections()
		svc.Close(context.Background(), false)
		os.RemoveAll(dir)
	}}, nil
}

// do sends a request and decodes a 2xx answer into out.
func (h *httpServer) do(ctx context.Context, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.url+path, r)
	if err != nil {
		return err
	}
	if r != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	return json.Unmarshal(data, out)
}

// httpOverhead times what the HTTP API adds to a library call, both ways in
// alternation: `echo hi` (a container each), and a command the policy refuses
// (no container: the API's own cost, measured without the engine's noise).
func (b *bench) httpOverhead(ctx context.Context, w *tabwriter.Writer) error {
	h, err := newHTTPServer(b.ex, "bench-token-"+randomHex(8))
	if err != nil {
		return err
	}
	defer h.close()
	echo := executor.Spec{Argv: []string{"echo", "hi"}}
	refused := executor.Spec{Command: "rm -rf /"}
	viaHTTP := func(spec executor.Spec, want executor.State) func() error {
		return func() error {
			var r executor.Result
			if err := h.do(ctx, "POST", "/v1/processes", spec, &r); err != nil {
				return err
			}
			b.mu.Lock()
			b.runIDs[r.ContainerID] = true
			b.mu.Unlock()
			if r.State != want {
				return fmt.Errorf("http %v: %s %s", spec, r.State, r.Error)
			}
			return nil
		}
	}
	viaLibrary := func(spec executor.Spec, want executor.State) func() error {
		return func() error {
			r, err := b.ex.Run(ctx, spec)
			if err == nil && r.State != want {
				err = fmt.Errorf("library %v: %s %s", spec, r.State, r.Error)
			}
			return err
		}
	}
	fmt.Fprintf(w, "\nHTTP API over the library (loopback, bearer token, audit log on): one of each per round\n")
	fmt.Fprintln(w, "request\tlibrary p50\tp99\tHTTP p50\tp99\tadded p50\tadded p99")
	for _, c := range []struct {
		name   string
		spec   executor.Spec
		want   executor.State
		rounds int
	}{
		{"`echo hi` (container)", echo, executor.StateCompleted, *n},
		{"refused command (no container)", refused, executor.StateBlocked, 2000},
	} {
		lib, api, err := alternate(c.rounds, viaLibrary(c.spec, c.want), viaHTTP(c.spec, c.want))
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.name,
			us(percentile(lib, 0.5)), us(percentile(lib, 0.99)), us(percentile(api, 0.5)), us(percentile(api, 0.99)),
			us(percentile(api, 0.5)-percentile(lib, 0.5)), us(percentile(api, 0.99)-percentile(lib, 0.99)))
	}
	return w.Flush()
}

// alternate times a and b in turns, which one goes first alternating, after 3
// warm-up turns, and returns both latencies sorted.
func alternate(rounds int, a, b func() error) (ta, tb []time.Duration, err error) {
	fns := []func() error{a, b}
	times := [][]time.Duration{nil, nil}
	for i := range rounds + 3 {
		for k := range 2 {
			j := (i + k) % 2
			t := time.Now()
			if err := fns[j](); err != nil {
				return nil, nil, err
			}
			if i >= 3 {
				times[j] = append(times[j], time.Since(t))
			}
		}
	}
	slices.Sort(times[0])
	slices.Sort(times[1])
	return times[0], times[1], nil
}

// httpGets times GET /v1/processes/{id} against Get(id) on the jobs of ex, and
// measures the route's throughput from c callers over keep-alive connections.
func httpGets(ctx context.Context, ex *executor.Executor, ids []string, c int, d time.Duration) (lat []time.Duration, rate float64, err error) {
	h, err := newHTTPServer(ex, "")
	if err != nil {
		return nil, 0, err
	}
	defer h.close()
	get := func() error {
		var r executor.Result
		return h.do(ctx, "GET", "/v1/processes/"+ids[rand.IntN(len(ids))], nil, &r)
	}
	if lat, err = timeCalls(500, get); err != nil {
		return nil, 0, err
	}
	rate, err = throughputOf(c, d, get)
	return lat, rate, err
}
