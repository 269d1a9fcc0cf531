package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/airlock-sandbox/airlock/api"
)

// DefaultQueueTimeout is how long a job waits in the queue for room when
// NewJob names no timeout.
const DefaultQueueTimeout = api.DefaultQueueTimeout

// Fence is what every write of a node about a job carries: the node the job was
// placed on and the attempt it was placed as. A write whose fence no longer
// matches the job changes nothing and fails with ErrFenced.
type Fence struct {
	Node    string
	Attempt int
}

// NewJob is a job to queue.
type NewJob struct {
	// ID is the job's id; empty makes one (24 hex digits, as the executor's).
	ID     string
	Tenant string
	// Spec is the admitted request, as JSON; this package does not read it.
	Spec json.RawMessage
	// Workspace, when set, is the workspace the job runs on: it is placed only
	// on the node that holds it (BindWorkspace).
	Workspace string
	// Memory is the sandbox memory the job needs, in bytes, counted against a
	// node's budget.
	Memory int64
	// QueueTimeout bounds the wait for room; 0 is DefaultQueueTimeout. Past it
	// the job ends as api.StateExpired.
	QueueTimeout time.Duration
	// Retry is how many times the job may be queued again after its node died
	// while running it. 0, the default, makes such a job lost: only idempotent
	// work should ask for retries.
	Retry int
	// CallerNode, when set, makes the job a foreground run: only that node,
	// which holds its caller's connection, may claim it. List leaves runs out.
	CallerNode string
}

// Job is a job's row.
type Job struct {
	ID        string
	Tenant    string
	Spec      json.RawMessage
	State     api.State
	Node      string // the node it is placed on or ran on; empty while queued
	Attempt   int    // how many times it was placed
	Workspace string
	Memory    int64
	Retry     int // retries left
	// CallerNode is set for a foreground run: the node that holds its caller.
	CallerNode string

	QueueTimeout  time.Duration
	QueuedAt      time.Time
	QueueDeadline time.Time
	PlacedAt      time.Time // zero until placed
	StartedAt     time.Time // zero until started
	LaunchedAt    time.Time // zero until its sandbox runs (Launched)
	EndedAt       time.Time // zero until ended

	// EndedBy is the node that recorded the end; empty when the cluster did
	// (lost, expired).
	EndedBy  string
	ExitCode *int // set once ended
	// Reason says why a job ended as it did (lost, expired, failed), or why it
	// is queued again.
	Reason string
	// Result is what the node recorded at the end, as JSON (an api.Result).
	Result json.RawMessage
	// LastSeen is the last heartbeat of the node a job was lost with.
	LastSeen time.Time
}

// Fence is the job's current fence.
func (j Job) Fence() Fence { return Fence{Node: j.Node, Attempt: j.Attempt} }

// Ended tells whether the job has ended.
func (j Job) Ended() bool { return !j.EndedAt.IsZero() }

// End is how a job ended, as its node records it.
type End struct {
	// State is completed, failed, killed, timed_out or blocked.
	State    api.State
	ExitCode int
	Reason   string
	// Result is the job's api.Result as JSON; nil stores none.
	Result json.RawMessage
	// Stdout and Stderr are the output kept, with the true totals.
	Stdout, Stderr Stream
}

// Stream is one output stream of an ended job: the bytes kept (capped) and how
// many the process wrote in all.
type Stream struct {
	Data  []byte
	Total int64
}

// Held is a job a node holds a container for, at the attempt the container was
// made for (both are on its labels).
type Held struct {
	Job     string
	Attempt int
}

// endStates are the states a node may end a job in.
var endStates = map[api.State]bool{
	api.StateCompleted: true, api.StateFailed: true, api.StateKilled: true,
	api.StateTimedOut: true, api.StateBlocked: true,
}

// jobColumns is what scanJob reads, in order.
var jobColumns = `id, tenant, spec, state, coalesce(node, ''), attempt, coalesce(workspace, ''),
	memory, retry, ` + micros("queue_timeout") + `, queued_at, queue_deadline, placed_at,
	started_at, ended_at, coalesce(ended_by, ''), exit_code, reason, result, last_seen, launched_at,
	coalesce(caller_node, '')`

