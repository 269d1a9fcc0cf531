-- When the job's sandbox had started: a node records it after Start, once the
-- container runs, and the node that queued the job answers its caller then.
alter table airlock.jobs add column launched_at timestamptz;

-- A foreground run waits in the queue like a job, and counts against its
-- node's slots and its tenant's limits; only the node that holds its caller's
-- connection runs it.
alter table airlock.jobs add column caller_node text;

-- Kills asked of any node for a job another node runs: the job's row carries
-- the request until its node has delivered it (docs/cluster.md, "Kill").
alter table airlock.jobs
	add column kill_signal       text,
	add column kill_force_after  interval,
	add column kill_requested_at timestamptz,
	add column kill_delivered_at timestamptz;

create index jobs_kill_pending on airlock.jobs (node)
	where kill_requested_at is not null and state in ('placed', 'running');

-- The list of a tenant's jobs, most recent first.
create index jobs_tenant_seq on airlock.jobs (tenant, seq desc);
