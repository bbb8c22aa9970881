-- Sessions are now encoded as JSON (strings and integers apart): those
-- written in the former gob encoding cannot be read, so their holders sign in
-- again.

DELETE FROM sessions;
