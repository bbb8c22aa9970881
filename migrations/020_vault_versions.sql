-- Vault versions (docs/vaults.md). The live value of an entry stays alone in
-- vault_entries, so that reading it costs what it did; an update moves the
-- value it replaces to vault_versions (the last VAULT_VERSIONS of them are
-- kept, 10 by default). A deleted entry moves to vault_trash with its
-- versions left where they are, and can be undeleted for 7 days; then, or
-- when destroyed, every version goes. Rotation re-encrypts all three.

ALTER TABLE vault_entries ADD COLUMN version bigint NOT NULL DEFAULT 1;

CREATE TABLE vault_versions (
    project_id text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    key        text NOT NULL,
    version    bigint NOT NULL CHECK (version >= 1),
    key_id     text NOT NULL,
    sealed     bytea NOT NULL,
    set_at     timestamptz NOT NULL, -- when this value became the live one
    set_by     bigint REFERENCES users (id) ON DELETE SET NULL,
    PRIMARY KEY (project_id, key, version)
);

CREATE INDEX vault_versions_key_id_idx ON vault_versions (key_id);

CREATE TABLE vault_trash (
    project_id text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    key        text NOT NULL,
    version    bigint NOT NULL,
    key_id     text NOT NULL,
    sealed     bytea NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    created_by bigint REFERENCES users (id) ON DELETE SET NULL,
    updated_by bigint REFERENCES users (id) ON DELETE SET NULL,
    deleted_at timestamptz NOT NULL DEFAULT now(),
    deleted_by bigint REFERENCES users (id) ON DELETE SET NULL,
    PRIMARY KEY (project_id, key)
);

CREATE INDEX vault_trash_key_id_idx ON vault_trash (key_id);
CREATE INDEX vault_trash_deleted_at_idx ON vault_trash (deleted_at);

-- A read of an older version is logged with its number; restoring,
-- undeleting and destroying are logged as what they are.
ALTER TABLE vault_access_log ADD COLUMN version bigint;
ALTER TABLE vault_access_log DROP CONSTRAINT vault_access_log_action_check;
ALTER TABLE vault_access_log ADD CONSTRAINT vault_access_log_action_check
    CHECK (action IN ('create', 'read', 'update', 'delete', 'restore', 'undelete', 'destroy'));
