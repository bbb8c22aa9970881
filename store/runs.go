package store

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"stencil/schema"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Tx is a transaction whose end the caller decides: a route's run commits
// its writes when it ends normally and rolls them back otherwise.
type Tx struct {
	*Store
	tx   pgx.Tx
	runs *runsTx // of a BeginRuns
}

// Begin starts a transaction.
func (s *Store) Begin(ctx context.Context) (_ *Tx, err error) {
	defer wrap(&err, "begin")
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, err
	}
	return &Tx{Store: s.on(tx), tx: tx}, nil
}

// BeginSerializable starts a SERIALIZABLE transaction: what it reads and
// writes is as if no other transaction ran beside it, or it fails (SQLSTATE
// 40001) and may be run again. It waits at most 100 ms for a row lock
// (55P03 then, see Retryable): two runs that lock the same rows in
// opposite orders are both run again at once rather than after the
// server's deadlock check, a second later.
func (s *Store) BeginSerializable(ctx context.Context) (_ *Tx, err error) {
	defer wrap(&err, "begin serializable")
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{BeginQuery: serializableBegin})
	if err != nil {
		return nil, err
	}
	return &Tx{Store: s.on(tx), tx: tx}, nil
}

// serializableBegin is BeginSerializable's statement.
const serializableBegin = "BEGIN ISOLATION LEVEL SERIALIZABLE; SET LOCAL lock_timeout = '100ms'"

// BeginRuns starts a SERIALIZABLE transaction as BeginSerializable does,
// for several runs one after the other, each within a savepoint: the first
// begins with the transaction, each next one with NextRun, and UndoRun
// takes back what the current one wrote.
//
// To save round trips, what a run sends is held back where it can be: the
// savepoint that begins a run goes with the run's first statement, and a
// statement without rows (Exec, the runs' UPDATE and DELETE) goes with the
// statement after it, or with Flush. Its error comes with that statement:
// as an *EarlierRunError when the failed write was a run's before.
func (s *Store) BeginRuns(ctx context.Context) (_ *Tx, err error) {
	defer wrap(&err, "begin runs")
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{BeginQuery: serializableBegin + "; SAVEPOINT run"})
	if err != nil {
		return nil, err
	}
	runs := &runsTx{Tx: tx, schemas: s.schemas}
	return &Tx{Store: s.on(runs), tx: tx, runs: runs}, nil
}

// EarlierRunError is the error of a write of an earlier run of a BeginRuns
// transaction, which failed when sent with a later statement. The
// transaction is then within that run's savepoint: UndoEarlierRun takes
// that run's writes back, and the current run begins again.
type EarlierRunError struct {
	Run int // the run's number: 0 for the first, 1 after one NextRun…
	Err error
}

func (e *EarlierRunError) Error() string { return "an earlier run's write: " + e.Err.Error() }
func (e *EarlierRunError) Unwrap() error { return e.Err }

// LateFailure gives, and forgets, the *EarlierRunError a statement of the
// current run met, whatever the run then made of the error (a route may
// answer it as its own fault, or as its time being up): the batch it runs
// in asks here rather than trust the error its run returns.
func (t *Tx) LateFailure() *EarlierRunError {
	e := t.runs.late
	t.runs.late = nil
	return e
}

// NextRun begins the next run of a BeginRuns transaction, keeping what
// the one before wrote.
func (t *Tx) NextRun() {
	t.runs.next = true
	t.runs.run++
}

// UndoRun takes back what the current run of a BeginRuns transaction
// wrote, and ends a failed statement of it.
func (t *Tx) UndoRun(ctx context.Context) (err error) {
	defer wrap(&err, "undo run")
	if t.runs.held != nil && t.runs.heldRun == t.runs.run {
		t.runs.held = nil // never sent
	}
	if t.runs.next {
		return nil // it sent no statement
	}
	_, err = t.tx.Exec(ctx, "ROLLBACK TO SAVEPOINT run")
	return err
}

// UndoEarlierRun takes back the writes of the run whose write failed (see
// EarlierRunError); the current run then runs within its savepoint.
func (t *Tx) UndoEarlierRun(ctx context.Context) (err error) {
	defer wrap(&err, "undo earlier run")
	t.runs.held, t.runs.next, t.runs.late = nil, false, nil
	_, err = t.tx.Exec(ctx, "ROLLBACK TO SAVEPOINT run")
	return err
}

// Flush sends the write held back, if any: before the commit, so that
// its error is the last run's (an *EarlierRunError when it was not the
// current run's).
func (t *Tx) Flush(ctx context.Context) (err error) {
	defer wrap(&err, "flush")
	return t.runs.flush(ctx)
}

