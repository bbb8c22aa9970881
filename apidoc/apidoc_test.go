package apidoc

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestBlockSchemaIsStrict: the generated Block schema accepts a block of
// each type as the server writes it and refuses malformed ones, so the
// response checks of the other tests really check blocks.
func TestBlockSchemaIsStrict(t *testing.T) {
	api, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	schema := api.Doc.Components.Schemas["Block"].Value
	check := func(doc string) error {
		var v any
		if err := json.Unmarshal([]byte(doc), &v); err != nil {
			t.Fatal(err)
		}
		return schema.VisitJSON(v, openapi3.EnableJSONSchema2020())
	}
	if err := check(`{"type":"FETCH","depth":0,"local_name":"a","ref_col":"b"}`); err != nil {
		t.Fatalf("a valid block is refused: %v", err)
	}
	for name, doc := range map[string]string{
		"missing field":    `{"type":"FETCH","depth":0,"local_name":"a"}`,
		"field of another": `{"type":"FETCH","depth":0,"local_name":"a","ref_col":"b","pairs":[]}`,
		"unknown type":     `{"type":"GOTO","depth":0}`,
		"bad enum":         `{"type":"CONDITION","depth":0,"conditions":[],"action":"RETRY","fail":null}`,
		"negative depth":   `{"type":"VAULT","depth":-1,"local_name":"a","key":"K"}`,
		"operand shape":    `{"type":"PROPERTY","depth":0,"local_name":"a","data":{"ref_var":1},"apply":"LENGTH","additional":""}`,
	} {
		if check(doc) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestCreateAnswersLink: every create operation's 201 answer links to the
// operations that read and delete what it made, each link naming
// parameters the target operation has.
func TestCreateAnswersLink(t *testing.T) {
	api, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]*openapi3.Operation{}
	for _, item := range api.Doc.Paths.Map() {
		for _, op := range item.Operations() {
			ops[op.OperationID] = op
		}
	}
	for id := range createdLinks {
		created := ops[id].Responses.Value("201")
		if created == nil || len(created.Value.Links) == 0 {
			t.Errorf("%s: the 201 answer has no links", id)
			continue
		}
		for name, link := range created.Value.Links {
			target := ops[link.Value.OperationID]
			if target == nil {
				t.Errorf("%s links to %s, no such operation", id, name)
				continue
			}
			for param := range link.Value.Parameters {
				if target.Parameters.GetByInAndName("query", param) == nil {
					t.Errorf("%s → %s: %s is no query parameter of it", id, name, param)
				}
			}
		}
	}
	if len(ops["projectShow"].Responses.Value("200").Value.Links) != 0 {
		t.Error("the shared answer of other operations took the links")
	}
}

// The served document writes int64's largest value exactly (the library
// holds bounds as float64, which rounds it up to …776000).
func TestInt64BoundsExact(t *testing.T) {
	raw, err := JSON()
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte("9223372036854776000")) || !bytes.Contains(raw, []byte(`"maximum":9223372036854775807`)) {
		t.Fatal("the document does not write int64's largest value exactly")
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
}

// Every JSON request body is closed: a field it does not name is refused
// by the document as by the server, and the uid every body may carry is
// named.
func TestRequestBodiesAreClosed(t *testing.T) {
	d, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for path, item := range d.Doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.RequestBody == nil {
				continue
			}
			mt := op.RequestBody.Value.Content.Get("application/json")
			if mt == nil {
				continue
			}
			n++
			v := mt.Schema.Value
			closed := v.AdditionalProperties.Has != nil && !*v.AdditionalProperties.Has ||
				v.UnevaluatedProperties.Has != nil && !*v.UnevaluatedProperties.Has
			if !closed {
				t.Errorf("%s %s: the body takes fields it does not name", method, path)
			}
		}
	}
	if n < 30 {
		t.Fatalf("only %d JSON request bodies", n)
	}
}

// A property a body may leave out carries no default keyword (generators
// would make it required) but says its value when left out.
func TestOptionalPropertiesSayTheirDefault(t *testing.T) {
	d, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	descending := d.Doc.Components.Schemas["Sort"].Value.Properties["descending"].Value
	status := d.Doc.Components.Schemas["Block_RETURN"].Value.Properties["status"].Value
	for name, p := range map[string]*openapi3.Schema{"Sort.descending": descending, "Block_RETURN.status": status} {
		if p.Default != nil || !strings.Contains(p.Description, "Left out: ") {
			t.Errorf("%s: default %v, description %q", name, p.Default, p.Description)
		}
	}
}
