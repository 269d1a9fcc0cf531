package server

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/internal/enginefake"
)

// The Service's logic over the fake engine: admission, error mapping, audit
// and tenancy, with no Docker. The integration suite tests the same on the real
// engine.

func TestFakeEngineFailureIsAFailedResult(t *testing.T) {
	f := enginefake.New()
	f.CreateErrs = []error{errors.New("the engine refused: disk quota")}
	h := newFakeHarness(t, f, nil)
	status, data, _ := h.do("POST", "/v1/processes", tokA, map[string]any{"command": "true"})
	r := decode[executor.Result](t, data)
	if status != 200 || r.State != executor.StateFailed || r.ExitCode != 125 || !strings.Contains(r.Error, "disk quota") {
		t.Fatalf("a run the engine refused: %d %s", status, data)
	}
	finished := false
	for _, ev := range h.auditLines() {
		if ev.Event == "run.finish" && ev.ID == r.ID && ev.State == executor.StateFailed {
			finished = true
		}
	}
	if !finished {
		t.Fatal("the failed run's finish is not audited")
	}
}

func TestFakeEngineUnreachableIs503(t *testing.T) {
	f := enginefake.New()
	h := newFakeHarness(t, f, nil)
	f.CreateErrs = []error{errors.New("connection refused")}
	f.InfoErr = errors.New("connection refused") // the engine is gone: ping fails too
	status, data, _ := h.do("POST", "/v1/processes", tokA, map[string]any{"command": "true"})
	wantError(t, status, data, http.StatusServiceUnavailable, "engine_unavailable", "")
}

func TestFakeAdmissionIsPerTenant(t *testing.T) {
	f := enginefake.New()
	f.Hang = true // the run holds its place until its timeout
	h := newFakeHarness(t, f, func(c *Config) {
		c.Tenants = map[string]Tenant{"alpha": {MaxConcurrent: 1}}
	})
	done := make(chan int)
	go func() {
		status, _, _ := h.do("POST", "/v1/processes", tokA, map[string]any{"command": "sleep 9", "timeout": 1})
		done <- status
	}()
	<-f.Started
	t0 := time.Now()
	status, data, header := h.do("POST", "/v1/processes", tokA, map[string]any{"command": "true", "queue_timeout": 0.3})
	wantError(t, status, data, http.StatusTooManyRequests, "busy", "")
	if header.Get("Retry-After") == "" {
		t.Error("429 without Retry-After")
	}
	if d := time.Since(t0); d < 300*time.Millisecond || !strings.Contains(string(data), "queue timeout of 300ms") {
		t.Errorf("the refusal came after %s, saying %s; want after its queue timeout of 0.3s, naming it", d, data)
	}
	// Beta's limit is its own.
	status, data, _ = h.do("POST", "/v1/check", tokB, map[string]any{"command": "true"})
	if status != 200 {
		t.Fatalf("beta: %d %s", status, data)
	}
	select {
	case status := <-done:
		if status != 200 {
			t.Fatalf("the held run: %d", status)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the held run never ended at its timeout")
	}
}

// TestReserveTakesTurns: a tenant at its limit waits, first in first out,
// for a place within its queue timeout; one that gives up loses no place.
func TestReserveTakesTurns(t *testing.T) {
	s := &Service{}
	tn := &tenantState{limits: Tenant{MaxConcurrent: 1}}
	ctx := t.Context()
	held, err := s.reserve(ctx, tn, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.reserve(ctx, tn, 50*time.Millisecond, nil); !errors.Is(err, api.ErrBusy) || !strings.Contains(err.Error(), "queue timeout of 50ms") {
		t.Fatalf("past its queue timeout: %v, want api.ErrBusy naming the wait", err)
	}
	gone, cancel := context.WithCancel(ctx)
	order := make(chan int, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			c := ctx
			if i == 1 {
				c = gone // the second caller leaves before its turn
			}
			release, err := s.reserve(c, tn, 10*time.Second, nil)
			if err != nil {
				order <- -i
				return
			}
			order <- i
			time.Sleep(20 * time.Millisecond)
			release()
		})
		time.Sleep(50 * time.Millisecond) // each queues after the one before
	}
	cancel()
	if got := <-order; got != -1 {
		t.Fatalf("the caller that left: %d", got)
	}
	held()
	wg.Wait()
	if a, b := <-order, <-order; a != 0 || b != 2 {
		t.Fatalf("turns %d, %d; want 0 then 2", a, b)
	}
	if tn.active != 0 || len(tn.turns) != 0 {
		t.Fatalf("after every release: %d active, %d waiting", tn.active, len(tn.turns))
	}
}

