// Package apidoc is the platform's API document (OpenAPI 3.1): the
// written openapi.yaml completed at load with what the code knows — one
// schema per block type from flow's field table, the answers every path
// may give, the links between operations — and validated, so a broken
// document never ships. The HTTP layer serves it; tests check every answer
// against it. It holds no state but the document.
package apidoc

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"

	"stencil/flow"
	"stencil/schema"
)

//go:embed openapi.yaml
var yamlText []byte

// Document is the API document, checked and as JSON.
type Document struct {
	Doc  *openapi3.T
	JSON []byte
}

// Load parses, completes and validates the embedded document once a
// process: it never changes, and every app (a test makes one each) reads
// the same.
var Load = sync.OnceValues(func() (*Document, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(yamlText)
	if err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	addBlockSchemas(doc)
	addFieldSchemas(doc)
	addTransportResponses(doc)
	closeRequestBodies(doc)
	describeDefaults(doc)
	addLinks(doc)
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	// The library keeps a bound as a float64, which writes int64's
	// largest value rounded up past it; the document says it exactly.
	b = bytes.ReplaceAll(b, []byte(`:9223372036854776000`), []byte(`:9223372036854775807`))
	return &Document{Doc: doc, JSON: b}, nil
})

// JSON returns the document as the server serves it.
func JSON() ([]byte, error) {
	d, err := Load()
	if err != nil {
		return nil, err
	}
	return d.JSON, nil
}

// describeDefaults says in words, and not with the default keyword, what
// a property a body may leave out is when left out: client generators
// with their usual flags (openapi-typescript's defaultNonNullable) make a
// property with a default required, so a client could not leave out a
// RETURN's status or a sort's direction. A required property keeps its
// default.
func describeDefaults(doc *openapi3.T) {
	seen := map[*openapi3.Schema]bool{}
	var walk func(s *openapi3.SchemaRef)
	walk = func(ref *openapi3.SchemaRef) {
		if ref == nil || ref.Value == nil || seen[ref.Value] {
			return
		}
		v := ref.Value
		seen[v] = true
		for name, p := range v.Properties {
			if p.Ref == "" && p.Value != nil && p.Value.Default != nil && !slices.Contains(v.Required, name) {
				raw, _ := json.Marshal(p.Value.Default)
				p.Value.Description = strings.TrimSpace(p.Value.Description + " Left out: " + string(raw) + ".")
				p.Value.Default = nil
			}
			walk(p)
		}
		for _, list := range []openapi3.SchemaRefs{v.AllOf, v.AnyOf, v.OneOf} {
			for _, r := range list {
				walk(r)
			}
		}
		walk(v.Items)
		walk(v.AdditionalProperties.Schema)
	}
	for _, s := range doc.Components.Schemas {
		walk(s)
	}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if op.RequestBody != nil && op.RequestBody.Value != nil {
				for _, mt := range op.RequestBody.Value.Content {
					walk(mt.Schema)
				}
			}
		}
	}
}

// closeRequestBodies makes every JSON request body refuse a field it does
// not name, as the server does (422 "is not a known field"), with the
// uid every body may carry: additionalProperties false on a plain object,
// unevaluatedProperties false around one composed of others (allOf, or a
// component that responses share).
func closeRequestBodies(doc *openapi3.T) {
	no := false
	uid := &openapi3.SchemaRef{Ref: "#/components/schemas/UidField", Value: doc.Components.Schemas["UidField"].Value}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			if op.RequestBody == nil || op.RequestBody.Value == nil {
				continue
			}
			mt := op.RequestBody.Value.Content.Get("application/json")
			if mt == nil || mt.Schema == nil || mt.Schema.Value == nil {
				continue
			}
			s := mt.Schema
			if v := s.Value; v.AdditionalProperties.Has != nil && !*v.AdditionalProperties.Has {
				continue // closed as written
			}
			if v := s.Value; s.Ref == "" && len(v.AllOf) == 0 && len(v.Properties) > 0 {
				v.AdditionalProperties = openapi3.AdditionalProperties{Has: &no}
				if v.Properties["uid"] == nil {
					v.Properties["uid"] = uid
				}
				continue
			}
			mt.Schema = &openapi3.SchemaRef{Value: &openapi3.Schema{AllOf: openapi3.SchemaRefs{s},
				Properties: openapi3.Schemas{"uid": uid}, UnevaluatedProperties: openapi3.BoolSchema{Has: &no}}}
		}
	}
}

