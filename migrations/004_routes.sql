-- Route templates and routes (docs/routes.md). The request definition and flow are
-- one JSON document each; the columns that rules and lists need stand beside it.

CREATE TABLE route_templates (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$'),
    description text NOT NULL CHECK (length(description) BETWEEN 1 AND 1000),
    project_id  text REFERENCES projects (id) ON DELETE CASCADE,
    method      text NOT NULL,
    document    jsonb NOT NULL,
    created_by  bigint REFERENCES users (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    -- One name per scope: all global templates (project_id NULL) share one.
    CONSTRAINT route_templates_name_key UNIQUE NULLS NOT DISTINCT (project_id, name)
);

CREATE INDEX route_templates_project_idx ON route_templates (project_id);

CREATE TABLE routes (
    project_id    text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    route_id      text NOT NULL CHECK (route_id ~ '^[A-Za-z0-9_-]{1,100}$'),
    method        text NOT NULL CHECK (method IN ('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS')),
    route_path    text NOT NULL CHECK (route_path ~ '^/[A-Za-z0-9_\-/{}:]{0,199}$'),
    document      jsonb NOT NULL,
    -- A snapshot of the template the route was made from, on purpose not a
    -- foreign key: editing or deleting the template never changes the route.
    template_id   bigint,
    template_name text,
    created_by    bigint REFERENCES users (id) ON DELETE SET NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT routes_pkey PRIMARY KEY (project_id, route_id),
    CONSTRAINT routes_method_path_key UNIQUE (project_id, method, route_path)
);
