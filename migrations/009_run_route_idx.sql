-- The run log filtered by route: newest first without reading the
-- project's other runs.
CREATE INDEX route_runs_route_idx ON route_runs (project_id, route_id, id DESC);
