---- tern: disable-tx ----
-- A user's events in a project, newest first (/event/fetch?project_id=&uid=),
-- without walking the project's other events. Built without blocking
-- writes; alone in its migration, as CREATE INDEX CONCURRENTLY must be.
CREATE INDEX CONCURRENTLY IF NOT EXISTS events_project_uid_idx ON events (project_id, uid, id DESC);
