// Package projectfile is a project as a file (docs/projects.md): the
// document GET /project/export writes and /project/plan and
// /project/apply read, and the plan that compares a project with a
// document. It is pure: the handlers read and write the database.
package projectfile

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"stencil/engine"
	"stencil/flow"
	"stencil/jsoncheck"
	"stencil/schedule"
	"stencil/schema"
)

// Format is the layout of the document this package writes and reads.
const Format = 1

// MaxVaultKeys bounds the vault keys a file names: the keys a project's
// routes read, not a store of its own.
const MaxVaultKeys = 1000

// Document is a project as a file. Its fields are in the order the file
// writes them. Read from a file, a setting left out is nil (the project's
// value stays) and a list left out is nil (read as empty).
type Document struct {
	Format         int             `json:"format"`
	ID             string          `json:"id"`
	Name           *string         `json:"name,omitempty"`
	Description    *string         `json:"description,omitempty"`
	APIPath        *string         `json:"api_path,omitempty"`
	XRateLimit     *int            `json:"x_rate_limit,omitempty"`
	XRateBurst     *int            `json:"x_rate_burst,omitempty"`
	XCORSOrigins   *[]string       `json:"x_cors_origins,omitempty"`
	XEgressHosts   *[]string       `json:"x_egress_hosts,omitempty"`
	Collections    []Collection    `json:"collections"`
	Routes         []Route         `json:"routes"`
	Templates      []Template      `json:"templates"`
	EmailTemplates []EmailTemplate `json:"email_templates"`
	Schedules      []Schedule      `json:"schedules"`
	Tests          []Test          `json:"tests"`
	VaultKeys      []string        `json:"vault_keys"`
}

// Test is a test of a route of the file (docs/tests.md), named in a plan
// by its route and name.
type Test struct {
	RouteID string `json:"route_id"`
	flow.RouteTest
}

// Key names t in a plan: "route/name".
func (t Test) Key() string { return t.RouteID + "/" + t.Name }

// Schedule runs a route of the file at a cron expression's ticks in a time
// zone, with a query and a body (docs/schedules.md). A file names a
// schedule by all of it but Active: two that differ otherwise are two.
type Schedule struct {
	RouteID  string          `json:"route_id"`
	Cron     string          `json:"cron"`
	Timezone string          `json:"timezone"`
	Query    string          `json:"query,omitempty"`
	Body     json.RawMessage `json:"body,omitempty"`
	Active   bool            `json:"active"`
}

// Key names s in a plan: its route, expression and zone, and its query
// and body when it has them.
func (s Schedule) Key() string {
	k := s.RouteID + ": " + s.Cron + " (" + s.Timezone + ")"
	if s.Query != "" {
		k += " ?" + s.Query
	}
	if len(s.Body) > 0 {
		k += " " + string(CanonicalBody(s.Body))
	}
	return k
}

// CanonicalBody is a schedule's body written one way, whatever the order
// of its keys (PostgreSQL's jsonb keeps its own): keys sorted, no spaces.
func CanonicalBody(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	out, _ := json.Marshal(v)
	return out
}

// Collection is a collection of the project; Fields and Additional its
// schema (docs/collections.md: none and true, left out, for an untyped
// one); Records, each record's data by record id, only when the export
// was asked for them (nil: not).
type Collection struct {
	ID          string             `json:"id"`
	Name        string             `json:"name"`
	Description string             `json:"description"`
	Fields      []schema.Field     `json:"fields,omitempty"`
	Additional  *bool              `json:"additional,omitempty"`
	Records     *[]json.RawMessage `json:"records,omitempty"`
}

// Schema is c's fields as the store keeps them.
func (c Collection) Schema() schema.Schema {
	return schema.Schema{Fields: c.Fields, Strict: c.Additional != nil && !*c.Additional}
}

// Route is a route document as it is saved: without its project, its
// template's reference (which names a template of one service) or its
// metadata.
type Route = flow.RouteDocument

// Template is a template of the project, without its id, project or
// metadata: a file names its templates by name.
type Template struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Method      string          `json:"method"`
	RouteID     string          `json:"route_id"`
	RoutePath   string          `json:"route_path"`
	AuthJWT     flow.AuthJWT    `json:"auth_jwt"`
	Params      flow.Params     `json:"params"`
	Body        []flow.Param    `json:"body"`
	Flow        flow.Flow       `json:"flow"`
	Variables   []flow.Variable `json:"variables"`
}

// TemplateOf is t as the file holds it.
func TemplateOf(t flow.Template) Template {
	return Template{Name: t.Name, Description: t.Description, Method: t.Method, RouteID: t.RouteID, RoutePath: t.RoutePath,
		AuthJWT: t.AuthJWT, Params: t.Params, Body: t.Body, Flow: t.Flow, Variables: t.Variables}
}

