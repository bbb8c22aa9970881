-- The vault's access log keeps the ids of the user and the token that made
-- each access, also after they are gone (ids are never reused; the row
-- keeps the username too): an audit trail names who acted, and deleting an
-- account no longer rewrites it. Without these two foreign keys, a logged
-- read no longer checks both ids row by row, which was a fifth of the
-- database's work in an audited read (docs/performance.md). The project's
-- key stays: a project's log goes with the project.
ALTER TABLE vault_access_log DROP CONSTRAINT vault_access_log_user_id_fkey,
    DROP CONSTRAINT vault_access_log_token_id_fkey;
