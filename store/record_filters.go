package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"stencil/schema"

	"github.com/jackc/pgx/v5"
)

// The typed filters and sort of a list of records (docs/collections.md):
// each condition on a field's value as its index keeps it
// (FieldValueSQL), so that the index of a unique or indexed field serves
// it. A record without the value (absent or null) meets no comparison,
// only is_null; JSON values compare within their type (numbers as
// numbers, text as text), and an email without case.

// filterSQL is the condition of filters, with their values as parameters
// numbered from next on; it returns the SQL (" AND …" for each) and the
// values.
func filterSQL(filters []schema.Filter, next int) (string, []any) {
	var b strings.Builder
	var args []any
	param := func(v any, cast string) string {
		args = append(args, v)
		return "$" + strconv.Itoa(next+len(args)-1) + "::" + cast
	}
	for _, c := range filters {
		f := c.Field
		value := FieldValueSQL(f)
		text := "(data ->> " + literal(f.Name) + ")"
		b.WriteString(" AND ")
		switch {
		case c.Op == "is_null" && string(c.Value) == "true":
			b.WriteString(value + " IS NULL")
		case c.Op == "is_null":
			b.WriteString(value + " IS NOT NULL")
		case f.Type == schema.Select && f.Multiple:
			// A list of values: eq holds when it holds the value, in when
			// it holds any of them.
			list := "(data -> " + literal(f.Name) + ")"
			switch c.Op {
			case "eq":
				b.WriteString(list + " @> jsonb_build_array(" + param(string(c.Value), "jsonb") + ")")
			case "ne":
				b.WriteString("NOT " + list + " @> jsonb_build_array(" + param(string(c.Value), "jsonb") + ")")
			case "in":
				b.WriteString(list + " ?| " + param(texts(c.Values), "text[]"))
			}
		case f.Type == schema.Email:
			switch c.Op {
			case "in":
				b.WriteString(value + " = ANY(" + param(lowerTexts(c.Values), "text[]") + ")")
			case "contains":
				b.WriteString("strpos(" + value + ", lower(" + param(textOf(c.Value), "text") + ")) > 0")
			case "starts_with":
				b.WriteString("starts_with(" + value + ", lower(" + param(textOf(c.Value), "text") + "))")
			default:
				b.WriteString(value + " " + sqlOps[c.Op] + " lower(" + param(textOf(c.Value), "text") + ")")
			}
		case c.Op == "contains":
			b.WriteString("strpos(lower(" + text + "), lower(" + param(textOf(c.Value), "text") + ")) > 0 AND jsonb_typeof(data -> " + literal(f.Name) + ") = 'string'")
		case c.Op == "starts_with":
			b.WriteString("starts_with(" + text + ", " + param(textOf(c.Value), "text") + ") AND jsonb_typeof(data -> " + literal(f.Name) + ") = 'string'")
		case c.Op == "in":
			vals := make([]string, len(c.Values))
			for i, v := range c.Values {
				vals[i] = string(v)
			}
			b.WriteString(value + " = ANY(" + param(vals, "jsonb[]") + ")")
		case c.Op == "eq" || c.Op == "ne":
			b.WriteString(value + " " + sqlOps[c.Op] + " " + param(string(c.Value), "jsonb"))
		default:
			// An order holds within one JSON type: jsonb puts every
			// string before every number.
			b.WriteString(value + " " + sqlOps[c.Op] + " " + param(string(c.Value), "jsonb") +
				" AND jsonb_typeof(" + value + ") = jsonb_typeof(" + param(string(c.Value), "jsonb") + ")")
		}
	}
	return b.String(), args
}

var sqlOps = map[string]string{"eq": "=", "ne": "<>", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}

// sortSQL orders by a field's value as its index keeps it, then by id:
// values before records without one ascending, after them descending (as
// an index read backwards gives them).
func sortSQL(s *schema.Sort) string {
	if s.Descending {
		return " ORDER BY " + FieldValueSQL(s.Field) + " DESC, id DESC"
	}
	return " ORDER BY " + FieldValueSQL(s.Field) + ", id"
}

func textOf(raw json.RawMessage) string {
	var s string
	_ = json.Unmarshal(raw, &s)
	return s
}

func texts(list []json.RawMessage) []string {
	out := make([]string, len(list))
	for i, v := range list {
		out[i] = textOf(v)
	}
	return out
}

func lowerTexts(list []json.RawMessage) []string {
	out := texts(list)
	for i := range out {
		out[i] = strings.ToLower(out[i])
	}
	return out
}