func scanJob(row pgx.Row) (Job, error) {
	var j Job
	var state string
	var timeout int64
	var spec, result []byte
	var placed, started, ended, seen, launched *time.Time
	err := row.Scan(&j.ID, &j.Tenant, &spec, &state, &j.Node, &j.Attempt, &j.Workspace,
		&j.Memory, &j.Retry, &timeout, &j.QueuedAt, &j.QueueDeadline, &placed,
		&started, &ended, &j.EndedBy, &j.ExitCode, &j.Reason, &result, &seen, &launched, &j.CallerNode)
	if err != nil {
		return Job{}, err
	}
	j.State, j.QueueTimeout = api.State(state), time.Duration(timeout)*time.Microsecond
	j.Spec, j.Result = spec, result
	for _, t := range []struct {
		dst *time.Time
		src *time.Time
	}{{&j.PlacedAt, placed}, {&j.StartedAt, started}, {&j.EndedAt, ended}, {&j.LastSeen, seen}, {&j.LaunchedAt, launched}} {
		if t.src != nil {
			*t.dst = *t.src
		}
	}
	return j, nil
}

// Enqueue puts a job in the durable queue, where a node's Claim finds it. A
// tenant with a queue limit (SetTenant) that is reached gets ErrQueueFull; a
// workspace that is not the tenant's, or not bound to a node, is ErrNotFound;
// a run (CallerNode) whose node is drained is api.ErrNodeDraining.
func (c *Cluster) Enqueue(ctx context.Context, nj NewJob) (Job, error) {
	if nj.ID == "" {
		b := make([]byte, 12)
		rand.Read(b)
		nj.ID = hex.EncodeToString(b)
	}
	if nj.QueueTimeout == 0 {
		nj.QueueTimeout = DefaultQueueTimeout
	}
	switch {
	case !json.Valid(nj.Spec):
		return Job{}, fmt.Errorf("enqueue job %s: %w: spec is not JSON", nj.ID, ErrInvalid)
	case nj.Memory < 0:
		return Job{}, fmt.Errorf("enqueue job %s: %w: negative memory", nj.ID, ErrInvalid)
	case nj.Retry < 0:
		return Job{}, fmt.Errorf("enqueue job %s: %w: negative retry", nj.ID, ErrInvalid)
	case nj.QueueTimeout < time.Millisecond:
		return Job{}, fmt.Errorf("enqueue job %s: %w: queue timeout %s is too short", nj.ID, ErrInvalid, nj.QueueTimeout)
	}
	var job Job
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		// The tenant's row, when it has one, is the lock under which its queued
		// jobs are counted: two nodes cannot both take the last place.
		var maxQueued int
		err := tx.QueryRow(ctx, `select max_queued from airlock.tenants where name = $1 for update`, nj.Tenant).Scan(&maxQueued)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if maxQueued > 0 {
			var n int
			err := tx.QueryRow(ctx, `select count(*) from airlock.jobs where tenant = $1 and state = 'queued'`, nj.Tenant).Scan(&n)
			if err != nil {
				return err
			}
			if n >= maxQueued {
				return fmt.Errorf("%w: tenant %q has %d jobs waiting, its limit", ErrQueueFull, nj.Tenant, n)
			}
		}
		if nj.Workspace != "" {
			var ok bool
			err := tx.QueryRow(ctx, `select exists (select 1 from airlock.workspaces where id = $1 and tenant = $2)`,
				nj.Workspace, nj.Tenant).Scan(&ok)
			if err != nil {
				return err
			}
			if !ok {
				return fmt.Errorf("%w: workspace %s", ErrNotFound, nj.Workspace)
			}
		}
		var ws, caller *string
		if nj.Workspace != "" {
			ws = &nj.Workspace
		}
		if nj.CallerNode != "" {
			caller = &nj.CallerNode
		}
		// A run is claimed by its caller's node only: one that is drained
		// would keep it queued for nothing, so it is not inserted.
		job, err = scanJob(tx.QueryRow(ctx, `
			insert into airlock.jobs (id, tenant, spec, state, workspace, memory, retry, queue_timeout, queue_deadline, caller_node)
			select $1, $2, $3, 'queued', $4, $5, $6, $7::bigint * interval '1 microsecond', now() + $7::bigint * interval '1 microsecond', $8
			where not exists (select 1 from airlock.nodes where id = $8 and draining)
			returning `+jobColumns,
			nj.ID, nj.Tenant, string(nj.Spec), ws, nj.Memory, nj.Retry, nj.QueueTimeout.Microseconds(), caller))
		var pgErr *pgconn.PgError
		switch {
		case errors.As(err, &pgErr) && pgErr.Code == "23505":
			return ErrExists
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("%w: node %s is drained and starts no new runs; send the run to another node, or undrain this one",
				api.ErrNodeDraining, nj.CallerNode)
		}
		return err
	})
	if err != nil {
		return Job{}, c.wrap("enqueue job "+nj.ID, err)
	}
	return job, nil
}

