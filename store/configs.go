package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Config is one platform setting.
type Config struct {
	Key       string
	Value     string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// CreateConfig inserts c; an existing key is a conflict on configs_pkey.
func (s *Store) CreateConfig(ctx context.Context, c *Config) (err error) {
	defer wrap(&err, "create config")
	return s.change(ctx, func(tx *Store) (Event, error) {
		err := tx.db.QueryRow(ctx, "INSERT INTO configs (key, value) VALUES ($1, $2) RETURNING created_at, updated_at", c.Key, c.Value).
			Scan(&c.CreatedAt, &c.UpdatedAt)
		return configEvent("create", c.Key, "config "+c.Key+" created"), translate(err)
	})
}

// configEvent tells of a change of config key; the summary leaves its value
// out, which may be a credential.
func configEvent(verb, key, summary string) Event {
	return Event{Type: "config_" + verb, Object: key, Summary: summary}
}

// ConfigByKey returns config key.
func (s *Store) ConfigByKey(ctx context.Context, key string) (_ Config, err error) {
	defer wrap(&err, "config by key", key)
	var c Config
	err = s.db.QueryRow(ctx, "SELECT key, value, created_at, updated_at FROM configs WHERE key = $1", key).
		Scan(&c.Key, &c.Value, &c.CreatedAt, &c.UpdatedAt)
	return c, translate(err)
}

// ListConfigs returns a page of configs whose key contains the filter,
// ordered by key, and the number of matches.
func (s *Store) ListConfigs(ctx context.Context, p Page) (_ []Config, _ int, err error) {
	defer wrap(&err, "list configs")
	const where = " WHERE $1 = '' OR strpos(lower(key), lower($1)) > 0"
	var total int
	if err := s.db.QueryRow(ctx, "SELECT count(*) FROM configs"+where, p.Filter).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := s.db.Query(ctx, "SELECT key, value, created_at, updated_at FROM configs"+where+" ORDER BY key OFFSET $2 LIMIT $3",
		p.Filter, p.Offset, p.Limit)
	if err != nil {
		return nil, 0, err
	}
	configs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Config])
	return configs, total, err
}

// UpdateConfig sets the value of an existing config.
func (s *Store) UpdateConfig(ctx context.Context, c *Config) (err error) {
	defer wrap(&err, "update config")
	return s.change(ctx, func(tx *Store) (Event, error) {
		err := tx.db.QueryRow(ctx, "UPDATE configs SET value = $2, updated_at = now() WHERE key = $1 RETURNING created_at, updated_at",
			c.Key, c.Value).Scan(&c.CreatedAt, &c.UpdatedAt)
		return configEvent("update", c.Key, "config "+c.Key+" changed"), translate(err)
	})
}

// DeleteConfig removes config key.
func (s *Store) DeleteConfig(ctx context.Context, key string) (err error) {
	defer wrap(&err, "delete config", key)
	return s.change(ctx, func(tx *Store) (Event, error) {
		tag, err := tx.db.Exec(ctx, "DELETE FROM configs WHERE key = $1", key)
		if err == nil && tag.RowsAffected() == 0 {
			err = ErrNotFound
		}
		return configEvent("delete", key, "config "+key+" deleted"), err
	})
}
