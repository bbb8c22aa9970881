-- How many runs the run log holds, kept with its rows (docs/routes.md): a
-- list's `amount` is one row read, never a count of the log. A row counts
-- a project's runs of one route (route_id '*', which no route id holds,
-- for all its routes) and of one status class, status / 100 (class -1 for
-- all classes).
CREATE TABLE route_run_counts (
    project_id text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    route_id   text NOT NULL,
    class      integer NOT NULL,
    n          bigint NOT NULL,
    PRIMARY KEY (project_id, route_id, class)
);

-- The runs one statement added or removed (its transition table, "runs"),
-- counted at each level and added to the counts, or taken from them.
-- Upserted in key order, as every writer does, so that two statements
-- never wait on each other's rows in turn. A project being deleted is
-- passed over: its counts go with it.
CREATE FUNCTION route_run_counts_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    sign integer := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
BEGIN
    INSERT INTO route_run_counts AS c (project_id, route_id, class, n)
    SELECT project_id, CASE WHEN grouping(route_id) = 1 THEN '*' ELSE route_id END,
           CASE WHEN grouping(status / 100) = 1 THEN -1 ELSE status / 100 END, sign * count(*)
    FROM runs
    GROUP BY GROUPING SETS ((project_id, route_id, status / 100), (project_id, route_id), (project_id, status / 100), (project_id))
    HAVING EXISTS (SELECT 1 FROM projects WHERE id = project_id)
    ORDER BY 1, 2, 3
    ON CONFLICT (project_id, route_id, class) DO UPDATE SET n = c.n + EXCLUDED.n;
    RETURN NULL;
END $$;

CREATE TRIGGER route_run_counts_insert AFTER INSERT ON route_runs
    REFERENCING NEW TABLE AS runs FOR EACH STATEMENT EXECUTE FUNCTION route_run_counts_change();
CREATE TRIGGER route_run_counts_delete AFTER DELETE ON route_runs
    REFERENCING OLD TABLE AS runs FOR EACH STATEMENT EXECUTE FUNCTION route_run_counts_change();

-- The runs already logged, counted with no run written meanwhile.
LOCK TABLE route_runs IN SHARE MODE;
INSERT INTO route_run_counts (project_id, route_id, class, n)
SELECT project_id, CASE WHEN grouping(route_id) = 1 THEN '*' ELSE route_id END,
       CASE WHEN grouping(status / 100) = 1 THEN -1 ELSE status / 100 END, count(*)
FROM route_runs
GROUP BY GROUPING SETS ((project_id, route_id, status / 100), (project_id, route_id), (project_id, status / 100), (project_id));
