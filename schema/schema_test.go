package schema

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

func fields(t *testing.T, text string) Schema {
	t.Helper()
	var s Schema
	if err := json.Unmarshal([]byte(text), &s.Fields); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDefinitionsRefused(t *testing.T) {
	exists := func(id string) bool { return id == "authors" }
	cases := map[string]struct{ fields, path, msg string }{
		"bad name":          {`[{"name":"Title","type":"text"}]`, "fields[0].name", "lowercase"},
		"name twice":        {`[{"name":"a","type":"text"},{"name":"a","type":"integer"}]`, "fields[1].name", "another field"},
		"unknown type":      {`[{"name":"a","type":"string"}]`, "fields[0].type", "must be one of text, integer"},
		"option of another": {`[{"name":"a","type":"integer","max_length":3}]`, "fields[0].max_length", "does not apply to a field of type integer"},
		"min over max":      {`[{"name":"a","type":"number","min":5,"max":1}]`, "fields[0].max", "must not be less than min"},
		"integer bound":     {`[{"name":"a","type":"integer","min":1.5}]`, "fields[0].min", "must be an integer"},
		"length order":      {`[{"name":"a","type":"text","min_length":5,"max_length":1}]`, "fields[0].max_length", "min_length"},
		"bad pattern":       {`[{"name":"a","type":"text","pattern":"a("}]`, "fields[0].pattern", "not a valid regular expression: missing closing )"},
		"no values":         {`[{"name":"a","type":"select","values":[]}]`, "fields[0].values", "1 to 100"},
		"value twice":       {`[{"name":"a","type":"select","values":["x","x"]}]`, "fields[0].values[1]", "listed twice"},
		"reference nowhere": {`[{"name":"a","type":"reference","collection":"nope"}]`, "fields[0].collection", "does not exist in this project"},
		"reference bare":    {`[{"name":"a","type":"reference"}]`, "fields[0].collection", "is required"},
		"unique boolean":    {`[{"name":"a","type":"boolean","unique":true}]`, "fields[0].unique", "boolean"},
		"indexed json":      {`[{"name":"a","type":"json","indexed":true}]`, "fields[0].indexed", "json"},
		"unique multiple":   {`[{"name":"a","type":"select","values":["x"],"multiple":true,"unique":true}]`, "fields[0].unique", "select with multiple"},
		"default of type":   {`[{"name":"a","type":"integer","default":"1"}]`, "fields[0].default", "must be an integer"},
		"default null":      {`[{"name":"a","type":"text","default":null}]`, "fields[0].default", "must not be null"},
		"default unique":    {`[{"name":"a","type":"text","unique":true,"default":"x"}]`, "fields[0].default", "unique"},
		"default range":     {`[{"name":"a","type":"integer","min":0,"default":-1}]`, "fields[0].default", "at least 0"},
		"default 1e400":     {`[{"name":"a","type":"number","default":1e400}]`, "fields[0].default", "must be a number"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			s := fields(t, c.fields)
			err := s.Check("books", exists)
			if c.path == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var p *Problem
			if !errors.As(err, &p) || p.Path != c.path || !strings.Contains(p.Message, c.msg) {
				t.Fatalf("got %v, want %s …%s…", err, c.path, c.msg)
			}
		})
	}
	many := Schema{}
	for i := 0; i < MaxIndexed+1; i++ {
		many.Fields = append(many.Fields, Field{Name: "f" + string(rune('a'+i)), Type: Text, Indexed: true})
	}
	var p *Problem
	if err := many.Check("books", exists); !errors.As(err, &p) || p.Path != "fields[10].indexed" {
		t.Fatalf("eleven indexed fields: %v", err)
	}
}

