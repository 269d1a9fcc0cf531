package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Node is what a node says about itself when it registers.
type Node struct {
	// ID names the node; it is stable across the node's restarts, so that a node
	// that comes back finds its jobs.
	ID string
	// Address is where the other nodes reach its API.
	Address string
	// Slots is how many sandboxes it runs at once.
	Slots int
	// Memory is the sandbox memory it can give, in bytes; a job is placed on it
	// only when the job's memory fits in what its running jobs leave.
	Memory int64
	// Lease is how long a heartbeat keeps the node alive. A node heartbeats well
	// within it (a third is usual); when it stops, it is dead one lease later.
	Lease time.Duration
	// Draining nodes get no new placements.
	Draining bool
}

// NodeStatus is a node as the cluster sees it, by the database's clock.
type NodeStatus struct {
	Node
	RegisteredAt time.Time
	HeartbeatAt  time.Time
	LeaseUntil   time.Time
	// Live is false once the lease has expired: the node is dead.
	Live bool
	// LeaseAge is the time since the last heartbeat.
	LeaseAge time.Duration
	// Running counts its jobs placed or running; MemoryInUse sums their memory.
	Running     int
	MemoryInUse int64
}

// Lease is a node's lease after Register or Heartbeat.
type Lease struct {
	// Until is when the lease ends unless renewed, by the database's clock.
	Until time.Time
	// Lapsed is true when the lease had already expired before this renewal:
	// meanwhile the cluster may have declared the node dead and taken its jobs
	// (see Sweep). The node must ask which jobs are still its own (Owned) and
	// remove the containers of the others.
	Lapsed bool
}

// Register adds the node, or updates it when it registered before (a node that
// restarted), and starts its lease. Its jobs stay its own while its lease holds.
func (c *Cluster) Register(ctx context.Context, n Node) (Lease, error) {
	switch {
	case n.ID == "":
		return Lease{}, fmt.Errorf("register node: %w: empty id", ErrInvalid)
	case n.Slots < 0 || n.Memory < 0:
		return Lease{}, fmt.Errorf("register node %s: %w: negative capacity", n.ID, ErrInvalid)
	case n.Lease < time.Millisecond:
		return Lease{}, fmt.Errorf("register node %s: %w: lease %s is too short", n.ID, ErrInvalid, n.Lease)
	}
	var l Lease
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		var lapsed *bool
		err := tx.QueryRow(ctx, `select lease_until <= now() from airlock.nodes where id = $1 for update`, n.ID).Scan(&lapsed)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		l.Lapsed = lapsed != nil && *lapsed
		return tx.QueryRow(ctx, `
			insert into airlock.nodes (id, address, slots, memory, draining, lease, lease_until)
			values ($1, $2, $3, $4, $5, $6::bigint * interval '1 microsecond', now() + $6::bigint * interval '1 microsecond')
			on conflict (id) do update set
				address = excluded.address, slots = excluded.slots, memory = excluded.memory,
				draining = excluded.draining, lease = excluded.lease,
				registered_at = now(), heartbeat_at = now(), lease_until = excluded.lease_until
			returning lease_until`,
			n.ID, n.Address, n.Slots, n.Memory, n.Draining, n.Lease.Microseconds()).Scan(&l.Until)
	})
	if err != nil {
		return Lease{}, c.wrap("register node "+n.ID, err)
	}
	return l, nil
}

// Heartbeat extends the node's lease by its length from now, by the database's
// clock: a node's own clock never decides whether it is alive.
func (c *Cluster) Heartbeat(ctx context.Context, node string) (Lease, error) {
	var l Lease
	err := c.pool.QueryRow(ctx, `
		with old as (select lease_until from airlock.nodes where id = $1 for update)
		update airlock.nodes n set heartbeat_at = now(), lease_until = now() + n.lease
		from old where n.id = $1
		returning n.lease_until, old.lease_until <= now()`, node).Scan(&l.Until, &l.Lapsed)
	if errors.Is(err, pgx.ErrNoRows) {
		return Lease{}, fmt.Errorf("heartbeat node %s: %w", node, ErrNotFound)
	}
	if err != nil {
		return Lease{}, c.wrap("heartbeat node "+node, err)
	}
	return l, nil
}

// Drain sets whether the node takes new placements. Its jobs carry on.
func (c *Cluster) Drain(ctx context.Context, node string, draining bool) error {
	tag, err := c.pool.Exec(ctx, `update airlock.nodes set draining = $2 where id = $1`, node, draining)
	if err != nil {
		return c.wrap("drain node "+node, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("drain node %s: %w", node, ErrNotFound)
	}
	return nil
}

// Nodes lists every registered node, dead ones too, by id.
func (c *Cluster) Nodes(ctx context.Context) ([]NodeStatus, error) {
	rows, err := c.pool.Query(ctx, `
		select n.id, n.address, n.slots, n.memory, n.draining, `+micros("n.lease")+`,
			n.registered_at, n.heartbeat_at, n.lease_until, n.lease_until > now(),
			`+micros("now() - n.heartbeat_at")+`,
			count(j.id), coalesce(sum(j.memory), 0)
		from airlock.nodes n
		left join airlock.jobs j on j.node = n.id and j.state in ('placed', 'running')
		group by n.id
		order by n.id`)
	if err != nil {
		return nil, c.wrap("list nodes", err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (NodeStatus, error) {
		var s NodeStatus
		var lease, age int64
		err := row.Scan(&s.ID, &s.Address, &s.Slots, &s.Memory, &s.Draining, &lease,
			&s.RegisteredAt, &s.HeartbeatAt, &s.LeaseUntil, &s.Live, &age, &s.Running, &s.MemoryInUse)
		s.Lease, s.LeaseAge = time.Duration(lease)*time.Microsecond, time.Duration(age)*time.Microsecond
		return s, err
	})
	if err != nil {
		return nil, c.wrap("list nodes", err)
	}
	return list, nil
}

// micros is SQL for an interval expression in whole microseconds, which a
// time.Duration is made from exactly.
func micros(interval string) string {
	return "(extract(epoch from " + interval + ") * 1000000)::bigint"
}
