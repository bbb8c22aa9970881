---- tern: disable-tx ----
-- A project's runs of one status, newest first (/route/runs?status=500):
-- read in this index's order rather than filtered out of the status
-- class's. Built without blocking the run log's writes; alone in its
-- migration, as CREATE INDEX CONCURRENTLY must be.
CREATE INDEX CONCURRENTLY IF NOT EXISTS route_runs_status_idx ON route_runs (project_id, status, id DESC);
