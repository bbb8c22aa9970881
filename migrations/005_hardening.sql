-- Hardening (issue 8): credential versions end old tokens and sessions when
-- a password changes; sessions are kept by the SHA-256 of their token, so the
-- tokens stored before this change cannot be used and are dropped.

ALTER TABLE users ADD COLUMN credential_version integer NOT NULL DEFAULT 1;

DELETE FROM sessions;

-- A reserved attempt is a row from before the password check; a success
-- removes it again (by id).
ALTER TABLE login_attempts ADD COLUMN id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY;
CREATE INDEX login_attempts_time_idx ON login_attempts (attempted_at);
