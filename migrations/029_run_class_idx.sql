-- The run log filtered by status class ("5xx"): newest first without
-- reading the project's other runs. A class is status / 100, the
-- expression the store's statement writes.
CREATE INDEX route_runs_class_idx ON route_runs (project_id, (status / 100), id DESC);
