package runs

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"stencil/engine"
	"stencil/flow"
	"stencil/schema"
	"stencil/store"
	"stencil/webhooks"
)

// DocumentPath is where, under a project's api_path, its routes'
// OpenAPI document answers GET. No route_path can be it (a "." is not
// allowed in one); over a route whose ":name" segment would match it, the
// document wins.
const DocumentPath = "/openapi.json"

// obj is a JSON object of the generated document.
type obj = map[string]any

// document is the OpenAPI 3.1 document of a project's routes
// (docs/routes.md): a path for each route_path (":name" as "{name}"), an
// operation for each route with its path, query and body inputs typed by
// their bdtype, bearer security where auth_jwt is on, and the statuses the
// route can answer — 200, its FAILs, 400 for bad inputs, 401 and 403 for
// callers, 500 for faults. The routes the table holds of p are read whole
// for it (the table keeps only their keys), once a routing: the document
// is kept with p until its routes or settings change, so that asking for
// it again costs no read of thousands of routes.
func (t *table) document(ctx context.Context, p *routing) ([]byte, error) {
	p.doc.mu.Lock()
	defer p.doc.mu.Unlock()
	// Typed collections' fields change apart from the routes: their
	// digest tells whether the document kept still holds.
	typed, digest, err := t.store.TypedCollections(ctx, p.id)
	if err != nil {
		return nil, err
	}
	if p.doc.body != nil && p.doc.typed == digest {
		return p.doc.body, nil
	}
	body, err := t.makeDocument(ctx, p, typed)
	if err == nil {
		p.doc.body, p.doc.typed = body, digest
	}
	return body, err
}

// docCache is a routing's OpenAPI document, made at the first request for
// it, and the digest of the typed collections' fields it was made with; a
// changed routing has a new one.
type docCache struct {
	mu    sync.Mutex
	body  []byte
	typed string
}

func (t *table) makeDocument(ctx context.Context, p *routing, typed map[string]schema.Schema) ([]byte, error) {
	routes, err := t.store.RoutingRoutes(ctx, p.id, slices.Collect(maps.Keys(p.routes)))
	if err != nil {
		return nil, err
	}
	records := recordSchemas(typed)
	slices.SortFunc(routes, func(a, b store.StoredRoute) int { return strings.Compare(a.RouteID, b.RouteID) })
	paths := obj{}
	auth := false
	for _, sr := range routes {
		r := sr.Route
		path, params := DocPath(r.RoutePath)
		item, _ := paths[path].(obj)
		if item == nil {
			item = obj{}
			paths[path] = item
		}
		item[strings.ToLower(r.Method)] = docOperation(r, params, p.rate > 0, records)
		auth = auth || r.AuthJWT.Active
	}
	base := "/x" + strings.TrimSuffix(p.apiPath, "/")
	doc := obj{
		"openapi": "3.1.0",
		"info": obj{
			"title":   p.name + " API",
			"version": "1.0.0",
			"description": "The routes of project " + p.name + ", answered at " + base + "/… and generated from their " +
				"declarations as they are now. Answers are JSON; a route's error is `{\"status\", \"message\"}` with a message " +
				"starting `Error: `.",
		},
		"servers": []obj{{"url": base, "description": "This project's routes"}},
		"tags":    []obj{{"name": "routes", "description": "The project's routes."}},
		"paths":   paths,
		"components": obj{
			"schemas": obj{"Error": obj{
				"type":     "object",
				"required": []string{"status", "message"},
				"properties": obj{
					"status":  obj{"type": "integer"},
					"message": obj{"type": "string", "examples": []string{"Error: route not found"}},
				},
			}},
		},
	}
	schemas := doc["components"].(obj)["schemas"].(obj)
	for _, rs := range records.used() {
		schemas[rs.name] = rs.schema
	}
	if auth {
		doc["components"].(obj)["securitySchemes"] = obj{"bearerAuth": obj{
			"type": "http", "scheme": "bearer",
			"description": "A JWT from the platform's POST /user/login, or one of its personal access tokens.",
		}}
	}
	return json.Marshal(doc)
}

// DocPath writes a route_path with OpenAPI's "{name}" and returns its
// parameters' names.
func DocPath(routePath string) (string, []string) {
	segs := engine.Segments(routePath)
	var params []string
	for i, s := range segs {
		if name, ok := strings.CutPrefix(s, ":"); ok {
			segs[i] = "{" + name + "}"
			params = append(params, name)
		}
	}
	return "/" + strings.Join(segs, "/"), params
}

