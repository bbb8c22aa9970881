-- The route table keeps each project's name too (the title of the project's
-- OpenAPI document at /x/<api_path>/openapi.json): a new name is a notice.
DROP TRIGGER projects_notify ON projects;
CREATE TRIGGER projects_notify AFTER INSERT OR DELETE OR UPDATE OF api_path, name ON projects
    FOR EACH ROW EXECUTE FUNCTION notify_routes();