// Get reads a job.
func (c *Cluster) Get(ctx context.Context, id string) (Job, error) {
	j, err := scanJob(c.pool.QueryRow(ctx, `select `+jobColumns+` from airlock.jobs where id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return Job{}, fmt.Errorf("get job %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Job{}, c.wrap("get job "+id, err)
	}
	return j, nil
}

// Start records that the node is starting the job's sandbox. A node calls it
// before its container exists: a job whose node dies after Start is lost, never
// run a second time behind the cluster's back. Calling it again is harmless.
func (c *Cluster) Start(ctx context.Context, id string, f Fence) error {
	tag, err := c.pool.Exec(ctx, `
		update airlock.jobs set state = 'running', started_at = coalesce(started_at, now())
		where id = $1 and node = $2 and attempt = $3 and state in ('placed', 'running')`,
		id, f.Node, f.Attempt)
	if err != nil {
		return c.wrap("start job "+id, err)
	}
	if tag.RowsAffected() == 0 {
		return c.fenced(ctx, "start job", id, f)
	}
	return nil
}

// Launched records that the job's sandbox runs: the node that queued the job
// answers its caller from then on. It is fenced as Start is.
func (c *Cluster) Launched(ctx context.Context, id string, f Fence) error {
	tag, err := c.pool.Exec(ctx, `
		update airlock.jobs set launched_at = coalesce(launched_at, now())
		where id = $1 and node = $2 and attempt = $3 and state = 'running'`,
		id, f.Node, f.Attempt)
	if err != nil {
		return c.wrap("record the launch of job "+id, err)
	}
	if tag.RowsAffected() == 0 {
		return c.fenced(ctx, "record the launch of job", id, f)
	}
	return nil
}

// Finish records the end of the job and its output, in one transaction, fenced:
// once the cluster has declared the job lost or given it to another attempt,
// the node's word about it is refused (ErrFenced) and nothing is stored. A
// Finish repeated with the same fence (its first answer was lost with the
// connection) succeeds without writing again.
func (c *Cluster) Finish(ctx context.Context, id string, f Fence, e End) error {
	if !endStates[e.State] {
		return fmt.Errorf("finish job %s: %w: %q is not an end a node records", id, ErrInvalid, e.State)
	}
	if e.Result != nil && !json.Valid(e.Result) {
		return fmt.Errorf("finish job %s: %w: result is not JSON", id, ErrInvalid)
	}
	for _, s := range []Stream{e.Stdout, e.Stderr} {
		if s.Total < int64(len(s.Data)) {
			return fmt.Errorf("finish job %s: %w: an output total is less than the bytes kept", id, ErrInvalid)
		}
	}
	var result *string
	if e.Result != nil {
		r := string(e.Result)
		result = &r
	}
	var done bool
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `
			update airlock.jobs set state = $4, exit_code = $5, reason = $6, result = $7,
				ended_at = now(), ended_by = $2, spec = spec - 'env' - 'stdin' - 'sealed'
			where id = $1 and node = $2 and attempt = $3 and state in ('placed', 'running')`,
			id, f.Node, f.Attempt, string(e.State), e.ExitCode, e.Reason, result)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return nil
		}
		done = true
		for _, s := range []struct {
			name string
			Stream
		}{{"stdout", e.Stdout}, {"stderr", e.Stderr}} {
			data := s.Data
			if data == nil {
				data = []byte{}
			}
			_, err := tx.Exec(ctx, `
				insert into airlock.job_output (job, stream, data, total) values ($1, $2, $3, $4)
				on conflict (job, stream) do update set data = excluded.data, total = excluded.total`,
				id, s.name, data, s.Total)
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return c.wrap("finish job "+id, err)
	}
	if done {
		return nil
	}
	// Zero rows: either this very end was recorded before (a retry), or the
	// fence no longer holds.
	var again bool
	err = c.pool.QueryRow(ctx, `select exists (select 1 from airlock.jobs
		where id = $1 and ended_by = $2 and attempt = $3)`, id, f.Node, f.Attempt).Scan(&again)
	if err != nil {
		return c.wrap("finish job "+id, err)
	}
	if again {
		return nil
	}
	return c.fenced(ctx, "finish job", id, f)
}

// Release gives a placed job that the node has not started back to the queue,
// with its queue timeout counted afresh (a node shutting down, or one that
// found it cannot run it after all).
func (c *Cluster) Release(ctx context.Context, id string, f Fence) error {
	tag, err := c.pool.Exec(ctx, `
		update airlock.jobs set state = 'queued', node = null, placed_at = null,
			queue_deadline = now() + queue_timeout
		where id = $1 and node = $2 and attempt = $3 and state = 'placed'`, id, f.Node, f.Attempt)
	if err != nil {
		return c.wrap("release job "+id, err)
	}
	if tag.RowsAffected() == 0 {
		return c.fenced(ctx, "release job", id, f)
	}
	return nil
}

// Assigned lists the jobs the cluster has placed on the node and not seen end,
// oldest first: what the node must be running or about to run. A node calls
// it at start and now and then, to find a placement whose answer it lost (a
// Claim that committed as the connection broke).
func (c *Cluster) Assigned(ctx context.Context, node string) ([]Job, error) {
	rows, err := c.pool.Query(ctx, `select `+jobColumns+` from airlock.jobs
		where node = $1 and state in ('placed', 'running') order by seq`, node)
	if err != nil {
		return nil, c.wrap("list jobs of node "+node, err)
	}
	jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Job, error) { return scanJob(r) })
	if err != nil {
		return nil, c.wrap("list jobs of node "+node, err)
	}
	return jobs, nil
}

// Owned answers a node that comes back (or whose lease lapsed) with those of
// the jobs it holds containers for that are still its own at that attempt. The
// node must kill and remove the containers of all the others: the cluster has
// declared them lost, or queued them again.
func (c *Cluster) Owned(ctx context.Context, node string, held []Held) ([]Held, error) {
	ids := make([]string, len(held))
	attempts := make([]int32, len(held))
	for i, h := range held {
		ids[i], attempts[i] = h.Job, int32(h.Attempt)
	}
	rows, err := c.pool.Query(ctx, `
		select j.id, j.attempt
		from unnest($2::text[], $3::int[]) as h (id, attempt)
		join airlock.jobs j on j.id = h.id and j.attempt = h.attempt
		where j.node = $1 and j.state in ('placed', 'running')
		order by j.seq`, node, ids, attempts)
	if err != nil {
		return nil, c.wrap("reconcile node "+node, err)
	}
	own, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Held, error) {
		var h Held
		err := r.Scan(&h.Job, &h.Attempt)
		return h, err
	})
	if err != nil {
		return nil, c.wrap("reconcile node "+node, err)
	}
	return own, nil
}

// fenced explains why a fenced write touched nothing: no such job, or the job is
// no longer the node's at that attempt.
func (c *Cluster) fenced(ctx context.Context, op, id string, f Fence) error {
	j, err := c.Get(ctx, id)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return fmt.Errorf("%s %s as node %s attempt %d: %w (it is %s, node %q, attempt %d)",
		op, id, f.Node, f.Attempt, ErrFenced, j.State, j.Node, j.Attempt)
}

// Record stores a job that ended where it was asked, on no node: one the
// policy refused (blocked), so that any node answers for it as for the others.
func (c *Cluster) Record(ctx context.Context, nj NewJob, e End) (Job, error) {
	if nj.ID == "" || !json.Valid(nj.Spec) || e.Result != nil && !json.Valid(e.Result) {
		return Job{}, fmt.Errorf("record job %s: %w: no id, or a spec or result that is not JSON", nj.ID, ErrInvalid)
	}
	var result *string
	if e.Result != nil {
		r := string(e.Result)
		result = &r
	}
	job, err := scanJob(c.pool.QueryRow(ctx, `
		insert into airlock.jobs (id, tenant, spec, state, exit_code, reason, result, queue_timeout,
			queue_deadline, started_at, ended_at)
		values ($1, $2, ($3::jsonb) - 'env' - 'stdin' - 'sealed', $4, $5, $6, $7, interval '1 second', now(), now(), now())
		returning `+jobColumns, nj.ID, nj.Tenant, string(nj.Spec), string(e.State), e.ExitCode, e.Reason, result))
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return Job{}, fmt.Errorf("record job %s: %w", nj.ID, ErrExists)
	}
	if err != nil {
		return Job{}, c.wrap("record job "+nj.ID, err)
	}
	return job, nil
}

// Filter chooses the jobs List returns.
type Filter struct {
	// Tenant keeps that tenant's jobs; empty keeps every tenant's.
	Tenant string
	// State keeps the jobs in that state; empty keeps all.
	State api.State
	// Labels keeps the jobs whose spec carries every one of these labels.
	Labels map[string]string
	// Limit is the most jobs returned; 0 is no limit.
	Limit int
}

// List returns the jobs that match f, most recently queued first, and how
// many match in all.
func (c *Cluster) List(ctx context.Context, f Filter) ([]Job, int, error) {
	labels := []byte("{}")
	if len(f.Labels) > 0 {
		labels, _ = json.Marshal(map[string]any{"labels": f.Labels})
	}
	var limit *int
	if f.Limit > 0 {
		limit = &f.Limit
	}
	rows, err := c.pool.Query(ctx, `
		select `+jobColumns+`, count(*) over ()
		from airlock.jobs
		where ($1 = '' or tenant = $1) and ($2 = '' or state = $2) and spec @> $3::jsonb
			and caller_node is null
		order by seq desc
		limit $4`, f.Tenant, string(f.State), string(labels), limit)
	if err != nil {
		return nil, 0, c.wrap("list jobs", err)
	}
	total := 0
	jobs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Job, error) {
		return scanJob(totalRow{r, &total})
	})
	if err != nil {
		return nil, 0, c.wrap("list jobs", err)
	}
	return jobs, total, nil
}

// totalRow scans a job's columns and then the window's count into total.
type totalRow struct {
	pgx.Row
	total *int
}

func (r totalRow) Scan(dest ...any) error { return r.Row.Scan(append(dest, r.total)...) }

// Expire ends job id as expired if it is still queued past its queue
// deadline, as the next sweep would, and returns the job as it is now, and
// whether this call ended it (the caller then audits its end). The node that
// waits for the job's start calls it, so that its caller's answer does not
// wait for a sweep.
func (c *Cluster) Expire(ctx context.Context, id string) (Job, bool, error) {
	tag, err := c.pool.Exec(ctx, `
		update airlock.jobs set state = 'expired', exit_code = 125, ended_at = now(),
			spec = spec - 'env' - 'stdin' - 'sealed',
			reason = format('no node had room for it within its queue timeout of %ss', extract(epoch from queue_timeout)::float8)
		where id = $1 and state = 'queued' and queue_deadline <= now()`, id)
	if err != nil {
		return Job{}, false, c.wrap("expire job "+id, err)
	}
	j, err := c.Get(ctx, id)
	return j, tag.RowsAffected() == 1, err
}

// Remove deletes an ended job and its output.
func (c *Cluster) Remove(ctx context.Context, id string) error {
	_, err := c.pool.Exec(ctx, `delete from airlock.jobs where id = $1 and ended_at is not null`, id)
	return c.wrap("remove job "+id, err)
}

// Prune deletes the jobs, and their output, that ended longer than age ago by
// the database's clock, and says how many went. Jobs that have not ended stay,
// however old. Any node may prune; each server with --keep-jobs does.
func (c *Cluster) Prune(ctx context.Context, age time.Duration) (int64, error) {
	tag, err := c.pool.Exec(ctx, `delete from airlock.jobs where ended_at < now() - $1 * interval '1 second'`, age.Seconds())
	if err != nil {
		return 0, c.wrap("prune ended jobs", err)
	}
	return tag.RowsAffected(), nil
}
