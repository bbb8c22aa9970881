-- The version of the route that ran, for the run log's pages to name a
-- fault's block in the document that ran (docs/routes.md): NULL for a
-- draft tried from the editor, and for runs logged before this column.
-- A nullable column without a default is added without rewriting the log.
ALTER TABLE route_runs ADD COLUMN route_version bigint;