// In is the template of project the file's template stands for (id 0).
func (t Template) In(project string) flow.Template {
	return flow.Template{Name: t.Name, Description: t.Description, ProjectID: &project, Method: t.Method, RouteID: t.RouteID,
		RoutePath: t.RoutePath, AuthJWT: t.AuthJWT, Params: t.Params, Body: t.Body, Flow: t.Flow, Variables: t.Variables}
}

// EmailTemplate is an email template of the project.
type EmailTemplate struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Text    string `json:"text"`
	HTML    string `json:"html"`
}

// Sort puts the lists in the file's order: collections and routes by id,
// templates, email templates and vault keys by name.
func (d *Document) Sort() {
	slices.SortFunc(d.Collections, func(a, b Collection) int { return strings.Compare(a.ID, b.ID) })
	slices.SortFunc(d.Routes, func(a, b Route) int { return strings.Compare(a.RouteID, b.RouteID) })
	slices.SortFunc(d.Templates, func(a, b Template) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(d.EmailTemplates, func(a, b EmailTemplate) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(d.Schedules, func(a, b Schedule) int { return strings.Compare(a.Key(), b.Key()) })
	slices.SortFunc(d.Tests, func(a, b Test) int {
		return cmp.Or(strings.Compare(a.RouteID, b.RouteID), strings.Compare(a.Name, b.Name))
	})
	slices.Sort(d.VaultKeys)
}

// Encode writes d as the file: sorted, every list present, indented by
// two spaces, HTML characters as they are, a newline at the end. The same
// document gives the same bytes.
func Encode(d Document) []byte {
	// Sorted on copies: the caller's lists keep their order.
	d.Collections, d.Routes, d.Templates = slices.Clone(d.Collections), slices.Clone(d.Routes), slices.Clone(d.Templates)
	d.EmailTemplates, d.VaultKeys, d.Schedules = slices.Clone(d.EmailTemplates), slices.Clone(d.VaultKeys), slices.Clone(d.Schedules)
	d.Tests = slices.Clone(d.Tests)
	d.Sort()
	d.Format = Format
	for _, l := range []*[]string{&d.VaultKeys} {
		if *l == nil {
			*l = []string{}
		}
	}
	if d.Collections == nil {
		d.Collections = []Collection{}
	}
	if d.Routes == nil {
		d.Routes = []Route{}
	}
	if d.Templates == nil {
		d.Templates = []Template{}
	}
	if d.EmailTemplates == nil {
		d.EmailTemplates = []EmailTemplate{}
	}
	if d.Schedules == nil {
		d.Schedules = []Schedule{}
	}
	if d.Tests == nil {
		d.Tests = []Test{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		// Every field is a plain value: encoding cannot fail.
		panic("projectfile: encode: " + err.Error())
	}
	return buf.Bytes()
}

// topFields are the fields a document may have.
var topFields = []string{"format", "id", "name", "description", "api_path", "x_rate_limit", "x_rate_burst", "x_cors_origins",
	"x_egress_hosts", "collections", "routes", "templates", "email_templates", "schedules", "tests", "vault_keys"}

// Decode reads a document strictly: every field known and of its type,
// format 1, the routes and templates valid as saving them would find
// them, no id or name given twice. Problems are named by their path in
// the document ("routes[3].flow.blocks[2].ref_col").
func Decode(raw []byte) (Document, flow.Problems) {
	var d Document
	p := flow.Problems{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var top map[string]any
	if err := dec.Decode(&top); err != nil || top == nil {
		p["document"] = "must be a JSON object"
		if line, col, ok := jsoncheck.Syntax(raw); ok {
			p["document"] = fmt.Sprintf("is not valid JSON: look at line %d, column %d", line, col)
		}
		return d, p
	}
	if dec.More() {
		p["document"] = "has data after the JSON value"
		return d, p
	}
	for k := range top {
		if !slices.Contains(topFields, k) {
			p[flow.FieldName(k)] = "is not a known field"
		}
	}
	switch f := top["format"].(type) {
	case nil:
		p["format"] = "is required (1)"
	case json.Number:
		if f.String() != "1" {
			p["format"] = fmt.Sprintf("must be 1 (this service reads format 1, the file is format %s)", f)
		}
	default:
		p["format"] = "must be 1"
	}
	d.Format = Format
	// Collections carry records, which are any JSON object, and fields,
	// whose defaults are any JSON value: they are taken out before the
	// rest is decoded by type.
	var records []*[]json.RawMessage
	var fields [][]schema.Field
	if list, ok := top["collections"].([]any); ok {
		records = make([]*[]json.RawMessage, len(list))
		fields = make([][]schema.Field, len(list))
		for i, item := range list {
			obj, ok := item.(map[string]any)
			if !ok {
				continue
			}
			obj = maps.Clone(obj)
			if rs, ok := obj["records"]; ok {
				rs := decodeRecords(rs, fmt.Sprintf("collections[%d].records", i), p)
				records[i] = &rs
				delete(obj, "records")
			}
			if fs, ok := obj["fields"]; ok {
				fields[i] = decodeFields(fs, fmt.Sprintf("collections[%d].fields", i), p)
				delete(obj, "fields")
			}
			list[i] = obj
		}
	}
	// A schedule's body is any JSON object: schedules are read apart.
	d.Schedules = decodeSchedules(top["schedules"], p)
	delete(top, "schedules")
	d.Tests = decodeTests(top["tests"], p)
	delete(top, "tests")
	delete(top, "format")
	for k := range top {
		if !slices.Contains(topFields, k) {
			delete(top, k)
		}
	}
	var wire struct {
		ID             string          `json:"id"`
		Name           *string         `json:"name"`
		Description    *string         `json:"description"`
		APIPath        *string         `json:"api_path"`
		XRateLimit     *int            `json:"x_rate_limit"`
		XRateBurst     *int            `json:"x_rate_burst"`
		XCORSOrigins   *[]string       `json:"x_cors_origins"`
		XEgressHosts   *[]string       `json:"x_egress_hosts"`
		Collections    []Collection    `json:"collections"`
		Routes         []flow.Route    `json:"routes"`
		Templates      []flow.Template `json:"templates"`
		EmailTemplates []EmailTemplate `json:"email_templates"`
		VaultKeys      []string        `json:"vault_keys"`
	}
	for path, msg := range flow.DecodeValue(top, &wire, "") {
		p[path] = msg
	}
	d.ID, d.Name, d.Description, d.APIPath = wire.ID, wire.Name, wire.Description, wire.APIPath
	d.XRateLimit, d.XRateBurst, d.XCORSOrigins, d.XEgressHosts = wire.XRateLimit, wire.XRateBurst, wire.XCORSOrigins, wire.XEgressHosts
	d.Collections, d.EmailTemplates, d.VaultKeys = wire.Collections, wire.EmailTemplates, wire.VaultKeys
	for i := range d.Collections {
		c := &d.Collections[i]
		if i < len(records) {
			c.Records, c.Fields = records[i], fields[i]
		}
		// One way to write the untyped defaults: left out.
		if len(c.Fields) == 0 {
			c.Fields = nil
		}
		if c.Additional != nil && *c.Additional {
			c.Additional = nil
		}
	}
	for i, r := range wire.Routes {
		path := fmt.Sprintf("routes[%d]", i)
		r.Normalize()
		for k, v := range flow.ValidateRoute(r, path) {
			p[k] = v
		}
		d.Routes = append(d.Routes, r.Document())
	}
	for i, t := range wire.Templates {
		path := fmt.Sprintf("templates[%d]", i)
		if t.ID != 0 {
			p[path+".id"] = "must be left out: a file names its templates by name"
		}
		t.Normalize()
		for k, v := range flow.ValidateTemplate(t, path) {
			p[k] = v
		}
		d.Templates = append(d.Templates, TemplateOf(t))
	}
	twice(p, "collections", "id", d.Collections, func(c Collection) string { return c.ID })
	twice(p, "routes", "route_id", d.Routes, func(r Route) string { return r.RouteID })
	twice(p, "routes", "route_path", d.Routes, func(r Route) string { return r.Method + " " + r.RoutePath })
	twice(p, "templates", "name", d.Templates, func(t Template) string { return t.Name })
	twice(p, "email_templates", "name", d.EmailTemplates, func(t EmailTemplate) string { return t.Name })
	twice(p, "schedules", "cron", d.Schedules, func(s Schedule) string { return s.Key() })
	twice(p, "tests", "name", d.Tests, func(t Test) string { return t.Key() })
	for i, t := range d.Tests {
		if !slices.ContainsFunc(d.Routes, func(r Route) bool { return r.RouteID == t.RouteID }) {
			p[fmt.Sprintf("tests[%d].route_id", i)] = "names no route of the file"
		}
	}
	for i, sc := range d.Schedules {
		at := fmt.Sprintf("schedules[%d]", i)
		j := slices.IndexFunc(d.Routes, func(r Route) bool { return r.RouteID == sc.RouteID })
		switch {
		case j < 0:
			p[at+".route_id"] = "names no route of the file"
		case len(engine.PathParams(d.Routes[j].RoutePath)) > 0 || d.Routes[j].AuthJWT.Active || d.Routes[j].AuthSignature.Checks():
			p[at+".route_id"] = "names a route that cannot run without a caller (path parameters, auth_jwt or auth_signature)"
		}
		if _, err := schedule.Parse(sc.Cron, sc.Timezone); err != nil {
			if _, zerr := schedule.Zone(sc.Timezone); zerr != nil {
				p[at+".timezone"] = zerr.Error()
			} else {
				p[at+".cron"] = err.Error()
			}
		}
	}
	if len(d.VaultKeys) > MaxVaultKeys {
		p["vault_keys"] = fmt.Sprintf("has %d keys: at most %d", len(d.VaultKeys), MaxVaultKeys)
	}
	for i, k := range d.VaultKeys {
		switch {
		case !flow.VaultKey(k):
			p[fmt.Sprintf("vault_keys[%d]", i)] = flow.VaultKeyRule
		case slices.Index(d.VaultKeys, k) < i:
			p[fmt.Sprintf("vault_keys[%d]", i)] = "is given twice"
		}
	}
	return d, p
}

// twice names each item of list whose key an earlier item has already.
func twice[T any](p flow.Problems, list, field string, items []T, key func(T) string) {
	seen := map[string]int{}
	for i, it := range items {
		k := key(it)
		if j, ok := seen[k]; ok {
			p[fmt.Sprintf("%s[%d].%s", list, i, field)] = fmt.Sprintf("is %s[%d]'s too: each must be unique", list, j)
			continue
		}
		seen[k] = i
	}
}

// decodeRecords reads a collection's records: an array of JSON objects.
// decodeFields reads a collection's fields strictly: every property known
// (the rules of their values are schema.Schema.Check's).
func decodeFields(v any, path string, p flow.Problems) []schema.Field {
	raw, err := json.Marshal(v)
	if err != nil {
		p[path] = "is not valid JSON"
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var out []schema.Field
	if err := dec.Decode(&out); err != nil {
		p[path] = "must be an array of fields: " + strings.TrimPrefix(err.Error(), "json: ")
		return nil
	}
	return out
}

func decodeRecords(v any, path string, p flow.Problems) []json.RawMessage {
	list, ok := v.([]any)
	if !ok {
		p[path] = "must be an array of objects"
		return nil
	}
	out := make([]json.RawMessage, 0, len(list))
	for i, item := range list {
		if _, ok := item.(map[string]any); !ok {
			p[fmt.Sprintf("%s[%d]", path, i)] = "must be an object"
			continue
		}
		raw, err := json.Marshal(item)
		if err != nil {
			p[fmt.Sprintf("%s[%d]", path, i)] = "is not valid JSON"
			continue
		}
		out = append(out, raw)
	}
	return out
}

// decodeTests reads a file's tests strictly: each an object of the known
// fields, checked as saving it would be (docs/tests.md).
func decodeTests(v any, p flow.Problems) []Test {
	if v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		p["tests"] = "must be an array"
		return nil
	}
	out := make([]Test, 0, len(list))
	for i, item := range list {
		at := fmt.Sprintf("tests[%d]", i)
		if _, ok := item.(map[string]any); !ok {
			p[at] = "must be an object"
			continue
		}
		raw, _ := json.Marshal(item)
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		var t Test
		if err := dec.Decode(&t); err != nil {
			p[at] = "must be a test: " + strings.TrimPrefix(err.Error(), "json: ")
			continue
		}
		if t.RouteID == "" {
			p[at+".route_id"] = "is required"
		}
		for k, msg := range t.Check() {
			p[at+"."+k] = msg
		}
		t.Normalize()
		out = append(out, t)
	}
	return out
}

// decodeSchedules reads a file's schedules strictly: each an object of
// the known fields, its body a JSON object or left out.
func decodeSchedules(v any, p flow.Problems) []Schedule {
	if v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		p["schedules"] = "must be an array"
		return nil
	}
	out := make([]Schedule, 0, len(list))
	for i, item := range list {
		at := fmt.Sprintf("schedules[%d]", i)
		obj, ok := item.(map[string]any)
		if !ok {
			p[at] = "must be an object"
			continue
		}
		var sc Schedule
		if b, ok := obj["body"]; ok && b != nil {
			if _, isObj := b.(map[string]any); !isObj {
				p[at+".body"] = "must be a JSON object"
			} else {
				raw, _ := json.Marshal(b)
				sc.Body = CanonicalBody(raw)
			}
		}
		rest := maps.Clone(obj)
		delete(rest, "body")
		var wire struct {
			RouteID  string `json:"route_id"`
			Cron     string `json:"cron"`
			Timezone string `json:"timezone"`
			Query    string `json:"query"`
			Active   bool   `json:"active"`
		}
		for path, msg := range flow.DecodeValue(rest, &wire, at) {
			p[path] = msg
		}
		sc.RouteID, sc.Cron, sc.Timezone, sc.Query, sc.Active = wire.RouteID, wire.Cron, wire.Timezone, wire.Query, wire.Active
		if sc.Timezone == "" {
			sc.Timezone = "UTC"
		}
		if _, has := obj["active"]; !has {
			sc.Active = true
		}
		out = append(out, sc)
	}
	return out
}
