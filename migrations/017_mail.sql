-- Mail (docs/mail.md): a project's email templates, the outbox's delivery
-- state, invitations and password resets.

CREATE TABLE email_templates (
    project_id text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    name       text NOT NULL CHECK (name ~ '^[a-z][a-z0-9_]{2,49}$'),
    subject    text NOT NULL,
    text       text NOT NULL,
    html       text NOT NULL DEFAULT '',
    created_by bigint REFERENCES users (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (project_id, name)
);

-- A message of the outbox is an EMAIL block's (project, route, template and
-- pairs; rendered when it is taken) or the platform's own (an invitation,
-- a password reset: rendered when queued, project_id empty for a reset).
-- A message being delivered keeps status queued: taking it moves
-- next_attempt_at past the delivery's end, so that a message whose
-- instance died is taken again when that time comes.
ALTER TABLE outbox
    ALTER COLUMN project_id DROP NOT NULL,
    ALTER COLUMN route_id SET DEFAULT '',
    ADD COLUMN kind            text NOT NULL DEFAULT 'route' CHECK (kind IN ('route', 'invite', 'reset')),
    ADD COLUMN status          text NOT NULL DEFAULT 'queued'
        CHECK (status IN ('held', 'queued', 'sent', 'failed', 'cancelled')),
    ADD COLUMN attempts        integer NOT NULL DEFAULT 0,
    ADD COLUMN next_attempt_at timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN last_error      text NOT NULL DEFAULT '',
    ADD COLUMN reply           text NOT NULL DEFAULT '',
    ADD COLUMN subject         text,
    ADD COLUMN text            text,
    ADD COLUMN html            text;

UPDATE outbox SET status = 'sent' WHERE sent_at IS NOT NULL;

DROP INDEX outbox_waiting_idx;
CREATE INDEX outbox_due_idx ON outbox (next_attempt_at) WHERE status = 'queued';
CREATE INDEX outbox_project_idx ON outbox (project_id, id);

-- Invitations: the token is kept as its SHA-256 only.
CREATE TABLE invitations (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    project_id  text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    email       text NOT NULL,
    role        text NOT NULL CHECK (role IN ('ROOT', 'ADMIN', 'AUTHOR', 'VIEWER')),
    token_hash  bytea NOT NULL UNIQUE,
    invited_by  bigint REFERENCES users (id) ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL,
    accepted_at timestamptz,
    accepted_by bigint REFERENCES users (id) ON DELETE SET NULL,
    revoked_at  timestamptz
);

CREATE INDEX invitations_project_idx ON invitations (project_id, id);

-- Password resets: likewise, one use, an hour.
CREATE TABLE password_resets (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_id    bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    token_hash bytea NOT NULL UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
