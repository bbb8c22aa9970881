-- Template versions (docs/routes.md): each save of a template keeps the whole
-- template as it was saved, numbered from 1, with who, when and a note. A
-- route made from a template records which version it was made from and
-- the values applied, so that it can later be upgraded to a newer one.

ALTER TABLE route_templates ADD COLUMN version bigint NOT NULL DEFAULT 1;

CREATE TABLE template_versions (
    template_id bigint NOT NULL REFERENCES route_templates (id) ON DELETE CASCADE,
    version     bigint NOT NULL CHECK (version >= 1),
    name        text NOT NULL,
    description text NOT NULL,
    method      text NOT NULL,
    document    jsonb NOT NULL,
    note        text NOT NULL DEFAULT '' CHECK (length(note) <= 500),
    created_by  bigint REFERENCES users (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (template_id, version)
);

INSERT INTO template_versions (template_id, version, name, description, method, document, created_by, created_at)
    SELECT id, 1, name, description, method, document, created_by, updated_at FROM route_templates;

ALTER TABLE routes ADD COLUMN template_version bigint, ADD COLUMN template_values jsonb;
