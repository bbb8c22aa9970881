package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Ops are the operators of a list's filter (docs/collections.md).
var Ops = []string{"eq", "ne", "lt", "lte", "gt", "gte", "contains", "starts_with", "in", "is_null"}

// Limits of a filter.
const (
	MaxFilters  = 20
	MaxInValues = 100
)

// Filter is one condition of a list's filter, [field, op, value], checked
// against the field's type. Field is the declared field (its Name alone,
// Type "", for a property a collection does not declare).
type Filter struct {
	Field Field
	Op    string
	// Value is the value compared with (for in, the list's values; for
	// is_null, true or false), as JSON.
	Value  json.RawMessage
	Values []json.RawMessage
}

// Sort is a list's order by a field ("year", or "-year" descending).
type Sort struct {
	Field      Field
	Descending bool
}

// FilterError is a filter that breaks a rule: At names it ("filter[1]").
type FilterError struct {
	At, Message string
}

func (e *FilterError) Error() string { return e.At + " " + e.Message }

// property returns the field a filter or sort names: declared, or, where
// the collection keeps other properties, a property of no type.
func (s Schema) property(name, at string) (Field, error) {
	if f, ok := s.Field(name); ok {
		return f, nil
	}
	switch {
	case name == "" || utf8.RuneCountInString(name) > 100 || strings.ContainsFunc(name, unicode.IsControl):
		return Field{}, &FilterError{at, "must name a property: 1–100 characters, no control characters"}
	case s.Strict:
		return Field{}, &FilterError{at, "names " + quote(name) + ", which is not a field of this collection"}
	}
	return Field{Name: name}, nil
}

// ParseSort reads a sort: a field's name, led by - for descending.
func (s Schema) ParseSort(text string) (*Sort, error) {
	if text == "" {
		return nil, nil
	}
	name, desc := strings.CutPrefix(text, "-")
	f, err := s.property(name, "sort")
	if err != nil {
		return nil, err
	}
	if f.Type == JSON || f.Type == Select && f.Multiple {
		return nil, &FilterError{"sort", "names " + f.Name + ", a field of type " + f.describe() + ", which has no order"}
	}
	return &Sort{Field: f, Descending: desc}, nil
}

// ParseFilter reads a filter: a JSON array of [field, op, value], every one
// to hold, each checked against its field's type.
func (s Schema) ParseFilter(text string) ([]Filter, error) {
	if text == "" {
		return nil, nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal([]byte(text), &list); err != nil || list == nil {
		return nil, &FilterError{"filter", `must be a JSON array of [field, op, value], such as [["year","gt",1990]]`}
	}
	if len(list) > MaxFilters {
		return nil, &FilterError{"filter", fmt.Sprintf("holds %d conditions: at most %d", len(list), MaxFilters)}
	}
	out := make([]Filter, 0, len(list))
	for i, raw := range list {
		at := fmt.Sprintf("filter[%d]", i)
		var parts []json.RawMessage
		var name, op string
		if json.Unmarshal(raw, &parts) != nil || len(parts) != 3 || json.Unmarshal(parts[0], &name) != nil || json.Unmarshal(parts[1], &op) != nil {
			return nil, &FilterError{at, "must be [field, op, value], the field and op as text"}
		}
		f, err := s.property(name, at)
		if err != nil {
			return nil, err
		}
		c, err := f.condition(op, parts[2], at)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// FilterOps are the operators a filter may apply to f (docs/collections.md):
// the page's filter builder offers these alone.
func (f Field) FilterOps() []string {
	out := []string{"eq", "ne"}
	if f.ordered() {
		out = append(out, "lt", "lte", "gt", "gte")
	}
	if f.textual() {
		out = append(out, "contains", "starts_with")
	}
	return append(out, "in", "is_null")
}

// ordered says whether values of a type have an order (lt, gt …).
func (f Field) ordered() bool {
	switch f.Type {
	case Boolean, JSON, Reference:
		return false
	case Select:
		return !f.Multiple
	}
	return true
}

// textual says whether a type's values are text (contains, starts_with).
func (f Field) textual() bool {
	switch f.Type {
	case "", Text, Email, URL, Datetime:
		return true
	case Select:
		return !f.Multiple
	}
	return false
}

func (f Field) condition(op string, value json.RawMessage, at string) (Filter, error) {
	c := Filter{Field: f, Op: op, Value: bytes.TrimSpace(value)}
	refuse := func(msg string) (Filter, error) { return Filter{}, &FilterError{at, msg} }
	of := "of type " + f.describe()
	if f.Type == "" {
		of = "a property not declared"
	}
	switch op {
	case "is_null":
		if s := string(c.Value); s != "true" && s != "false" {
			return refuse("is_null takes true or false")
		}
		return c, nil
	case "in":
		if json.Unmarshal(c.Value, &c.Values) != nil || len(c.Values) < 1 || len(c.Values) > MaxInValues {
			return refuse(fmt.Sprintf("in takes a list of 1 to %d values", MaxInValues))
		}
		for _, v := range c.Values {
			if msg := f.operand(v); msg != "" {
				return refuse("in: each value " + msg)
			}
		}
		return c, nil
	case "eq", "ne":
	case "lt", "lte", "gt", "gte":
		if !f.ordered() {
			return refuse(op + " does not apply to " + f.Name + ", " + of)
		}
	case "contains", "starts_with":
		if !f.textual() {
			return refuse(op + " does not apply to " + f.Name + ", " + of)
		}
		if len(c.Value) == 0 || c.Value[0] != '"' {
			return refuse(op + " takes text")
		}
		return c, nil
	default:
		return refuse("has the operator " + quote(op) + ": use one of " + strings.Join(Ops, ", "))
	}
	if msg := f.operand(c.Value); msg != "" {
		return refuse("the value " + msg)
	}
	return c, nil
}

// operand checks a value compared with f: of f's type (its options aside),
// or for a property not declared a number or text; never null (is_null
// asks for that).
func (f Field) operand(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return "must not be null (ask with is_null)"
	}
	if f.Type == "" {
		if raw[0] == '"' || raw[0] == '-' || raw[0] >= '0' && raw[0] <= '9' || string(raw) == "true" || string(raw) == "false" {
			return ""
		}
		return "must be text, a number, true or false"
	}
	bare := Field{Name: f.Name, Type: f.Type, Values: f.Values, Collection: f.Collection}
	if f.Type == Select && f.Multiple {
		bare.Multiple = false // compared with one of the list's values
	}
	return bare.value(raw)
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
