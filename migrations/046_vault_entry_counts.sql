-- How many entries a project's vault holds, kept on its row by the trigger
-- that bumps its vault version (migration 011): the unfiltered list's
-- amount is one row read, however many entries (docs/vaults.md). Every
-- change of entries already writes that row, so the count adds no wait.
ALTER TABLE projects ADD COLUMN vault_entries bigint NOT NULL DEFAULT 0;

CREATE OR REPLACE FUNCTION bump_vault_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        UPDATE projects p SET vault_version = vault_version + 1, vault_entries = vault_entries - g.n
            FROM (SELECT project_id, count(*) AS n FROM gone GROUP BY project_id) g WHERE p.id = g.project_id;
    ELSIF TG_OP = 'INSERT' THEN
        UPDATE projects p SET vault_version = vault_version + 1, vault_entries = vault_entries + c.n
            FROM (SELECT project_id, count(*) AS n FROM came GROUP BY project_id) c WHERE p.id = c.project_id;
    ELSE
        UPDATE projects p SET vault_version = vault_version + 1, vault_entries = vault_entries + d.n
            FROM (SELECT project_id, sum(n) AS n FROM (SELECT project_id, 1 AS n FROM came UNION ALL SELECT project_id, -1 FROM gone) x
                  GROUP BY project_id) d WHERE p.id = d.project_id;
    END IF;
    RETURN NULL;
END $$;

-- The entries already there, counted with no entry written meanwhile.
LOCK TABLE vault_entries IN SHARE MODE;
UPDATE projects p SET vault_entries = (SELECT count(*) FROM vault_entries v WHERE v.project_id = p.id);
