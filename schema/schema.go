// Package schema is a collection's fields (docs/collections.md, "Typed
// collections"): the rules of their definitions, and the check of a
// record's data against them that every write path runs before a record
// is stored. It is pure Go: the store runs the check inside the
// transaction that writes, and the database only confirms that the fields
// checked against are still the collection's (Schema.Hash).
package schema

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The types a field may have.
const (
	Text      = "text"
	Integer   = "integer"
	Number    = "number"
	Boolean   = "boolean"
	Datetime  = "datetime"
	Email     = "email"
	URL       = "url"
	Select    = "select"
	Reference = "reference"
	JSON      = "json"
)

// Types are the field types, in the order the documents list them.
var Types = []string{Text, Integer, Number, Boolean, Datetime, Email, URL, Select, Reference, JSON}

// Limits of a collection's fields.
const (
	MaxFields        = 100 // fields of one collection
	MaxIndexed       = 10  // fields that are unique or indexed: each is an index
	MaxSelectValues  = 100
	MaxValueLength   = 200 // a select value's characters
	MaxPatternLength = 500
	MaxDescription   = 1000
	// MaxSafeInteger is the largest integer every JSON client reads back
	// exactly (2^53).
	MaxSafeInteger = 1 << 53
)

var namePattern = regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`)

// Field is one declared property of a collection's records. The options
// after Description belong to some types only (Check says which).
type Field struct {
	Name        string          `json:"name"`
	Type        string          `json:"type"`
	Required    bool            `json:"required"`
	Unique      bool            `json:"unique"`
	Indexed     bool            `json:"indexed"`
	Default     json.RawMessage `json:"default,omitempty"`
	Description string          `json:"description,omitempty"`
	MinLength   *int            `json:"min_length,omitempty"`
	MaxLength   *int            `json:"max_length,omitempty"`
	Pattern     string          `json:"pattern,omitempty"`
	Min         *float64        `json:"min,omitempty"`
	Max         *float64        `json:"max,omitempty"`
	Values      []string        `json:"values,omitempty"`
	Multiple    bool            `json:"multiple,omitempty"`
	Collection  string          `json:"collection,omitempty"`

	pattern *regexp.Regexp // Pattern compiled, once Check passed
}

// Schema is a collection's fields and whether its records may hold
// properties not declared: Strict refuses them (the API's "additional":
// false). The zero Schema is an untyped collection: every object passes.
type Schema struct {
	Fields []Field
	Strict bool
}

// Typed says whether s checks anything.
func (s Schema) Typed() bool { return len(s.Fields) > 0 || s.Strict }

// Unique says whether a field of s is unique.
func (s Schema) Unique() bool {
	for _, f := range s.Fields {
		if f.Unique {
			return true
		}
	}
	return false
}

// Indexed says whether a field of s is unique or indexed: has an index.
func (s Schema) Indexed() bool {
	for _, f := range s.Fields {
		if f.Unique || f.Indexed {
			return true
		}
	}
	return false
}

// Field returns the field named name.
func (s Schema) Field(name string) (Field, bool) {
	for _, f := range s.Fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

// Hash names s's content: the store keeps it beside the fields, and a
// write checked against a schema confirms in its own statement that the
// collection's hash is still that one. The untyped schema's is "".
func (s Schema) Hash() string {
	if !s.Typed() {
		return ""
	}
	text, _ := json.Marshal(struct {
		F []Field `json:"f"`
		S bool    `json:"s"`
	}{s.Fields, s.Strict})
	sum := sha256.Sum256(text)
	return hex.EncodeToString(sum[:16])
}

// Problem is a definition that breaks a rule: Path is where, in the
// fields' JSON ("fields[2].type"), Message what is wrong.
type Problem struct {
	Path    string
	Message string
}

func (p *Problem) Error() string { return p.Path + " " + p.Message }

// Check validates the definitions of s and prepares them for checking
// records (patterns compiled). exists reports whether a collection of the
// same project exists, for reference fields; the collection being defined
// counts (self is its id).
func (s *Schema) Check(self string, exists func(id string) bool) error {
	if len(s.Fields) > MaxFields {
		return &Problem{"fields", fmt.Sprintf("must hold at most %d fields, not %d", MaxFields, len(s.Fields))}
	}
	seen := map[string]bool{}
	indexes := 0
	for i := range s.Fields {
		f := &s.Fields[i]
		at := fmt.Sprintf("fields[%d].", i)
		if err := f.check(at, self, exists); err != nil {
			return err
		}
		if seen[f.Name] {
			return &Problem{at + "name", "is used by another field of this collection"}
		}
		seen[f.Name] = true
		if f.Unique || f.Indexed {
			if indexes++; indexes > MaxIndexed {
				return &Problem{at + "indexed", fmt.Sprintf("at most %d fields of a collection may be unique or indexed", MaxIndexed)}
			}
		}
	}
	return nil
}

// options are the options each type allows beyond name, type, required,
// unique, indexed, default and description.
var options = map[string][]string{
	Text:      {"min_length", "max_length", "pattern"},
	Integer:   {"min", "max"},
	Number:    {"min", "max"},
	Select:    {"values", "multiple"},
	Reference: {"collection"},
}

// Options are the options a field of type typ may set beyond name, type,
// required, unique, indexed, default and description (the API document's
// Field_<type> schemas list them).
func Options(typ string) []string { return slices.Clone(options[typ]) }

// given lists the type-bound options f has set.
func (f *Field) given() []string {
	var out []string
	add := func(set bool, name string) {
		if set {
			out = append(out, name)
		}
	}
	add(f.MinLength != nil, "min_length")
	add(f.MaxLength != nil, "max_length")
	add(f.Pattern != "", "pattern")
	add(f.Min != nil, "min")
	add(f.Max != nil, "max")
	add(f.Values != nil, "values")
	add(f.Multiple, "multiple")
	add(f.Collection != "", "collection")
	return out
}

func (f *Field) check(at, self string, exists func(string) bool) error {
	switch {
	case !namePattern.MatchString(f.Name):
		return &Problem{at + "name", "must be 1–63 lowercase letters, digits or _, starting with a letter"}
	case !slices.Contains(Types, f.Type):
		return &Problem{at + "type", "must be one of " + strings.Join(Types, ", ")}
	case utf8.RuneCountInString(f.Description) > MaxDescription:
		return &Problem{at + "description", fmt.Sprintf("must be at most %d characters", MaxDescription)}
	}
	for _, o := range f.given() {
		if !slices.Contains(options[f.Type], o) {
			return &Problem{at + o, "does not apply to a field of type " + f.Type}
		}
	}
	switch f.Type {
	case Text:
		if err := f.checkText(at); err != nil {
			return err
		}
	case Integer, Number:
		for _, b := range []struct {
			name string
			v    *float64
		}{{"min", f.Min}, {"max", f.Max}} {
			if b.v == nil {
				continue
			}
			if math.IsInf(*b.v, 0) || math.IsNaN(*b.v) || f.Type == Integer && (*b.v != math.Trunc(*b.v) || math.Abs(*b.v) > MaxSafeInteger) {
				return &Problem{at + b.name, "must be " + article(f.Type)}
			}
		}
		if f.Min != nil && f.Max != nil && *f.Min > *f.Max {
			return &Problem{at + "max", "must not be less than min"}
		}
	case Select:
		if err := f.checkValues(at); err != nil {
			return err
		}
	case Reference:
		switch {
		case f.Collection == "":
			return &Problem{at + "collection", "is required for a reference: the collection its values are records of"}
		case f.Collection != self && (exists == nil || !exists(f.Collection)):
			return &Problem{at + "collection", "names collection " + strconv.Quote(f.Collection) + ", which does not exist in this project"}
		}
	}
	unique := f.Type != Boolean && f.Type != JSON && !(f.Type == Select && f.Multiple)
	switch {
	case f.Unique && !unique:
		return &Problem{at + "unique", "does not apply to a field of type " + f.describe()}
	case f.Indexed && (f.Type == JSON || f.Type == Select && f.Multiple):
		return &Problem{at + "indexed", "does not apply to a field of type " + f.describe()}
	}
	if f.Default != nil {
		switch {
		case f.Unique:
			return &Problem{at + "default", "cannot be set on a unique field: every record would hold it"}
		case f.Type == Reference:
			return &Problem{at + "default", "cannot be set on a reference"}
		case bytes.Equal(bytes.TrimSpace(f.Default), []byte("null")):
			return &Problem{at + "default", "must not be null (leave it out)"}
		}
		if msg := f.value(f.Default); msg != "" {
			return &Problem{at + "default", "does not fit the field: " + msg}
		}
	}
	return nil
}

func (f *Field) describe() string {
	if f.Type == Select && f.Multiple {
		return "select with multiple"
	}
	return f.Type
}

func (f *Field) checkText(at string) error {
	for _, b := range []struct {
		name string
		v    *int
	}{{"min_length", f.MinLength}, {"max_length", f.MaxLength}} {
		if b.v != nil && (*b.v < 0 || *b.v > 1<<20) {
			return &Problem{at + b.name, "must be 0 to 1,048,576"}
		}
	}
	if f.MinLength != nil && f.MaxLength != nil && *f.MinLength > *f.MaxLength {
		return &Problem{at + "max_length", "must not be less than min_length"}
	}
	if f.Pattern != "" {
		if utf8.RuneCountInString(f.Pattern) > MaxPatternLength {
			return &Problem{at + "pattern", fmt.Sprintf("must be at most %d characters", MaxPatternLength)}
		}
		re, err := regexp.Compile(f.Pattern)
		if err != nil {
			var se *syntax.Error
			msg := err.Error()
			if errors.As(err, &se) {
				msg = string(se.Code)
			}
			return &Problem{at + "pattern", "is not a valid regular expression: " + msg}
		}
		f.pattern = re
	}
	return nil
}

func (f *Field) checkValues(at string) error {
	if len(f.Values) < 1 || len(f.Values) > MaxSelectValues {
		return &Problem{at + "values", fmt.Sprintf("must list 1 to %d values", MaxSelectValues)}
	}
	seen := map[string]bool{}
	for j, v := range f.Values {
		switch {
		case v == "" || utf8.RuneCountInString(v) > MaxValueLength:
			return &Problem{fmt.Sprintf("%svalues[%d]", at, j), fmt.Sprintf("must be 1 to %d characters", MaxValueLength)}
		case seen[v]:
			return &Problem{fmt.Sprintf("%svalues[%d]", at, j), "is listed twice"}
		}
		seen[v] = true
	}
	return nil
}

func article(typ string) string {
	if typ == Integer {
		return "an integer"
	}
	return "a number"
}

// Violation is a record that breaks its collection's fields: Field names
// the first field broken (the property, for one not declared), Message
// the rule. Conflict marks a unique value another record holds (409
// rather than 422).
type Violation struct {
	Field    string
	Message  string
	Conflict bool
}

func (v *Violation) Error() string { return "data." + v.Field + " " + v.Message }

// Ref is a value of a reference field: the id of a record that must
// exist in Collection.
type Ref struct {
	Field      string
	Collection string
	ID         int64
}

// Prepare checks doc, a record's data (a JSON object, its numbers already
// checked to fit), against s, the fields in their order and then the
// properties not declared. With create, fields absent from doc that have a
// default get it. It returns the data to store (doc itself when nothing
// was added) and the references whose records must exist, or the first
// Violation.
func (s *Schema) Prepare(doc []byte, create bool) ([]byte, []Ref, error) {
	if !s.Typed() {
		return doc, nil, nil
	}
	var props map[string]json.RawMessage
	if err := json.Unmarshal(doc, &props); err != nil {
		return nil, nil, err
	}
	var refs []Ref
	added := false
	for i := range s.Fields {
		f := &s.Fields[i]
		raw, has := props[f.Name]
		if !has && create && f.Default != nil {
			props[f.Name], raw, has, added = f.Default, f.Default, true, true
		}
		if !has || bytes.Equal(raw, []byte("null")) {
			if f.Required {
				return nil, nil, &Violation{Field: f.Name, Message: "is required"}
			}
			continue
		}
		if msg := f.value(raw); msg != "" {
			return nil, nil, &Violation{Field: f.Name, Message: msg}
		}
		if f.Type == Reference {
			id, _ := strconv.ParseInt(string(raw), 10, 64)
			refs = append(refs, Ref{Field: f.Name, Collection: f.Collection, ID: id})
		}
	}
	if s.Strict {
		names := make([]string, 0, len(props))
		for name := range props {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			if _, ok := s.Field(name); !ok {
				return nil, nil, &Violation{Field: name, Message: "is not a field of this collection"}
			}
		}
	}
	if !added {
		return doc, refs, nil
	}
	out, err := json.Marshal(props)
	return out, refs, err
}

// value checks one value (not null) against f's type and options, and
// returns what is wrong with it ("" when nothing is).
func (f *Field) value(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	switch f.Type {
	case JSON:
		return ""
	case Boolean:
		if s := string(raw); s != "true" && s != "false" {
			return "must be true or false"
		}
		return ""
	case Integer, Number, Reference:
		return f.number(raw)
	case Select:
		return f.selected(raw)
	}
	var s string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
		return textMessages[f.Type]
	}
	switch f.Type {
	case Text:
		n := utf8.RuneCountInString(s)
		switch {
		case f.MinLength != nil && n < *f.MinLength:
			return fmt.Sprintf("must be at least %d characters", *f.MinLength)
		case f.MaxLength != nil && n > *f.MaxLength:
			return fmt.Sprintf("must be at most %d characters", *f.MaxLength)
		case f.Pattern != "" && !f.compiled().MatchString(s):
			return "must match the pattern " + f.Pattern
		}
	case Datetime:
		if !Timestamp(s) {
			return textMessages[Datetime]
		}
	case Email:
		if !EmailAddress(s) {
			return textMessages[Email]
		}
	case URL:
		if !WebURL(s) {
			return textMessages[URL]
		}
	}
	return ""
}

// textMessages say what a value of a type given as text must be.
var textMessages = map[string]string{
	Text:     "must be text",
	Datetime: "must be an RFC 3339 date-time such as 2026-01-31T09:30:00Z",
	Email:    "must be an email address such as ada@example.com",
	URL:      "must be an http or https URL",
}

// compiled is f's pattern, compiled by Check or Compile (and here, each
// time, for a Field neither prepared: a schema shared between goroutines
// is never written to).
func (f *Field) compiled() *regexp.Regexp {
	if f.pattern == nil {
		return regexp.MustCompile(f.Pattern)
	}
	return f.pattern
}

// Compile prepares fields read back as stored (checked when they were
// saved) for checking records: their patterns compiled once.
func (s *Schema) Compile() error {
	for i := range s.Fields {
		if f := &s.Fields[i]; f.Pattern != "" && f.pattern == nil {
			re, err := regexp.Compile(f.Pattern)
			if err != nil {
				return err
			}
			f.pattern = re
		}
	}
	return nil
}

func (f *Field) number(raw json.RawMessage) string {
	msg := "must be " + article(f.Type)
	if f.Type == Reference {
		msg = "must be the id of a record of " + f.Collection
	}
	if len(raw) == 0 || raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
		return msg
	}
	v, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || math.IsInf(v, 0) {
		return msg
	}
	if f.Type != Number && (v != math.Trunc(v) || math.Abs(v) > MaxSafeInteger) {
		return msg
	}
	switch {
	case f.Type == Reference && v < 1:
		return msg
	case f.Min != nil && v < *f.Min:
		return "must be at least " + strconv.FormatFloat(*f.Min, 'f', -1, 64)
	case f.Max != nil && v > *f.Max:
		return "must be at most " + strconv.FormatFloat(*f.Max, 'f', -1, 64)
	}
	return ""
}

func (f *Field) selected(raw json.RawMessage) string {
	list := strings.Join(f.Values, ", ")
	if !f.Multiple {
		var s string
		if json.Unmarshal(raw, &s) != nil || !slices.Contains(f.Values, s) {
			return "must be one of " + list
		}
		return ""
	}
	var items []string
	if json.Unmarshal(raw, &items) != nil || items == nil {
		return "must be a list of values from " + list
	}
	for i, it := range items {
		if !slices.Contains(f.Values, it) || slices.Contains(items[:i], it) {
			return "must be a list of distinct values from " + list
		}
	}
	return ""
}
