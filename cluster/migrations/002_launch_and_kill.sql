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

-- Wake-ups (LISTEN/NOTIFY, delivered at commit): airlock_job carries the id of
-- a job whose state changed or whose sandbox started; airlock_queue says a job
-- may be claimable (one was queued, or one ended and freed room); airlock_kill
-- names the node that has a kill to deliver. They only wake: a listener reads
-- the tables again, and polls now and then besides.
create function airlock.notify_job() returns trigger language plpgsql as $$
begin
	perform pg_notify('airlock_job', new.id);
	if new.state = 'queued' or (tg_op = 'UPDATE' and old.state in ('placed', 'running')
			and new.state not in ('placed', 'running')) then
		perform pg_notify('airlock_queue', '');
	end if;
	if tg_op = 'UPDATE' and new.node is not null
			and new.kill_requested_at is distinct from old.kill_requested_at then
		perform pg_notify('airlock_kill', new.node);
	end if;
	return null;
end
$$;

create trigger jobs_notify after insert or update of state, launched_at, kill_requested_at
	on airlock.jobs for each row execute function airlock.notify_job();