// runsTx is the transaction of a BeginRuns. next: the savepoint that
// begins the current run (numbered run) is still to be sent; held: a
// statement without rows of run heldRun still to be sent; late: the
// earlier run's failure the current run's statement met (LateFailure).
type runsTx struct {
	pgx.Tx
	next    bool
	run     int
	held    *pgx.QueuedQuery
	heldRun int
	late    *EarlierRunError
	// schemas forget the fields a held-back write found changed.
	schemas *schemaCache
}

// send sends what is held back, then sql with args, in one batch, and
// gives the batch with the results of what was held back read.
func (t *runsTx) send(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	b := &pgx.Batch{}
	held, heldRun, next := t.held, t.heldRun, t.next
	if held != nil {
		b.Queue(held.SQL, held.Arguments...)
	}
	if next {
		b.Queue("RELEASE SAVEPOINT run")
		b.Queue("SAVEPOINT run")
	}
	b.Queue(sql, args...)
	t.held, t.next = nil, false
	br := t.Tx.SendBatch(ctx, b)
	for i := range b.Len() - 1 {
		if _, err := br.Exec(); err != nil {
			br.Close()
			t.schemas.note(err)
			if t.unsent(err) {
				// Nothing reached the server (the run's time was up
				// before, or an argument would not encode): what was
				// held back is still to be sent, and is no one's
				// failure.
				t.held, t.heldRun, t.next = held, heldRun, next
				return nil, err
			}
			if i == 0 && held != nil && heldRun != t.run {
				t.late = &EarlierRunError{Run: heldRun, Err: err}
				return nil, t.late
			}
			return nil, err
		}
	}
	return br, nil
}

// unsent says whether a batch that failed with err sent nothing: the
// error is the client's own (no server's), and the connection, which
// pgx closes when a statement is stopped under way, is still open.
func (t *runsTx) unsent(err error) bool {
	var pgErr *pgconn.PgError
	return !errors.As(err, &pgErr) && !t.Tx.Conn().PgConn().IsClosed()
}

func (t *runsTx) flush(ctx context.Context) error {
	if t.held == nil {
		return nil
	}
	held, heldRun := t.held, t.heldRun
	t.held = nil
	_, err := t.Tx.Exec(ctx, held.SQL, held.Arguments...)
	t.schemas.note(err)
	if err != nil && heldRun != t.run {
		return &EarlierRunError{Run: heldRun, Err: err}
	}
	return err
}

// Exec holds the statement back (its command tag is empty), sending what
// was held back before.
func (t *runsTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.held != nil || t.next {
		br, err := t.send(ctx, sql, args)
		if err != nil {
			return pgconn.CommandTag{}, err
		}
		tag, err := br.Exec()
		return tag, errors.Join(err, br.Close())
	}
	t.held, t.heldRun = &pgx.QueuedQuery{SQL: sql, Arguments: args}, t.run
	return pgconn.CommandTag{}, nil
}

func (t *runsTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.held == nil && !t.next {
		return t.Tx.Query(ctx, sql, args...)
	}
	br, err := t.send(ctx, sql, args)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

func (t *runsTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if t.held == nil && !t.next {
		return t.Tx.QueryRow(ctx, sql, args...)
	}
	rows, err := t.Query(ctx, sql, args...)
	return firstRow{rows: rows, err: err}
}

// batchRows are the rows of a batch's last statement: closing them closes
// the batch.
type batchRows struct {
	pgx.Rows
	br pgx.BatchResults
}

func (r *batchRows) Close() {
	r.Rows.Close()
	_ = r.br.Close()
}

// firstRow is QueryRow's answer from rows, as pgx gives it.
type firstRow struct {
	rows pgx.Rows
	err  error
}

func (r firstRow) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

// Commit commits the transaction.
func (t *Tx) Commit(ctx context.Context) (err error) {
	defer wrap(&err, "commit")
	return t.tx.Commit(ctx)
}

// Rollback rolls the transaction back; after Commit it does nothing.
func (t *Tx) Rollback(ctx context.Context) (err error) {
	defer wrap(&err, "rollback")
	return t.tx.Rollback(ctx)
}

// RoutingProject is what the route table needs of a project.
type RoutingProject struct {
	ID        string
	APIPath   string
	Name      string
	CreatedAt time.Time // of two projects whose paths clash, the older answers
	// XRateLimit and XRateBurst are the project's rate limit at /x.
	XRateLimit, XRateBurst int
	// XCORSOrigins are the origins whose browsers may call its routes.
	XCORSOrigins []string
	// XEgressHosts are the hosts its HTTP blocks may call (empty: any).
	XEgressHosts []string
}

// routingColumns are RoutingProject's columns, in its order.
const routingColumns = "id, api_path, name, created_at, x_rate_limit, x_rate_burst, x_cors_origins, x_egress_hosts"

// RoutingProjects returns every project's id and api_path.
func (s *Store) RoutingProjects(ctx context.Context) (_ []RoutingProject, err error) {
	defer wrap(&err, "routing projects")
	rows, err := s.db.Query(ctx, "SELECT "+routingColumns+" FROM projects ORDER BY id")
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[RoutingProject])
}