// TestReserveQueueIsBounded: past max_queued requests waiting, the next is
// refused at once, naming the limit, and the waiting ones keep their places.
func TestReserveQueueIsBounded(t *testing.T) {
	s := &Service{}
	tn := &tenantState{limits: Tenant{MaxConcurrent: 1, MaxQueued: 2}}
	ctx := t.Context()
	held, err := s.reserve(ctx, tn, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 2)
	for range 2 {
		go func() {
			release, err := s.reserve(ctx, tn, 10*time.Second, nil)
			if err == nil {
				release()
			}
			got <- err
		}()
	}
	for {
		tn.mu.Lock()
		n := len(tn.turns)
		tn.mu.Unlock()
		if n == 2 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	t0 := time.Now()
	if _, err := s.reserve(ctx, tn, 10*time.Second, nil); !errors.Is(err, api.ErrBusy) || !strings.Contains(err.Error(), "max_queued") || time.Since(t0) > time.Second {
		t.Fatalf("a third waiter past max_queued 2: %v after %s; want api.ErrBusy at once, naming max_queued", err, time.Since(t0))
	}
	held()
	for range 2 {
		if err := <-got; err != nil {
			t.Fatalf("a waiter within the bound: %v", err)
		}
	}
}

// TestSweepForgetsExpiredJobs: the periodic sweep forgets the jobs that ended
// longer ago than keep_jobs.
func TestSweepForgetsExpiredJobs(t *testing.T) {
	f := enginefake.New()
	h := newFakeHarness(t, f, func(c *Config) { c.KeepJobs = 0.5 })
	_, data, _ := h.do("POST", "/v1/processes", tokA, map[string]any{"command": "echo old", "background": true})
	old := decode[executor.Process](t, data)
	h.do("POST", "/v1/processes/"+old.ID+"/wait", tokA, map[string]any{"timeout": 10})
	time.Sleep(time.Second)
	h.svc.sweepOnce()
	if status, _, _ := h.do("GET", "/v1/processes/"+old.ID, tokA, nil); status != http.StatusNotFound {
		t.Fatalf("a job ended a second ago, past keep_jobs of 0.5s: %d", status)
	}
}

// TestRunAnswerOutlivesItsQueueWait: a foreground run's answer may be written
// for as long as the run may wait for room, plus its timeout and the grace:
// a run that waits longer than its own timeout and the grace together still
// gets its Result. (The grace is the server's write timeout, a second here.)
func TestRunAnswerOutlivesItsQueueWait(t *testing.T) {
	f := enginefake.New()
	f.RunFor = testTimeouts.Write + 5*time.Second // the first run holds the tenant's one place that long
	h := newFakeHarness(t, f, func(c *Config) {
		c.Tenants = map[string]Tenant{"alpha": {MaxConcurrent: 1}}
	})
	first := make(chan int)
	go func() {
		status, _, _ := h.do("POST", "/v1/processes", tokA, map[string]any{"command": "sleep 90", "timeout": 120})
		first <- status
	}()
	<-f.Started
	status, data, _ := h.do("POST", "/v1/processes", tokA, map[string]any{"command": "true", "timeout": 1, "queue_timeout": 300})
	if r := decode[executor.Result](t, data); status != http.StatusOK || r.ID == "" {
		t.Fatalf("a run that waited %s for its turn: %d %s", testTimeouts.Write+5*time.Second, status, data)
	}
	if s := <-first; s != http.StatusOK {
		t.Fatalf("the first run: %d", s)
	}
}

// TestRunEventsSayQueued: a run streamed as events that has to wait for its
// tenant's place says so at once, with its id, and then runs as usual.
func TestRunEventsSayQueued(t *testing.T) {
	f := enginefake.New()
	f.RunFor = 2 * time.Second
	h := newFakeHarness(t, f, func(c *Config) {
		c.Tenants = map[string]Tenant{"alpha": {MaxConcurrent: 1}}
	})
	first := make(chan int)
	go func() {
		status, _, _ := h.do("POST", "/v1/processes", tokA, map[string]any{"command": "sleep 2"})
		first <- status
	}()
	<-f.Started
	events := readEvents(t, h.postEvents("", map[string]any{"command": "true", "queue_timeout": 30}).Body)
	var names []string
	for _, ev := range events {
		names = append(names, ev.name)
	}
	if len(events) < 3 || events[0].name != "queued" || events[1].name != "open" || events[len(events)-1].name != "result" {
		t.Fatalf("events %v; want queued, open, ..., result", names)
	}
	queued, open := decode[map[string]string](t, []byte(events[0].data)), decode[map[string]string](t, []byte(events[1].data))
	if len(queued["id"]) != 24 || queued["id"] != open["id"] {
		t.Fatalf("queued %s, open %s: want the run's id in both", events[0].data, events[1].data)
	}
	if s := <-first; s != http.StatusOK {
		t.Fatalf("the first run: %d", s)
	}
}

// TestRunEventsWaitForTheImageBuild: while the server builds a run's image in
// the background (at its start), a run streamed as events hears "building"
// with the image, stage and percentage, and runs once the image is built; the
// write deadline does not cut it short meanwhile.
func TestRunEventsWaitForTheImageBuild(t *testing.T) {
	f := enginefake.New()
	f.ImageMissing = true
	f.BuildGate = make(chan struct{})
	f.Stdout = "ok\n"
	h := newFakeHarness(t, f, nil)
	built := h.ex.BuildImagesInBackground(t.Context(), "minimal")
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, ok := h.ex.Building("airlock/minimal"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no build under way")
		}
	}
	time.AfterFunc(3*testTimeouts.Write, func() { close(f.BuildGate) })
	events := readEvents(t, h.postEvents("", map[string]any{"command": "true"}).Body)
	var names []string
	for _, ev := range events {
		names = append(names, ev.name)
	}
	if len(events) < 3 || events[0].name != "open" || events[1].name != "building" || events[len(events)-1].name != "result" {
		t.Fatalf("events %v; want open, building..., result", names)
	}
	b := decode[api.ImageBuild](t, []byte(events[1].data))
	if b.Image != "airlock/minimal" || b.Stage == "" || b.Percent < 0 || b.Percent > 100 {
		t.Errorf("building %s", events[1].data)
	}
	if r := decode[api.Result](t, []byte(events[len(events)-1].data)); r.State != api.StateCompleted {
		t.Errorf("result %s", events[len(events)-1].data)
	}
	if err := <-built; err != nil {
		t.Fatal(err)
	}
}
