package views

import (
	"bytes"
	"encoding/json"
	"sort"
	"unicode/utf8"

	"stencil/store"
)

// How a collection's records read in the records table (docs/collections.md).

// RecordRow is a record as the table shows it: a cell per column, cut.
type RecordRow struct {
	store.Record
	Cells  []string
	Pretty string // the data, indented, for the edit box
}

// maxColumns and maxCell bound the records table: the page's first
// top-level keys, each cell cut.
const (
	maxColumns = 6
	maxCell    = 60
)

// RecordRows turns a page of records into table rows; the columns are a
// typed collection's fields in their order (shown whether or not the
// page's records hold them), then the other top-level keys of the page's
// records in the order they were first written: by the oldest record
// holding each, and within a record as it keeps them (jsonb orders keys
// by length, then bytes).
func RecordRows(recs []store.Record, fields ...string) ([]RecordRow, []string) {
	seen := map[string]bool{}
	order := []string{}
	for _, f := range fields {
		seen[f] = true
		order = append(order, f)
	}
	decoded := make([]map[string]json.RawMessage, len(recs))
	byAge := make([]int, len(recs))
	for i, r := range recs {
		_ = json.Unmarshal(r.Data, &decoded[i])
		byAge[i] = i
	}
	sort.SliceStable(byAge, func(a, b int) bool { return recs[byAge[a]].ID < recs[byAge[b]].ID })
	for _, i := range byAge {
		for _, k := range keysInOrder(recs[i].Data) {
			if !seen[k] {
				seen[k] = true
				order = append(order, k)
			}
		}
	}
	if len(order) > max(maxColumns, len(fields)) {
		order = order[:max(maxColumns, len(fields))]
	}
	rows := make([]RecordRow, len(recs))
	for i, r := range recs {
		row := RecordRow{Record: r, Cells: make([]string, len(order))}
		for j, k := range order {
			if v, ok := decoded[i][k]; ok {
				row.Cells[j] = cellText(v)
			}
		}
		var pretty bytes.Buffer
		_ = json.Indent(&pretty, r.Data, "", "  ")
		row.Pretty = pretty.String()
		rows[i] = row
	}
	return rows, order
}

// keysInOrder is the top-level keys of a JSON object as its text has them.
func keysInOrder(data json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return keys
		}
		k, _ := t.(string)
		keys = append(keys, k)
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return keys
		}
	}
	return keys
}

// cellText shows a JSON value in a cell: strings without quotes, the rest
// as JSON, cut to maxCell characters.
func cellText(v json.RawMessage) string {
	var s string
	text := string(v)
	if json.Unmarshal(v, &s) == nil {
		text = s
	}
	if utf8.RuneCountInString(text) > maxCell {
		r := []rune(text)
		text = string(r[:maxCell-1]) + "…"
	}
	return text
}

// CellOf is the cell of data's top-level key for the records table.
func CellOf(data json.RawMessage, key string) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(data, &fields) != nil {
		return ""
	}
	if v, ok := fields[key]; ok {
		return cellText(v)
	}
	return ""
}
