---- tern: disable-tx ----
-- The run log and the event log become partitioned by day (migration 049,
-- docs/operations.md): their rows so far stay where they are, as one
-- partition of everything before a bound two days ahead, and days after
-- it get partitions of their own. Attaching the old table without reading
-- it needs a constraint that proves the bound: added here NOT VALID (a
-- moment's lock), validated in the next migration while writes go on.
DO $$
DECLARE
    bound timestamptz := date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' + interval '2 days';
BEGIN
    EXECUTE format('ALTER TABLE route_runs ADD CONSTRAINT route_runs_before_partitions CHECK (at < %L) NOT VALID', bound);
    EXECUTE format('ALTER TABLE events ADD CONSTRAINT events_before_partitions CHECK (at < %L) NOT VALID', bound);
END $$;