// maxSafeInteger is the largest integer a route takes (engine.ConvertText).
const maxSafeInteger = 1<<53 - 1

// bdSchema is the JSON Schema of a value of bdtype; text says how it is
// read from a query string, where every value is text.
func bdSchema(bdtype string, text bool) obj {
	switch bdtype {
	case "INTEGER":
		// The engine's numbers are float64s: integers within ±(2^53 − 1).
		return obj{"type": "integer", "minimum": -maxSafeInteger, "maximum": maxSafeInteger}
	case "FLOAT":
		return obj{"type": "number"}
	case "BOOLEAN":
		return obj{"type": "boolean"}
	case "STRING":
		return obj{"type": "string"}
	case "ARRAY":
		if text {
			return obj{"type": "string", "description": "A JSON array.", "examples": []string{"[1,2]"}}
		}
		return obj{"type": "array", "items": obj{}}
	}
	if text {
		return obj{"type": "string", "description": "Any JSON value."}
	}
	return obj{"description": "Any JSON value."}
}

func errorResponse(description string) obj {
	return obj{"description": description, "content": obj{"application/json": obj{"schema": obj{"$ref": "#/components/schemas/Error"}}}}
}

// retryLater is an answer that carries Retry-After.
func retryLater(description string) obj {
	answer := errorResponse(description)
	answer["headers"] = obj{"Retry-After": obj{"description": "Seconds to wait before trying again.", "schema": obj{"type": "integer"}}}
	return answer
}

// docOperation is the operation of one route of a project, limited says
// whether the project has a rate limit.
func docOperation(r flow.Route, pathParams []string, limited bool, records *recordTypes) obj {
	parameters := []obj{}
	for _, name := range pathParams {
		parameters = append(parameters, obj{"name": name, "in": "path", "required": true, "schema": obj{"type": "string"}})
	}
	for _, p := range r.Params.Pairs {
		parameters = append(parameters, obj{"name": p.ID, "in": "query", "required": false, "schema": bdSchema(p.BDType, true)})
	}
	description := fmt.Sprintf("Route `%s`.", r.RouteID)
	if r.Params.Delimiter != "&" && len(r.Params.Pairs) > 0 {
		description += fmt.Sprintf(" Its query parameters may be separated by `%s` as well as by `&`, as clients send them.", r.Params.Delimiter)
	}
	responses := docAnswers(r, records)
	switch {
	case len(r.Params.Pairs) > 0 || len(r.Body) > 0:
		responses["400"] = errorResponse("An input is missing or not of its type, or a path parameter holds a NUL character or invalid UTF-8; the message names it.")
	case len(pathParams) > 0:
		responses["400"] = errorResponse("A path parameter holds a NUL character or invalid UTF-8; the message names it.")
	}
	if len(r.Body) > 0 {
		responses["413"] = errorResponse("The body is larger than 1 MiB.")
	}
	if sig := r.AuthSignature; sig.Checks() {
		// A signed webhook's headers (docs/webhooks.md).
		for _, name := range webhooks.Headers(sig.Scheme, sig.Header) {
			parameters = append(parameters, obj{"name": name, "in": "header", "required": true, "schema": obj{"type": "string"},
				"description": "The delivery's signature (" + sig.Scheme + "), checked on the raw body before the route runs."})
		}
		responses["401"] = errorResponse("The signature does not match (missing, wrong, or its timestamp out of tolerance): nothing ran.")
		description += " It runs only for deliveries signed with its secret (" + sig.Scheme + ")."
		if sig.Scheme == webhooks.StandardWebhooks {
			description += " A delivery whose `webhook-id` was accepted before answers 200 and runs nothing."
		}
	}
	if r.AuthJWT.Active {
		responses["401"] = errorResponse("No bearer token of the platform, or one that is not valid.")
		responses["403"] = errorResponse(fmt.Sprintf("The caller's %s is not among this route's callers (collection %s).", r.AuthJWT.Field, r.AuthJWT.RefCol))
	}
	if limited {
		responses["429"] = retryLater("Over the project's rate limit for the client's address: `Error: rate limit exceeded`.")
	}
	busy := "The service has no room for the run now (`Error: the service is busy: try again shortly`)."
	for _, b := range r.Flow.Blocks {
		if b.Type == "EMAIL" {
			busy += " Or the project has as many messages waiting to be sent as it may: `Error: flow.blocks[i] (EMAIL): the project's outbox is full …`, with `Retry-After: 60`."
			break
		}
	}
	responses["503"] = retryLater(busy)
	for _, b := range r.Flow.Blocks {
		if b.Type == "HTTP" {
			responses["502"] = errorResponse("An HTTP block got no answer: the connection failed, the egress guard refused the destination, or the answer passed 1 MiB (`Error: flow.blocks[i] (HTTP): …`).")
			responses["504"] = errorResponse("An HTTP block's upstream did not answer within its timeout (`Error: flow.blocks[i] (HTTP): … did not answer within … ms`).")
			break
		}
	}
	failResponses(responses, r)
	responses["500"] = errorResponse("A fault of the route (the message names its block), or of the platform.")
	op := obj{
		"operationId": r.RouteID,
		"summary":     r.Method + " " + r.RoutePath,
		"description": description,
		"tags":        []string{"routes"},
		"parameters":  parameters,
		"responses":   responses,
	}
	if r.AuthJWT.Active {
		op["security"] = []obj{{"bearerAuth": []string{}}}
	}
	if len(r.Body) > 0 {
		props, required := obj{}, []string{}
		creates := createdFrom(r)
		for _, p := range r.Body {
			props[p.ID] = bdSchema(p.BDType, false)
			if col, ok := creates[p.ID]; ok && p.BDType == "OTHER" {
				// A value a CREATE stores as it is: a typed collection's
				// input, so that a client builds it by its fields.
				if in := records.input(col); in != nil {
					props[p.ID] = in
				}
			}
			required = append(required, p.ID)
		}
		op["requestBody"] = obj{"required": true, "content": obj{"application/json": obj{"schema": obj{
			"type": "object", "required": required, "properties": props,
		}}}}
	}
	return op
}

