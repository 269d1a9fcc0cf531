-- The cluster's first schema: nodes and their leases, tenants' limits, the
-- workspace -> node map, jobs (the durable queue and their fenced lives), and
-- the output of ended jobs. docs/cluster.md explains each rule.
-- Times are PostgreSQL's (now()), never a node's clock.

create table airlock.nodes (
	id            text primary key,
	address       text not null default '',
	slots         integer not null check (slots >= 0),  -- concurrent sandboxes
	memory        bigint not null check (memory >= 0),  -- memory budget, bytes
	draining      boolean not null default false,       -- no new placements
	lease         interval not null check (lease > interval '0'),
	registered_at timestamptz not null default now(),
	heartbeat_at  timestamptz not null default now(),
	lease_until   timestamptz not null                  -- past it, the node is dead
);

-- A tenant's limits across the cluster. A tenant without a row has none. Its row
-- is also the lock that serialises counting its jobs.
create table airlock.tenants (
	name        text primary key,
	max_running integer not null default 0 check (max_running >= 0), -- placed + running; 0: no limit
	max_queued  integer not null default 0 check (max_queued >= 0)   -- 0: no limit
);

-- Where each workspace lives: its files are on one node's engine.
create table airlock.workspaces (
	id     text primary key,
	tenant text not null,
	node   text not null references airlock.nodes (id)
);

create table airlock.jobs (
	id             text primary key,
	seq            bigint generated always as identity, -- queue order: first in, first out
	tenant         text not null,
	spec           jsonb not null,
	state          text not null check (state in
	               ('queued', 'placed', 'running', 'completed', 'failed', 'killed',
	                'timed_out', 'blocked', 'lost', 'expired')),
	node           text references airlock.nodes (id),
	attempt        integer not null default 0,          -- +1 at each placement: the fence
	workspace      text,
	memory         bigint not null default 0 check (memory >= 0),
	retry          integer not null default 0 check (retry >= 0),
	queue_timeout  interval not null check (queue_timeout > interval '0'),
	queued_at      timestamptz not null default now(),
	queue_deadline timestamptz not null,
	placed_at      timestamptz,
	started_at     timestamptz,
	ended_at       timestamptz,
	ended_by       text,                                -- the node that wrote the end; null when the cluster did
	exit_code      integer,
	reason         text not null default '',
	result         jsonb,
	last_seen      timestamptz,                         -- the lost node's last heartbeat
	check (state not in ('placed', 'running') or node is not null),
	check (state <> 'queued' or node is null)
);

create index jobs_queued on airlock.jobs (seq) where state = 'queued';
create index jobs_active_node on airlock.jobs (node) where state in ('placed', 'running');
create index jobs_active_tenant on airlock.jobs (tenant) where state in ('placed', 'running');
create index jobs_tenant_queued on airlock.jobs (tenant) where state = 'queued';

-- The capped output of an ended job, kept off its host.
create table airlock.job_output (
	job    text not null references airlock.jobs (id) on delete cascade,
	stream text not null check (stream in ('stdout', 'stderr')),
	data   bytea not null,
	total  bigint not null check (total >= 0),         -- every byte written, kept or not
	primary key (job, stream)
);

-- Uncompressed out-of-line storage: a page of output (substring) then reads only
-- the chunks it needs, instead of decompressing the whole stream.
alter table airlock.job_output alter column data set storage external;
