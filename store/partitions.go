package store

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The run log and the event log are partitioned by day (migration 049,
// docs/operations.md). The service makes each day's partition ahead of
// it, and retention drops a day's partition whole once its last row is
// older than what the log keeps, with the counts kept of that day: a
// statement of constant cost however many rows the day held. The rows
// from before the partitioning (the legacy partition) are deleted in
// batches as before, until the partition is old enough to drop whole.

// partitionedLog is a log partitioned by day and the table of counts kept
// with it, each count row carrying its day.
type partitionedLog struct {
	table, counts string
}

var (
	runLog   = partitionedLog{table: "route_runs", counts: "route_run_counts"}
	eventLog = partitionedLog{table: "events", counts: "event_counts"}
)

// partitionsAhead is how many days after today have their partitions made
// already: a service down for a day still finds its partitions.
const partitionsAhead = 2

// partition is one partition of a log and the range of at it holds
// (from: the zero time for MINVALUE).
type partition struct {
	name     string
	from, to time.Time
}

// partitionBound reads a partition's bound as PostgreSQL writes it, in UTC.
var partitionBound = regexp.MustCompile(`^FOR VALUES FROM \((MINVALUE|'[^']+')\) TO \('([^']+)'\)$`)

// partitions lists the partitions of log l.
func (s *Store) partitions(ctx context.Context, tx pgx.Tx, l partitionedLog) ([]partition, error) {
	if _, err := tx.Exec(ctx, "SET LOCAL TimeZone = 'UTC'"); err != nil {
		return nil, err
	}
	rows, err := tx.Query(ctx, `SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = $1::regclass ORDER BY 1`, l.table)
	if err != nil {
		return nil, err
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (partition, error) {
		var p partition
		var bound string
		if err := row.Scan(&p.name, &bound); err != nil {
			return p, err
		}
		m := partitionBound.FindStringSubmatch(bound)
		if m == nil {
			return p, fmt.Errorf("partition %s: bound %q", p.name, bound)
		}
		const layout = "2006-01-02 15:04:05-07"
		var err error
		if m[1] != "MINVALUE" {
			if p.from, err = time.Parse(layout, m[1][1:len(m[1])-1]); err != nil {
				return p, err
			}
		}
		p.to, err = time.Parse(layout, m[2])
		return p, err
	})
	return list, err
}

// EnsurePartitions makes the partitions of today and the partitionsAhead
// days after it, in UTC, for each log that has none covering the day: one
// transaction a log, which lists its partitions once under an advisory
// lock, so instances doing it at once make each partition once.
func (s *Store) EnsurePartitions(ctx context.Context) (err error) {
	defer wrap(&err, "ensure partitions")
	today := Truncate(time.Now(), Day)
	for _, l := range []partitionedLog{runLog, eventLog} {
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1, 1))", l.table); err != nil {
				return err
			}
			list, err := s.partitions(ctx, tx, l)
			if err != nil {
				return err
			}
		days:
			for d := range partitionsAhead + 1 {
				day := today.AddDate(0, 0, d)
				for _, p := range list {
					if !day.Before(p.from) && day.Before(p.to) {
						continue days // covered
					}
				}
				name := fmt.Sprintf("%s_%s", l.table, day.Format("20060102"))
				if _, err := tx.Exec(ctx, fmt.Sprintf("CREATE TABLE %s PARTITION OF %s FOR VALUES FROM ('%s') TO ('%s')",
					pgx.Identifier{name}.Sanitize(), l.table, day.Format(time.RFC3339), day.AddDate(0, 0, 1).Format(time.RFC3339))); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// dropExpired drops the partitions of log l whose every row is older than
// cutoff, each with the counts of its days, and returns the start of the
// oldest day's partition kept (the zero time when none is): rows older
// than it lie in the legacy partition. Each partition is detached with
// its counts in one transaction, which holds the log's lock for a change
// of the catalog only and waits at most a second for it (a long read of
// the log holds it; a partition that cannot have it is left for the next
// sweep); the table is dropped after, in a transaction of its own, so
// that giving its files back (a time that grows with its size) holds no
// lock of the log. A table detached and not dropped (the service stopped
// between the two) is dropped by the next sweep. Instances may sweep at
// once: each partition is detached by one of them.
func (s *Store) dropExpired(ctx context.Context, l partitionedLog, cutoff time.Time) (oldest time.Time, err error) {
	var list []partition
	var detached []string
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if list, err = s.partitions(ctx, tx, l); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT relname FROM pg_class WHERE relkind = 'r' AND NOT relispartition
			AND relnamespace = current_schema()::regnamespace AND relname ~ ('^' || $1 || '_([0-9]{8}|legacy)$')`, l.table)
		if err != nil {
			return err
		}
		detached, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return time.Time{}, err
	}
	for _, p := range list {
		if p.to.After(cutoff) {
			if !p.from.IsZero() && (oldest.IsZero() || p.from.Before(oldest)) {
				oldest = p.from
			}
			continue
		}
		err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '1s'"); err != nil {
				return err
			}
			// The counts of the partition's days go with it: DETACH runs
			// no trigger. A day's count rows count rows of that day only.
			from := "-infinity"
			if !p.from.IsZero() {
				from = p.from.Format("2006-01-02")
			}
			if _, err := tx.Exec(ctx, "DELETE FROM "+l.counts+" WHERE day >= $1::date AND day < $2::date", from, p.to.Format("2006-01-02")); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "ALTER TABLE "+l.table+" DETACH PARTITION "+pgx.Identifier{p.name}.Sanitize())
			return err
		})
		// A lock not had in a second (55P03) waits for the next sweep; a
		// partition no longer there (42P01) was taken by another
		// instance's sweep, which drops it.
		var pgErr *pgconn.PgError
		switch {
		case err == nil:
			detached = append(detached, p.name)
		case ctx.Err() == nil && !(errors.As(err, &pgErr) && (pgErr.Code == "55P03" || pgErr.Code == "42P01")):
			return time.Time{}, err
		}
	}
	for _, name := range detached {
		if _, err := s.pool.Exec(ctx, "DROP TABLE IF EXISTS "+pgx.Identifier{name}.Sanitize()); err != nil {
			return time.Time{}, err
		}
	}
	return oldest, nil
}

// sweepLog removes the rows of log l older than kept: whole partitions
// where it can (dropExpired), and in batches the rows of the legacy
// partition (sweepBatches), all older than every day's partition.
func (s *Store) sweepLog(ctx context.Context, l partitionedLog, kept time.Duration) error {
	return s.sweepLogBefore(ctx, l, time.Now().Add(-kept))
}

// SweepRunLogAsOf sweeps the run log as the sweep would at now, which may
// be ahead: the load harness times retention with it (docs/performance.md).
func (s *Store) SweepRunLogAsOf(ctx context.Context, now time.Time) (err error) {
	defer wrap(&err, "sweep run log")
	return s.sweepLogBefore(ctx, runLog, now.Add(-RunsKept))
}

// sweepLogBefore removes the rows of log l older than cutoff.
func (s *Store) sweepLogBefore(ctx context.Context, l partitionedLog, cutoff time.Time) error {
	oldest, err := s.dropExpired(ctx, l, cutoff)
	if err != nil {
		return err
	}
	if !oldest.IsZero() && oldest.Before(cutoff) {
		cutoff = oldest
	}
	return s.sweepBatches(ctx, l.table, cutoff)
}

// partitionIndexes are indexes made on a partitioned log alone (ON ONLY,
// in a migration), each with its definition: buildPartitionIndexes makes
// each partition's.
var partitionIndexes = []struct{ table, index, columns string }{
	{"route_runs", "route_runs_trigger_idx", "(project_id, trigger, id DESC) WHERE trigger <> 'http'"},
}

// buildPartitionIndexes builds, CONCURRENTLY (the log's writes go on),
// each partition's index of partitionIndexes that the partition lacks,
// and attaches it: once every partition's is, the log's index is valid.
// An index a build left invalid (a stopped instance) is built again.
func buildPartitionIndexes(ctx context.Context, conn *pgx.Conn) error {
	for _, pi := range partitionIndexes {
		rows, err := conn.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
			WHERE i.inhparent = $1::regclass AND NOT EXISTS (
				SELECT 1 FROM pg_inherits ii JOIN pg_index x ON x.indexrelid = ii.inhrelid
				WHERE ii.inhparent = $2::regclass AND x.indrelid = c.oid)
			ORDER BY 1`, pi.table, pi.index)
		if err != nil {
			return err
		}
		parts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, part := range parts {
			name := pgx.Identifier{part + "_" + strings.TrimPrefix(pi.index, pi.table+"_")}.Sanitize()
			if _, err := conn.Exec(ctx, "DROP INDEX CONCURRENTLY IF EXISTS "+name); err != nil {
				return err
			}
			if _, err := conn.Exec(ctx, fmt.Sprintf("CREATE INDEX CONCURRENTLY %s ON %s %s", name, pgx.Identifier{part}.Sanitize(), pi.columns)); err != nil {
				return err
			}
			if _, err := conn.Exec(ctx, fmt.Sprintf("ALTER INDEX %s ATTACH PARTITION %s", pi.index, name)); err != nil {
				return err
			}
		}
	}
	return nil
}
