-- Routes that run without a caller (docs/schedules.md). A schedule runs
-- its route at the ticks of its cron expression, read in its time zone,
-- with the query and body it keeps; ticks after since run (its creation,
-- a change of its expression or zone, its resumption). The schedule goes
-- with its route, and follows the route's id when it changes.
CREATE TABLE route_schedules (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id  text NOT NULL,
    route_id    text NOT NULL,
    cron        text NOT NULL CHECK (length(cron) BETWEEN 1 AND 100),
    timezone    text NOT NULL DEFAULT 'UTC' CHECK (length(timezone) BETWEEN 1 AND 64),
    query       text NOT NULL DEFAULT '' CHECK (length(query) <= 2048),
    body        jsonb,
    active      boolean NOT NULL DEFAULT true,
    since       timestamptz NOT NULL DEFAULT now(),
    created_by  bigint REFERENCES users (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (project_id, route_id) REFERENCES routes (project_id, route_id) ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE INDEX route_schedules_route_idx ON route_schedules (project_id, route_id);

-- A schedule's tick, claimed by the instance that runs it: the primary
-- key lets one instance claim a tick, however many look at once. A tick
-- whose schedule's previous run still runs is skipped; a run's row says
-- how it ended.
CREATE TABLE schedule_ticks (
    schedule_id bigint NOT NULL REFERENCES route_schedules (id) ON DELETE CASCADE,
    tick        timestamptz NOT NULL,
    state       text NOT NULL CHECK (state IN ('running', 'done', 'skipped')),
    status      integer,
    claimed_at  timestamptz NOT NULL DEFAULT now(),
    finished_at timestamptz,
    PRIMARY KEY (schedule_id, tick)
);

-- What started each run: a request (http), a schedule's tick or a job.
ALTER TABLE route_runs ADD COLUMN trigger text NOT NULL DEFAULT 'http';
