-- A run can be opened: its query string, the message a FAIL answered with,
-- whether it was a dry run, and for runs made from the playground the
-- trace shown there and the body sent, so that it can be replayed.
ALTER TABLE route_runs
    ADD COLUMN query   text NOT NULL DEFAULT '',
    ADD COLUMN message text NOT NULL DEFAULT '',
    ADD COLUMN dry_run boolean NOT NULL DEFAULT false,
    ADD COLUMN trace   jsonb,
    ADD COLUMN body    text;