// createdFrom maps the body's variables that a CREATE block of r stores
// as they are (its ref_object) to that block's collection (the first, when
// several store one).
func createdFrom(r flow.Route) map[string]string {
	out := map[string]string{}
	for _, b := range r.Flow.Blocks {
		if b.Type == "CREATE" && b.RefObject != "" && b.RefCol != "" {
			if _, ok := out[b.RefObject]; !ok {
				out[b.RefObject] = b.RefCol
			}
		}
	}
	return out
}

// failResponses adds to responses the statuses r's CONDITION blocks FAIL
// with, each with its messages.
func failResponses(responses obj, r flow.Route) {
	fails := map[int][]string{}
	for _, b := range r.Flow.Blocks {
		if b.Type == "CONDITION" && b.Action == "FAIL" {
			fail := flow.Fail{Status: 400, Message: "condition failed"} // without fail, as the engine answers
			if b.Fail != nil {
				fail = *b.Fail
			}
			fails[fail.Status] = append(fails[fail.Status], "Error: "+fail.Message)
		}
	}
	for status, messages := range fails {
		code := strconv.Itoa(status)
		if prev, taken := responses[code].(obj); taken {
			// A FAIL with a status the route answers anyway: both are said.
			responses[code] = errorResponse(prev["description"].(string) + " Or: " + strings.Join(slices.Compact(messages), "; "))
			continue
		}
		text := http.StatusText(status)
		if text == "" {
			text = "Status " + code
		}
		responses[code] = errorResponse(text + ": " + strings.Join(slices.Compact(messages), "; "))
	}
}