// addBlockSchemas writes one schema per block type, from the flow package's
// own field table, and makes Block the choice between them by type: the
// document cannot drift from what the server accepts.
func addBlockSchemas(doc *openapi3.T) {
	schemas := doc.Components.Schemas
	ref := func(name string) *openapi3.SchemaRef {
		return &openapi3.SchemaRef{Ref: "#/components/schemas/" + name, Value: schemas[name].Value}
	}
	array := func(item *openapi3.SchemaRef) *openapi3.SchemaRef {
		return &openapi3.SchemaRef{Value: &openapi3.Schema{Type: &openapi3.Types{"array"}, Items: item}}
	}
	orNull := func(r *openapi3.SchemaRef) *openapi3.SchemaRef {
		return &openapi3.SchemaRef{Value: &openapi3.Schema{OneOf: openapi3.SchemaRefs{r, {Value: &openapi3.Schema{Type: &openapi3.Types{"null"}}}}}}
	}
	byKind := map[string]func() *openapi3.SchemaRef{
		"text":            func() *openapi3.SchemaRef { return &openapi3.SchemaRef{Value: openapi3.NewStringSchema()} },
		"bool":            func() *openapi3.SchemaRef { return &openapi3.SchemaRef{Value: openapi3.NewBoolSchema()} },
		"operand":         func() *openapi3.SchemaRef { return ref("Operand") },
		"operand-or-null": func() *openapi3.SchemaRef { return orNull(ref("Operand")) },
		"operands":        func() *openapi3.SchemaRef { return array(ref("Operand")) },
		"conditions":      func() *openapi3.SchemaRef { return array(ref("Condition")) },
		"operations":      func() *openapi3.SchemaRef { return array(ref("Operation")) },
		"filters":         func() *openapi3.SchemaRef { return array(ref("Filter")) },
		"filter-or-null":  func() *openapi3.SchemaRef { return orNull(ref("Filter")) },
		"pairs":           func() *openapi3.SchemaRef { return array(ref("Pair")) },
		"update-targets":  func() *openapi3.SchemaRef { return array(ref("UpdateTarget")) },
		"simple-targets":  func() *openapi3.SchemaRef { return array(ref("SimpleTarget")) },
		"fail-or-null":    func() *openapi3.SchemaRef { return orNull(ref("Fail")) },
		"sort-or-null":    func() *openapi3.SchemaRef { return orNull(ref("Sort")) },
		"headers": func() *openapi3.SchemaRef {
			pairs := array(ref("Pair"))
			pairs.Value.Description = "Header name (a token) and value; not Content-Length, Transfer-Encoding, Connection, Host; for an HTTP block not Referer or Stencil-Hop; for RETURN none of the headers a browser acts on (Set-Cookie, Access-Control-*, Cross-Origin-*, Content-Security-Policy, X-Content-Type-Options, Clear-Site-Data, Refresh, Link, Content-Encoding and the rest docs/security.md lists). Every answer at /x carries Content-Security-Policy: sandbox; default-src 'none'; frame-ancestors 'none' and X-Content-Type-Options: nosniff."
			return pairs
		},
		"status": func() *openapi3.SchemaRef {
			return &openapi3.SchemaRef{Value: openapi3.NewIntegerSchema().WithMin(200).WithMax(308).
				WithDefault(200)}
		},
		"attempts": func() *openapi3.SchemaRef {
			a := openapi3.NewIntegerSchema().WithMin(1).WithMax(flow.MaxJobAttempts).WithDefault(flow.DefaultJobAttempts)
			a.Description = "How many times the job is tried at most (docs/jobs.md)."
			return &openapi3.SchemaRef{Value: a}
		},
	}
	no := false
	block := schemas["Block"].Value
	block.Discriminator = &openapi3.Discriminator{PropertyName: "type", Mapping: map[string]openapi3.MappingRef{}}
	for _, t := range flow.BlockTypes {
		name := "Block_" + t
		s := &openapi3.Schema{Type: &openapi3.Types{"object"}, Required: []string{"type", "depth"},
			AdditionalProperties: openapi3.AdditionalProperties{Has: &no},
			Properties: openapi3.Schemas{
				"type":  {Value: &openapi3.Schema{Type: &openapi3.Types{"string"}, Const: t}},
				"depth": {Value: openapi3.NewIntegerSchema().WithMin(0)},
			}}
		for _, f := range flow.BlockFields(t) {
			if f.Kind == "enum" {
				s.Properties[f.Name] = &openapi3.SchemaRef{Value: openapi3.NewStringSchema().WithEnum(toAny(f.Enum)...)}
			} else {
				s.Properties[f.Name] = byKind[f.Kind]()
			}
			if f.Required || f.Kind == "enum" {
				s.Required = append(s.Required, f.Name)
			}
		}
		schemas[name] = &openapi3.SchemaRef{Value: s}
		block.OneOf = append(block.OneOf, &openapi3.SchemaRef{Ref: "#/components/schemas/" + name, Value: s})
		block.Discriminator.Mapping[t] = openapi3.MappingRef{Ref: "#/components/schemas/" + name}
	}
}

