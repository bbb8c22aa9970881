-- The run log's counts gain one row per exact status (docs/routes.md):
-- class holds the status itself (100–599) beside the classes (1–5, and
-- -1 for all), so the amount of /route/runs?status=500 is one row read
-- and exact, as a class's is.
CREATE OR REPLACE FUNCTION route_run_counts_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    sign integer := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
BEGIN
    INSERT INTO route_run_counts AS c (project_id, route_id, class, n)
    SELECT project_id, CASE WHEN grouping(route_id) = 1 THEN '*' ELSE route_id END,
           CASE WHEN grouping(status / 100) = 0 THEN status / 100 WHEN grouping(status) = 0 THEN status ELSE -1 END, sign * count(*)
    FROM runs
    GROUP BY GROUPING SETS ((project_id, route_id, status / 100), (project_id, route_id), (project_id, status / 100), (project_id),
                           (project_id, route_id, status), (project_id, status))
    -- A status below 100 (none an answer has) would take a class's row.
    HAVING EXISTS (SELECT 1 FROM projects WHERE id = project_id) AND NOT (grouping(status) = 0 AND status < 100)
    ORDER BY 1, 2, 3
    ON CONFLICT (project_id, route_id, class) DO UPDATE SET n = c.n + EXCLUDED.n;
    RETURN NULL;
END $$;

-- The runs already logged, counted by status with no run written meanwhile.
LOCK TABLE route_runs IN SHARE MODE;
INSERT INTO route_run_counts (project_id, route_id, class, n)
SELECT project_id, CASE WHEN grouping(route_id) = 1 THEN '*' ELSE route_id END, status, count(*)
FROM route_runs
WHERE status >= 100
GROUP BY GROUPING SETS ((project_id, route_id, status), (project_id, status));