// RouteKey is what the route table holds of a route until it runs: where
// it answers and which version it is. Its document is read when it runs
// (RoutingRoutes). A route deleted and made again starts at version 1
// again: its Updated tells it from the route it replaced.
type RouteKey struct {
	ID, Method, Path string
	Version          int64
	Updated          time.Time
}

// Key is r's key, as the route table holds it.
func (r StoredRoute) Key() RouteKey {
	return RouteKey{ID: r.RouteID, Method: r.Method, Path: r.RoutePath, Version: r.Version, Updated: r.UpdatedAt}
}

// Same says whether k and o are the same version of the same route.
func (k RouteKey) Same(o RouteKey) bool {
	return k.ID == o.ID && k.Method == o.Method && k.Path == o.Path && k.Version == o.Version && k.Updated.Equal(o.Updated)
}

// routeKeyColumns are RouteKey's columns, in its order.
const routeKeyColumns = "route_id, method, route_path, version, updated_at"

// ProjectRouting returns a project's settings and the keys of its routes,
// by id, from one snapshot; ErrNotFound when the project is gone.
func (s *Store) ProjectRouting(ctx context.Context, id string) (_ RoutingProject, _ []RouteKey, err error) {
	defer wrap(&err, "project routing", id)
	var p RoutingProject
	var keys []RouteKey
	err = s.inReadSnapshot(ctx, func(tx *Store) error {
		rows, err := tx.db.Query(ctx, "SELECT "+routingColumns+" FROM projects WHERE id = $1", id)
		if err != nil {
			return err
		}
		if p, err = pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[RoutingProject]); err != nil {
			return translate(err)
		}
		rows, err = tx.db.Query(ctx, "SELECT "+routeKeyColumns+" FROM routes WHERE project_id = $1 ORDER BY route_id", id)
		if err != nil {
			return err
		}
		keys, err = pgx.CollectRows(rows, pgx.RowToStructByPos[RouteKey])
		return err
	})
	return p, keys, err
}

// RoutingKeys returns the keys of the routes of project id among ids; an
// id of no route is left out.
func (s *Store) RoutingKeys(ctx context.Context, id string, ids []string) (_ []RouteKey, err error) {
	defer wrap(&err, "routing keys", id)
	rows, err := s.db.Query(ctx, "SELECT "+routeKeyColumns+" FROM routes WHERE project_id = $1 AND route_id = ANY($2)", id, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[RouteKey])
}

// RoutingRoutes returns the routes of project id among ids, whole, as the
// route table compiles them; an id of no route is left out.
func (s *Store) RoutingRoutes(ctx context.Context, id string, ids []string) (_ []StoredRoute, err error) {
	defer wrap(&err, "routing routes", id)
	rows, err := s.db.Query(ctx, "SELECT "+routeColumns+" FROM routes WHERE project_id = $1 AND route_id = ANY($2)", id, ids)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (StoredRoute, error) { return scanRoute(r) })
}

// RunRecordsSQL reads up to $3 records of collection $2 of project $1 in
// id order, each id with its data, in one statement that also tells a
// missing collection (no row) from an empty one (one row of NULLs).
// Exported for the load harness, which runs exactly this SQL as its
// anchor.
var RunRecordsSQL = runRecordsSQL(RecordQuery{Limit: 10001}.shape())

// RecordQuery is a read of a run: the records whose data contains Where
// (a JSON object; none: all) and, with ByID, whose id is ID, ordered by the
// property at the dot path Sort (records without it last, then by id;
// none, or _id: by id), at most Limit, with Lock locked until the
// transaction ends.
type RecordQuery struct {
	// After, when above 0, reads the records after that id (in id order:
	// a list's next page).
	After      int64
	Where      []byte
	ByID       bool
	ID         int64
	Sort       []string
	Descending bool
	Limit      int
	Lock       bool
	// by is a unique or indexed field the containment filter names with
	// a value (byValue, as JSON), whose index then finds the matches
	// (see indexedMatch); set by the store from the collection's fields.
	by      *schema.Field
	byValue string
	// sortBy is an indexed field the read is sorted by, whose index then
	// gives the records in order (see indexedMatch).
	sortBy *schema.Field
}

// recordsShape is what a RecordQuery's SQL depends on.
type recordsShape struct {
	where, byID, lock bool
	// indexed: the matches are read from a field's index (RecordQuery.by);
	// sorted: the order is (RecordQuery.sortBy).
	indexed, sorted bool
	// property: ordered by a property of the data rather than by id.
	property, descending bool
	// near: the read looks first among the nearest records in its order
	// (see nearRecords).
	near bool
	// after: the read starts after an id; full: it reads every column of
	// a record (a list's page), not the id and data alone (a run's read).
	after, full bool
}

