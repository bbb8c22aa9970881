-- Containment filters (`match`, `where`) read a GIN index whose keys name
-- the project and the collection with each path and value: the records of
-- one collection holding {"status":"rare"} are one posting list. The
-- index it replaces kept the project and the collection as keys of their
-- own, each listing every record of the collection, so a rare value's
-- read grew with the collection (docs/performance.md).
--
-- records_scope(p, c, d) is {p: {c: d}}. jsonb_build_object is only
-- STABLE because some argument types print by settings; text keys and a
-- jsonb value never do, so this use of it is IMMUTABLE.
CREATE FUNCTION records_scope(project text, collection text, data jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN jsonb_build_object(project, jsonb_build_object(collection, data));

CREATE INDEX records_scope_idx ON records USING gin (records_scope(project_id, collection_id, data) jsonb_path_ops);
DROP INDEX records_data_idx;
