-- Tests saved with a route (docs/tests.md): a request and what its
-- answer must be, by a name unique within the route. They go with their
-- route and follow its id when it changes.
CREATE TABLE route_tests (
    project_id  text NOT NULL,
    route_id    text NOT NULL,
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    request     jsonb NOT NULL CHECK (jsonb_typeof(request) = 'object'),
    expect      jsonb NOT NULL CHECK (jsonb_typeof(expect) = 'object'),
    created_by  bigint REFERENCES users (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, route_id, name),
    FOREIGN KEY (project_id, route_id) REFERENCES routes (project_id, route_id) ON DELETE CASCADE ON UPDATE CASCADE
);