// nearRecords and nearMaxLimit shape a filtered read in id order with a
// small limit: it first walks the collection's index in that order over
// at most nearRecords records, and when these hold limit matches they are
// the answer; otherwise the GIN index finds the matches. A common value
// (the 20 newest open tickets) is then found in the first few hundred
// records instead of among all its matches, and a rare one costs at most
// that walk more.
const (
	nearRecords  = 2000
	nearMaxLimit = 100
)

func (q RecordQuery) shape() recordsShape {
	sh := recordsShape{where: len(q.Where) > 0, byID: q.ByID, lock: q.Lock, descending: q.Descending, after: q.After > 0}
	sh.property = len(q.Sort) > 0 && !(len(q.Sort) == 1 && q.Sort[0] == "_id")
	sh.indexed = sh.where && q.by != nil && !sh.byID
	sh.sorted = q.sortBy != nil && !sh.where && !sh.byID && !sh.lock && !sh.after
	if sh.sorted {
		sh.property = false // the field is in the statement, not a parameter
	}
	sh.near = sh.where && !sh.indexed && !sh.byID && !sh.lock && !sh.property && q.Limit <= nearMaxLimit
	return sh
}

// runRecordsSQLs holds runRecordsSQL for each shape met so far.
var runRecordsSQLs sync.Map

func runRecordsSQLOf(sh recordsShape) string {
	if sh.indexed || sh.sorted {
		panic("store: an indexed read's statement names its field: indexedSQL")
	}
	if sql, ok := runRecordsSQLs.Load(sh); ok {
		return sql.(string)
	}
	sql := runRecordsSQL(sh)
	runRecordsSQLs.Store(sh, sql)
	return sql
}

// runRecordsSQL is RunRecordsSQL with what the shape adds, each a
// parameter after $3 in this order: a containment filter (ordered by an
// expression so that the GIN index serves it: see recordsOrder), the
// property path to order by, the id; and the records locked for the run's
// writes.
func runRecordsSQL(sh recordsShape) string {
	return recordsSQL(sh, "")
}

// indexedSQL is the statement of a read whose matches a field's index
// finds: its value's condition (its parameter the last) written as the
// index keeps it, and the collection named as literals too, so that the
// partial index serves any plan of it (docs/collections.md).
func indexedSQL(sh recordsShape, project, collection string, by *schema.Field, next int) string {
	return recordsSQL(sh, indexedCond(project, collection, by, next))
}

// indexedCond is the condition of an indexed read: the field's value, as
// its index keeps it, equal to parameter next.
func indexedCond(project, collection string, by *schema.Field, next int) string {
	value := FieldValueSQL(*by)
	if by.Type == schema.Email {
		return " AND " + scopeSQL(project, collection) + " AND " + value + " = lower($" + strconv.Itoa(next) + "::text)"
	}
	return " AND " + scopeSQL(project, collection) + " AND " + value + " = $" + strconv.Itoa(next) + "::jsonb"
}

// sortedSQL is the statement of a read of a collection sorted by an
// indexed field, without a filter: the field's index gives the records in
// order, the collection named as literals so that its partial index
// serves any plan. Records without the value come last either way, as a
// sort by a property puts them, and ties go by id: descending, the index
// read backwards gives the values, and the records without one are read
// apart (an index read backwards gives them first).
func sortedSQL(sh recordsShape, project, collection string, by *schema.Field) string {
	value := FieldValueSQL(*by)
	records := "FROM records WHERE project_id = $1 AND collection_id = $2 AND " + scopeSQL(project, collection)
	read := "SELECT id, data " + records + " ORDER BY " + value + ", id LIMIT $3"
	if sh.descending {
		read = `SELECT id, data FROM (
			(SELECT id, data, 0 AS part, ` + value + ` AS v ` + records + ` AND ` + value + ` IS NOT NULL ORDER BY ` + value + ` DESC, id LIMIT $3)
			UNION ALL
			(SELECT id, data, 1, NULL ` + records + ` AND ` + value + ` IS NULL ORDER BY id LIMIT $3)
		) u ORDER BY part, v DESC, id LIMIT $3`
	}
	return `SELECT r.id, r.data FROM collections c LEFT JOIN LATERAL (
		` + read + `
	) r ON true WHERE c.project_id = $1 AND c.id = $2`
}

