---- tern: disable-tx ----
-- Reads each log once to prove the bound of migration 047, under a lock
-- that lets rows be written and read meanwhile.
ALTER TABLE route_runs VALIDATE CONSTRAINT route_runs_before_partitions;
ALTER TABLE events VALIDATE CONSTRAINT events_before_partitions;
