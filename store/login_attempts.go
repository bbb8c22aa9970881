package store

import (
	"context"
	"slices"
	"strings"
	"time"
)

// LoginLimit is how many failures a scope may have inside a window.
type LoginLimit struct {
	Scope string
	Max   int
}

// LoginLocked reports a scope over its limit, and when its oldest failure
// in the window was.
type LoginLocked struct {
	Scope  string
	Oldest time.Time
}

// ReserveLoginAttempt counts one attempt against every scope before the
// password is checked, unless a scope already has its limit of failures
// since since: then nothing is written and the locked scope is returned.
// Scopes are locked in a fixed order for the transaction, so concurrent
// attempts are counted one after the other. The ids of the rows written
// are returned for ForgetLoginAttempts.
func (s *Store) ReserveLoginAttempt(ctx context.Context, limits []LoginLimit, since time.Time) (_ []int64, _ *LoginLocked, err error) {
	defer wrap(&err, "reserve login attempt")
	var ids []int64
	var locked *LoginLocked
	err = s.InTx(ctx, func(tx *Store) error {
		var err error
		ids, locked, err = tx.reserveAttempts(ctx, limits, since)
		return err
	})
	return ids, locked, err
}

// reserveAttempts is ReserveLoginAttempt inside a transaction.
func (s *Store) reserveAttempts(ctx context.Context, limits []LoginLimit, since time.Time) ([]int64, *LoginLocked, error) {
	limits = slices.Clone(limits)
	slices.SortFunc(limits, func(a, b LoginLimit) int { return strings.Compare(a.Scope, b.Scope) })
	scopes := make([]string, len(limits))
	for i, l := range limits {
		scopes[i] = l.Scope
	}
	var ids []int64
	var locked *LoginLocked
	err := func(tx *Store) error {
		if _, err := tx.db.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended(s, 8)) FROM unnest($1::text[]) AS t(s)", scopes); err != nil {
			return err
		}
		rows, err := tx.db.Query(ctx, `SELECT scope, count(*), min(attempted_at) FROM login_attempts
			WHERE scope = ANY($1) AND attempted_at > $2 GROUP BY scope`, scopes, since)
		if err != nil {
			return err
		}
		counts := map[string]int{}
		oldest := map[string]time.Time{}
		for rows.Next() {
			var scope string
			var n int
			var t time.Time
			if err := rows.Scan(&scope, &n, &t); err != nil {
				return err
			}
			counts[scope], oldest[scope] = n, t
		}
		if err := rows.Err(); err != nil {
			return err
		}
		for _, l := range limits {
			if counts[l.Scope] >= l.Max {
				locked = &LoginLocked{Scope: l.Scope, Oldest: oldest[l.Scope]}
				return nil
			}
		}
		rows, err = tx.db.Query(ctx, "INSERT INTO login_attempts (scope) SELECT unnest($1::text[]) RETURNING id", scopes)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		return rows.Err()
	}(s)
	return ids, locked, err
}

// ForgetLoginAttempts removes reserved attempts — after a successful
// sign-in, or one whose password was never checked — and every earlier
// failure of scope ("" for none).
func (s *Store) ForgetLoginAttempts(ctx context.Context, ids []int64, scope string) (err error) {
	defer wrap(&err, "forget login attempts")
	_, err = s.db.Exec(ctx, "DELETE FROM login_attempts WHERE id = ANY($1) OR scope = $2", ids, scope)
	return err
}

// loginAttemptsKept is how long attempts are kept: longer than any window
// that counts them.
const loginAttemptsKept = time.Hour

// Sweep deletes what has run out: browser sessions past their expiry,
// sign-in attempts past every window, runs older than RunsKept, route
// analytics older than StatsKept, events older than eventsKept, the
// deliveries of signed webhooks past deliveriesKept, schedules' ticks
// older than RunsKept and the marks of jobs' writes past jobWritesKept.
// Several instances sweeping at once is harmless.
func (s *Store) Sweep(ctx context.Context, eventsKept time.Duration) (err error) {
	defer wrap(&err, "sweep")
	if _, err := s.db.Exec(ctx, "DELETE FROM sessions WHERE expiry < current_timestamp"); err != nil {
		return err
	}
	if _, err := s.db.Exec(ctx, "DELETE FROM login_attempts WHERE attempted_at < $1", time.Now().Add(-loginAttemptsKept)); err != nil {
		return err
	}
	if _, err := s.db.Exec(ctx, "DELETE FROM x_rates WHERE tat < now() - interval '1 minute'"); err != nil {
		return err
	}
	if err := s.sweepMail(ctx); err != nil {
		return err
	}
	if err := s.EnsurePartitions(ctx); err != nil {
		return err
	}
	if err := s.sweepEvents(ctx, eventsKept); err != nil {
		return err
	}
	if err := s.foldCounts(ctx, "record_counts", "project_id, collection_id"); err != nil {
		return err
	}
	if err := s.sweepStats(ctx); err != nil {
		return err
	}
	if err := s.sweepFieldIndexes(ctx); err != nil {
		return err
	}
	if err := s.sweepDeliveries(ctx); err != nil {
		return err
	}
	if err := s.sweepTicks(ctx); err != nil {
		return err
	}
	if _, err := s.db.Exec(ctx, "DELETE FROM job_writes WHERE written_at < $1", time.Now().Add(-jobWritesKept)); err != nil {
		return err
	}
	return s.sweepLog(ctx, runLog, RunsKept)
}

// sweepBatch is how many rows of a log one statement of a sweep removes,
// and sweepRest how many times as long as a batch took the sweep rests
// after it.
const (
	sweepBatch = 500
	sweepRest  = 4
)

// sweepBatches removes the rows of a log (route_runs or events) older than
// cutoff, sweepBatch at a time, each batch its own transaction: a sweep of
// millions of rows never holds their locks, or the counts kept with them
// (migration 031), longer than one short batch takes. After each batch it
// rests sweepRest times as long as the batch took, so that a long sweep
// takes at most a fifth of one connection's time, in steps of a few
// milliseconds, from the requests served meanwhile (docs/performance.md).
func (s *Store) sweepBatches(ctx context.Context, table string, cutoff time.Time) error {
	for {
		start := time.Now()
		// at bounds the outer statement too: a partitioned log's
		// partitions are pruned to those that may hold such rows.
		tag, err := s.db.Exec(ctx, "DELETE FROM "+table+" WHERE at < $1 AND id IN (SELECT id FROM "+table+" WHERE at < $1 LIMIT $2)", cutoff, sweepBatch)
		if err != nil || tag.RowsAffected() < sweepBatch {
			return err
		}
		select {
		case <-time.After(sweepRest * time.Since(start)):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
