-- Deleting a vault entry is permanent (docs/vaults.md): the entry and every
-- version it kept go in one transaction, and its key can be created again
-- at once. The trash goes: what it held was deleted by its owners, so it is
-- destroyed here with the versions it kept. Access-log rows that say
-- `undelete` or `destroy` stay, as the record of what was done.

DELETE FROM vault_versions v USING vault_trash t WHERE v.project_id = t.project_id AND v.key = t.key;
-- Versions whose entry is gone by any other path go too.
DELETE FROM vault_versions v WHERE NOT EXISTS (SELECT 1 FROM vault_entries e WHERE e.project_id = v.project_id AND e.key = v.key);
DROP TABLE vault_trash;
