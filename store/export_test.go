package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// ExecForTest runs sql through the store's error translation.
func (s *Store) ExecForTest(ctx context.Context, sql string) error {
	_, err := s.db.Exec(ctx, sql)
	return translate(err)
}

// QueryRowForTest scans one text column through the store's error translation.
func (s *Store) QueryRowForTest(ctx context.Context, sql string) error {
	var v string
	return translate(s.db.QueryRow(ctx, sql).Scan(&v))
}

// ExplainVaultFilterForTest explains the statement of ListVaultEntries
// with a filter.
func (s *Store) ExplainVaultFilterForTest(ctx context.Context, project, filter string) (string, error) {
	sql, args, _, _ := vaultListSQL(project, Page{Filter: filter, Limit: 10}, nil)
	if _, ok := args[0].(pgx.QueryExecMode); !ok {
		args = append([]any{pgx.QueryExecModeExec}, args...)
	}
	rows, err := s.db.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) "+sql, args...)
	if err != nil {
		return "", err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return strings.Join(lines, "\n"), err
}

// QueryIntForTest scans one integer.
func (s *Store) QueryIntForTest(ctx context.Context, sql string, dst *int) error {
	return s.db.QueryRow(ctx, sql).Scan(dst)
}

// ExplainRecordsForTest explains Records' page statement with where, with
// its timing, as a generic plan would run after many executions too.
func (s *Store) ExplainRecordsForTest(ctx context.Context, project, collection string, where string) (string, error) {
	sql, args := recordsWhere(project, collection, []byte(where))
	rows, err := s.db.Query(ctx, "EXPLAIN (ANALYZE, BUFFERS) SELECT "+recordColumns+" FROM records"+sql+recordsOrder([]byte(where))+" OFFSET $4 LIMIT $5",
		append([]any{pgx.QueryExecModeExec}, append(args, 0, 25)...)...)
	if err != nil {
		return "", err
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return strings.Join(lines, "\n"), err
}

// QueuedVaultReadsForTest is how many vault reads wait for a worker.
func (s *Store) QueuedVaultReadsForTest() int { return len(s.groups.reads.queue) }

// CallerStatementsForTest is how many statements the store's grouped
// callers have run.
func (s *Store) CallerStatementsForTest() int64 { return s.groups.callers.statements.Load() }

// QueuedCallersForTest is how many callers wait for a worker.
func (s *Store) QueuedCallersForTest() int { return len(s.groups.callers.queue) }

// SessionStatementsForTest is how many statements the store's grouped
// session finds have run.
func (s *Store) SessionStatementsForTest() int64 { return s.groups.sessions.statements.Load() }

// QueuedSessionFindsForTest is how many session finds wait for a worker.
func (s *Store) QueuedSessionFindsForTest() int { return len(s.groups.sessions.queue) }

// QueuedRunReadsForTest is how many shared run reads wait for a statement.
func (s *Store) QueuedRunReadsForTest() int { return s.groups.runReads.waitingForTest() }

// DocumentOf is the JSON a route's save stores.
var DocumentOf = documentOf

// SpansForTest is spans, as text: "m 10:05–11:00 h 11:00–00:00 …".
func SpansForTest(from, to time.Time) string {
	var parts []string
	for _, sp := range spans(from, to) {
		parts = append(parts, string(sp.res)+" "+sp.from.Format("01-02T15:04")+"–"+sp.to.Format("01-02T15:04"))
	}
	return strings.Join(parts, " ")
}

// RunStatementsForTest returns the statements ListRuns runs for q (the
// count, then the page) and the arguments of each, as it sends them.
func RunStatementsForTest(project string, q RunQuery) (count, page string, countArgs, pageArgs []any) {
	return listForTest(runsSQL(project, q), q.Offset, q.Limit)
}

// EventStatementsForTest returns the statements Events runs for q and
// the arguments of each, as it sends them.
func EventStatementsForTest(q EventQuery) (count, page string, countArgs, pageArgs []any) {
	l, _ := eventsSQL(q)
	return listForTest(l, q.Offset, q.Limit)
}

func listForTest(l listSQL, offset, limit int) (count, page string, countArgs, pageArgs []any) {
	page, pageArgs = l.pageStatement(offset, limit)
	return l.count, page, l.args, pageArgs
}

// QueryRowForTestScan scans one row into dst.
func (s *Store) QueryRowForTestScan(ctx context.Context, sql string, dst ...any) error {
	return translate(s.db.QueryRow(ctx, sql).Scan(dst...))
}

// ExplainListForTest explains the statement of ListRecords for q, as it
// runs (planned with its values) or, generic, as a prepared statement's
// generic plan (its parameters unknown to the planner).
func (s *Store) ExplainListForTest(ctx context.Context, project, collection string, q RecordList, generic bool) (string, error) {
	sql, args := q.pageSQL(project, collection)
	return s.explainPrepared(ctx, sql, args, generic)
}

// ExplainRunReadForTest explains the statement a run's read q runs, as a
// generic plan (prepared, its parameters unknown to the planner).
func (s *Store) ExplainRunReadForTest(ctx context.Context, project, collection string, q RecordQuery) (string, error) {
	s.indexedMatch(ctx, project, collection, &q)
	sql, args := q.statement(q.shape(), project, collection)
	return s.explainPrepared(ctx, sql, args, true)
}

// explainPrepared prepares sql and explains its execution with args
// (written as literals), its plan custom or generic.
func (s *Store) explainPrepared(ctx context.Context, sql string, args []any, generic bool) (plan string, err error) {
	return s.explainPreparedWith(ctx, "COSTS OFF", sql, args, generic)
}

// explainPreparedWith is explainPrepared with EXPLAIN's options.
func (s *Store) explainPreparedWith(ctx context.Context, options, sql string, args []any, generic bool) (plan string, err error) {
	values := make([]string, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			values[i] = literal(v)
		case int:
			values[i] = strconv.Itoa(v)
		case []string:
			quoted := make([]string, len(v))
			for j, e := range v {
				quoted[j] = literal(e)
			}
			values[i] = "ARRAY[" + strings.Join(quoted, ", ") + "]"
		default:
			return "", fmt.Errorf("no literal for %T", a)
		}
	}
	mode := "force_custom_plan"
	if generic {
		mode = "force_generic_plan"
	}
	err = s.InTx(ctx, func(tx *Store) error {
		if _, err := tx.db.Exec(ctx, "SET LOCAL plan_cache_mode = "+mode); err != nil {
			return err
		}
		if _, err := tx.db.Exec(ctx, "PREPARE explained_for_test AS "+sql); err != nil {
			return err
		}
		defer tx.db.Exec(ctx, "DEALLOCATE explained_for_test")
		rows, err := tx.db.Query(ctx, "EXPLAIN ("+options+") EXECUTE explained_for_test("+strings.Join(values, ", ")+")", pgx.QueryExecModeSimpleProtocol)
		if err != nil {
			return err
		}
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		plan = strings.Join(lines, "\n")
		return err
	})
	return plan, err
}