// RecordList asks for a page of a collection's records: with Where (a
// containment object), Filters and a Sort; without a sort, in id order
// after After.
type RecordList struct {
	Where         json.RawMessage
	Filters       []schema.Filter
	Sort          *schema.Sort
	After         int64
	Offset, Limit int
}

// listSQL is the condition of a typed list: the collection, named both as
// parameters $1 and $2 (as records_scope reads them) and as literals, so
// that the partial index of a field is seen to serve it in a generic plan
// too.
func (q RecordList) listSQL(project, collection string) (string, []any) {
	sql := " WHERE " + scopeSQL(project, collection) + " AND project_id = $1 AND collection_id = $2"
	args := []any{project, collection}
	if len(q.Where) > 0 {
		sql += containsSQL("$3")
		args = append(args, string(q.Where))
	}
	cond, values := filterSQL(q.Filters, len(args)+1)
	return sql + cond, append(args, values...)
}

// pageSQL is the statement of a typed list's page, and its parameters.
func (q RecordList) pageSQL(project, collection string) (string, []any) {
	sql, args := q.listSQL(project, collection)
	order := " ORDER BY id"
	switch {
	case q.Sort != nil:
		order = sortSQL(q.Sort)
	case q.After > 0:
		sql += " AND id > " + strconv.FormatInt(q.After, 10)
	}
	n := len(args)
	return "SELECT " + recordColumns + " FROM records" + sql + order + " OFFSET $" + strconv.Itoa(n+1) + " LIMIT $" + strconv.Itoa(n+2),
		append(args, q.Offset, q.Limit)
}

// ListRecords returns the page q asks for. A list without filters or a
// typed sort reads as Records does.
func (s *Store) ListRecords(ctx context.Context, project, collection string, q RecordList) (_ []Record, err error) {
	if len(q.Filters) == 0 && q.Sort == nil {
		return s.Records(ctx, project, collection, q.Where, q.After, q.Offset, q.Limit)
	}
	defer wrap(&err, "list records", project, collection)
	sql, args := q.pageSQL(project, collection)
	// Planned with its values each time (not a prepared statement's
	// generic plan): a range's share of the records is then known, and
	// the planner reads a field's index when the range is narrow.
	rows, err := s.db.Query(ctx, sql, append([]any{pgx.QueryExecModeExec}, args...)...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Record, error) { return scanRecord(r) })
}

// CountListed counts the records q's conditions hold for, up to
// RecordCountCap (capped says it stopped there), as CountRecords does.
func (s *Store) CountListed(ctx context.Context, project, collection string, q RecordList) (_ int, capped bool, err error) {
	if len(q.Filters) == 0 {
		return s.CountRecords(ctx, project, collection, q.Where)
	}
	defer wrap(&err, "count records", project, collection)
	sql, args := q.listSQL(project, collection)
	var n int
	err = s.db.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM (SELECT 1 FROM records%s LIMIT %d) AS capped", sql, RecordCountCap+1),
		append([]any{pgx.QueryExecModeExec}, args...)...).Scan(&n)
	if n > RecordCountCap {
		return RecordCountCap, true, err
	}
	return n, false, err
}

// indexedMatch chooses, for a read whose containment filter names a unique
// or indexed field of the collection with a value (text, a number or a
// boolean), the first such field: its index then finds the matches, in id
// order, instead of the GIN index (docs/collections.md). The filter still
// holds whole; a read of an untyped collection is left as it is.
func (s *Store) indexedMatch(ctx context.Context, project, collection string, q *RecordQuery) {
	if q.ByID || q.by != nil || q.sortBy != nil || len(q.Where) == 0 && len(q.Sort) != 1 {
		return
	}
	sch, err := s.Schema(ctx, project, collection)
	if err != nil || !sch.Indexed() {
		return // a read of no collection fails on its own
	}
	if len(q.Where) == 0 {
		// A sort by an indexed field (not a unique one: its index holds
		// the value alone, not the id the ties go by).
		if f, ok := sch.Field(q.Sort[0]); ok && f.Indexed && !f.Unique {
			q.sortBy = &f
		}
		return
	}
	var match map[string]json.RawMessage
	if json.Unmarshal(q.Where, &match) != nil {
		return
	}
	for i := range sch.Fields {
		f := &sch.Fields[i]
		v, ok := match[f.Name]
		if !ok || !(f.Unique || f.Indexed) || len(v) == 0 || v[0] == '{' || v[0] == '[' || string(v) == "null" {
			continue
		}
		if f.Type == schema.Email && v[0] != '"' {
			continue
		}
		q.by, q.byValue = f, string(v)
		if f.Type == schema.Email {
			q.byValue = textOf(v) // compared as text, without case
		}
		return
	}
}
