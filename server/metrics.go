package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/airlock-sandbox/airlock/cluster/member"
	"github.com/airlock-sandbox/airlock/executor"
)

// metrics live in a registry of the server's own, so that two servers in one
// process (tests) do not collide and nothing global leaks in. No metric carries a
// per-run label: ids, commands and tenants stay in the audit log.
type metrics struct {
	reg          *prometheus.Registry
	runs         *prometheus.CounterVec   // mode, state
	duration     *prometheus.HistogramVec // mode
	running      *prometheus.GaugeVec     // mode
	refusals     *prometheus.CounterVec   // rule
	engineErrors prometheus.Counter
	authFailures prometheus.Counter
	requests     *prometheus.CounterVec // route, code
	egressConns  *prometheus.CounterVec // tenant, decision
	egressBytes  *prometheus.CounterVec // tenant, direction
	// heartbeatFailures is registered only on a node of a cluster.
	heartbeatFailures prometheus.Counter
}

// nodeCollector reads the cluster's nodes from its database at each scrape,
// labelled by node id (a bounded set: no per-run label): any node reports
// them all, by the database's clock.
type nodeCollector struct {
	n                                                    *member.Node
	slots, memory, running, inUse, leaseAge, live, drain *prometheus.Desc
}

func newNodeCollector(n *member.Node) *nodeCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{"node"}, nil)
	}
	return &nodeCollector{n: n,
		slots:    d("airlock_node_slots", "Sandboxes the node runs at once."),
		memory:   d("airlock_node_memory_bytes", "The node's sandbox memory budget."),
		running:  d("airlock_node_running", "Cluster jobs placed or running on the node."),
		inUse:    d("airlock_node_memory_in_use_bytes", "Memory of the cluster jobs placed or running on the node."),
		leaseAge: d("airlock_node_lease_age_seconds", "Time since the node's last heartbeat, by the database's clock."),
		live:     d("airlock_node_live", "1 while the node's lease holds, 0 once it has lapsed."),
		drain:    d("airlock_node_draining", "1 while the node takes no new placements."),
	}
}

func (c *nodeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.slots, c.memory, c.running, c.inUse, c.leaseAge, c.live, c.drain} {
		ch <- d
	}
}

func (c *nodeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list, err := c.n.Cluster().Nodes(ctx)
	if err != nil {
		return // the database is away: /readyz and the heartbeat failures say so
	}
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	for _, s := range list {
		ch <- prometheus.MustNewConstMetric(c.slots, prometheus.GaugeValue, float64(s.Slots), s.ID)
		ch <- prometheus.MustNewConstMetric(c.memory, prometheus.GaugeValue, float64(s.Memory), s.ID)
		ch <- prometheus.MustNewConstMetric(c.running, prometheus.GaugeValue, float64(s.Running), s.ID)
		ch <- prometheus.MustNewConstMetric(c.inUse, prometheus.GaugeValue, float64(s.MemoryInUse), s.ID)
		ch <- prometheus.MustNewConstMetric(c.leaseAge, prometheus.GaugeValue, s.LeaseAge.Seconds(), s.ID)
		ch <- prometheus.MustNewConstMetric(c.live, prometheus.GaugeValue, b(s.Live), s.ID)
		ch <- prometheus.MustNewConstMetric(c.drain, prometheus.GaugeValue, b(s.Draining), s.ID)
	}
}

// workspaceCollector reads the workspaces' count and sizes from the engine at
// each scrape: they outlive any one server, and another airlock process on the
// same engine may create or remove them.
type workspaceCollector struct {
	ex          *executor.Executor
	count, size *prometheus.Desc
}

func newWorkspaceCollector(ex *executor.Executor) *workspaceCollector {
	return &workspaceCollector{ex: ex,
		count: prometheus.NewDesc("airlock_workspaces", "Workspaces on the engine, of every tenant.", nil, nil),
		size:  prometheus.NewDesc("airlock_workspace_size_bytes", "Sum of the workspaces' sizes: the memory their files may take.", nil, nil),
	}
}

func (c *workspaceCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.count; ch <- c.size }

