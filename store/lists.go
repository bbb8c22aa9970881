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
	// writtenLimit: the page's limit is written into its statement (see
	// pageStatement).
	writtenLimit bool
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
// its arguments: the offset and the limit its two last parameters, or,
// with writtenLimit, the limit written in and the offset too when it is 0
// (left out). PostgreSQL costs a limit sent as a parameter as a tenth of
// the rows that match, so a prepared statement's generic plan looks
// dearer than a plan for the values and every execution is planned anew,
// a cost that grows with the log (docs/performance.md, "Lists of a
// million records"). Written in, the generic plan is kept when it is no
// dearer: a list filtered by a column of a few values (a status, an event
// type), whose generic plan reads that filter's index. A list of a
// project, or of a route, is planned for its values: a generic plan there
// takes a project for a small share of the log and may walk its index
// filtering, slower by far (TestRunLogPlans, TestEventLogPlans).
func (l listSQL) pageStatement(offset, limit int) (string, []any) {
	args := append(slices.Clip(l.args), l.pageArgs...)
	if !l.writtenLimit {
		args = append(args, offset, limit)
		return l.page + " OFFSET $" + strconv.Itoa(len(args)-1) + " LIMIT $" + strconv.Itoa(len(args)), args
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
