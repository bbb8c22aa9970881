-- Vaults (docs/vaults.md): one encrypted key-value store per project, and the log
-- of every access. Values are stored only sealed (AES-256-GCM), with the id
-- of the master key that sealed them.

CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE TABLE vault_entries (
    project_id text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    key        text NOT NULL CHECK (key ~ '^[A-Z][A-Z0-9_]{0,254}$'),
    key_id     text NOT NULL,
    sealed     bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    created_by bigint REFERENCES users (id) ON DELETE SET NULL,
    updated_by bigint REFERENCES users (id) ON DELETE SET NULL,
    CONSTRAINT vault_entries_pkey PRIMARY KEY (project_id, key)
);

-- Substring search on keys ("matches any part of the key").
CREATE INDEX vault_entries_key_trgm_idx ON vault_entries USING gin (key gin_trgm_ops);
-- Rotation finds the rows of retired master keys.
CREATE INDEX vault_entries_key_id_idx ON vault_entries (key_id);

CREATE TABLE vault_access_log (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at         timestamptz NOT NULL DEFAULT now(),
    user_id    bigint REFERENCES users (id) ON DELETE SET NULL,
    username   text NOT NULL,
    token_id   bigint REFERENCES personal_access_tokens (id) ON DELETE SET NULL,
    project_id text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    key        text NOT NULL,
    action     text NOT NULL CHECK (action IN ('create', 'read', 'update', 'delete')),
    channel    text NOT NULL CHECK (channel IN ('api', 'web'))
);

CREATE INDEX vault_access_log_project_idx ON vault_access_log (project_id, id DESC);