// addFieldSchemas writes one schema per type of a collection's field, each
// with the options the schema package lets that type set, and makes Field
// the choice between them by type, as addBlockSchemas does for blocks.
func addFieldSchemas(doc *openapi3.T) {
	schemas := doc.Components.Schemas
	props := schemas["FieldProperties"].Value.Properties
	field := schemas["Field"].Value
	field.Discriminator = &openapi3.Discriminator{PropertyName: "type", Mapping: map[string]openapi3.MappingRef{}}
	no := false
	// never is an option a type cannot set: always false.
	never := &openapi3.SchemaRef{Value: &openapi3.Schema{Type: &openapi3.Types{"boolean"}, Const: false, Description: "Not for this type."}}
	for _, t := range schema.Types {
		s := &openapi3.Schema{Type: &openapi3.Types{"object"}, Required: []string{"name", "type"},
			AdditionalProperties: openapi3.AdditionalProperties{Has: &no}, Properties: openapi3.Schemas{}}
		for _, p := range append([]string{"name", "required", "unique", "indexed", "default", "description"}, schema.Options(t)...) {
			s.Properties[p] = props[p]
		}
		s.Properties["type"] = &openapi3.SchemaRef{Value: &openapi3.Schema{Type: &openapi3.Types{"string"}, Const: t}}
		var value *openapi3.Schema // a default's schema
		switch t {
		case schema.Integer:
			value = openapi3.NewIntegerSchema().WithMin(-schema.MaxSafeInteger).WithMax(schema.MaxSafeInteger)
			s.Properties["min"] = &openapi3.SchemaRef{Value: value}
			s.Properties["max"] = &openapi3.SchemaRef{Value: value}
		case schema.Number:
			value = openapi3.NewFloat64Schema()
		case schema.Boolean:
			value = openapi3.NewBoolSchema()
			s.Properties["unique"] = never
		case schema.JSON:
			s.Properties["unique"], s.Properties["indexed"] = never, never
		case schema.Reference:
			delete(s.Properties, "default")
			s.Required = append(s.Required, "collection")
		case schema.Select:
			s.Required = append(s.Required, "values")
		case schema.Datetime:
			value = openapi3.NewDateTimeSchema()
		default:
			value = openapi3.NewStringSchema()
		}
		if value != nil {
			d := *value
			d.Description = props["default"].Value.Description
			s.Properties["default"] = &openapi3.SchemaRef{Value: &d}
		}
		name := "Field_" + t
		schemas[name] = &openapi3.SchemaRef{Value: s}
		field.OneOf = append(field.OneOf, &openapi3.SchemaRef{Ref: "#/components/schemas/" + name, Value: s})
		field.Discriminator.Mapping[t] = openapi3.MappingRef{Ref: "#/components/schemas/" + name}
	}
	delete(schemas, "FieldProperties") // each Field_<type> holds its part
}