// recordsSQL is runRecordsSQL with indexed, the condition of an indexed
// read, after the containment filter.
func recordsSQL(sh recordsShape, indexed string) string {
	filter, next := "", 4
	param := func() string {
		next++
		return "$" + strconv.Itoa(next-1)
	}
	switch {
	case sh.indexed:
		// The field's index finds the matches in order; the filter is
		// checked on them alone (with the GIN index's condition beside
		// it, PostgreSQL would join both indexes' matches and sort them).
		filter += " AND data @> " + param() + "::jsonb" + indexed
	case sh.where:
		filter += containsSQL(param())
	}
	direction := " ASC"
	if sh.descending {
		direction = " DESC"
	}
	order := "id" + direction
	if sh.where && !sh.indexed {
		order = "id + 0" + direction
	}
	if sh.property {
		order = "data #> " + param() + "::text[]" + direction + " NULLS LAST, id"
	}
	if sh.byID {
		filter += " AND id = " + param() + "::bigint"
	}
	records := "SELECT id, data FROM records WHERE project_id = $1 AND collection_id = $2"
	columns := "r.id, r.data"
	if sh.full {
		records = "SELECT " + recordColumns + " FROM records WHERE project_id = $1 AND collection_id = $2"
		columns = "r." + strings.ReplaceAll(recordColumns, ", ", ", r.")
	}
	if sh.after {
		// In the window of the nearest records too.
		records += " AND id > " + param() + "::bigint"
	}
	locking := ""
	if sh.lock {
		locking = " FOR UPDATE"
	}
	read := records + filter + " ORDER BY " + order + " LIMIT $3" + locking
	if sh.near {
		// The nearest records in the order, their matches, and the GIN
		// index's read only when these are fewer than the limit (a
		// condition of no record, which PostgreSQL checks once, before
		// that read).
		read = fmt.Sprintf(`WITH near AS MATERIALIZED (
			SELECT * FROM (%s ORDER BY id%s LIMIT %d) w WHERE data @> $4::jsonb ORDER BY id%s LIMIT $3
		)
		SELECT * FROM near WHERE (SELECT count(*) FROM near) = $3
		UNION ALL
		(%s AND (SELECT count(*) FROM near) < $3 ORDER BY %s LIMIT $3)
		ORDER BY id%s`, records, direction, nearRecords, direction, records+filter, order, direction)
	}
	if sh.full {
		// A list's page: the collection is known to exist.
		return `SELECT ` + columns + ` FROM collections c JOIN LATERAL (
		` + read + `
	) r ON true WHERE c.project_id = $1 AND c.id = $2`
	}
	// The records are chosen by the parameters themselves, not by the
	// collections row's columns: PostgreSQL then estimates the collection's
	// size from its statistics of that collection, and a read of a small
	// collection beside a big one walks the collection's index, not the
	// whole table in id order.
	return `SELECT ` + columns + ` FROM collections c LEFT JOIN LATERAL (
		` + read + `
	) r ON true WHERE c.project_id = $1 AND c.id = $2`
}

// RunRecordsSQLFor is the statement a read of shape q runs (for tests and
// the load harness to run or explain).
func RunRecordsSQLFor(q RecordQuery) string { return runRecordsSQLOf(q.shape()) }

// RunRecords returns the records q asks for of a collection, their Data
// the stored JSON. A collection that does not exist is ErrNotFound.
func (s *Store) RunRecords(ctx context.Context, project, collection string, q RecordQuery) (_ []Record, err error) {
	defer wrap(&err, "run records", project, collection)
	var out []Record
	err = s.EachRunRecord(ctx, project, collection, q, func(id int64, data []byte) {
		out = append(out, Record{ID: id, ProjectID: project, CollectionID: collection, Data: data})
	})
	return out, err
}

// RunReadMaxBytes bounds the record data one read of a run holds: a run's
// memory limit (engine.DefaultLimits), so that a read the run could not
// keep stops at it rather than at the collection's end.
const RunReadMaxBytes = 64 << 20

// EachRunRecord reads as RunRecords does, giving each record to each as it
// comes: the flow engine reads with it, inside its run. The data stay the
// caller's.
func (s *Store) EachRunRecord(ctx context.Context, project, collection string, q RecordQuery, each func(id int64, data []byte)) (err error) {
	defer wrap(&err, "each run record", project, collection)
	s.indexedMatch(ctx, project, collection, &q)
	return eachRunRecord(ctx, s.db, project, collection, q, each)
}

// statement is the SQL of q's read, of shape sh, and its arguments.
func (q RecordQuery) statement(sh recordsShape, project, collection string) (string, []any) {
	args := q.args(sh, project, collection)
	switch {
	case sh.indexed:
		args = append(args, q.byValue)
		return indexedSQL(sh, project, collection, q.by, len(args)), args
	case sh.sorted:
		return sortedSQL(sh, project, collection, q.sortBy), args
	}
	return runRecordsSQLOf(sh), args
}