func (c *workspaceCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, size, err := c.ex.WorkspaceTotals(ctx)
	if err != nil {
		return // the engine is away: airlock_engine_errors_total and /readyz say so
	}
	ch <- prometheus.MustNewConstMetric(c.count, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(c.size, prometheus.GaugeValue, float64(size))
}

// poolCollector reads the warm pool's figures at each scrape, by image (a
// workspace's warm sandbox counts under its image: no ids in labels).
type poolCollector struct {
	ex                               *executor.Executor
	hits, misses, idle, size, refill *prometheus.Desc
}

func newPoolCollector(ex *executor.Executor) *poolCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{"image"}, nil)
	}
	return &poolCollector{ex: ex,
		hits:   d("airlock_pool_hits_total", "Runs that found a warm sandbox."),
		misses: d("airlock_pool_misses_total", "Runs of a pooled image that found none and started cold."),
		idle:   d("airlock_pool_idle", "Warm sandboxes waiting for a run."),
		size:   d("airlock_pool_size", "Warm sandboxes the pool keeps."),
		refill: d("airlock_pool_refill_seconds", "How long the last warm sandbox took to start."),
	}
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.hits, c.misses, c.idle, c.size, c.refill} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	type sums struct {
		hits, misses int64
		idle, size   int
		refill       float64
	}
	by := map[string]*sums{}
	for _, st := range c.ex.PoolStats() {
		s := by[st.Key.Image]
		if s == nil {
			s = &sums{}
			by[st.Key.Image] = s
		}
		s.hits, s.misses, s.idle, s.size = s.hits+st.Hits, s.misses+st.Misses, s.idle+st.Idle, s.size+st.Size
		s.refill = max(s.refill, st.LastRefill.Seconds())
	}
	for img, s := range by {
		ch <- prometheus.MustNewConstMetric(c.hits, prometheus.CounterValue, float64(s.hits), img)
		ch <- prometheus.MustNewConstMetric(c.misses, prometheus.CounterValue, float64(s.misses), img)
		ch <- prometheus.MustNewConstMetric(c.idle, prometheus.GaugeValue, float64(s.idle), img)
		ch <- prometheus.MustNewConstMetric(c.size, prometheus.GaugeValue, float64(s.size), img)
		ch <- prometheus.MustNewConstMetric(c.refill, prometheus.GaugeValue, s.refill, img)
	}
}

func newMetrics() *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airlock_runs_total", Help: "Runs that ended, by mode (foreground, background) and final state.",
		}, []string{"mode", "state"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "airlock_run_duration_seconds", Help: "Wall clock of ended runs, by mode.",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600},
		}, []string{"mode"}),
		running: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "airlock_running", Help: "Foreground runs in flight and background jobs running.",
		}, []string{"mode"}),
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airlock_policy_refusals_total", Help: "Commands the policy refused, by rule.",
		}, []string{"rule"}),
		engineErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "airlock_engine_errors_total", Help: "Requests that failed because the container engine did.",
		}),
		authFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "airlock_auth_failures_total", Help: "Requests refused for a missing or unknown token.",
		}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airlock_http_requests_total", Help: "HTTP requests, by route pattern and status code.",
		}, []string{"route", "code"}),
		egressConns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airlock_egress_connections_total", Help: "Connections through the egress proxy of ended runs, by tenant and decision (allowed: made; denied: refused).",
		}, []string{"tenant", "decision"}),
		egressBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "airlock_egress_bytes_total", Help: "Bytes through the egress proxy of ended runs, by tenant and direction (in: from the host to the run).",
		}, []string{"tenant", "direction"}),
		heartbeatFailures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "airlock_node_heartbeat_failures_total", Help: "This node's heartbeats that failed (the database unreachable, or slow).",
		}),
	}
	m.reg.MustRegister(m.runs, m.duration, m.running, m.refusals, m.engineErrors, m.authFailures, m.requests, m.egressConns, m.egressBytes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, mode := range []string{"foreground", "background"} {
		m.running.WithLabelValues(mode) // present at 0 from the start
	}
	return m
}

// ended counts a run that has ended.
func (m *metrics) ended(mode string, r executor.Result) {
	m.runs.WithLabelValues(mode, string(r.State)).Inc()
	if r.State == executor.StateBlocked {
		m.refusals.WithLabelValues(r.BlockRule).Inc()
		return
	}
	m.duration.WithLabelValues(mode).Observe(float64(r.DurationMS) / 1000)
	for _, en := range r.Egress {
		m.egressConns.WithLabelValues(r.Tenant, "allowed").Add(float64(en.Connections))
		m.egressConns.WithLabelValues(r.Tenant, "denied").Add(float64(en.Refused))
		m.egressBytes.WithLabelValues(r.Tenant, "in").Add(float64(en.BytesIn))
		m.egressBytes.WithLabelValues(r.Tenant, "out").Add(float64(en.BytesOut))
	}
}
