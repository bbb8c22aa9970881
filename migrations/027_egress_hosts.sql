-- Each project's egress list (docs/engine.md): the hosts its routes' HTTP
-- blocks may call ("api.example.com", "*.example.com"); empty: any public
-- host.
ALTER TABLE projects ADD COLUMN x_egress_hosts text[] NOT NULL DEFAULT '{}'
    CHECK (cardinality(x_egress_hosts) <= 100);

-- Every instance reloads a project's routing when its egress list changes
-- too.
DROP TRIGGER projects_notify ON projects;
CREATE TRIGGER projects_notify AFTER INSERT OR DELETE OR UPDATE OF api_path, name, x_rate_limit, x_rate_burst, x_cors_origins, x_egress_hosts ON projects
    FOR EACH ROW EXECUTE FUNCTION notify_routes();