// args are the arguments of the statement of q's shape sh.
func (q RecordQuery) args(sh recordsShape, project, collection string) []any {
	args := []any{project, collection, q.Limit}
	if sh.where {
		args = append(args, string(q.Where))
	}
	if sh.property {
		args = append(args, q.Sort)
	}
	if sh.byID {
		args = append(args, q.ID)
	}
	if sh.after {
		args = append(args, q.After)
	}
	return args
}

func eachRunRecord(ctx context.Context, db DB, project, collection string, q RecordQuery, each func(id int64, data []byte)) error {
	sh := q.shape()
	sql, args := q.statement(sh, project, collection)
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	// The rows are read as the wire gives them (a FETCH reads up to 10,000
	// at a time): their data go into a few shared buffers rather than one
	// allocation each.
	var buf []byte
	found := false
	read := 0
	for rows.Next() {
		found = true
		raw := rows.RawValues()
		if raw[0] == nil {
			continue // the collection, without records
		}
		id, err := rawInt8(raw[0], rows.FieldDescriptions()[0].Format)
		if err != nil {
			return err
		}
		data := raw[1]
		if rows.FieldDescriptions()[1].Format == pgx.BinaryFormatCode {
			if len(data) == 0 || data[0] != 1 {
				return fmt.Errorf("record %d: unknown jsonb format", id)
			}
			data = data[1:]
		}
		if read += len(data); read > RunReadMaxBytes {
			return ErrTooLarge
		}
		if len(data) > cap(buf)-len(buf) {
			// Chunks of at most 32 KiB stay small allocations.
			buf = make([]byte, 0, max(len(data), min(2*cap(buf), 32<<10), 4<<10))
		}
		start := len(buf)
		buf = append(buf, data...)
		each(id, buf[start:len(buf):len(buf)])
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if !found {
		return ErrNotFound
	}
	return nil
}

// Run is one run of a route, as the run log keeps it.
type Run struct {
	ID        int64
	At        time.Time
	ProjectID string
	RouteID   string
	Method    string
	Path      string
	Status    int
	Ended     string // RETURN, FAIL, END, FAULT, REFUSED (the request was), LIMITED, BUSY, ERROR (the platform failed)
	Duration  time.Duration
	UserID    *int64
	Username  string
	Fault     string
	Attempts  int    // how many times the run began: more than 1 when it failed to serialize
	Query     string // the query string, cut at RunQueryMax bytes
	Message   string // the message a FAIL answered with
	DryRun    bool
	Version   int64 // the route's version that ran; 0 for a draft (or a run logged before versions were kept)
	// SampleRate is how many runs this one stands for in the log: past a
	// route's rate of kept runs, 1 in SampleRate successful runs is kept
	// (0 and 1: the run stands for itself).
	SampleRate int
	// Trigger is what started the run: "http" (a request; "" is that too),
	// "schedule" (a schedule's tick) or "job".
	Trigger string
	// Trace and Body are kept for runs made from the playground (the
	// trace as it was shown there, the body sent), and read by Run only.
	Trace []byte  `db:"-"`
	Body  *string `db:"-"`
}

// The triggers of runs (Run.Trigger).
const (
	TriggerHTTP     = "http"
	TriggerSchedule = "schedule"
	TriggerJob      = "job"
)

// RunQueryMax, RunTraceMax and RunBodyMax bound what the run log keeps of a
// run's query string, trace and body; a trace or body over its bound is
// not kept.
const (
	RunQueryMax = 2048
	RunTraceMax = 256 << 10
	RunBodyMax  = 64 << 10
)

// RunsKept is how long the run log keeps a run.
const RunsKept = 7 * 24 * time.Hour

// LogRuns writes runs to the run log in one COPY. In the same transaction
// it first locks the projects and callers the runs name, once each, as
// foreign keys would for every row: none of them can go until the batch is
// written (their deletion then takes the runs, or the caller, off them).
// Runs of a project already gone are left out, and a caller already gone
// is written as none. Route analytics count runs apart (CountTally).
func (s *Store) LogRuns(ctx context.Context, runs []Run) (err error) {
	defer wrap(&err, "log runs")
	projects, users := map[string]bool{}, map[int64]bool{}
	for _, r := range runs {
		projects[r.ProjectID] = false
		if r.UserID != nil {
			users[*r.UserID] = false
		}
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockKeys(ctx, tx, "SELECT id FROM projects WHERE id = ANY($1) FOR KEY SHARE", projects); err != nil {
			return err
		}
		if err := lockKeys(ctx, tx, "SELECT id FROM users WHERE id = ANY($1) FOR KEY SHARE", users); err != nil {
			return err
		}
		kept := slices.DeleteFunc(slices.Clone(runs), func(r Run) bool { return !projects[r.ProjectID] })
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"route_runs"},
			[]string{"at", "project_id", "route_id", "method", "path", "status", "ended", "duration_us", "user_id", "username", "fault", "attempts",
				"query", "message", "dry_run", "trace", "body", "route_version", "sample_rate", "trigger"},
			pgx.CopyFromSlice(len(kept), func(i int) ([]any, error) {
				r := kept[i]
				if r.UserID != nil && !users[*r.UserID] {
					r.UserID = nil
				}
				var trace any
				if len(r.Trace) > 0 && len(r.Trace) <= RunTraceMax {
					trace = string(r.Trace)
				}
				body := r.Body
				if body != nil && len(*body) > RunBodyMax {
					body = nil
				}
				var version any
				if r.Version > 0 {
					version = r.Version
				}
				return []any{r.At, r.ProjectID, r.RouteID, r.Method, r.Path, r.Status, r.Ended, r.Duration.Microseconds(), r.UserID, r.Username, r.Fault,
					max(1, r.Attempts), Cut(r.Query, RunQueryMax), r.Message, r.DryRun, trace, body, version, max(1, r.SampleRate), cmp.Or(r.Trigger, TriggerHTTP)}, nil
			}))
		return err
	})
}

