package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"stencil/flow"
	"stencil/schema"
)

// Collection is a project's set of records (docs/collections.md).
type Collection struct {
	ProjectID   string
	ID          string
	Name        string
	Description string
	Records     int // number of records
	// Schema is its fields, and whether records may hold other
	// properties (docs/collections.md); the zero Schema is untyped.
	Schema    schema.Schema
	CreatedBy *int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Record is one JSON object of a collection. Data is its compact JSON.
type Record struct {
	ID           int64
	ProjectID    string
	CollectionID string
	Data         json.RawMessage
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// MaxRecordBytes is the largest record, as compact JSON (64 KiB).
const MaxRecordBytes = 64 << 10

// Record data that breaks a rule: the caller names the field.
var (
	ErrRecordNotObject = errors.New("must be a JSON object")
	ErrRecordTooLarge  = errors.New("must be at most 64 KiB (65,536 bytes) of JSON")
	ErrNumberRange     = errors.New("holds a number a 64-bit float cannot keep: at most ±1.7976931348623157e308, whole numbers past 9,007,199,254,740,992 only as a float reads them back (send longer ones as text), and at most 16,383 digits after the point")
)

// jsonb keeps numbers as numeric, which holds at most this many digits
// before and after the decimal point.
const (
	maxIntegerDigits  = 131072
	maxFractionDigits = 16383
)

// CompactObject returns JSON text raw compacted, or an error when it is not
// JSON (a *json.SyntaxError) or not an object (ErrRecordNotObject): the
// shape of a record's data and of a containment filter.
func CompactObject(raw []byte) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, err
	}
	if b := buf.Bytes(); len(b) == 0 || b[0] != '{' {
		return nil, ErrRecordNotObject
	}
	if !numbersFit(buf.Bytes()) {
		return nil, ErrNumberRange
	}
	return buf.Bytes(), nil
}

// numbersFit reports whether every number of compact JSON text is one
// JSON clients read back as written (docs/collections.md): a finite
// 64-bit float, a whole number only if a float keeps its digits, and one
// PostgreSQL's numeric holds (jsonb refuses 0.1 followed by 16,384 digits).
func numbersFit(text []byte) bool {
	inString, escaped := false, false
	for i := 0; i < len(text); i++ {
		b := text[i]
		switch {
		case escaped:
			escaped = false
		case inString && b == '\\':
			escaped = true
		case b == '"':
			inString = !inString
		case inString:
		case b == '-' || b >= '0' && b <= '9':
			j := i
			for j < len(text) && bytes.IndexByte([]byte("+-.eE0123456789"), text[j]) >= 0 {
				j++
			}
			if !numberFits(text[i:j]) {
				return false
			}
			i = j - 1
		}
	}
	return true
}

