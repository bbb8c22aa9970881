-- Performance (issue 9). Key filters of three characters and more use a
-- trigram index that starts with the project, so a filter in a small project
-- never walks the trigrams of a large one; shorter filters walk the project's
-- keys in order. Template lists are ordered by an index.

CREATE EXTENSION IF NOT EXISTS btree_gin;

CREATE INDEX vault_entries_project_key_trgm_idx ON vault_entries USING gin (project_id, key gin_trgm_ops);
DROP INDEX vault_entries_key_trgm_idx;

CREATE INDEX route_templates_order_idx ON route_templates (project_id NULLS FIRST, lower(name));