// lockKeys runs sql, which locks the rows of the keys given as $1 and
// returns their ids, and marks each key found.
func lockKeys[K comparable](ctx context.Context, tx pgx.Tx, sql string, keys map[K]bool) error {
	if len(keys) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, sql, slices.Collect(maps.Keys(keys)))
	if err != nil {
		return err
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[K])
	for _, k := range found {
		keys[k] = true
	}
	return err
}

// RunQuery selects runs of a project: of one route, of a status class
// ("2xx", "4xx", "5xx") or exact status, and of a trigger (TriggerHTTP,
// TriggerSchedule, TriggerJob).
type RunQuery struct {
	Page
	RouteID string
	Status  string
	Trigger string
	Keyset
}

// RunsCounted says whether q's amount is exact, read from the counts kept
// with the run log; a filter of the trigger counts the runs themselves, up
// to LogCountCap.
func RunsCounted(q RunQuery) bool { return q.Trigger == "" }

// runTriggers are the triggers a run log filter may name, written into its
// statement as literals: a schedule's or a job's runs are then read by the
// partial index of the runs no request started (migration 054).
var runTriggers = []string{TriggerHTTP, TriggerSchedule, TriggerJob}

// ListRuns returns a page of a project's runs, newest first, and how many
// match: exactly, from route_run_counts.
func (s *Store) ListRuns(ctx context.Context, project string, q RunQuery) (_ []Run, _ int, err error) {
	defer wrap(&err, "list runs", project)
	return countedPage[Run](ctx, s.db, runsSQL(project, q), q.Offset, q.Limit)
}

// runClass is the status class a filter names ("5xx": 5) or the exact
// status ("404": 404), as route_run_counts keys it; -1 for none.
func runClass(status string) int {
	if len(status) == 3 && status[1:] == "xx" && status[0] >= '1' && status[0] <= '5' {
		return int(status[0] - '0')
	}
	var n int
	if _, err := fmt.Sscanf(status, "%d", &n); status != "" && err == nil {
		return n
	}
	return -1
}

// runsSQL is the count and the page (its offset and limit the two
// arguments after args) of q's runs. Only the filters given are written,
// each as one of the run log's indexes reads it. Ordered by id alone,
// PostgreSQL took the primary key for the order, walking the whole
// table's newest rows backwards for a project that had not run lately
// (it plans as if a project's runs were spread evenly over time). So the
// page is ordered by project_id, then id: newest first all the same, but
// an order only the project's indexes give; and the project is bounded
// from both sides rather than named by "=", which would let the planner
// drop project_id from that order as fixed (docs/routes.md). The count is
// a few rows of route_run_counts, one a day (migrations 031, 045 and 049).
func runsSQL(project string, q RunQuery) (l listSQL) {
	l.args = []any{project}
	var filters string // the conditions after the project's
	add := func(cond string, v any) string {
		l.args = append(l.args, v)
		filters += fmt.Sprintf(cond, len(l.args))
		return "$" + strconv.Itoa(len(l.args))
	}
	route, class := "'*'", "-1" // all routes, all classes
	if q.RouteID != "" {
		route = add(" AND route_id = $%d", q.RouteID) // route_runs_route_idx
	}
	switch c := runClass(q.Status); {
	case c >= 100:
		class = add(" AND status = $%d", c) // route_runs_status_idx
	case c > 0:
		class = add(" AND status / 100 = $%d", c) // route_runs_class_idx
	}
	// A status's page alone keeps its generic plan (see pageStatement).
	l.writtenLimit = class != "-1" && q.RouteID == "" && q.Trigger == ""
	if slices.Contains(runTriggers, q.Trigger) {
		filters += " AND trigger = '" + q.Trigger + "'" // route_runs_trigger_idx, but for http
	}
	where := " WHERE project_id >= $1 AND project_id <= $1" + filters
	bound, kargs, ascending := q.bound(len(l.args) + 1)
	l.pageArgs = kargs
	l.ascending = ascending
	l.page = fmt.Sprintf("SELECT %s FROM route_runs%s%s%s", runColumns, where, bound, orderBy("project_id", ascending))
	l.count = fmt.Sprintf("SELECT coalesce(sum(n), 0) FROM route_run_counts WHERE project_id = $1 AND route_id = %s AND class = %s", route, class)
	if !RunsCounted(q) {
		l.count = fmt.Sprintf("SELECT count(*) FROM (SELECT 1 FROM route_runs WHERE project_id = $1%s LIMIT %d) AS capped", filters, LogCountCap)
		l.planCount = true
	}
	return l
}