// numberFits checks one JSON number: its digits before and after the point
// once the exponent is applied.
func numberFits(n []byte) bool {
	mantissa, exp, _ := bytes.Cut(bytes.TrimPrefix(n, []byte("-")), []byte("e"))
	if len(exp) == 0 {
		mantissa, exp, _ = bytes.Cut(mantissa, []byte("E"))
	}
	whole, frac, _ := bytes.Cut(mantissa, []byte("."))
	e := 0
	if len(exp) > 0 {
		digits := bytes.TrimLeft(bytes.TrimLeft(exp, "+-"), "0")
		if len(digits) > 7 {
			return false // beyond any digit count numeric keeps
		}
		e, _ = strconv.Atoi(string(digits))
		if exp[0] == '-' {
			e = -e
		}
	}
	if len(whole)+e > maxIntegerDigits || len(frac)-e > maxFractionDigits {
		return false
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil && (math.IsInf(f, 0) || math.IsNaN(f)) {
		return false
	}
	if len(frac) == 0 && len(exp) == 0 && len(whole) > 15 {
		return strconv.FormatFloat(math.Abs(f), 'f', -1, 64) == string(whole)
	}
	return true
}

// RecordData checks raw as a record's data and returns its compact form:
// valid JSON, an object, at most MaxRecordBytes once compacted.
func RecordData(raw []byte) (json.RawMessage, error) {
	data, err := CompactObject(raw)
	if err == nil && len(data) > MaxRecordBytes {
		return nil, ErrRecordTooLarge
	}
	return data, err
}

// collectionSelect reads collections with their record counts, kept in
// record_counts (migration 042): one index range of a few rows, however
// many records a collection holds.
const collectionSelect = `SELECT c.project_id, c.id, c.name, c.description, c.fields, NOT c.additional, c.created_by, c.created_at, c.updated_at,
	(SELECT coalesce(sum(n), 0) FROM record_counts r WHERE r.project_id = c.project_id AND r.collection_id = c.id)
	FROM collections c`

func scanCollection(row pgx.Row) (Collection, error) {
	var c Collection
	var fields []byte
	err := row.Scan(&c.ProjectID, &c.ID, &c.Name, &c.Description, &fields, &c.Schema.Strict, &c.CreatedBy, &c.CreatedAt, &c.UpdatedAt, &c.Records)
	if err == nil {
		err = json.Unmarshal(fields, &c.Schema.Fields)
	}
	return c, translate(err)
}

// CreateCollection inserts c, made by user uid. The indexes of its unique
// and indexed fields are built first (field_indexes.go); inside a
// transaction, they must have been (PrepareFieldIndexes).
func (s *Store) CreateCollection(ctx context.Context, c *Collection, uid int64) (err error) {
	defer wrap(&err, "create collection")
	if len(fieldIndexes(c.ProjectID, c.ID, c.Schema)) == 0 {
		return s.createCollection(ctx, c, uid)
	}
	if inTransaction(s.db) {
		// Built beforehand (PrepareFieldIndexes), or not made here.
		if err := s.fieldIndexesBuilt(ctx, unusedFieldIndexes(c.ProjectID, c.ID, c.Schema, schema.Schema{})); err != nil {
			return err
		}
		return s.createCollection(ctx, c, uid)
	}
	return s.withFieldsLock(ctx, c.ProjectID, c.ID, func() error {
		var exists bool
		err := s.db.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM collections WHERE project_id = $1 AND id = $2)", c.ProjectID, c.ID).Scan(&exists)
		switch {
		case err != nil:
			return err
		case exists:
			return &ConflictError{Constraint: "collections_pkey"}
		}
		built, err := s.fieldIndexesFor(ctx, c.ProjectID, c.ID, schema.Schema{}, c.Schema)
		if err != nil {
			return err
		}
		if err = s.createCollection(ctx, c, uid); err != nil {
			_ = s.dropFieldIndexes(context.WithoutCancel(ctx), built)
		}
		return err
	})
}

func (s *Store) createCollection(ctx context.Context, c *Collection, uid int64) error {
	return s.change(ctx, func(tx *Store) (Event, error) {
		fields, err := fieldsJSON(c.Schema)
		if err != nil {
			return Event{}, err
		}
		err = tx.db.QueryRow(ctx, `INSERT INTO collections (project_id, id, name, description, created_by, fields, additional, fields_hash)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING created_at, updated_at`,
			c.ProjectID, c.ID, c.Name, c.Description, uid, fields, !c.Schema.Strict, c.Schema.Hash()).Scan(&c.CreatedAt, &c.UpdatedAt)
		if err == nil {
			c.CreatedBy, c.Records = &uid, 0
		}
		return collectionEvent("create", c.ProjectID, c.ID, "collection "+c.ID+" created"), translate(err)
	})
}

func collectionEvent(verb, project, id, summary string) Event {
	return Event{Type: "collection_" + verb, ProjectID: in(project), Object: id, Summary: summary}
}

// recordEvent names a record collection/id.
func recordEvent(verb, project, collection string, id int64, summary string) Event {
	object := collection + "/" + strconv.FormatInt(id, 10)
	return Event{Type: "record_" + verb, ProjectID: in(project), Object: object, Summary: "record " + object + " " + summary}
}

// Collection returns collection id of project with its record count.
func (s *Store) Collection(ctx context.Context, project, id string) (_ Collection, err error) {
	defer wrap(&err, "collection", project, id)
	return scanCollection(s.db.QueryRow(ctx, collectionSelect+" WHERE c.project_id = $1 AND c.id = $2", project, id))
}

// ListCollections returns a page of project's collections whose id or name
// contains the filter, by id, each with its record count, and the number of
// matches.
func (s *Store) ListCollections(ctx context.Context, project string, p Page) (_ []Collection, _ int, err error) {
	defer wrap(&err, "list collections", project)
	const where = ` WHERE c.project_id = $1 AND ($2 = '' OR strpos(lower(c.id || ' ' || c.name), lower($2)) > 0)`
	var total int
	if err := s.db.QueryRow(ctx, "SELECT count(*) FROM collections c"+where, project, p.Filter).Scan(&total); err != nil {
		return nil, 0, err
	}
	rows, err := s.db.Query(ctx, collectionSelect+where+" ORDER BY c.id OFFSET $3 LIMIT $4", project, p.Filter, p.Offset, p.Limit)
	if err != nil {
		return nil, 0, err
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Collection, error) { return scanCollection(r) })
	return list, total, err
}

