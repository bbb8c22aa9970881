-- A run that writes is one SERIALIZABLE transaction, run again from its
-- start when it fails to serialize (docs/engine.md); the run log keeps one row
-- per request with the attempts it took.
ALTER TABLE route_runs ADD COLUMN attempts integer NOT NULL DEFAULT 1 CHECK (attempts >= 1);
