-- The run log keeps every run of a route up to a rate, and a sample of the
-- successful runs past it (docs/routes.md): a kept run of the sample
-- stands for sample_rate runs (1 in sample_rate kept), every other run
-- for itself. Analytics count every run whatever the log keeps. A
-- constant default: adding the column does not rewrite the log.
ALTER TABLE route_runs ADD COLUMN sample_rate integer NOT NULL DEFAULT 1 CHECK (sample_rate >= 1);
