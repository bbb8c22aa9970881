package schema

import (
	"testing"
)

// A CSV cell is read by its field's type and written back as it reads:
// each type's cell, a cell it refuses, and an empty cell as no value.
func TestCellsByType(t *testing.T) {
	for _, tc := range []struct {
		f          Field
		cell, want string // want: the value as JSON, or the refusal
		back       bool   // Cell(value) gives cell again
	}{
		{Field{Type: Text}, "Dune, a novel", `"Dune, a novel"`, true},
		{Field{Type: Text}, "12", `"12"`, true},
		{Field{Type: Email}, "ada@example.com", `"ada@example.com"`, true},
		{Field{Type: URL}, "https://example.com", `"https://example.com"`, true},
		{Field{Type: Datetime}, "2024-05-01T20:30:00Z", `"2024-05-01T20:30:00Z"`, true},
		{Field{Type: Integer}, "1965", `1965`, true},
		{Field{Type: Integer}, "nineteen", "must be an integer", false},
		{Field{Type: Number}, "2.5", `2.5`, true},
		{Field{Type: Number}, "2,5", "must be a number", false},
		{Field{Type: Number}, "NaN", "must be a number", false},
		{Field{Type: Reference}, "7", `7`, true},
		{Field{Type: Boolean}, "TRUE", `true`, false},
		{Field{Type: Boolean}, "false", `false`, true},
		{Field{Type: Boolean}, "yes", "must be true or false", false},
		{Field{Type: Select}, "sf", `"sf"`, true},
		{Field{Type: Select, Multiple: true}, `["sf","old"]`, `["sf","old"]`, true},
		{Field{Type: Select, Multiple: true}, "sf", `must be a JSON list of values, such as ["a","b"]`, false},
		{Field{Type: JSON}, `{"a": [1, 2]}`, `{"a":[1,2]}`, false},
		{Field{Type: JSON}, `{"a"`, "must be JSON", false},
		{Field{}, "3", `3`, true},
		{Field{}, "open", `"open"`, true},
		{Field{}, `{"a":1}`, `{"a":1}`, true},
	} {
		v, problem := FromCell(tc.f, tc.cell)
		got := string(v)
		if problem != "" {
			got = problem
		}
		if got != tc.want {
			t.Errorf("%s cell %q: %s, want %s", tc.f.Type, tc.cell, got, tc.want)
		}
		if tc.back && Cell(v) != tc.cell {
			t.Errorf("%s cell %q written back as %q", tc.f.Type, tc.cell, Cell(v))
		}
	}
	if v, problem := FromCell(Field{Type: Integer}, ""); v != nil || problem != "" {
		t.Errorf("an empty cell: %s %q", v, problem)
	}
	if Cell([]byte("null")) != "" {
		t.Error("null is not an empty cell")
	}
}
