package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"stencil/schema"
)

// Importing records (docs/collections.md, "CSV"): many records checked as
// one write checks one (prepareRecord), every problem gathered by the
// record's place, then written in one transaction with COPY, all or none.

// MaxImportProblems is how many problems a refused import names.
const MaxImportProblems = 20

// RecordProblem is what is wrong with the record at index At of an import.
type RecordProblem struct {
	At      int
	Field   string // the field or property; "" for the record whole
	Message string
	// Twin is, for a unique value two records of the import hold, the
	// index of the first (the message then says so); else -1.
	Twin int
}

// PreparedImport is an import's records as they will be written, and the
// schema they were checked against.
type PreparedImport struct {
	docs []json.RawMessage
	hash string
}

// Len is how many records the import writes.
func (p PreparedImport) Len() int { return len(p.docs) }

// PrepareImport checks docs as records of a collection, each as a create
// does (its shape and numbers, its fields, their defaults), then the
// references all at once, and the values of unique fields against each
// other and the records stored. It returns at most MaxImportProblems
// problems, in the records' order; the collection missing is ErrNotFound.
func (s *Store) PrepareImport(ctx context.Context, project, collection string, docs [][]byte) (_ PreparedImport, _ []RecordProblem, err error) {
	defer wrap(&err, "prepare import", project, collection)
	sch, err := s.Schema(ctx, project, collection)
	if err != nil {
		return PreparedImport{}, nil, err
	}
	out := PreparedImport{docs: make([]json.RawMessage, len(docs)), hash: sch.Hash()}
	var problems []RecordProblem
	full := func() bool { return len(problems) >= MaxImportProblems }
	type ref struct {
		at int
		schema.Ref
	}
	var refs []ref
	for i, raw := range docs {
		data, err := RecordData(raw)
		if err != nil {
			problems = append(problems, RecordProblem{At: i, Message: err.Error(), Twin: -1})
			if full() {
				return out, problems, nil
			}
			continue
		}
		data, rs, err := sch.Prepare(data, true)
		var v *schema.Violation
		switch {
		case errors.As(err, &v):
			problems = append(problems, RecordProblem{At: i, Field: v.Field, Message: v.Message, Twin: -1})
			if full() {
				return out, problems, nil
			}
			continue
		case err != nil:
			return out, nil, err
		}
		out.docs[i] = data
		for _, r := range rs {
			refs = append(refs, ref{i, r})
		}
	}
	// References: one statement for them all.
	if len(refs) > 0 {
		plain := make([]schema.Ref, len(refs))
		for i, r := range refs {
			plain[i] = r.Ref
		}
		missing, err := s.missingRefs(ctx, project, plain, MaxImportProblems)
		if err != nil {
			return out, nil, err
		}
		for _, n := range missing {
			r := refs[n]
			problems = append(problems, RecordProblem{At: r.at, Field: r.Field, Message: refMessage(r.Ref), Twin: -1})
		}
	}
	if err := s.uniqueInImport(ctx, project, collection, sch, out.docs, &problems); err != nil {
		return out, nil, err
	}
	sortProblems(problems)
	if len(problems) > MaxImportProblems {
		problems = problems[:MaxImportProblems]
	}
	return out, problems, nil
}

