package store

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// The lists of the logs (the run log, the event log): a page's keyset,
// a list's statements, and how they run.

// Keyset is a page's place in a log listed newest first by id, however
// deep: Before takes the rows older than that id (the next page), After
// the rows newer (the page before), both the rows between; each read by
// the log's index and then paged by offset and limit. Neither changes
// the count.
type Keyset struct {
	Before int64
	After  int64
}

// bound is the keyset's conditions on column id ("" for none), their
// arguments numbered from n, and the order the page reads in: newest
// first, or oldest first for After alone (the caller turns the rows
// round).
func (k Keyset) bound(n int) (cond string, args []any, ascending bool) {
	if k.Before > 0 {
		cond, args = " AND id < $"+strconv.Itoa(n+len(args)), append(args, k.Before)
	}
	if k.After > 0 {
		cond, args = cond+" AND id > $"+strconv.Itoa(n+len(args)), append(args, k.After)
	}
	return cond, args, k.After > 0 && k.Before == 0
}

// listSQL is a list's two statements: its count, with args, and its page,
// with args, then pageArgs (its keyset's); the page's offset and limit
// are its statement's (pageStatement).
type listSQL struct {
	count, page string
	args        []any
	pageArgs    []any
	// ascending: the page reads oldest first (After); newest first is
	// what the list shows.
	ascending bool
	// planCount: the count is planned for its arguments each time (a
	// custom plan). A capped count over a log's partitions, planned
	// generically, read every partition's matches and sorted them: an
	// empty day's partition, scanned, gives no order to merge in.
	planCount bool
	// ownPaging: the page statement takes its offset and limit as its
	// two last parameters itself (each project's newest rows, merged).
	ownPaging bool
}

// countedPage runs a list's count and its page, each row read into T by
// position, newest first.
func countedPage[T any](ctx context.Context, db DB, l listSQL, offset, limit int) ([]T, int, error) {
	var total int
	countArgs := l.args
	if l.planCount {
		countArgs = append([]any{pgx.QueryExecModeExec}, l.args...)
	}
	if err := db.QueryRow(ctx, l.count, countArgs...).Scan(&total); err != nil {
		return nil, 0, err
	}
	page, args := l.pageStatement(offset, limit)
	rows, err := db.Query(ctx, page, args...)
	if err != nil {
		return nil, 0, err
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[T])
	if l.ascending {
		slices.Reverse(list)
	}
	return list, total, err
}

// pageStatement is the statement of l's page at offset, limit rows, and
// its arguments. The limit is written into it (a page's limit is one of a
// few), and the offset too when it is 0, left out: PostgreSQL then costs
// the generic plan of the prepared statement for the rows it reads, finds
// it no dearer than the plan for the values, keeps it and plans no more.
// A limit sent as a parameter is costed as a tenth of the rows that
// match, so every execution was planned anew for its values: a cost that
// grows with the log (docs/performance.md, "Lists of a million
// records"). The generic plans are the ones the log's indexes give
// (TestRunLogPlans, TestEventLogPlans).
func (l listSQL) pageStatement(offset, limit int) (string, []any) {
	args := append(slices.Clip(l.args), l.pageArgs...)
	if l.ownPaging {
		return l.page, append(args, offset, limit)
	}
	tail := " LIMIT " + strconv.Itoa(limit)
	if offset > 0 {
		args = append(args, offset)
		tail = " OFFSET $" + strconv.Itoa(len(args)) + tail
	}
	return l.page + tail, args
}

// orderBy is a log's order, newest first or oldest first: by id, or by
// column (a filter bounded from both sides; or two, "a, b"), then id, as
// its index (column, id DESC) reads forwards, or backwards for oldest
// first.
func orderBy(column string, ascending bool) string {
	if first, second, ok := strings.Cut(column, ", "); ok {
		// Two columns, each bounded to one value: both in the index's
		// direction.
		if ascending {
			return " ORDER BY " + first + " DESC, " + second + " DESC, id"
		}
		return " ORDER BY " + first + ", " + second + ", id DESC"
	}
	switch {
	case column == "id" && ascending:
		return " ORDER BY id"
	case column == "id":
		return " ORDER BY id DESC"
	case ascending:
		return " ORDER BY " + column + " DESC, id"
	}
	return " ORDER BY " + column + ", id DESC"
}
