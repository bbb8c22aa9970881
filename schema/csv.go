package schema

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// CSV cells (docs/collections.md): a record's properties as text, one a
// column, and back by the fields' types.

// FromCell reads a CSV cell as the value of f (a field, or a property not
// declared: Type ""), or says what is wrong with it. An empty cell is no
// value (nil). Text types take the cell as it is; integer, number and
// reference a JSON number; boolean true or false (in any case); select
// with multiple and json the JSON text; a property not declared a JSON
// number, true, false or an object or array when the cell is one, and
// text otherwise.
func FromCell(f Field, cell string) (json.RawMessage, string) {
	if cell == "" {
		return nil, ""
	}
	text := func() json.RawMessage {
		b, _ := json.Marshal(cell)
		return b
	}
	switch f.Type {
	case Text, Email, URL, Datetime:
		return text(), ""
	case Select:
		if !f.Multiple {
			return text(), ""
		}
		return jsonCell(cell, "must be a JSON list of values, such as [\"a\",\"b\"]")
	case Integer, Number, Reference:
		if _, err := strconv.ParseFloat(cell, 64); err != nil || !json.Valid([]byte(cell)) {
			return nil, "must be " + article(f.Type)
		}
		return json.RawMessage(cell), ""
	case Boolean:
		switch strings.ToLower(cell) {
		case "true":
			return json.RawMessage("true"), ""
		case "false":
			return json.RawMessage("false"), ""
		}
		return nil, "must be true or false"
	case JSON:
		return jsonCell(cell, "must be JSON")
	}
	// A property not declared: a JSON scalar or structure as itself.
	if c := cell[0]; c == '{' || c == '[' || c == '-' || c >= '0' && c <= '9' || cell == "true" || cell == "false" {
		if json.Valid([]byte(cell)) {
			return json.RawMessage(cell), ""
		}
	}
	return text(), ""
}

func jsonCell(cell, msg string) (json.RawMessage, string) {
	if !json.Valid([]byte(cell)) {
		return nil, msg
	}
	var buf bytes.Buffer
	_ = json.Compact(&buf, []byte(cell))
	return buf.Bytes(), ""
}

// Cell writes a stored value as a CSV cell, as FromCell reads it back:
// text as it is, null as an empty cell, numbers, true and false, lists and
// objects as JSON.
func Cell(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return ""
	case raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return s
		}
	case raw[0] == '{' || raw[0] == '[':
		var buf bytes.Buffer
		if json.Compact(&buf, raw) == nil {
			return buf.String()
		}
	}
	return string(raw)
}