// uniqueInImport finds the values of unique fields that two records of
// the import hold, or that a stored record holds.
func (s *Store) uniqueInImport(ctx context.Context, project, collection string, sch *schema.Schema, docs []json.RawMessage, problems *[]RecordProblem) error {
	for _, f := range sch.Fields {
		if !f.Unique {
			continue
		}
		first := map[string]int{} // a value's key → the index holding it first
		var keys []string
		var at []int
		for i, doc := range docs {
			if doc == nil {
				continue
			}
			var props map[string]json.RawMessage
			if json.Unmarshal(doc, &props) != nil {
				continue
			}
			v, ok := props[f.Name]
			if !ok || string(v) == "null" {
				continue
			}
			key := uniqueKey(f, v)
			if j, seen := first[key]; seen {
				*problems = append(*problems, RecordProblem{At: i, Field: f.Name, Message: "must be unique", Twin: j})
				continue
			}
			first[key] = i
			keys, at = append(keys, string(v)), append(at, i)
		}
		if len(keys) == 0 {
			continue
		}
		// The stored records holding one of the values, read by the
		// field's index: emails as their lower-case text, others as jsonb.
		value := FieldValueSQL(f)
		var args any = keys
		cast := "jsonb[]"
		if f.Type == schema.Email {
			texts := make([]string, len(keys))
			for i, k := range keys {
				texts[i] = uniqueKey(f, json.RawMessage(k))
			}
			args, cast = texts, "text[]"
		}
		rows, err := s.db.Query(ctx, `SELECT DISTINCT (`+value+`)::text FROM records WHERE `+scopeSQL(project, collection)+
			` AND project_id = $1 AND collection_id = $2 AND `+value+` = ANY($3::`+cast+`)`, project, collection, args)
		if err != nil {
			return err
		}
		taken := map[string]bool{}
		var v string
		if _, err := pgx.ForEachRow(rows, []any{&v}, func() error {
			if f.Type == schema.Email {
				taken[v] = true
			} else {
				taken[uniqueKey(f, json.RawMessage(v))] = true
			}
			return nil
		}); err != nil {
			return err
		}
		for i, k := range keys {
			if taken[uniqueKey(f, json.RawMessage(k))] {
				*problems = append(*problems, RecordProblem{At: at[i], Field: f.Name, Message: "must be unique: a stored record holds it", Twin: -1})
			}
		}
	}
	return nil
}

// uniqueKey is what a unique field compares of a value: an email's text
// in lower case, other values as their JSON, numbers as numbers.
func uniqueKey(f schema.Field, v json.RawMessage) string {
	if f.Type == schema.Email {
		return strings.ToLower(textOf(v))
	}
	var n json.Number
	if json.Unmarshal(v, &n) == nil {
		if x, err := n.Float64(); err == nil {
			return fmt.Sprint(x)
		}
	}
	return string(v)
}

func sortProblems(ps []RecordProblem) {
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && ps[j].At < ps[j-1].At; j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
}

// ImportRecords writes a prepared import's records in one transaction,
// with COPY, once the collection's fields are confirmed to be those they
// were checked against (records_fields_hold, which also holds a change of
// them off until it commits); one event tells it. It returns how many it
// wrote.
func (s *Store) ImportRecords(ctx context.Context, project, collection string, p PreparedImport) (n int, err error) {
	defer wrap(&err, "import records", project, collection)
	err = s.change(ctx, func(tx *Store) (Event, error) {
		var ok bool
		if err := tx.db.QueryRow(ctx, "SELECT "+holdSQL("$1", "$2", "$3"), project, collection, p.hash).Scan(&ok); err != nil {
			s.schemas.note(err)
			return Event{}, err
		}
		if !ok {
			return Event{}, ErrNotFound
		}
		copier, isTx := tx.db.(interface {
			CopyFrom(context.Context, pgx.Identifier, []string, pgx.CopyFromSource) (int64, error)
		})
		if !isTx {
			return Event{}, errors.New("import records: not in a transaction")
		}
		rows := make([][]any, len(p.docs))
		for i, d := range p.docs {
			rows[i] = []any{project, collection, string(d)}
		}
		copied, err := copier.CopyFrom(ctx, pgx.Identifier{"records"}, []string{"project_id", "collection_id", "data"}, pgx.CopyFromRows(rows))
		if err != nil {
			return Event{}, s.uniqueViolation(ctx, project, collection, translate(err))
		}
		n = int(copied)
		return Event{Type: "record_import", ProjectID: in(project), Object: collection,
			Summary: fmt.Sprintf("%d records imported into collection %s", n, collection)}, nil
	})
	return n, err
}

// RecordKeys are the top-level keys a collection's records hold, in the
// order records first hold them (by the oldest holding each).
func (s *Store) RecordKeys(ctx context.Context, project, collection string) (_ []string, err error) {
	defer wrap(&err, "record keys", project, collection)
	rows, err := s.db.Query(ctx, `SELECT k FROM records, jsonb_object_keys(data) AS k
		WHERE project_id = $1 AND collection_id = $2 GROUP BY k ORDER BY min(id), k`, project, collection)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// EachRecord calls fn with each record of a collection, in id order, a
// page at a time (an export's read: whatever the collection's size, a
// page's records at once).
func (s *Store) EachRecord(ctx context.Context, project, collection string, fn func(id int64, data []byte) error) (err error) {
	defer wrap(&err, "each record", project, collection)
	return s.eachRecord(ctx, project, collection, "", fn)
}