// runColumns are the columns of a Run, in its fields' order (Trace and Body
// aside).
const runColumns = "id, at, project_id, route_id, method, path, status, ended, duration_us * 1000, user_id, username, fault, attempts, query, message, dry_run, coalesce(route_version, 0), sample_rate, trigger"

// Run returns run id of project, with its trace and body when it kept them.
func (s *Store) Run(ctx context.Context, project string, id int64) (_ Run, err error) {
	defer wrap(&err, "run", project)
	rows, err := s.db.Query(ctx, `SELECT `+runColumns+`, trace::text, body FROM route_runs WHERE project_id = $1 AND id = $2`, project, id)
	if err != nil {
		return Run{}, err
	}
	r, err := pgx.CollectExactlyOneRow(rows, func(row pgx.CollectableRow) (Run, error) {
		var r Run
		var trace *string
		err := row.Scan(&r.ID, &r.At, &r.ProjectID, &r.RouteID, &r.Method, &r.Path, &r.Status, &r.Ended, &r.Duration, &r.UserID, &r.Username, &r.Fault,
			&r.Attempts, &r.Query, &r.Message, &r.DryRun, &r.Version, &r.SampleRate, &r.Trigger, &trace, &r.Body)
		if trace != nil {
			r.Trace = []byte(*trace)
		}
		return r, err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return r, ErrNotFound
	}
	return r, err
}

// Cut cuts s to at most n bytes, at a character's start.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// rawInt8 reads a bigint as the wire gives it.
func rawInt8(b []byte, format int16) (int64, error) {
	if format == pgx.BinaryFormatCode {
		if len(b) != 8 {
			return 0, fmt.Errorf("bigint of %d bytes", len(b))
		}
		return int64(binary.BigEndian.Uint64(b)), nil
	}
	return strconv.ParseInt(string(b), 10, 64)
}

// Run log flushes (docs/operations.md, Backups): a backup asks every
// instance to write the runs it holds for the log before it takes its
// snapshot. The ask travels on the route notices' channel, which every
// instance listens on, as RunLogFlushPrefix and a nonce; each instance
// answers on runLogFlushed with the nonce once its log is written.
const (
	RunLogFlushPrefix = "!flush-run-log "
	runLogFlushed     = "stencil_run_log_flushed"
	routeNotices      = "stencil_routes"
)

// RunLogFlushed says that this instance wrote its run log for the ask
// with nonce.
func (s *Store) RunLogFlushed(ctx context.Context, nonce string) (err error) {
	defer wrap(&err, "run log flushed")
	_, err = s.db.Exec(ctx, "SELECT pg_notify($1, $2)", runLogFlushed, nonce)
	return err
}

// FlushRunLogs asks every instance that listens for route notices to
// write its run log now and waits, at most wait, until each says it has.
// It returns how many were asked and how many answered.
func (s *Store) FlushRunLogs(ctx context.Context, wait time.Duration) (asked, answered int, err error) {
	defer wrap(&err, "flush run logs")
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return 0, 0, err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{runLogFlushed}.Sanitize()); err != nil {
		return 0, 0, err
	}
	// An instance's listening connection sends nothing after its LISTEN,
	// so that statement stays its last.
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND query = $1`,
		"LISTEN "+pgx.Identifier{routeNotices}.Sanitize()).Scan(&asked); err != nil {
		return 0, 0, err
	}
	if asked == 0 {
		return 0, 0, nil
	}
	nonce := rand.Text()
	if _, err := conn.Exec(ctx, "SELECT pg_notify($1, $2)", routeNotices, RunLogFlushPrefix+nonce); err != nil {
		return asked, 0, err
	}
	waitCtx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for answered < asked {
		n, err := conn.WaitForNotification(waitCtx)
		if err != nil {
			if waitCtx.Err() != nil && ctx.Err() == nil {
				return asked, answered, nil // the rest did not answer in time
			}
			return asked, answered, err
		}
		if n.Channel == runLogFlushed && n.Payload == nonce {
			answered++
		}
	}
	return asked, answered, nil
}
