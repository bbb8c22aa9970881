-- Each project's CORS allow-list at /x (docs/engine.md): origins whose
-- browsers may call its routes, or '*' alone; empty: none.
ALTER TABLE projects ADD COLUMN x_cors_origins text[] NOT NULL DEFAULT '{}'
    CHECK (cardinality(x_cors_origins) <= 100);

-- Every instance reloads a project's routing when what /x answers with
-- changes: its api_path and name, its rate limit and its origins. The
-- trigger names each column it follows (the service's own update sets them
-- all at once, so it fired for these before too).
DROP TRIGGER projects_notify ON projects;
CREATE TRIGGER projects_notify AFTER INSERT OR DELETE OR UPDATE OF api_path, name, x_rate_limit, x_rate_burst, x_cors_origins ON projects
    FOR EACH ROW EXECUTE FUNCTION notify_routes();
