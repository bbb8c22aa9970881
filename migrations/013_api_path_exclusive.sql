-- A project's api_path owns a URL space under /x: no project's path may
-- equal another's (whatever the case, however many slashes) or lie inside
-- it by whole segments (docs/security.md). The old rule was uniqueness of the text,
-- so "/pa/" could be made beside "/pa" and take its requests.

-- api_path_canonical is p with one leading slash, no empty segments and no
-- trailing slash ("/" stays "/"). Dot segments cannot occur: the check on
-- the column allows no dot.
CREATE FUNCTION api_path_canonical(p text) RETURNS text
    IMMUTABLE STRICT PARALLEL SAFE LANGUAGE sql
    RETURN '/' || array_to_string(array_remove(string_to_array(p, '/'), ''), '/');

-- api_path_key is what paths are compared by: canonical, in lower case.
CREATE FUNCTION api_path_key(p text) RETURNS text
    IMMUTABLE STRICT PARALLEL SAFE LANGUAGE sql
    RETURN lower(api_path_canonical(p));

-- api_paths_overlap says whether two keys share URL space: equal, or one a
-- whole-segment prefix of the other ("/" is a prefix of every path).
CREATE FUNCTION api_paths_overlap(a text, b text) RETURNS boolean
    IMMUTABLE STRICT PARALLEL SAFE LANGUAGE sql
    RETURN a = b OR a = '/' OR b = '/' OR starts_with(a, b || '/') OR starts_with(b, a || '/');

-- A new or changed api_path is stored canonical and refused when it
-- overlaps another project's. Writers of api_paths take one transaction
-- lock first, so two overlapping paths written at once cannot both pass
-- (each check runs after the other's commit). A path that keeps its key
-- (a project saved with its path unchanged) is not checked again: clashes
-- from before this rule stay until someone changes one of the paths, and
-- the service reports them at start.
CREATE FUNCTION projects_api_path_exclusive() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    k text;
BEGIN
    NEW.api_path := api_path_canonical(NEW.api_path);
    k := api_path_key(NEW.api_path);
    IF TG_OP = 'UPDATE' AND k = api_path_key(OLD.api_path) THEN
        RETURN NEW;
    END IF;
    PERFORM pg_advisory_xact_lock(hashtext('stencil projects api_path'));
    IF EXISTS (SELECT 1 FROM projects p WHERE p.id <> NEW.id AND api_path_key(p.api_path) = k) THEN
        RAISE EXCEPTION 'api_path % is another project''s', NEW.api_path
            USING ERRCODE = 'unique_violation', CONSTRAINT = 'projects_api_path_key';
    END IF;
    IF EXISTS (SELECT 1 FROM projects p WHERE p.id <> NEW.id AND api_paths_overlap(api_path_key(p.api_path), k)) THEN
        RAISE EXCEPTION 'api_path % overlaps the api_path of another project', NEW.api_path
            USING ERRCODE = 'unique_violation', CONSTRAINT = 'projects_api_path_overlap';
    END IF;
    RETURN NEW;
END $$;

CREATE TRIGGER projects_api_path_exclusive BEFORE INSERT OR UPDATE OF api_path ON projects
    FOR EACH ROW EXECUTE FUNCTION projects_api_path_exclusive();
