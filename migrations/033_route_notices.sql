-- A route's change notice names the route: "<project> <route>" (a route
-- renamed sends one for its old id and one for its new), and an instance
-- reloads only that route, not the whole project (docs/performance.md). A
-- project's notice stays "<project>": its whole routing is read again.
CREATE OR REPLACE FUNCTION notify_routes() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'projects' THEN
        PERFORM pg_notify('stencil_routes', COALESCE(NEW.id, OLD.id));
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM pg_notify('stencil_routes', OLD.project_id || ' ' || OLD.route_id);
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        PERFORM pg_notify('stencil_routes', NEW.project_id || ' ' || NEW.route_id);
    END IF;
    RETURN NULL;
END $$;
