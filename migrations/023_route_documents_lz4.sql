-- A route's document is written twice a save: into the route and into the
-- version the save keeps (docs/routes.md). Documents past 2 kB are compressed;
-- lz4 does it several times faster than PostgreSQL's default pglz, which
-- keeps a save with its history within 1.5 times a save without it
-- (BenchmarkRouteSave). Values already stored keep their compression. A
-- server built without lz4 keeps pglz.

DO $$
BEGIN
    ALTER TABLE routes ALTER COLUMN document SET COMPRESSION lz4;
    ALTER TABLE route_versions ALTER COLUMN document SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'lz4 is not available: route documents stay compressed with pglz';
END
$$;
