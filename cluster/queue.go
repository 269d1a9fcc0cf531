package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Tenant is a tenant's limits across the whole cluster. 0 means no limit.
type Tenant struct {
	Name string
	// MaxRunning bounds its jobs placed or running at once, on all nodes together.
	MaxRunning int
	// MaxQueued bounds its jobs waiting in the queue; Enqueue past it is ErrQueueFull.
	MaxQueued int
}

// Workspace maps a workspace to the node whose engine holds its files: a job on
// it runs only there.
type Workspace struct {
	ID     string
	Tenant string
	Node   string
}

// SetTenant sets a tenant's limits. Every node sets the same from its
// configuration; the last write wins.
func (c *Cluster) SetTenant(ctx context.Context, t Tenant) error {
	if t.MaxRunning < 0 || t.MaxQueued < 0 {
		return fmt.Errorf("set tenant %q: %w: negative limit", t.Name, ErrInvalid)
	}
	_, err := c.pool.Exec(ctx, `
		insert into airlock.tenants (name, max_running, max_queued) values ($1, $2, $3)
		on conflict (name) do update set max_running = excluded.max_running, max_queued = excluded.max_queued`,
		t.Name, t.MaxRunning, t.MaxQueued)
	return c.wrap(fmt.Sprintf("set tenant %q", t.Name), err)
}

// BindWorkspace records which node holds the workspace, replacing any earlier
// binding.
func (c *Cluster) BindWorkspace(ctx context.Context, w Workspace) error {
	_, err := c.pool.Exec(ctx, `
		insert into airlock.workspaces (id, tenant, node) values ($1, $2, $3)
		on conflict (id) do update set tenant = excluded.tenant, node = excluded.node`,
		w.ID, w.Tenant, w.Node)
	return c.wrap("bind workspace "+w.ID, err)
}

// UnbindWorkspace forgets the workspace (it was deleted). Queued jobs on it
// stay queued until their queue timeout.
func (c *Cluster) UnbindWorkspace(ctx context.Context, id string) error {
	_, err := c.pool.Exec(ctx, `delete from airlock.workspaces where id = $1`, id)
	return c.wrap("unbind workspace "+id, err)
}

// WorkspaceOf returns where workspace id lives; ErrNotFound when the cluster
// does not know it.
func (c *Cluster) WorkspaceOf(ctx context.Context, id string) (Workspace, error) {
	w := Workspace{ID: id}
	err := c.pool.QueryRow(ctx, `select tenant, node from airlock.workspaces where id = $1`, id).Scan(&w.Tenant, &w.Node)
	if errors.Is(err, pgx.ErrNoRows) {
		return Workspace{}, fmt.Errorf("workspace %s: %w", id, ErrNotFound)
	}
	return w, c.wrap("find workspace "+id, err)
}

// WorkspaceNodes lists the nodes that hold workspaces of the tenant (every
// tenant's when empty).
func (c *Cluster) WorkspaceNodes(ctx context.Context, tenant string) ([]string, error) {
	rows, err := c.pool.Query(ctx, `select distinct node from airlock.workspaces
		where $1 = '' or tenant = $1 order by node`, tenant)
	if err != nil {
		return nil, c.wrap("list the nodes of workspaces", err)
	}
	nodes, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return nodes, c.wrap("list the nodes of workspaces", err)
}

// pickJob chooses the next job for node $1 with $2 bytes of memory free,
// leaving out the tenants in $3 (found at their limit under their lock).
//
// Fairness: among the jobs that fit, the tenant with the fewest jobs placed or
// running across the cluster goes first, so one tenant's flood cannot starve
// another; ties, and each tenant's own jobs, go first in, first out (seq). A
// job on a workspace fits only the node that holds the workspace. SKIP LOCKED
// lets claimers on other nodes pass over the row being taken here.
const pickJob = `
	with active as (
		select tenant, count(*) as n from airlock.jobs
		where state in ('placed', 'running') group by tenant
	)
	select j.id, j.tenant
	from airlock.jobs j
	left join active a on a.tenant = j.tenant
	left join airlock.tenants t on t.name = j.tenant
	where j.state = 'queued'
		and j.queue_deadline > now()
		and j.memory <= $2
		and (j.workspace is null or exists
			(select 1 from airlock.workspaces w where w.id = j.workspace and w.node = $1))
		and (t.max_running is null or t.max_running = 0 or coalesce(a.n, 0) < t.max_running)
		and j.tenant <> all ($3::text[])
		and (j.caller_node is null or j.caller_node = $1)
	order by coalesce(a.n, 0), j.seq
	limit 1
	for update of j skip locked`

// Claim places the next queued job that fits on the node and returns it, its
// attempt bumped: the node then calls Start, and Finish, with job.Fence(). The
// node must be live and not draining (else ErrNodeUnavailable); ErrNoWork says
// nothing fits now (no free slot, or no queued job fits the memory left,
// workspace and tenant limits).
//
// A node claims for itself: its row is locked for the claim, so two claims for
// one node cannot both take its last slot, and a tenant's row is locked while
// its running jobs are counted, so two nodes cannot both take its last place.
func (c *Cluster) Claim(ctx context.Context, node string) (Job, error) {
	var job Job
	err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		var slots int
		var memory int64
		var draining, live bool
		err := tx.QueryRow(ctx, `select slots, memory, draining, lease_until > now()
			from airlock.nodes where id = $1 for update`, node).Scan(&slots, &memory, &draining, &live)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("node %s: %w", node, ErrNotFound)
		}
		if err != nil {
			return err
		}
		if !live {
			return fmt.Errorf("%w: node %s's lease has expired", ErrNodeUnavailable, node)
		}
		if draining {
			return fmt.Errorf("%w: node %s is draining", ErrNodeUnavailable, node)
		}
		var running int
		var used int64
		err = tx.QueryRow(ctx, `select count(*), coalesce(sum(memory), 0) from airlock.jobs
			where node = $1 and state in ('placed', 'running')`, node).Scan(&running, &used)
		if err != nil {
			return err
		}
		if running >= slots {
			return ErrNoWork
		}
		full := []string{}
		for {
			var id, tenant string
			err := tx.QueryRow(ctx, pickJob, node, memory-used, full).Scan(&id, &tenant)
			if errors.Is(err, pgx.ErrNoRows) {
				return ErrNoWork
			}
			if err != nil {
				return err
			}
			// Count again under the tenant's lock: the pick's count may predate
			// another node's placement that committed since.
			var maxRunning int
			err = tx.QueryRow(ctx, `select max_running from airlock.tenants where name = $1 for update`, tenant).Scan(&maxRunning)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			if maxRunning > 0 {
				var n int
				err := tx.QueryRow(ctx, `select count(*) from airlock.jobs
					where tenant = $1 and state in ('placed', 'running')`, tenant).Scan(&n)
				if err != nil {
					return err
				}
				if n >= maxRunning {
					full = append(full, tenant)
					continue
				}
			}
			job, err = scanJob(tx.QueryRow(ctx, `
				update airlock.jobs set state = 'placed', node = $2, attempt = attempt + 1, placed_at = now()
				where id = $1 returning `+jobColumns, id, node))
			return err
		}
	})
	if err != nil {
		return Job{}, c.wrap("claim job for node "+node, err)
	}
	return job, nil
}