// UpdateCollection stores c's name and description (c.Records stays as
// the caller read it).
func (s *Store) UpdateCollection(ctx context.Context, c *Collection) (err error) {
	defer wrap(&err, "update collection")
	return s.change(ctx, func(tx *Store) (Event, error) {
		err := tx.db.QueryRow(ctx, `UPDATE collections SET name = $3, description = $4, updated_at = now()
			WHERE project_id = $1 AND id = $2 RETURNING created_by, created_at, updated_at`,
			c.ProjectID, c.ID, c.Name, c.Description).Scan(&c.CreatedBy, &c.CreatedAt, &c.UpdatedAt)
		return collectionEvent("update", c.ProjectID, c.ID, "collection "+c.ID+" renamed "+c.Name), translate(err)
	})
}

// DeleteCollection removes a collection and, by cascade, its records;
// then the indexes of its fields (outside a transaction; inside one, the
// sweep drops them).
func (s *Store) DeleteCollection(ctx context.Context, project, id string) (err error) {
	defer wrap(&err, "delete collection", project, id)
	var fields []byte
	err = s.change(ctx, func(tx *Store) (Event, error) {
		err := tx.db.QueryRow(ctx, "DELETE FROM collections WHERE project_id = $1 AND id = $2 RETURNING fields", project, id).Scan(&fields)
		return collectionEvent("delete", project, id, "collection "+id+" deleted with its records"), translate(err)
	})
	s.schemas.forget(project, id)
	if err != nil || inTransaction(s.db) {
		return err
	}
	var sch schema.Schema
	if err := json.Unmarshal(fields, &sch.Fields); err != nil || len(fieldIndexes(project, id, sch)) == 0 {
		return err
	}
	return s.withFieldsLock(ctx, project, id, func() error {
		var exists bool // made again meanwhile: the indexes are its own
		if err := s.db.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM collections WHERE project_id = $1 AND id = $2)", project, id).Scan(&exists); err != nil || exists {
			return err
		}
		var names []string
		for _, ix := range fieldIndexes(project, id, sch) {
			names = append(names, ix.name)
		}
		return s.dropFieldIndexes(ctx, names)
	})
}

const recordColumns = "id, project_id, collection_id, data, created_at, updated_at"

func scanRecord(row pgx.Row) (Record, error) {
	var r Record
	var data []byte
	err := row.Scan(&r.ID, &r.ProjectID, &r.CollectionID, &data, &r.CreatedAt, &r.UpdatedAt)
	r.Data = data
	return r, translate(err)
}

// CreateRecord inserts r into its collection, its data checked as
// prepareRecord does, an event of the log; a collection that does not
// exist is ErrNotFound.
func (s *Store) CreateRecord(ctx context.Context, r *Record) (err error) {
	defer wrap(&err, "create record")
	return retryFields(func() error {
		return s.change(ctx, func(tx *Store) (Event, error) {
			err := tx.InsertRecord(ctx, r)
			return recordEvent("create", r.ProjectID, r.CollectionID, r.ID, "created"), err
		})
	})
}

