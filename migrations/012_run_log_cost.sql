-- The run log takes a row per run of every route, written in batches. Its
-- foreign keys checked each row on its own (a lookup and a row lock per
-- run, the larger part of the log's cost); the batch now locks each project
-- and caller it names once and leaves out runs of projects already gone
-- (store.LogRuns), and triggers do what the keys' actions did.
ALTER TABLE route_runs DROP CONSTRAINT route_runs_project_id_fkey;
ALTER TABLE route_runs DROP CONSTRAINT route_runs_user_id_fkey;

-- A project's runs go with it; a deleted caller's runs keep the username.
CREATE FUNCTION forget_runs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'projects' THEN
        DELETE FROM route_runs WHERE project_id IN (SELECT id FROM gone);
    ELSE
        UPDATE route_runs SET user_id = NULL WHERE user_id IN (SELECT id FROM gone);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER projects_forget_runs AFTER DELETE ON projects
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION forget_runs();
CREATE TRIGGER users_forget_runs AFTER DELETE ON users
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION forget_runs();

-- Only runs with a caller pay for finding them by caller.
CREATE INDEX route_runs_user_idx ON route_runs (user_id) WHERE user_id IS NOT NULL;

-- Runs come in time order, so a block range index finds the week-old ones
-- for the sweep at a fraction of a B-tree's cost per row.
DROP INDEX route_runs_at_idx;
CREATE INDEX route_runs_at_idx ON route_runs USING brin (at);
