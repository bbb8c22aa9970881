-- A project's vault version grows with every statement that changes its
-- entries, in that statement's transaction. Each request reads it with its
-- caller, so an instance can keep a masked page of entries for as long as
-- the version it was read at is the one the request sees.
ALTER TABLE projects ADD COLUMN vault_version bigint NOT NULL DEFAULT 1;

-- One bump per project per statement: a key rotation that rewrites every
-- entry writes each project's row once.
CREATE FUNCTION bump_vault_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        UPDATE projects SET vault_version = vault_version + 1
            WHERE id IN (SELECT DISTINCT project_id FROM gone);
    ELSIF TG_OP = 'INSERT' THEN
        UPDATE projects SET vault_version = vault_version + 1
            WHERE id IN (SELECT DISTINCT project_id FROM came);
    ELSE
        UPDATE projects SET vault_version = vault_version + 1
            WHERE id IN (SELECT project_id FROM came UNION SELECT project_id FROM gone);
    END IF;
    RETURN NULL;
END $$;

CREATE TRIGGER vault_entries_inserted AFTER INSERT ON vault_entries
    REFERENCING NEW TABLE AS came FOR EACH STATEMENT EXECUTE FUNCTION bump_vault_version();
CREATE TRIGGER vault_entries_updated AFTER UPDATE ON vault_entries
    REFERENCING OLD TABLE AS gone NEW TABLE AS came FOR EACH STATEMENT EXECUTE FUNCTION bump_vault_version();
CREATE TRIGGER vault_entries_deleted AFTER DELETE ON vault_entries
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION bump_vault_version();
