-- The run log and the event log, partitioned by day (docs/operations.md):
-- retention drops a day's partition whole instead of deleting its rows
-- one by one, so keeping 7 days of runs (90 of events) costs the same at
-- a million rows or a billion. Each log's rows so far are not moved: the
-- old table becomes the partition of everything before the bound its
-- constraint proves (migrations 047, 048), attached without being read,
-- and its indexes become the partitioned indexes' own without a rebuild.
-- Days after the bound get a partition each, made two days ahead by the
-- service (store.EnsurePartitions). There is no default partition: its
-- scan would join every read of a log, in a plan that then sorts all the
-- rows it matches; a log's rows are written now, inside the partitions
-- kept, whose oldest is a week old. The counts kept with each log gain the day of the rows
-- they count, so that dropping a day's partition drops its counts; the
-- counts kept so far stand under the day -infinity.

-- The run log.
ALTER TABLE route_runs RENAME TO route_runs_legacy;
ALTER INDEX route_runs_project_idx RENAME TO route_runs_project_idx_legacy;
ALTER INDEX route_runs_route_idx RENAME TO route_runs_route_idx_legacy;
ALTER INDEX route_runs_class_idx RENAME TO route_runs_class_idx_legacy;
ALTER INDEX route_runs_status_idx RENAME TO route_runs_status_idx_legacy;
ALTER INDEX route_runs_user_idx RENAME TO route_runs_user_idx_legacy;
ALTER INDEX route_runs_at_idx RENAME TO route_runs_at_idx_legacy;
DROP TRIGGER route_run_counts_insert ON route_runs_legacy;
DROP TRIGGER route_run_counts_delete ON route_runs_legacy;
CREATE TABLE route_runs (LIKE route_runs_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING IDENTITY) PARTITION BY RANGE (at);
ALTER TABLE route_runs DROP CONSTRAINT route_runs_before_partitions;
ALTER TABLE route_runs_legacy ALTER COLUMN id DROP IDENTITY;
DO $$
BEGIN
    EXECUTE format('ALTER TABLE route_runs ALTER COLUMN id RESTART WITH %s', coalesce((SELECT max(id) FROM route_runs_legacy), 0) + 1);
    EXECUTE format('ALTER TABLE route_runs ATTACH PARTITION route_runs_legacy FOR VALUES FROM (MINVALUE) TO (%L)',
        (SELECT substring(pg_get_constraintdef(oid) FROM '''([^'']+)''') FROM pg_constraint
         WHERE conname = 'route_runs_before_partitions' AND conrelid = 'route_runs_legacy'::regclass)::timestamptz);
END $$;
CREATE INDEX route_runs_project_idx ON route_runs (project_id, id DESC);
CREATE INDEX route_runs_route_idx ON route_runs (project_id, route_id, id DESC);
CREATE INDEX route_runs_class_idx ON route_runs (project_id, (status / 100), id DESC);
CREATE INDEX route_runs_status_idx ON route_runs (project_id, status, id DESC);
CREATE INDEX route_runs_user_idx ON route_runs (user_id) WHERE user_id IS NOT NULL;
CREATE INDEX route_runs_at_idx ON route_runs USING brin (at);

ALTER TABLE route_run_counts ADD COLUMN day date NOT NULL DEFAULT '-infinity';
ALTER TABLE route_run_counts DROP CONSTRAINT route_run_counts_pkey;
ALTER TABLE route_run_counts ADD PRIMARY KEY (project_id, route_id, class, day);
CREATE OR REPLACE FUNCTION route_run_counts_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    sign integer := CASE TG_OP WHEN 'INSERT' THEN 1 ELSE -1 END;
BEGIN
    INSERT INTO route_run_counts AS c (project_id, route_id, class, day, n)
    SELECT project_id, CASE WHEN grouping(route_id) = 1 THEN '*' ELSE route_id END,
           CASE WHEN grouping(status / 100) = 0 THEN status / 100 WHEN grouping(status) = 0 THEN status ELSE -1 END, day, sign * count(*)
    FROM (SELECT project_id, route_id, status, (at AT TIME ZONE 'UTC')::date AS day FROM runs) r
    GROUP BY GROUPING SETS ((day, project_id, route_id, status / 100), (day, project_id, route_id), (day, project_id, status / 100), (day, project_id),
                           (day, project_id, route_id, status), (day, project_id, status))
    -- A status below 100 (none an answer has) would take a class's row.
    HAVING EXISTS (SELECT 1 FROM projects WHERE id = project_id) AND NOT (grouping(status) = 0 AND status < 100)
    ORDER BY 1, 2, 3, 4
    ON CONFLICT (project_id, route_id, class, day) DO UPDATE SET n = c.n + EXCLUDED.n;
    RETURN NULL;
