-- Runs that the service had no room for (BUSY: 503) and requests over a
-- project's rate limit (LIMITED: 429) are logged like other runs.
ALTER TABLE route_runs DROP CONSTRAINT route_runs_ended_check;
ALTER TABLE route_runs ADD CONSTRAINT route_runs_ended_check
    CHECK (ended IN ('RETURN', 'FAIL', 'END', 'FAULT', 'REFUSED', 'ERROR', 'BUSY', 'LIMITED'));

-- Each project's rate limit at /x (docs/engine.md): requests a second per
-- client address (0: none), and how many may come at once.
ALTER TABLE projects
    ADD COLUMN x_rate_limit integer NOT NULL DEFAULT 50 CHECK (x_rate_limit BETWEEN 0 AND 100000),
    ADD COLUMN x_rate_burst integer NOT NULL DEFAULT 100 CHECK (x_rate_burst BETWEEN 1 AND 100000);

-- The limit's state, shared by every instance: per project and client
-- address, the time at which the client's bucket is empty again (the
-- generic cell rate algorithm's theoretical arrival time). Unlogged: it is
-- worth nothing after a crash, and its writes wait for no WAL flush.
CREATE UNLOGGED TABLE x_rates (
    project_id text NOT NULL,
    client     text NOT NULL,
    tat        timestamptz NOT NULL,
    PRIMARY KEY (project_id, client)
);