// docAnswers are a route's answers by RETURN, by status: the object of the
// pairs of its RETURNs of that status, typed where the engine knows the
// type (see answerTypes) and required when every one of them has the key,
// with their headers; no body for 204 and 304. A flow that may end without
// RETURN answers 200 with the envelope too.
func docAnswers(r flow.Route, records *recordTypes) obj {
	var returns []flow.Block
	ends := true // whether a run that ends normally may end without RETURN
	byStatus := map[int][]flow.Block{}
	for _, b := range r.Flow.Blocks {
		if b.Type != "RETURN" {
			continue
		}
		returns = append(returns, b)
		status := cmp.Or(b.Status, http.StatusOK)
		byStatus[status] = append(byStatus[status], b)
		if b.Depth == 0 && len(b.Conditions) == 0 {
			ends = false
		}
	}
	envelope := obj{"$ref": "#/components/schemas/Error"}
	out := obj{}
	if len(returns) == 0 {
		out["200"] = obj{"description": "The flow ran to its end: `{\"status\":200,\"message\":\"OK\"}`.", "content": obj{"application/json": obj{"schema": envelope}}}
		return out
	}
	types := answerTypes(r, records)
	for status, group := range byStatus {
		answer := obj{"description": "The route's answer: the pairs of its RETURN."}
		if headers := docHeaders(group); len(headers) > 0 {
			answer["headers"] = headers
		}
		out[strconv.Itoa(status)] = answer
		if status == http.StatusNoContent || status == http.StatusNotModified {
			answer["description"] = "The route's answer, without a body."
			continue
		}
		schema := pairsSchema(group, types)
		if ends && status == http.StatusOK {
			schema = obj{"anyOf": []obj{schema, envelope}}
			answer["description"] = "The route's answer: the pairs of its RETURN, or `{\"status\":200,\"message\":\"OK\"}` when the flow ends without one."
		}
		answer["content"] = obj{"application/json": obj{"schema": schema}}
	}
	if _, ok := out["200"]; ends && !ok {
		out["200"] = obj{"description": "The flow ran to its end: `{\"status\":200,\"message\":\"OK\"}`.", "content": obj{"application/json": obj{"schema": envelope}}}
	}
	return out
}

// pairsSchema is the object the RETURNs give: each key typed, required
// when every RETURN has it.
func pairsSchema(returns []flow.Block, types variableTypes) obj {
	props := obj{}
	count := map[string]int{}
	for _, b := range returns {
		seen := map[string]bool{}
		for _, p := range b.Pairs {
			props[p.ID] = types.of(p.Data)
			if !seen[p.ID] {
				seen[p.ID] = true
				count[p.ID]++
			}
		}
	}
	required := []string{}
	for id, n := range count {
		if n == len(returns) {
			required = append(required, id)
		}
	}
	sort.Strings(required)
	return obj{"type": "object", "properties": props, "required": required}
}

// docHeaders are the headers RETURNs of one status set, each required
// when every one of them sets it.
func docHeaders(returns []flow.Block) obj {
	count := map[string]int{}
	names := map[string]string{}
	for _, b := range returns {
		for _, h := range b.Headers {
			key := strings.ToLower(h.ID)
			if _, seen := names[key]; !seen {
				names[key] = h.ID
			}
			count[key]++
		}
	}
	out := obj{}
	for key, name := range names {
		out[name] = obj{"required": count[key] == len(returns), "schema": obj{"type": "string"}}
	}
	return out
}

// variableTypes are the JSON Schemas of a route's variables whose type the
// engine knows whatever the request: set by blocks that always make a
// value of one type, or the route's typed inputs. A variable two blocks set
// to different types, or one set by a block of unknown result, is absent.
type variableTypes map[string]obj

// unknown marks a variable whose type is not known.
var unknown = obj{}

func (v variableTypes) set(name string, schema obj) {
	if prev, ok := v[name]; ok && fmt.Sprint(prev) != fmt.Sprint(schema) {
		schema = unknown
	}
	v[name] = schema
}

// of is the schema of what an operand gives: a literal's rtype, a
// variable's known type (a dot path into one is not known).
func (v variableTypes) of(o flow.Operand) obj {
	if !o.RefVar {
		return bdSchema(o.RType, false)
	}
	if s, ok := v[o.Data]; ok && len(s) > 0 {
		return s
	}
	return obj{}
}

