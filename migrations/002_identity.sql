-- Users, projects and their members, personal access tokens, configs and
-- login attempts (docs/security.md, §4). Every uniqueness rule is a constraint here.

CREATE TABLE users (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    first_name      text NOT NULL DEFAULT '' CHECK (length(first_name) <= 100),
    last_name       text NOT NULL DEFAULT '' CHECK (length(last_name) <= 100),
    username        text NOT NULL CHECK (username ~ '^[A-Za-z0-9][A-Za-z0-9_.-]{2,49}$'),
    email           text NOT NULL CHECK (length(email) <= 254 AND email LIKE '%_@_%'),
    password_hash   text NOT NULL,
    role            text NOT NULL CHECK (role IN ('ROOT', 'ADMIN', 'AUTHOR', 'VIEWER')),
    bio             text NOT NULL DEFAULT '',
    profile_picture text NOT NULL DEFAULT '',
    is_public       boolean NOT NULL DEFAULT false,
    links           text[] NOT NULL DEFAULT '{}',
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);

CREATE UNIQUE INDEX users_username_key ON users (lower(username));
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

CREATE TABLE projects (
    id          text PRIMARY KEY CHECK (id ~ '^[a-z][a-z0-9_]{2,49}$'),
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    description text NOT NULL DEFAULT '' CHECK (length(description) <= 1000),
    api_path    text NOT NULL CONSTRAINT projects_api_path_key UNIQUE
                CHECK (api_path ~ '^/[A-Za-z0-9_/-]{0,199}$'),
    created_by  bigint REFERENCES users (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE project_members (
    project_id text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    user_id    bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    added_at   timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT project_members_pkey PRIMARY KEY (project_id, user_id)
);

CREATE INDEX project_members_user_idx ON project_members (user_id);

CREATE TABLE personal_access_tokens (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id      bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 100),
    token_hash   bytea NOT NULL CONSTRAINT personal_access_tokens_hash_key UNIQUE CHECK (length(token_hash) = 32),
    hint         text NOT NULL,
    valid_from   timestamptz NOT NULL DEFAULT now(),
    valid_to     timestamptz CHECK (valid_to IS NULL OR valid_to > valid_from),
    last_used_at timestamptz,
    revoked_at   timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX personal_access_tokens_user_idx ON personal_access_tokens (user_id);

CREATE TABLE configs (
    key        text PRIMARY KEY CHECK (key ~ '^[A-Za-z][A-Za-z0-9_.-]{0,99}$'),
    value      text NOT NULL CHECK (length(value) <= 10000),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- One row per failed login, per scope ("account:<id or name>", "addr:<ip>");
-- rows older than the longest window are deleted by housekeeping.
CREATE TABLE login_attempts (
    scope        text NOT NULL,
    attempted_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX login_attempts_scope_time_idx ON login_attempts (scope, attempted_at);
