package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/airlock-sandbox/airlock/api"
)

// Kill is a kill asked of the cluster for a job: any node may ask, the job's
// own node delivers it (KillRequests, then KillDelivered).
type Kill struct {
	Job        string
	Fence      Fence
	Signal     string
	ForceAfter time.Duration
	// RequestedAt tells one request from a later one for the same job.
	RequestedAt time.Time
}

// RequestKill asks for job id to be sent signal, with SIGKILL forceAfter later
// when it has not ended. A queued job is ended at once as killed, exit code
// 137: nothing ran, and nothing will. A placed or running job keeps the request
// until its node delivers it; a later request replaces an earlier one. A job
// that has ended is returned as it is. The answer is the job after the
// request, and whether this request ended it (a queued job: the caller then
// audits its end).
func (c *Cluster) RequestKill(ctx context.Context, id, signal string, forceAfter time.Duration) (Job, bool, error) {
	if signal == "" || forceAfter < 0 {
		return Job{}, false, fmt.Errorf("kill job %s: %w: no signal, or a negative force_after", id, ErrInvalid)
	}
	var job Job
	var ended bool
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		var err error
		job, err = scanJob(tx.QueryRow(ctx, `select `+jobColumns+` from airlock.jobs where id = $1 for update`, id))
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("kill job %s: %w", id, ErrNotFound)
		}
		if err != nil {
			return err
		}
		switch job.State {
		case api.StateQueued:
			ended = true
			job, err = scanJob(tx.QueryRow(ctx, `
				update airlock.jobs set state = 'killed', exit_code = 137, ended_at = now(),
					spec = spec - 'env' - 'stdin' - 'sealed',
					reason = format('killed with %s while it waited in the queue; nothing ran', $2::text)
				where id = $1 returning `+jobColumns, id, signal))
		case api.StatePlaced, api.StateRunning:
			job, err = scanJob(tx.QueryRow(ctx, `
				update airlock.jobs set kill_signal = $2,
					kill_force_after = $3::bigint * interval '1 microsecond',
					kill_requested_at = clock_timestamp(), kill_delivered_at = null
				where id = $1 returning `+jobColumns, id, signal, forceAfter.Microseconds()))
		}
		return err
	})
	if err != nil {
		return Job{}, false, c.wrap("kill job "+id, err)
	}
	return job, ended, nil
}

// KillRequests lists the kills asked for jobs placed on or running on node
// that it has not delivered yet.
func (c *Cluster) KillRequests(ctx context.Context, node string) ([]Kill, error) {
	rows, err := c.pool.Query(ctx, `
		select id, attempt, kill_signal, `+micros("kill_force_after")+`, kill_requested_at
		from airlock.jobs
		where node = $1 and state in ('placed', 'running') and kill_requested_at is not null
			and kill_delivered_at is null
		order by kill_requested_at`, node)
	if err != nil {
		return nil, c.wrap("list kills for node "+node, err)
	}
	kills, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Kill, error) {
		k := Kill{Fence: Fence{Node: node}}
		var force int64
		err := r.Scan(&k.Job, &k.Fence.Attempt, &k.Signal, &force, &k.RequestedAt)
		k.ForceAfter = time.Duration(force) * time.Microsecond
		return k, err
	})
	if err != nil {
		return nil, c.wrap("list kills for node "+node, err)
	}
	return kills, nil
}

// KillDelivered records that the node sent kill k; a later request for the
// same job stays pending. It is fenced like every write of a node.
func (c *Cluster) KillDelivered(ctx context.Context, k Kill) error {
	tag, err := c.pool.Exec(ctx, `
		update airlock.jobs set kill_delivered_at = now()
		where id = $1 and node = $2 and attempt = $3 and kill_requested_at = $4`,
		k.Job, k.Fence.Node, k.Fence.Attempt, k.RequestedAt)
	if err != nil {
		return c.wrap("deliver kill of job "+k.Job, err)
	}
	if tag.RowsAffected() == 0 {
		return c.fenced(ctx, "deliver kill of job", k.Job, k.Fence)
	}
	return nil
}
