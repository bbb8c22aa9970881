-- While mail is held, a pending invitation keeps its link for the project's
-- page to show again (docs/mail.md): the token sealed with the active vault
-- key (AES-256-GCM, bound to the project and the address), cleared when
-- the invitation is accepted or revoked. The lookup stays by the token's
-- hash.
ALTER TABLE invitations ADD COLUMN link_key_id text;
ALTER TABLE invitations ADD COLUMN link_sealed bytea;