// answerTypes reads the types of a route's variables from its inputs and
// blocks.
func answerTypes(r flow.Route, records *recordTypes) variableTypes {
	v := variableTypes{}
	for _, p := range r.Params.Pairs {
		s := bdSchema(p.BDType, false)
		if t, ok := s["type"].(string); ok {
			s = obj{"type": []string{t, "null"}} // a parameter not sent is null
		}
		v.set(p.ID, s)
	}
	for _, p := range r.Body {
		v.set(p.ID, bdSchema(p.BDType, false))
	}
	for _, name := range engine.PathParams(r.RoutePath) {
		v.set(name, obj{"type": "string"})
	}
	for _, b := range r.Flow.Blocks {
		if b.LocalName == "" || b.Type == "CREATE" {
			continue
		}
		s := unknown
		switch b.Type {
		case "FETCH":
			// A record: its _id and whatever its data holds (said, so that a
			// generated client keeps the rest and not _id alone); a typed
			// collection's, its schema.
			s = obj{"type": "array", "items": records.of(b.RefCol)}
		case "FILTER":
			s = obj{"type": "array"}
		case "OBJECT":
			s = obj{"type": "object", "additionalProperties": true}
		case "VAULT", "TEMPLATE":
			s = obj{"type": "string"}
			if len(b.Conditions) > 0 {
				s = unknown // unset, so its value before, when they fail
			}
		case "DELETE", "LOOP":
			s = obj{"type": "number"}
			if b.Type == "DELETE" {
				s = obj{"type": "integer"}
			}
		case "PROPERTY":
			switch b.Apply {
			case "LENGTH":
				s = obj{"type": "integer"}
			case "GET_FIRST", "GET_LAST":
				// A record of a FETCH's: its schema, or null when none came.
				if d := b.PropertyData; d != nil && d.RefVar {
					if item, ok := v[d.Data]["items"].(obj); ok && v[d.Data]["type"] == "array" && item["$ref"] != nil {
						s = obj{"anyOf": []obj{item, {"type": "null"}}}
					}
				}
			}
		case "FUNCTION":
			switch b.Func {
			case "V4":
				s = obj{"type": "string", "format": "uuid"}
			case "GENERATE_TIMESTAMP":
				s = obj{"type": "string", "format": "date-time"}
			case "PAGINATE":
				s = obj{"type": "array"}
			}
		}
		v.set(b.LocalName, s)
	}
	return v
}

// CurlCommand is a cURL command line that calls route r at address: its
// query parameters and body fields filled with a sample of their type
// ({name} where a value is the caller's), and a bearer token where the
// route wants one. Every argument is quoted for a POSIX shell.
func CurlCommand(address string, r flow.Route) string {
	sample := func(bdtype, name string) any {
		switch bdtype {
		case "INTEGER":
			return 1
		case "FLOAT":
			return 1.5
		case "BOOLEAN":
			return true
		case "ARRAY":
			return []any{}
		case "OTHER":
			return map[string]any{}
		}
		return "{" + name + "}"
	}
	u := address
	if len(r.Params.Pairs) > 0 {
		parts := make([]string, len(r.Params.Pairs))
		for i, p := range r.Params.Pairs {
			v, _ := json.Marshal(sample(p.BDType, p.ID))
			text := strings.Trim(string(v), `"`)
			parts[i] = url.QueryEscape(p.ID) + "=" + strings.NewReplacer("%7B", "{", "%7D", "}").Replace(url.QueryEscape(text))
		}
		u += "?" + strings.Join(parts, r.Params.Delimiter)
	}
	// -g: the {name} placeholders are text, not curl's URL globs.
	args := []string{"curl", "-sS", "-g"}
	if r.Method != "GET" {
		args = append(args, "-X", r.Method)
	}
	args = append(args, shellQuote(u), "-H", shellQuote("Accept: application/json"))
	if r.AuthJWT.Active {
		args = append(args, "-H", shellQuote("Authorization: Bearer $TOKEN"))
	}
	if len(r.Body) > 0 {
		body := make(map[string]any, len(r.Body))
		for _, f := range r.Body {
			body[f.ID] = sample(f.BDType, f.ID)
		}
		raw, _ := json.Marshal(body)
		args = append(args, "-H", shellQuote("Content-Type: application/json"), "--data", shellQuote(string(raw)))
	}
	return strings.Join(args, " ")
}

