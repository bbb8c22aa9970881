-- Running routes (docs/engine.md): route versions for the engine's plan caches,
-- change notices for every instance's route table, vault reads by routes,
-- the outbox of EMAIL blocks, and the run log.

-- A route's version grows with each change; an instance keeps a compiled
-- plan while the version it compiled is the stored one.
ALTER TABLE routes ADD COLUMN version bigint NOT NULL DEFAULT 1;

-- Every instance listens on stencil_routes and reloads the project named in
-- a notice: its routes changed, or its api_path, or it came or went.
CREATE FUNCTION notify_routes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'projects' THEN
        PERFORM pg_notify('stencil_routes', COALESCE(NEW.id, OLD.id));
    ELSE
        PERFORM pg_notify('stencil_routes', COALESCE(NEW.project_id, OLD.project_id));
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER routes_notify AFTER INSERT OR UPDATE OR DELETE ON routes
    FOR EACH ROW EXECUTE FUNCTION notify_routes();
CREATE TRIGGER projects_notify AFTER INSERT OR DELETE OR UPDATE OF api_path ON projects
    FOR EACH ROW EXECUTE FUNCTION notify_routes();

-- A route's VAULT block reads on the channel "route", naming the route.
ALTER TABLE vault_access_log DROP CONSTRAINT vault_access_log_channel_check;
ALTER TABLE vault_access_log ADD CONSTRAINT vault_access_log_channel_check CHECK (channel IN ('api', 'web', 'route'));
ALTER TABLE vault_access_log ADD COLUMN route_id text;

-- Messages EMAIL blocks queue; delivery takes them from here.
CREATE TABLE outbox (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    route_id   text NOT NULL,
    template   text NOT NULL,
    recipients text[] NOT NULL,
    pairs      jsonb NOT NULL,
    queued_at  timestamptz NOT NULL DEFAULT now(),
    sent_at    timestamptz
);

CREATE INDEX outbox_waiting_idx ON outbox (queued_at) WHERE sent_at IS NULL;

-- Every run of a route; rows older than seven days are swept.
CREATE TABLE route_runs (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL,
    project_id  text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    route_id    text NOT NULL,
    method      text NOT NULL,
    path        text NOT NULL,
    status      integer NOT NULL,
    ended       text NOT NULL CHECK (ended IN ('RETURN', 'FAIL', 'END', 'FAULT', 'REFUSED', 'ERROR')),
    duration_us bigint NOT NULL,
    user_id     bigint REFERENCES users (id) ON DELETE SET NULL,
    username    text NOT NULL DEFAULT '',
    fault       text NOT NULL DEFAULT ''
);

CREATE INDEX route_runs_project_idx ON route_runs (project_id, id DESC);
CREATE INDEX route_runs_at_idx ON route_runs (at);
