-- Ended jobs are pruned by the age of their end (Prune, the servers'
-- --keep-jobs); the index keeps that delete from reading the whole table.
create index jobs_ended_at on airlock.jobs (ended_at) where ended_at is not null;