// shellQuote quotes s for a POSIX shell: in single quotes, where a single
// quote of s closes them, is escaped with a backslash and opens them again.
// The bearer header alone is in double quotes, for the shell to fill $TOKEN.
func shellQuote(s string) string {
	if s == "Authorization: Bearer $TOKEN" {
		return `"Authorization: Bearer $TOKEN"`
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// recordTypes are the schemas of a project's typed collections' records,
// each a component of the document once a route reads it
// (docs/collections.md): its _id, its fields typed, and other properties
// as its additional says.
type recordTypes struct {
	by    map[string]*recordType // by collection id
	names map[string]bool
}

type recordType struct {
	name   string
	schema obj
	used   bool
	fields schema.Schema
	input  *recordType // the schema of a new record, once a route takes one
}

// recordSchemas names and writes the record schemas of typed collections.
func recordSchemas(typed map[string]schema.Schema) *recordTypes {
	rt := &recordTypes{by: map[string]*recordType{}, names: map[string]bool{"Error": true}}
	for _, id := range slices.Sorted(maps.Keys(typed)) {
		name := componentName(id)
		for rt.names[name] {
			name += "Record"
		}
		rt.names[name] = true
		rt.by[id] = &recordType{name: name, schema: recordSchema(id, typed[id], false), fields: typed[id]}
	}
	return rt
}

// input is the schema of a new record of collection id, as a CREATE
// stores it: a reference to its component (<Name>Input) when the
// collection is typed, else nil.
func (rt *recordTypes) input(id string) obj {
	r, ok := rt.by[id]
	if !ok {
		return nil
	}
	if r.input == nil {
		name := r.name + "Input"
		for rt.names[name] {
			name += "Input"
		}
		rt.names[name] = true
		r.input = &recordType{name: name, schema: recordSchema(id, r.fields, true)}
	}
	r.input.used = true
	return obj{"$ref": "#/components/schemas/" + r.input.name}
}

// of is the schema of a record of collection id: a reference to its
// component when the collection is typed.
func (rt *recordTypes) of(id string) obj {
	if r, ok := rt.by[id]; ok {
		r.used = true
		return obj{"$ref": "#/components/schemas/" + r.name}
	}
	return obj{"type": "object", "required": []string{"_id"}, "properties": obj{"_id": obj{"type": "integer"}}, "additionalProperties": true}
}

// used are the record schemas the routes read or take.
func (rt *recordTypes) used() []*recordType {
	var out []*recordType
	for _, r := range rt.by {
		if r.used {
			out = append(out, r)
		}
		if r.input != nil && r.input.used {
			out = append(out, r.input)
		}
	}
	return out
}

// componentName is a collection id as a schema's name: order_items is
// OrderItems.
func componentName(id string) string {
	var b strings.Builder
	for _, part := range strings.Split(id, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// recordSchema is the JSON Schema of a typed collection's records; with
// input, of a new record (no _id; a required field with a default may be
// left out: it gets the default).
func recordSchema(id string, sch schema.Schema, input bool) obj {
	props := obj{"_id": obj{"type": "integer", "description": "The record's id."}}
	required := []string{"_id"}
	description := "A record of collection " + id + "."
	if input {
		props, required = obj{}, []string{}
		description = "A new record of collection " + id + ": each field checked as every write checks it."
	}
	for _, f := range sch.Fields {
		s := fieldSchema(f)
		if f.Description != "" {
			s["description"] = f.Description
		}
		if f.Required && (!input || f.Default == nil) {
			required = append(required, f.Name)
		} else if t, ok := s["type"]; ok {
			s["type"] = []any{t, "null"} // a value may be null or absent
		}
		props[f.Name] = s
	}
	return obj{"type": "object", "description": description, "properties": props, "required": required,
		"additionalProperties": !sch.Strict}
}

// fieldSchema is the JSON Schema of a field's values.
func fieldSchema(f schema.Field) obj {
	switch f.Type {
	case schema.Text:
		s := obj{"type": "string"}
		if f.MinLength != nil {
			s["minLength"] = *f.MinLength
		}
		if f.MaxLength != nil {
			s["maxLength"] = *f.MaxLength
		}
		if f.Pattern != "" {
			s["pattern"] = f.Pattern
		}
		return s
	case schema.Integer, schema.Number:
		s := obj{"type": f.Type}
		if f.Min != nil {
			s["minimum"] = *f.Min
		}
		if f.Max != nil {
			s["maximum"] = *f.Max
		}
		return s
	case schema.Boolean:
		return obj{"type": "boolean"}
	case schema.Datetime:
		return obj{"type": "string", "format": "date-time"}
	case schema.Email:
		return obj{"type": "string", "format": "email"}
	case schema.URL:
		return obj{"type": "string", "format": "uri"}
	case schema.Select:
		one := obj{"type": "string", "enum": f.Values}
		if f.Multiple {
			return obj{"type": "array", "items": one, "uniqueItems": true}
		}
		return one
	case schema.Reference:
		return obj{"type": "integer", "description": "The id of a record of " + f.Collection + "."}
	}
	return obj{} // json: any value
}