// addTransportResponses documents the answers that every operation can get
// from the layers in front of its handler: a malformed request, a method the
// path does not take, oversized headers, a body that is too large or of the
// wrong type, and an unavailable database. A flat JSON body (scalars only)
// is also taken form-encoded, as browser forms send it; documents with
// nested parts are JSON only.
func addTransportResponses(doc *openapi3.T) {
	add := func(op *openapi3.Operation, status, name string) {
		if op.Responses.Value(status) == nil {
			op.Responses.Set(status, &openapi3.ResponseRef{Ref: "#/components/responses/" + name, Value: doc.Components.Responses[name].Value})
		}
	}
	for path, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			add(op, "400", "BadRequest")
			add(op, "405", "MethodNotAllowed")
			add(op, "431", "HeadersTooLarge")
			if op.RequestBody != nil {
				add(op, "413", "PayloadTooLarge")
				add(op, "415", "UnsupportedMediaType")
				content := op.RequestBody.Value.Content
				if mt := content.Get("application/json"); mt != nil && flatObject(mt.Schema) && content.Get(formType) == nil {
					content[formType] = &openapi3.MediaType{Schema: mt.Schema}
				}
			}
			if path != "/healthz" {
				add(op, "503", "Unavailable")
			}
		}
	}
}

// formType is the media type of an HTML form's body: every operation
// whose JSON body is flat takes one too.
const formType = "application/x-www-form-urlencoded"

// flatObject reports whether s is an object whose properties are all
// scalars, which a form can carry.
func flatObject(s *openapi3.SchemaRef) bool {
	if s == nil || s.Value == nil || len(s.Value.Properties) == 0 {
		return false
	}
	for _, p := range s.Value.Properties {
		if !scalar(p) {
			return false
		}
	}
	return true
}

func scalar(s *openapi3.SchemaRef) bool {
	if s == nil || s.Value == nil {
		return false
	}
	if len(s.Value.OneOf) > 0 {
		for _, o := range s.Value.OneOf {
			if !scalar(o) {
				return false
			}
		}
		return true
	}
	return s.Value.Type != nil && !s.Value.Type.Includes("object") && !s.Value.Type.Includes("array")
}

func toAny(values []string) []any {
	out := make([]any, len(values))
	for i, v := range values {
		out[i] = v
	}
	return out
}

// createdLinks says, for each operation that creates something, which
// operations its 201 answer leads to and which of the answer's fields fill
// their parameters: OpenAPI links, for clients and stateful fuzzers.
var createdLinks = map[string]struct {
	to     []string
	params map[string]string // parameter → field of the answer's data
}{
	"userCreate":       {[]string{"userShow", "userDelete"}, map[string]string{"target_uid": "id"}},
	"projectCreate":    {[]string{"projectShow", "projectDelete"}, map[string]string{"project_id": "id"}},
	"patCreate":        {[]string{"patDelete"}, map[string]string{"id": "id"}},
	"configCreate":     {[]string{"configShow", "configDelete"}, map[string]string{"key": "key"}},
	"vaultCreate":      {[]string{"vaultShow", "vaultDelete"}, map[string]string{"project_id": "project_id", "key": "key"}},
	"templateSave":     {[]string{"templateShow", "templateDelete"}, map[string]string{"id": "id"}},
	"routeCreate":      {[]string{"routeShow", "routeDelete"}, map[string]string{"project_id": "project_id", "route_id": "route_id"}},
	"collectionCreate": {[]string{"collectionShow", "collectionDelete"}, map[string]string{"project_id": "project_id", "id": "id"}},
	"recordCreate":     {[]string{"recordShow", "recordDelete"}, map[string]string{"project_id": "project_id", "collection_id": "collection_id", "id": "id"}},
}

// addLinks writes createdLinks into the 201 answers of the create
// operations (a copy of the shared answer, so that the other operations
// using it carry no links).
func addLinks(doc *openapi3.T) {
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			l, ok := createdLinks[op.OperationID]
			if !ok || op.Responses == nil {
				continue
			}
			created := op.Responses.Value("201")
			if created == nil || created.Value == nil {
				continue
			}
			answer := *created.Value
			answer.Links = openapi3.Links{}
			for _, to := range l.to {
				params := map[string]any{}
				for name, field := range l.params {
					params[name] = "$response.body#/data/" + field
				}
				answer.Links[to] = &openapi3.LinkRef{Value: &openapi3.Link{OperationID: to, Parameters: params}}
			}
			op.Responses.Set("201", &openapi3.ResponseRef{Value: &answer})
		}
	}
}
