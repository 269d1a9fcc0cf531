package place

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/airlock-sandbox/airlock/api"
	"github.com/airlock-sandbox/airlock/cluster"
)

// TestResultOf: a job's Result as any node answers it from the cluster's row.
// A caller never sees placed, only queued; an ended job's own Result wins when
// its node recorded one; an end the cluster decided (lost, expired) is made
// from the row, its duration from its start, or from its end when it never
// started.
func TestResultOf(t *testing.T) {
	queued := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	started, ended := queued.Add(time.Second), queued.Add(3*time.Second)
	spec, _ := json.Marshal(api.Spec{Command: "echo hi", Image: "airlock/minimal", Labels: map[string]string{"k": "v"}})
	code := func(c int) *int { return &c }
	recorded, _ := json.Marshal(api.Result{ID: "j", State: api.StateCompleted, ExitCode: 0, Node: "node-b", DurationMS: 42})

	for _, tc := range []struct {
		name string
		job  cluster.Job
		want api.Result
	}{
		{"queued: since it was queued",
			cluster.Job{ID: "j", Tenant: "alpha", Spec: spec, State: api.StateQueued, QueuedAt: queued},
			api.Result{ID: "j", State: api.StateQueued, Tenant: "alpha", Image: "airlock/minimal", Labels: map[string]string{"k": "v"}, StartedAt: queued}},
		{"placed: still queued to its caller",
			cluster.Job{ID: "j", Tenant: "alpha", Spec: spec, State: api.StatePlaced, Node: "node-b", QueuedAt: queued},
			api.Result{ID: "j", State: api.StateQueued, Tenant: "alpha", Node: "node-b", Image: "airlock/minimal", Labels: map[string]string{"k": "v"}, StartedAt: queued}},
		{"ended with its node's Result",
			cluster.Job{ID: "j", Spec: spec, State: api.StateCompleted, ExitCode: code(0), StartedAt: started, EndedAt: ended, Result: recorded},
			api.Result{ID: "j", State: api.StateCompleted, Node: "node-b", DurationMS: 42}},
		{"lost with its node",
			cluster.Job{ID: "j", Spec: spec, State: api.StateLost, Node: "node-c", ExitCode: code(api.ExitFailed), Reason: "node node-c died",
				QueuedAt: queued, StartedAt: started, EndedAt: ended},
			api.Result{ID: "j", State: api.StateLost, Node: "node-c", ExitCode: api.ExitFailed, Error: "node node-c died", Image: "airlock/minimal",
				Labels: map[string]string{"k": "v"}, StartedAt: started, FinishedAt: ended, DurationMS: 2000}},
		{"expired, never started",
			cluster.Job{ID: "j", Spec: spec, State: api.StateExpired, ExitCode: code(api.ExitFailed), Reason: "no node had room", QueuedAt: queued, EndedAt: ended},
			api.Result{ID: "j", State: api.StateExpired, ExitCode: api.ExitFailed, Error: "no node had room", Image: "airlock/minimal",
				Labels: map[string]string{"k": "v"}, StartedAt: ended, FinishedAt: ended}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := json.Marshal(resultOf(tc.job))
			want, _ := json.Marshal(tc.want)
			if string(got) != string(want) {
				t.Errorf("resultOf:\n got %s\nwant %s", got, want)
			}
		})
	}
}
