-- Route versions (docs/routes.md): each create, update and restore of a route
-- keeps the whole document it saved, who saved it, when, and a note. The
-- number is the route's own version, which grows with each change. A
-- rename carries the versions along; deleting a route deletes them.

CREATE TABLE route_versions (
    project_id text NOT NULL,
    route_id   text NOT NULL,
    version    bigint NOT NULL CHECK (version >= 1),
    document   jsonb NOT NULL,
    note       text NOT NULL DEFAULT '' CHECK (length(note) <= 500),
    created_by bigint REFERENCES users (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, route_id, version),
    FOREIGN KEY (project_id, route_id) REFERENCES routes (project_id, route_id) ON UPDATE CASCADE ON DELETE CASCADE
);

-- The routes of today are their first kept version; who changed a route
-- last was not recorded before, so only a version 1 names its author.
INSERT INTO route_versions (project_id, route_id, version, document, created_by, created_at)
    SELECT project_id, route_id, version, document, CASE WHEN version = 1 THEN created_by END, updated_at FROM routes;
