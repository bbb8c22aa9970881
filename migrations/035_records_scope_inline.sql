-- records_scope (migration 032) is read for every match of a containment
-- filter: jsonb_path_ops keys are hashes, so each row the GIN index gives
-- is checked again by computing the function. Its body called
-- jsonb_build_object, which is STABLE, and PostgreSQL inlines an IMMUTABLE
-- SQL function only when its body is immutable too: each check ran the
-- function through the SQL function executor and rebuilt the document
-- twice, five times the cost of the containment itself (docs/performance.md).
--
-- Now the scope is one key, "<project>/<collection>" (neither id can hold
-- a "/"), set by jsonb_set, which is IMMUTABLE: the body is inlined and
-- the document rebuilt once. The index keeps its name and is built again
-- for the new shape.
CREATE OR REPLACE FUNCTION records_scope(project text, collection text, data jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN jsonb_set('{}'::jsonb, ARRAY[project || '/' || collection], data);

REINDEX INDEX records_scope_idx;
