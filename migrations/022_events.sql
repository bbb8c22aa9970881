-- The event log (docs/events.md): every change made through the API or the pages
-- writes one row in the transaction of the change — who (user and personal
-- access token), when, what (type, the project, the object's id or key) and
-- a short summary that never holds a secret value. Rows are kept
-- EVENT_RETENTION (90 days by default). The user and the project are kept
-- as written, not as foreign keys: an event outlives what it tells of.

CREATE TABLE events (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at         timestamptz NOT NULL DEFAULT now(),
    uid        bigint,
    username   text NOT NULL DEFAULT '',
    token_id   bigint,
    type       text NOT NULL CHECK (type ~ '^[a-z]+(_[a-z]+)*$'),
    project_id text,
    object     text NOT NULL,
    summary    text NOT NULL
);

-- Newest first is the primary key backwards; the filters have their own;
-- the sweep goes by time.
CREATE INDEX events_at_idx ON events (at);
CREATE INDEX events_project_idx ON events (project_id, id DESC);
CREATE INDEX events_uid_idx ON events (uid, id DESC);
