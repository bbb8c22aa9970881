-- The run log by what started its runs (docs/schedules.md): the runs no
-- request started (a schedule's tick, a job) are few beside those of /x,
-- and a partial index reads a project's of one trigger, newest first.
-- Made here on the log alone (ON ONLY: no partition is read or locked);
-- store.Migrate then builds each day's index CONCURRENTLY, beside the
-- log's writes, and attaches it. Days made later get it with the table.
CREATE INDEX route_runs_trigger_idx ON ONLY route_runs (project_id, trigger, id DESC) WHERE trigger <> 'http';
