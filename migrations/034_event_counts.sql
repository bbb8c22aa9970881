-- The event log's amount (docs/events.md): its events by project and type,
-- kept as rows of deltas that statement triggers on events insert. A change
-- only ever inserts a row here, never updates one, so changes of a project
-- at once never wait on each other over a count, and a repeatable-read
-- transaction (a project file's apply) never fails to serialize on one. The
-- housekeeping folds the rows into one a project and type (store.Sweep). An
-- event of no project counts under ''.
CREATE TABLE event_counts (
    project_id text NOT NULL,
    type       text NOT NULL,
    n          bigint NOT NULL
);

CREATE INDEX event_counts_key_idx ON event_counts (project_id, type);

CREATE FUNCTION count_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO event_counts (project_id, type, n)
            SELECT coalesce(project_id, ''), type, count(*) FROM new_events GROUP BY 1, 2;
    ELSE
        INSERT INTO event_counts (project_id, type, n)
            SELECT coalesce(project_id, ''), type, -count(*) FROM old_events GROUP BY 1, 2;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER events_count_insert AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_events FOR EACH STATEMENT EXECUTE FUNCTION count_events();
CREATE TRIGGER events_count_delete AFTER DELETE ON events
    REFERENCING OLD TABLE AS old_events FOR EACH STATEMENT EXECUTE FUNCTION count_events();

-- The events written before: the triggers above hold writers of events back
-- until this commits, so none is missed or counted twice.
INSERT INTO event_counts (project_id, type, n)
    SELECT coalesce(project_id, ''), type, count(*) FROM events GROUP BY 1, 2;