// InsertRecord is CreateRecord as a run writes: a run's writes are
// traffic, told by the run log, not events. Its data breaking the
// collection's fields is a *schema.Violation.
func (s *Store) InsertRecord(ctx context.Context, r *Record) (err error) {
	defer wrap(&err, "insert record")
	data, hash, err := s.prepareRecord(ctx, r.ProjectID, r.CollectionID, r.Data, true)
	if err != nil {
		return err
	}
	var row pgx.Row
	if r.ID > 0 {
		// An id of its own (a project file's record): the identity's
		// sequence then moves past it, so that no later record takes it.
		row = s.db.QueryRow(ctx, `INSERT INTO records (id, project_id, collection_id, data) OVERRIDING SYSTEM VALUE
			SELECT $5, $1, $2, $3 WHERE `+holdSQL("$1", "$2", "$4")+`
			RETURNING `+recordColumns, r.ProjectID, r.CollectionID, string(data), hash, r.ID)
	} else {
		row = s.db.QueryRow(ctx, `INSERT INTO records (project_id, collection_id, data)
			SELECT $1, $2, $3 WHERE `+holdSQL("$1", "$2", "$4")+`
			RETURNING `+recordColumns, r.ProjectID, r.CollectionID, string(data), hash)
	}
	stored, err := scanRecord(row)
	s.schemas.note(err)
	if conflict := (*ConflictError)(nil); errors.As(err, &conflict) && conflict.Constraint == "records_pkey" {
		return ErrRecordIDTaken
	}
	if err == nil && r.ID > 0 {
		_, err = s.db.Exec(ctx, `SELECT setval('records_id_seq', $1) WHERE $1 > (SELECT last_value FROM records_id_seq)`, r.ID)
	}
	if err == nil {
		*r = stored
	}
	return s.uniqueViolation(ctx, r.ProjectID, r.CollectionID, err)
}

// RecordIDKey is the key of a record's id in a project file's record
// (docs/projects.md): the rest of the object is the record's data.
const RecordIDKey = "_id"

// WithRecordID is compact record data with its id first, as a project
// file writes it: {"_id":2,"title":"Dune"}. A field of the data named
// _id is left out.
func WithRecordID(id int64, data json.RawMessage) json.RawMessage {
	if bytes.Contains(data, []byte(`"`+RecordIDKey+`":`)) {
		// A field of the data's own by that name: the file's is the id.
		var fields map[string]json.RawMessage
		if json.Unmarshal(data, &fields) == nil {
			delete(fields, RecordIDKey)
			data, _ = json.Marshal(fields)
		}
	}
	out := append([]byte(`{"`+RecordIDKey+`":`), strconv.FormatInt(id, 10)...)
	if len(data) > 2 {
		out = append(out, ',')
	}
	return append(out, data[1:]...)
}

// SplitRecordID reads a project file's record: its _id (0 when it has
// none) and its data without it. An _id that is not a whole number from 1
// to 2^53-1 is ErrRecordID.
func SplitRecordID(raw json.RawMessage) (int64, json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return 0, raw, nil // not an object: the data's own check says so
	}
	idText, ok := fields[RecordIDKey]
	if !ok {
		return 0, raw, nil
	}
	id, err := strconv.ParseInt(string(idText), 10, 64)
	if err != nil || id < 1 || id > 1<<53-1 {
		return 0, nil, ErrRecordID
	}
	delete(fields, RecordIDKey)
	data, err := json.Marshal(fields)
	return id, data, err
}

// ErrRecordID: a project file's _id that is not a record id.
var ErrRecordID = errors.New("_id must be a whole number from 1 to 9007199254740991")

// ErrRecordIDTaken: a record given an id of its own (a project file's
// _id) whose id another record holds.
var ErrRecordIDTaken = errors.New("is the id of another record on this service")

// Record returns record id of a collection.
func (s *Store) Record(ctx context.Context, project, collection string, id int64) (_ Record, err error) {
	defer wrap(&err, "record", project, collection)
	return scanRecord(s.db.QueryRow(ctx, "SELECT "+recordColumns+
		" FROM records WHERE project_id = $1 AND collection_id = $2 AND id = $3", project, collection, id))
}

// Records returns up to limit records of a collection after offset, in id
// order; with where (a JSON object), only the records containing it
// (jsonb @>). After, when above 0, starts the page after that id (the next
// page of a list read in id order: however deep, it reads as the first
// does). It runs on the store's connection or transaction, so the flow
// engine reads with it inside its run.
//
// A filtered page in id order from its start (no offset) reads as a run's
// FETCH does: by the index of a field the filter names with a value, or
// (a limit of at most nearMaxLimit) the nearest records first, then the
// GIN index when these hold fewer matches than the page (see
// nearRecords); a deeper offset reads every match.
func (s *Store) Records(ctx context.Context, project, collection string, where json.RawMessage, after int64, offset, limit int, order ...RecordOrder) (_ []Record, err error) {
	defer wrap(&err, "records", project, collection)
	sorted := len(order) > 0 && (order[0].By != "" || order[0].Descending)
	if !sorted && offset == 0 {
		if sql, args, ok := s.filteredPageSQL(ctx, project, collection, where, after, limit); ok {
			rows, err := s.db.Query(ctx, sql, args...)
			if err != nil {
				return nil, err
			}
			return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Record, error) { return scanRecord(r) })
		}
	}
	sql, args := recordsWhere(project, collection, where)
	by := recordsOrder(where)
	if sorted {
		by = order[0].sql()
		args = append(args, order[0].By)
	}
	if after > 0 && !sorted {
		sql += " AND id > " + strconv.FormatInt(after, 10)
	}
	rows, err := s.db.Query(ctx, "SELECT "+recordColumns+" FROM records"+sql+by+" OFFSET $4 LIMIT $5",
		append(args[:3:3], append([]any{offset, limit}, args[3:]...)...)...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Record, error) { return scanRecord(r) })
}