END $$;
CREATE TRIGGER route_run_counts_insert AFTER INSERT ON route_runs
    REFERENCING NEW TABLE AS runs FOR EACH STATEMENT EXECUTE FUNCTION route_run_counts_change();
CREATE TRIGGER route_run_counts_delete AFTER DELETE ON route_runs
    REFERENCING OLD TABLE AS runs FOR EACH STATEMENT EXECUTE FUNCTION route_run_counts_change();

-- The event log.
ALTER TABLE events RENAME TO events_legacy;
ALTER INDEX events_at_idx RENAME TO events_at_idx_legacy;
ALTER INDEX events_project_idx RENAME TO events_project_idx_legacy;
ALTER INDEX events_project_type_idx RENAME TO events_project_type_idx_legacy;
ALTER INDEX events_project_uid_idx RENAME TO events_project_uid_idx_legacy;
ALTER INDEX events_uid_idx RENAME TO events_uid_idx_legacy;
DROP TRIGGER events_count_insert ON events_legacy;
DROP TRIGGER events_count_delete ON events_legacy;
CREATE TABLE events (LIKE events_legacy INCLUDING DEFAULTS INCLUDING CONSTRAINTS INCLUDING IDENTITY) PARTITION BY RANGE (at);
ALTER TABLE events DROP CONSTRAINT events_before_partitions;
ALTER TABLE events_legacy ALTER COLUMN id DROP IDENTITY;
DO $$
BEGIN
    EXECUTE format('ALTER TABLE events ALTER COLUMN id RESTART WITH %s', coalesce((SELECT max(id) FROM events_legacy), 0) + 1);
    EXECUTE format('ALTER TABLE events ATTACH PARTITION events_legacy FOR VALUES FROM (MINVALUE) TO (%L)',
        (SELECT substring(pg_get_constraintdef(oid) FROM '''([^'']+)''') FROM pg_constraint
         WHERE conname = 'events_before_partitions' AND conrelid = 'events_legacy'::regclass)::timestamptz);
END $$;
CREATE INDEX events_at_idx ON events (at);
CREATE INDEX events_project_idx ON events (project_id, id DESC);
CREATE INDEX events_project_type_idx ON events (project_id, type, id DESC);
CREATE INDEX events_project_uid_idx ON events (project_id, uid, id DESC);
CREATE INDEX events_uid_idx ON events (uid, id DESC);

ALTER TABLE event_counts ADD COLUMN day date NOT NULL DEFAULT '-infinity';
CREATE OR REPLACE FUNCTION count_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO event_counts (project_id, type, day, n)
            SELECT coalesce(project_id, ''), type, (at AT TIME ZONE 'UTC')::date, count(*) FROM new_events GROUP BY 1, 2, 3;
    ELSE
        INSERT INTO event_counts (project_id, type, day, n)
            SELECT coalesce(project_id, ''), type, (at AT TIME ZONE 'UTC')::date, -count(*) FROM old_events GROUP BY 1, 2, 3;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER events_count_insert AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION count_events();
CREATE TRIGGER events_count_delete AFTER DELETE ON events
    REFERENCING OLD TABLE AS old_events FOR EACH STATEMENT EXECUTE FUNCTION count_events();
