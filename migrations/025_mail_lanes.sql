-- Mail's bounds and lanes (docs/mail.md). The platform's own messages
-- (invitations, resets) are taken before routes' messages, from an index
-- of their own, so that a flood of route mail never holds them up; a
-- project's waiting messages are counted on an index of their own when a
-- route queues one (a project may have MAIL_BACKLOG waiting).
CREATE INDEX outbox_platform_due_idx ON outbox (next_attempt_at) WHERE status = 'queued' AND kind <> 'route';
CREATE INDEX outbox_project_waiting_idx ON outbox (project_id) WHERE status IN ('held', 'queued');
