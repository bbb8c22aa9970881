-- An export of the .env file and an import of one are each logged as one
-- row of their own (action export or import, key '', keys: how many keys
-- it read or wrote) besides the row of each value read or written, which
-- carries the batch row's id in batch (docs/vaults.md). Both columns are
-- nullable without a default: adding them does not rewrite the log.
ALTER TABLE vault_access_log ADD COLUMN batch bigint;
ALTER TABLE vault_access_log ADD COLUMN keys integer;
ALTER TABLE vault_access_log DROP CONSTRAINT vault_access_log_action_check;
ALTER TABLE vault_access_log ADD CONSTRAINT vault_access_log_action_check
    CHECK (action IN ('create', 'read', 'update', 'delete', 'restore', 'undelete', 'destroy', 'export', 'import'));
-- The rows of one batch, for the log's page that unfolds it.
CREATE INDEX vault_access_log_batch_idx ON vault_access_log (batch) WHERE batch IS NOT NULL;