func TestValues(t *testing.T) {
	s := fields(t, `[
		{"name":"title","type":"text","required":true,"min_length":1,"max_length":5,"pattern":"^[a-z]+$"},
		{"name":"year","type":"integer","min":1800,"max":2100},
		{"name":"price","type":"number","min":0},
		{"name":"in_stock","type":"boolean","default":true},
		{"name":"published","type":"datetime"},
		{"name":"email","type":"email"},
		{"name":"site","type":"url"},
		{"name":"genre","type":"select","values":["sf","crime"]},
		{"name":"tags","type":"select","values":["new","old"],"multiple":true},
		{"name":"author","type":"reference","collection":"books"},
		{"name":"extra","type":"json"}]`)
	if err := s.Check("books", nil); err != nil {
		t.Fatal(err)
	}
	accepted := []string{
		`{"title":"abc"}`,
		`{"title":"abc","year":1999,"price":0.5,"in_stock":false,"published":"2026-01-31T09:30:00Z","email":"Ada@Example.com",` +
			`"site":"https://example.com/a","genre":"sf","tags":["new","old"],"author":4,"extra":{"any":[1,"x"]},"other":1}`,
		`{"title":"abc","year":1999.0,"price":-0,"genre":null,"tags":[]}`,
		`{"title":"abc","year":2e3}`,
	}
	for _, doc := range accepted {
		if _, _, err := s.Prepare([]byte(doc), true); err != nil {
			t.Errorf("%s refused: %v", doc, err)
		}
	}
	refused := map[string]string{
		`{}`:                                     "data.title is required",
		`{"title":null}`:                         "data.title is required",
		`{"title":5}`:                            "data.title must be text",
		`{"title":""}`:                           "data.title must be at least 1 characters",
		`{"title":"abcdef"}`:                     "data.title must be at most 5 characters",
		`{"title":"ABC"}`:                        "data.title must match the pattern ^[a-z]+$",
		`{"title":"a","year":"1999"}`:            "data.year must be an integer",
		`{"title":"a","year":1999.5}`:            "data.year must be an integer",
		`{"title":"a","year":1e400}`:             "data.year must be an integer",
		`{"title":"a","year":1700}`:              "data.year must be at least 1800",
		`{"title":"a","year":9007199254740994}`:  "data.year must be an integer",
		`{"title":"a","price":"1"}`:              "data.price must be a number",
		`{"title":"a","price":-1}`:               "data.price must be at least 0",
		`{"title":"a","in_stock":"yes"}`:         "data.in_stock must be true or false",
		`{"title":"a","published":"2026-01-31"}`: "data.published must be an RFC 3339",
		`{"title":"a","email":"ada"}`:            "data.email must be an email address",
		`{"title":"a","site":"ftp://x"}`:         "data.site must be an http or https URL",
		`{"title":"a","site":"https://"}`:        "data.site must be an http or https URL",
		`{"title":"a","genre":"romance"}`:        "data.genre must be one of sf, crime",
		`{"title":"a","tags":["new","new"]}`:     "data.tags must be a list of distinct values",
		`{"title":"a","tags":"new"}`:             "data.tags must be a list",
		`{"title":"a","author":0}`:               "data.author must be the id of a record of books",
		`{"title":"a","author":"4"}`:             "data.author must be the id of a record of books",
	}
	for doc, want := range refused {
		_, _, err := s.Prepare([]byte(doc), true)
		var v *Violation
		if !errors.As(err, &v) || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: got %v, want %s…", doc, err, want)
		}
	}
}

func TestDefaultsAndAdditional(t *testing.T) {
	s := fields(t, `[{"name":"title","type":"text"},{"name":"in_stock","type":"boolean","default":true}]`)
	out, _, err := s.Prepare([]byte(`{"title":"a"}`), true)
	if err != nil || string(out) != `{"in_stock":true,"title":"a"}` {
		t.Fatalf("default on create: %s %v", out, err)
	}
	out, _, err = s.Prepare([]byte(`{"title":"a"}`), false)
	if err != nil || string(out) != `{"title":"a"}` {
		t.Fatalf("an update gets no default: %s %v", out, err)
	}
	s.Strict = true
	_, _, err = s.Prepare([]byte(`{"title":"a","zeta":1,"alpha":2}`), true)
	if err == nil || err.Error() != "data.alpha is not a field of this collection" {
		t.Fatalf("additional false: %v", err)
	}
	ref := fields(t, `[{"name":"author","type":"reference","collection":"authors"}]`)
	_, refs, err := ref.Prepare([]byte(`{"author":12}`), true)
	if err != nil || len(refs) != 1 || refs[0] != (Ref{Field: "author", Collection: "authors", ID: 12}) {
		t.Fatalf("references: %v %v", refs, err)
	}
}

func TestHash(t *testing.T) {
	if (Schema{}).Hash() != "" || (Schema{Strict: true}).Hash() == "" {
		t.Fatal("the untyped schema's hash is empty; a strict one is typed")
	}
	a := fields(t, `[{"name":"a","type":"text"}]`)
	b := fields(t, `[{"name":"a","type":"integer"}]`)
	if a.Hash() == b.Hash() || a.Hash() != fields(t, `[{"name":"a","type":"text"}]`).Hash() {
		t.Fatal("hash must follow content")
	}
}

func TestChanges(t *testing.T) {
	a := fields(t, `[{"name":"title","type":"text","max_length":100},{"name":"year","type":"integer"},{"name":"email","type":"email"},{"name":"notes","type":"text"}]`)
	b := fields(t, `[{"name":"title","type":"text","max_length":200},{"name":"year","type":"number"},{"name":"email","type":"email","unique":true},{"name":"isbn","type":"text","required":true}]`)
	b.Strict = true
	got := strings.Join(Changes(a, b), "; ")
	want := "title: max_length 100 → 200; year: integer → number; email: now unique; isbn: added (text, required); notes: removed; additional: true → false"
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if got := Changes(a, a); len(got) != 0 {
		t.Fatalf("no change: %v", got)
	}
	swapped := Schema{Fields: []Field{a.Fields[1], a.Fields[0], a.Fields[2], a.Fields[3]}}
	if got := strings.Join(Changes(a, swapped), "; "); got != "fields reordered" {
		t.Fatalf("reordered: %s", got)
	}
}

func TestFilterOps(t *testing.T) {
	for f, want := range map[*Field]string{
		{Type: Integer}:                "eq ne lt lte gt gte in is_null",
		{Type: Boolean}:                "eq ne in is_null",
		{Type: Text}:                   "eq ne lt lte gt gte contains starts_with in is_null",
		{Type: Select, Multiple: true}: "eq ne in is_null",
		{Type: JSON}:                   "eq ne in is_null",
	} {
		if got := strings.Join(f.FilterOps(), " "); got != want {
			t.Errorf("%s: %s, want %s", f.Type, got, want)
		}
		// Every operator offered is one ParseFilter takes for the field.
		for _, op := range f.FilterOps() {
			if !slices.Contains(Ops, op) {
				t.Errorf("%s offers %s", f.Type, op)
			}
		}
	}
}
