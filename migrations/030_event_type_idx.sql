-- The event log of a project filtered by type: newest first, and its
-- count, without reading the project's other events.
CREATE INDEX events_project_type_idx ON events (project_id, type, id DESC);