// filteredPageSQL is the statement of a filtered page in id order from
// its start, read as a run's FETCH reads: by a field's index when where
// names an indexed field with a value, else the nearest records first
// when the page is small (ok false otherwise: the page reads every match).
func (s *Store) filteredPageSQL(ctx context.Context, project, collection string, where json.RawMessage, after int64, limit int) (string, []any, bool) {
	if len(where) == 0 {
		return "", nil, false
	}
	q := RecordQuery{Where: where, Limit: limit, After: after}
	if s.indexedMatch(ctx, project, collection, &q); q.by == nil && limit > nearMaxLimit {
		return "", nil, false
	}
	sh := q.shape()
	sh.full = true
	sql, args := q.statement(sh, project, collection)
	return sql, args, true
}

// RecordCountCap is where a count of the records that match a filter
// stops: past it the amount is "100 or more" (amount_capped). A count
// reads each match it counts, and the GIN index gives every match before
// the first (docs/collections.md): the cap keeps what a count reads near
// what a page shows.
const RecordCountCap = 100

// nearCountRecords is how many records, newest first, the count of an
// untyped filter walks before it asks the GIN index: a value more than
// one record in 50 holds (the newest records' most of all) is found past
// the cap there, and its count reads neither the index's list of every
// match nor the records beyond the walk.
const nearCountRecords = 50 * RecordCountCap

// CountRecords counts the records of a collection that contain where (all,
// without it, from the counts kept in record_counts). A filtered count
// stops at RecordCountCap, and capped says it did.
func (s *Store) CountRecords(ctx context.Context, project, collection string, where json.RawMessage) (_ int, capped bool, err error) {
	defer wrap(&err, "count records", project, collection)
	var n int
	if len(where) == 0 {
		err = s.db.QueryRow(ctx, "SELECT coalesce(sum(n), 0) FROM record_counts WHERE project_id = $1 AND collection_id = $2", project, collection).Scan(&n)
		return n, false, err
	}
	sql, args := s.countSQL(ctx, project, collection, where)
	err = s.db.QueryRow(ctx, sql, args...).Scan(&n)
	if n > RecordCountCap {
		return RecordCountCap, true, err
	}
	return n, false, err
}

// countSQL is CountRecords' statement for a filter. When the filter
// names an indexed field with a value, the field's index finds the
// matches and the count stops at the cap however many there are.
// Otherwise the newest nearCountRecords records are walked first, and
// the GIN index (whose bitmap holds every match) counts only when these
// hold no more than the cap: a rare value, or one no record holds, is a
// short list there (a condition PostgreSQL checks once, before that read).
func (s *Store) countSQL(ctx context.Context, project, collection string, where json.RawMessage) (string, []any) {
	sql, args := recordsWhere(project, collection, where)
	q := RecordQuery{Where: where}
	if s.indexedMatch(ctx, project, collection, &q); q.by != nil {
		sql = " WHERE project_id = $1 AND collection_id = $2 AND data @> $3::jsonb" + indexedCond(project, collection, q.by, 4)
		args = append(args, q.byValue)
		return fmt.Sprintf("SELECT count(*) FROM (SELECT 1 FROM records%s LIMIT %d) AS capped", sql, RecordCountCap+1), args
	}
	return fmt.Sprintf(`SELECT CASE WHEN near.n > %[1]d THEN near.n
		ELSE (SELECT count(*) FROM (SELECT 1 FROM records%[2]s LIMIT %[3]d) AS capped) END
		FROM (SELECT count(*) AS n FROM (
			SELECT 1 FROM (SELECT data FROM records WHERE project_id = $1 AND collection_id = $2 ORDER BY id DESC LIMIT %[4]d) w
			WHERE data @> $3::jsonb LIMIT %[3]d) m) near`, RecordCountCap, sql, RecordCountCap+1, nearCountRecords), args
}

