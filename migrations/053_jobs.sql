-- Jobs of routes (docs/jobs.md). River's own migrations, applied before
-- these, make river_job; a job of a route keeps its project and route in
-- its args. A project's jobs are listed newest first and its unfinished
-- ones counted (at most 10,000 may wait) by these indexes.
CREATE INDEX river_job_project_idx ON river_job ((args->>'project'), id DESC) WHERE kind = 'route';
CREATE INDEX river_job_project_waiting_idx ON river_job ((args->>'project')) WHERE kind = 'route' AND finalized_at IS NULL;

-- A job whose run committed its writes: a later attempt of the same job
-- (its instance stopped before the job was marked completed) writes
-- nothing again. Kept for as long as River keeps finished jobs.
CREATE TABLE job_writes (
    job_id     bigint PRIMARY KEY,
    written_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX job_writes_written_idx ON job_writes (written_at);

