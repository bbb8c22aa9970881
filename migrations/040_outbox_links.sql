-- A platform message (invitation, reset) keeps its one-time link sealed
-- with the active vault key while it waits (docs/mail.md); its text and
-- HTML hold a marker where the link goes, and the seal is cleared once it
-- is sent, fails for good or is cancelled. Messages of the platform that
-- ended before this holding a link in clear keep none.
ALTER TABLE outbox ADD COLUMN link_key_id text;
ALTER TABLE outbox ADD COLUMN link_sealed bytea;

UPDATE outbox SET text = '(removed after delivery: the message held a one-time link)', html = NULL
WHERE kind <> 'route' AND status IN ('failed', 'cancelled');
