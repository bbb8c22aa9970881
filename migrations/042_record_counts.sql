-- How many records each collection holds (docs/collections.md), kept as
-- rows of deltas that statement triggers on records insert, as the event
-- log's counts are (migration 034): a write only ever inserts a row here,
-- so writers never wait on each other over a count, and a serializable
-- run never fails to serialize on one. A list of collections, and the
-- amount of a collection's records, read these rows rather than count
-- the records. The housekeeping folds them into one a collection
-- (store.Sweep).
CREATE TABLE record_counts (
    project_id    text NOT NULL,
    collection_id text NOT NULL,
    n             bigint NOT NULL
);

CREATE INDEX record_counts_key_idx ON record_counts (project_id, collection_id);

CREATE FUNCTION count_records() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO record_counts (project_id, collection_id, n)
            SELECT project_id, collection_id, count(*) FROM new_records GROUP BY 1, 2;
    ELSE
        INSERT INTO record_counts (project_id, collection_id, n)
            SELECT project_id, collection_id, -count(*) FROM old_records GROUP BY 1, 2;
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER records_count_insert AFTER INSERT ON records
    REFERENCING NEW TABLE AS new_records FOR EACH STATEMENT EXECUTE FUNCTION count_records();
CREATE TRIGGER records_count_delete AFTER DELETE ON records
    REFERENCING OLD TABLE AS old_records FOR EACH STATEMENT EXECUTE FUNCTION count_records();

-- The records written before: the triggers above hold writers of records
-- back until this commits, so none is missed or counted twice.
INSERT INTO record_counts (project_id, collection_id, n)
    SELECT project_id, collection_id, count(*) FROM records GROUP BY 1, 2;