// recordsWhere is the condition of Records and CountRecords. Both shapes
// keep three parameters, so that the page query's offset and limit are
// always $4 and $5.
func recordsWhere(project, collection string, where json.RawMessage) (string, []any) {
	if len(where) == 0 {
		return " WHERE project_id = $1 AND collection_id = $2 AND $3::text IS NULL", []any{project, collection, nil}
	}
	return " WHERE project_id = $1 AND collection_id = $2" + containsSQL("$3"), []any{project, collection, string(where)}
}

// containsSQL is the condition that a record ($1's, $2's) contains the
// JSON object param: on the data alone (cheap, for records read by
// another index), and scoped to the project and collection, as the GIN
// index records_scope_idx reads it (migrations 032 and 035).
func containsSQL(param string) string {
	return " AND data @> " + param + "::jsonb AND records_scope(project_id, collection_id, data) @> records_scope($1, $2, " + param + "::jsonb)"
}

// recordsOrder is the page order. With a where filter it is written id + 0:
// PostgreSQL cannot estimate how many records contain a JSON value, and
// ordered by id it would walk the collection's id index, filtering each
// record — 100,000 records for a value no record holds. Ordered by an
// expression, it fetches the matches from the GIN index and sorts them, a
// cost that grows with the matches rather than with the collection.
func recordsOrder(where json.RawMessage) string {
	if len(where) == 0 {
		return " ORDER BY id"
	}
	return " ORDER BY id + 0"
}

// RecordOrder orders a page of records by a column other than the id: By
// is "_created", "_updated" or a top-level key of the data (records
// without it last), then by id.
type RecordOrder struct {
	By         string
	Descending bool
}

// sql is the ORDER BY of o, its key as $6.
func (o RecordOrder) sql() string {
	dir := " ASC"
	if o.Descending {
		dir = " DESC"
	}
	switch o.By {
	case "_created":
		return " ORDER BY created_at" + dir + ", id" + dir + ", $6::text IS NULL"
	case "_updated":
		return " ORDER BY updated_at" + dir + ", id" + dir + ", $6::text IS NULL"
	}
	return " ORDER BY data -> $6::text" + dir + " NULLS LAST, id"
}

// UpdateRecord replaces r's data (checked as prepareRecord does).
func (s *Store) UpdateRecord(ctx context.Context, r *Record) (err error) {
	defer wrap(&err, "update record")
	return retryFields(func() error {
		return s.change(ctx, func(tx *Store) (Event, error) {
			data, hash, err := tx.prepareRecord(ctx, r.ProjectID, r.CollectionID, r.Data, false)
			if err != nil {
				return Event{}, err
			}
			row := tx.db.QueryRow(ctx, `UPDATE records SET data = $4, updated_at = now()
				WHERE project_id = $1 AND collection_id = $2 AND id = $3 AND `+holdSQL("$1", "$2", "$5")+` RETURNING `+recordColumns,
				r.ProjectID, r.CollectionID, r.ID, string(data), hash)
			ev := recordEvent("update", r.ProjectID, r.CollectionID, r.ID, "replaced")
			stored, err := scanRecord(row)
			s.schemas.note(err)
			if err == nil {
				*r = stored
			}
			return ev, s.uniqueViolation(ctx, r.ProjectID, r.CollectionID, err)
		})
	})
}

