package cluster

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Swept says what a Sweep did, by job id.
type Swept struct {
	// Requeued are jobs placed on a dead node and not started: back in the
	// queue, to be placed again (their attempt bumps when they are).
	Requeued []string
	// Retried are jobs a dead node had started, queued again because they had
	// retries left (one is spent).
	Retried []string
	// Lost are jobs a dead node had started and that had no retry left: ended
	// as lost, exit code 125, with a reason that names the node.
	Lost []string
	// Expired are jobs that waited in the queue past their queue timeout.
	Expired []string
}

// maxSince bounds the time since the last outage passed to SQL (any lease is shorter).
const maxSince = 100 * 365 * 24 * time.Hour

// lastSeen is SQL for a node's last heartbeat in a reason's words.
const lastSeen = `to_char(n.heartbeat_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

// Sweep acts on what expired, by the database's clock: the jobs of nodes whose
// lease has run out, and the queued jobs past their queue timeout. Any node may
// run it, as often as it likes (every lease/2 or so): it is idempotent, and two
// sweeps at once split the work (the dead nodes' rows are locked with SKIP
// LOCKED, and each update re-checks the job's state under its row lock).
//
// A job is never run twice without the cluster saying so: one that had not
// started goes back to the queue; one that had started is lost, unless it asked
// for retries. A dead node that comes back finds its fences no longer hold
// (ErrFenced) and learns from Owned which containers to remove.
func (c *Cluster) Sweep(ctx context.Context) (Swept, error) {
	var s Swept
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		// Locking the dead nodes' rows keeps a node from renewing its lease
		// half-way through, and a second sweeper off the same node.
		//
		// A node is only judged dead after it had a whole lease in which it
		// could have heartbeated: since PostgreSQL (re)started, and since this
		// sweeper last found PostgreSQL out of reach ($1). Otherwise an outage
		// of the database longer than a lease would make every running job lost
		// at the first sweep after it.
		rows, err := tx.Query(ctx, `
			select n.id from airlock.nodes n
			where n.lease_until <= now()
				and now() - pg_postmaster_start_time() > n.lease
				and $1::bigint * interval '1 microsecond' > n.lease
				and exists (select 1 from airlock.jobs j
					where j.node = n.id and j.state in ('placed', 'running'))
			for update of n skip locked`, min(c.sinceUnreachable(), maxSince).Microseconds())
		if err != nil {
			return err
		}
		dead, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if len(dead) > 0 {
			// A foreground run's caller was connected to its node: nobody
			// waits for it any more, and it is never run elsewhere.
			runs, err := ids(ctx, tx, `
				update airlock.jobs j set state = 'lost', exit_code = 125, ended_at = now(),
					last_seen = n.heartbeat_at,
					reason = format('lost with node %s, which held its caller (node last seen %s)', j.node, `+lastSeen+`)
				from airlock.nodes n
				where n.id = j.node and j.node = any ($1) and j.state in ('placed', 'running')
					and j.caller_node is not null
				returning j.id`, dead)
			if err != nil {
				return err
			}
			s.Lost = append(s.Lost, runs...)
			if s.Requeued, err = ids(ctx, tx, `
				update airlock.jobs j set state = 'queued', node = null, placed_at = null,
					queue_deadline = now() + j.queue_timeout,
					reason = format('node %s died before starting attempt %s (last seen %s); queued again',
						j.node, j.attempt, `+lastSeen+`)
				from airlock.nodes n
				where n.id = j.node and j.node = any ($1) and j.state = 'placed'
				returning j.id`, dead); err != nil {
				return err
			}
			if s.Retried, err = ids(ctx, tx, `
				update airlock.jobs j set state = 'queued', node = null, placed_at = null,
					started_at = null, launched_at = null, retry = j.retry - 1, last_seen = n.heartbeat_at,
					queue_deadline = now() + j.queue_timeout,
					reason = format('attempt %s was lost with node %s (last seen %s); queued again, %s retries left',
						j.attempt, j.node, `+lastSeen+`, j.retry - 1)
				from airlock.nodes n
				where n.id = j.node and j.node = any ($1) and j.state = 'running' and j.retry > 0
				returning j.id`, dead); err != nil {
				return err
			}
			lost, err := ids(ctx, tx, `
				update airlock.jobs j set state = 'lost', exit_code = 125, ended_at = now(),
					last_seen = n.heartbeat_at, spec = j.spec - 'env' - 'stdin' - 'sealed',
					reason = format('lost with node %s: its lease expired while the job ran (node last seen %s); it was not run again',
						j.node, `+lastSeen+`)
				from airlock.nodes n
				where n.id = j.node and j.node = any ($1) and j.state = 'running'
				returning j.id`, dead)
			if err != nil {
				return err
			}
			s.Lost = append(s.Lost, lost...)
		}
		s.Expired, err = ids(ctx, tx, `
			update airlock.jobs set state = 'expired', exit_code = 125, ended_at = now(),
				spec = spec - 'env' - 'stdin' - 'sealed',
				reason = format('no node had room for it within its queue timeout of %ss', extract(epoch from queue_timeout)::float8)
			where state = 'queued' and queue_deadline <= now()
			returning id`)
		return err
	})
	if err != nil {
		return Swept{}, c.wrap("sweep", err)
	}
	if len(s.Requeued)+len(s.Retried)+len(s.Lost)+len(s.Expired) > 0 {
		c.log.Info("swept", "requeued", s.Requeued, "retried", s.Retried, "lost", s.Lost, "expired", s.Expired)
	}
	return s, nil
}

func ids(ctx context.Context, tx pgx.Tx, sql string, args ...any) ([]string, error) {
	rows, err := tx.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
