-- Route analytics (docs/routes.md): runs counted by project, route and
-- method, per minute (kept 48 hours), hour and day (kept 90 days), each
-- row the requests of each status class and a latency histogram. A row
-- with route_id '' (and method '') counts all the project's routes. The
-- histogram is [first bucket, count, count, …] over the buckets of
-- package stats; requests refused by the rate limit are not in it.
CREATE TABLE route_stats (
    project_id text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    resolution "char" NOT NULL CHECK (resolution IN ('m', 'h', 'd')),
    route_id   text NOT NULL,
    at         timestamptz NOT NULL,
    method     text NOT NULL,
    n2xx       bigint NOT NULL DEFAULT 0,
    n3xx       bigint NOT NULL DEFAULT 0,
    n4xx       bigint NOT NULL DEFAULT 0,
    n5xx       bigint NOT NULL DEFAULT 0,
    limited    bigint NOT NULL DEFAULT 0,
    busy       bigint NOT NULL DEFAULT 0,
    latency    bigint[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (project_id, resolution, route_id, at, method)
);

-- A range of a project's routes (the routes table of /route/stats), and
-- the sweep, by age.
CREATE INDEX route_stats_range_idx ON route_stats (project_id, resolution, at);
CREATE INDEX route_stats_at_idx ON route_stats (resolution, at);

-- latency_add adds two histograms of route_stats.latency, bucket by bucket
-- (a[1] is a's first bucket: bucket i is a[i - a[1] + 2]).
CREATE FUNCTION latency_add(a bigint[], b bigint[]) RETURNS bigint[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE
        WHEN coalesce(cardinality(a), 0) < 2 THEN b
        WHEN coalesce(cardinality(b), 0) < 2 THEN a
        ELSE (SELECT array_prepend(r.lo, array_agg(coalesce(CASE WHEN i >= a[1] THEN a[(i - a[1] + 2)::int] END, 0)
                                                  + coalesce(CASE WHEN i >= b[1] THEN b[(i - b[1] + 2)::int] END, 0) ORDER BY i))
              FROM (SELECT least(a[1], b[1]) AS lo, greatest(a[1] + cardinality(a), b[1] + cardinality(b)) - 2 AS hi) AS r,
                   generate_series(r.lo, r.hi) AS i
              GROUP BY r.lo)
    END
$$;