// RunReadSQLForTest is the statement a run's read q of a collection
// runs (the field's index chosen as a run's read chooses it).
func (s *Store) RunReadSQLForTest(ctx context.Context, project, collection string, q RecordQuery) string {
	s.indexedMatch(ctx, project, collection, &q)
	sql, _ := q.statement(q.shape(), project, collection)
	return sql
}

// MigrateJobsForTest is migrateJobs on conn, for the pool URL given.
func MigrateJobsForTest(ctx context.Context, conn *pgx.Conn, databaseURL string) error {
	return migrateJobs(ctx, conn, databaseURL)
}

// ExplainFilteredPageForTest explains the statement of Records' filtered
// first page, as a generic plan.
func (s *Store) ExplainFilteredPageForTest(ctx context.Context, project, collection, where string, limit int) (string, error) {
	sql, args, ok := s.filteredPageSQL(ctx, project, collection, []byte(where), 0, limit)
	if !ok {
		return "", fmt.Errorf("no filtered page for %s", where)
	}
	return s.explainPrepared(ctx, sql, args, true)
}

// ExplainCountForTest explains CountRecords' statement for where, as a
// generic plan.
func (s *Store) ExplainCountForTest(ctx context.Context, project, collection, where string) (string, error) {
	sql, args := s.countSQL(ctx, project, collection, []byte(where))
	return s.explainPrepared(ctx, sql, args, true)
}

// ExplainCountRunForTest is ExplainCountForTest run (EXPLAIN ANALYZE): a
// part of the plan it did not need reads "never executed".
func (s *Store) ExplainCountRunForTest(ctx context.Context, project, collection, where string) (string, error) {
	sql, args := s.countSQL(ctx, project, collection, []byte(where))
	return s.explainPreparedWith(ctx, "ANALYZE, COSTS OFF, TIMING OFF", sql, args, true)
}