// SetRecordField sets the top-level field of record id to value (JSON
// text), leaving the record's other fields as they are now: the records
// grid edits one cell, and an edit of another field meanwhile stays. The
// record is read locked and written in one transaction, its new data
// checked as a whole record's is (prepareRecord); value must be JSON whose
// numbers fit (else ErrNumberRange or a *json.SyntaxError).
func (s *Store) SetRecordField(ctx context.Context, r *Record, field string, value []byte) (err error) {
	defer wrap(&err, "set record field")
	var v bytes.Buffer
	if err := json.Compact(&v, value); err != nil {
		return err
	}
	if !numbersFit(v.Bytes()) {
		return ErrNumberRange
	}
	return retryFields(func() error {
		return s.change(ctx, func(tx *Store) (Event, error) {
			var doc map[string]json.RawMessage
			err := tx.db.QueryRow(ctx, `SELECT data FROM records WHERE project_id = $1 AND collection_id = $2 AND id = $3 FOR UPDATE`,
				r.ProjectID, r.CollectionID, r.ID).Scan(&doc)
			if err != nil {
				return Event{}, translate(err)
			}
			doc[field] = v.Bytes()
			text, err := json.Marshal(doc)
			if err != nil {
				return Event{}, err
			}
			data, hash, err := tx.prepareRecord(ctx, r.ProjectID, r.CollectionID, text, false)
			if err != nil {
				return Event{}, err
			}
			row := tx.db.QueryRow(ctx, `UPDATE records SET data = $4, updated_at = now()
				WHERE project_id = $1 AND collection_id = $2 AND id = $3 AND `+holdSQL("$1", "$2", "$5")+` RETURNING `+recordColumns,
				r.ProjectID, r.CollectionID, r.ID, string(data), hash)
			ev := recordEvent("update", r.ProjectID, r.CollectionID, r.ID, "field "+flow.Printable(field)+" set")
			stored, err := scanRecord(row)
			s.schemas.note(err)
			if err == nil {
				*r = stored
			}
			return ev, s.uniqueViolation(ctx, r.ProjectID, r.CollectionID, err)
		})
	})
}

// UpdateRecords replaces the data of many records of one collection in one
// statement (each Data checked as prepareRecord does) and returns how many
// it found (0 in a BeginRuns transaction, which sends the statement later:
// runs do not ask); records of other collections are left alone.
func (s *Store) UpdateRecords(ctx context.Context, project, collection string, recs []Record) (_ int, err error) {
	defer wrap(&err, "update records", project, collection)
	ids := make([]int64, len(recs))
	docs := make([]string, len(recs))
	var hash string
	for i, r := range recs {
		data, h, err := s.prepareRecord(ctx, project, collection, r.Data, false)
		if err != nil {
			return 0, err
		}
		ids[i], docs[i], hash = r.ID, string(data), h
	}
	// The hold is a CTE of one row, so it runs once, before the update.
	sql := `WITH hold AS (SELECT ` + holdSQL("$1", "$2", "$5") + ` AS ok)
		UPDATE records r SET data = u.data::jsonb, updated_at = now()
		FROM unnest($3::bigint[], $4::text[]) AS u(id, data), hold
		WHERE hold.ok AND r.project_id = $1 AND r.collection_id = $2 AND r.id = u.id`
	if sch, _ := s.Schema(ctx, project, collection); sch != nil && sch.Unique() {
		// A unique value taken must be told now, as the field's
		// refusal: a statement with rows is never held back.
		var n int
		err = s.db.QueryRow(ctx, "WITH u AS ("+sql+" RETURNING 1) SELECT count(*) FROM u", project, collection, ids, docs, hash).Scan(&n)
		s.schemas.note(err)
		return n, s.uniqueViolation(ctx, project, collection, translate(err))
	}
	tag, err := s.db.Exec(ctx, sql, project, collection, ids, docs, hash)
	s.schemas.note(err)
	if err != nil {
		return 0, s.uniqueViolation(ctx, project, collection, translate(err))
	}
	return int(tag.RowsAffected()), nil
}

// DeleteRecords removes records of a collection by id.
func (s *Store) DeleteRecords(ctx context.Context, project, collection string, ids []int64) (err error) {
	defer wrap(&err, "delete records", project, collection)
	_, err = s.db.Exec(ctx, "DELETE FROM records WHERE project_id = $1 AND collection_id = $2 AND id = ANY($3)", project, collection, ids)
	return err
}

// DeleteRecord removes record id of a collection.
func (s *Store) DeleteRecord(ctx context.Context, project, collection string, id int64) (err error) {
	defer wrap(&err, "delete record", project, collection)
	return s.change(ctx, func(tx *Store) (Event, error) {
		tag, err := tx.db.Exec(ctx, "DELETE FROM records WHERE project_id = $1 AND collection_id = $2 AND id = $3", project, collection, id)
		if err == nil && tag.RowsAffected() == 0 {
			err = ErrNotFound
		}
		return recordEvent("delete", project, collection, id, "deleted"), err
	})
}

// CollectionIDs returns the ids of a project's collections.
func (s *Store) CollectionIDs(ctx context.Context, project string) (_ []string, err error) {
	defer wrap(&err, "collection i ds", project)
	rows, err := s.db.Query(ctx, "SELECT id FROM collections WHERE project_id = $1 ORDER BY id", project)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}
