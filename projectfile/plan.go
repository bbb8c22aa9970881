package projectfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"

	"stencil/flow"
	"stencil/schema"
)

// The kinds of objects a plan names.
const (
	KindSetting       = "setting"
	KindCollection    = "collection"
	KindRoute         = "route"
	KindTemplate      = "template"
	KindEmailTemplate = "email_template"
	KindSchedule      = "schedule"
	KindTest          = "test"
)

// Item is one object a plan adds, changes or removes; Fields, for a
// change, says what differs in words a reader of the project's pages
// knows (for routes and templates, those of the route outline).
type Item struct {
	Kind   string   `json:"kind"`
	ID     string   `json:"id"`
	Fields []string `json:"fields,omitempty"`
}

// Plan is what applying a document to a project would do.
type Plan struct {
	Add    []Item `json:"add"`
	Change []Item `json:"change"`
	Remove []Item `json:"remove"`
	// Kept lists, without prune, what the project holds and the file
	// does not name: drift that applying keeps.
	Kept           []Item   `json:"kept"`
	Unchanged      int      `json:"unchanged"`
	MissingSecrets []string `json:"missing_secrets"`
	// SecretRoutes names, for each missing secret, the file's routes
	// that read it (a VAULT block, a signature's key); a key only in
	// vault_keys has none.
	SecretRoutes map[string][]string `json:"secret_routes"`
}

// Empty says whether applying would write nothing.
func (p Plan) Empty() bool { return len(p.Add) == 0 && len(p.Change) == 0 && len(p.Remove) == 0 }

// Settled says whether the project matches the file with nothing to
// heed: nothing to write, nothing the file does not name, no secret
// missing. A plan that is not settled exits 2 (cli).
func (p Plan) Settled() bool { return p.Empty() && len(p.Kept) == 0 && len(p.MissingSecrets) == 0 }

// Compare plans applying want to the project as it is (have; nil when
// the project does not exist yet). Every setting of want is set (the
// caller fills what the file left out). With prune, what the project
// holds and want does not is removed; settings and vault keys never are.
func Compare(have *Document, want Document, prune bool) Plan {
	p := Plan{Add: []Item{}, Change: []Item{}, Remove: []Item{}, Kept: []Item{}, MissingSecrets: []string{}, SecretRoutes: map[string][]string{}}
	if have == nil {
		have = &Document{}
	}
	for _, s := range settings(*have, want) {
		switch {
		case s.old == nil:
			p.Add = append(p.Add, Item{Kind: KindSetting, ID: s.name, Fields: []string{s.name + ": " + show(s.new)}})
		case !sameJSON(s.old, s.new):
			p.Change = append(p.Change, Item{Kind: KindSetting, ID: s.name, Fields: []string{s.name + ": " + show(s.old) + " → " + show(s.new)}})
		default:
			p.Unchanged++
		}
	}
	// Records are data, not the collection: only a collection the file
	// adds takes them, and they do not make one differ.
	records := map[string]int{}
	without := func(list []Collection) []Collection {
		out := make([]Collection, len(list))
		for i, c := range list {
			if c.Records != nil {
				records[c.ID] = len(*c.Records)
			}
			out[i], out[i].Records = c, nil
		}
		return out
	}
	compareList(&p, KindCollection, without(have.Collections), without(want.Collections), prune, func(c Collection) string { return c.ID },
		func(a, b Collection) []string {
			return append(fieldWords(a, b, "name", "description"), schema.Changes(a.Schema(), b.Schema())...)
		},
		func(c Collection) []string {
			if n := records[c.ID]; n > 0 {
				return []string{strconv.Itoa(n) + " records"}
			}
			return nil
		})
	compareList(&p, KindRoute, have.Routes, want.Routes, prune, func(r Route) string { return r.RouteID },
		func(a, b Route) []string { return RouteWords(a.In(""), b.In("")) },
		func(r Route) []string { return []string{r.Method + " " + r.RoutePath} })
	compareList(&p, KindTemplate, have.Templates, want.Templates, prune, func(t Template) string { return t.Name },
		func(a, b Template) []string {
			words := fieldWords(a, b, "description", "method", "variables")
			ra := flow.Route{RouteID: a.RouteID, RoutePath: a.RoutePath, AuthJWT: a.AuthJWT, Params: a.Params, Body: a.Body, Flow: a.Flow}
			rb := flow.Route{RouteID: b.RouteID, RoutePath: b.RoutePath, AuthJWT: b.AuthJWT, Params: b.Params, Body: b.Body, Flow: b.Flow}
			return append(words, RouteWords(ra, rb)...)
		}, nil)
	compareList(&p, KindEmailTemplate, have.EmailTemplates, want.EmailTemplates, prune, func(t EmailTemplate) string { return t.Name },
		func(a, b EmailTemplate) []string { return fieldWords(a, b, "subject", "text", "html") }, nil)
	compareList(&p, KindSchedule, have.Schedules, want.Schedules, prune, Schedule.Key,
		func(a, b Schedule) []string { return fieldWords(a, b, "active") }, nil)
	compareList(&p, KindTest, have.Tests, want.Tests, prune, Test.Key,
		func(a, b Test) []string { return fieldWords(a.RouteTest, b.RouteTest, "request", "expect") }, nil)
	needed := slices.Clone(want.VaultKeys)
	readers := map[string][]string{}
	read := func(key, route string) {
		needed = append(needed, key)
		if !slices.Contains(readers[key], route) {
			readers[key] = append(readers[key], route)
		}
	}
	for _, r := range want.Routes {
		if r.AuthSignature.Checks() {
			read(r.AuthSignature.VaultKey, r.RouteID)
		}
		for _, b := range r.Flow.Blocks {
			if b.Type == "VAULT" {
				read(b.Key, r.RouteID)
			}
		}
	}
	slices.Sort(needed)
	for _, k := range slices.Compact(needed) {
		if !slices.Contains(have.VaultKeys, k) {
			p.MissingSecrets = append(p.MissingSecrets, k)
			p.SecretRoutes[k] = append([]string{}, readers[k]...)
		}
	}
	return p
}

// setting is one setting of a project before and after (old nil: the
// project is new).
type setting struct {
	name     string
	old, new any
}

func settings(have, want Document) []setting {
	var out []setting
	add := func(name string, isNew bool, old, new any) {
		if isNew {
			old = nil
		}
		out = append(out, setting{name, old, new})
	}
	isNew := have.Name == nil
	add("name", isNew, deref(have.Name), deref(want.Name))
	add("description", isNew, deref(have.Description), deref(want.Description))
	add("api_path", isNew, deref(have.APIPath), deref(want.APIPath))
	add("x_rate_limit", isNew, deref(have.XRateLimit), deref(want.XRateLimit))
	add("x_rate_burst", isNew, deref(have.XRateBurst), deref(want.XRateBurst))
	add("x_cors_origins", isNew, deref(have.XCORSOrigins), deref(want.XCORSOrigins))
	add("x_egress_hosts", isNew, deref(have.XEgressHosts), deref(want.XEgressHosts))
	return out
}

func deref[T any](p *T) any {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// compareList plans one list: by key, an object only in want is added,
// one in both that differs is changed (words says how), one only in have
// is removed with prune and kept (Plan.Kept) without. about, when set, says what an added object holds.
func compareList[T any](p *Plan, kind string, have, want []T, prune bool, key func(T) string, words func(a, b T) []string, about func(T) []string) {
	had := map[string]T{}
	for _, h := range have {
		had[key(h)] = h
	}
	named := map[string]bool{}
	for _, w := range want {
		k := key(w)
		named[k] = true
		h, ok := had[k]
		switch {
		case !ok:
			it := Item{Kind: kind, ID: k}
			if about != nil {
				it.Fields = about(w)
			}
			p.Add = append(p.Add, it)
		case !sameJSON(h, w):
			p.Change = append(p.Change, Item{Kind: kind, ID: k, Fields: words(h, w)})
		default:
			p.Unchanged++
		}
	}
	for _, h := range have {
		if k := key(h); !named[k] {
			if prune {
				p.Remove = append(p.Remove, Item{Kind: kind, ID: k})
			} else {
				p.Kept = append(p.Kept, Item{Kind: kind, ID: k})
			}
		}
	}
}

// RouteWords says how route b differs from a in the outline's words, a
// line for each changed field with its label, before and after: a request
// field as "Path: /a → /b" (a query parameter or body field by its name:
// "Query parameters · limit: integer → string"), a block as "Block 2
// (FETCH) added: …" with its summary line, "removed", "moved to 4", or a
// changed field as "Block 1 (FETCH) · Sort: title → title, descending".
func RouteWords(a, b flow.Route) []string {
	d := flow.DiffRoutes(a, b)
	var out []string
	for _, f := range d.Request {
		switch f.Field {
		case "params":
			if a.Params.Delimiter != b.Params.Delimiter {
				out = append(out, f.Label+" · Delimiter: "+change(a.Params.Delimiter, b.Params.Delimiter))
			}
			out = append(out, paramWords(f.Label, a.Params.Pairs, b.Params.Pairs)...)
		case "body":
			out = append(out, paramWords(f.Label, a.Body, b.Body)...)
		case "auth_jwt", "auth_signature":
			out = append(out, objectWords(f.Label, f.Old, f.New)...)
		default:
			out = append(out, f.Label+": "+change(text(f.Old), text(f.New)))
		}
	}
	for _, c := range d.Blocks {
		switch c.Kind {
		case "added":
			out = append(out, fmt.Sprintf("Block %d (%s) added: %s", c.To+1, c.Type, flow.Summary(b.Flow.Blocks[c.To])))
		case "removed":
			out = append(out, fmt.Sprintf("Block %d (%s) removed: %s", c.From+1, c.Type, flow.Summary(a.Flow.Blocks[c.From])))
		case "moved":
			out = append(out, fmt.Sprintf("Block %d (%s) moved to %d", c.From+1, c.Type, c.To+1))
		default:
			for _, f := range c.Fields {
				// The outline's words for the field; its JSON where
				// those words do not show the difference.
				before, after := flow.FieldText(a.Flow.Blocks[c.From], f.Field), flow.FieldText(b.Flow.Blocks[c.To], f.Field)
				if before == after {
					before, after = text(f.Old), text(f.New)
				}
				out = append(out, fmt.Sprintf("Block %d (%s) · %s: %s", c.To+1, c.Type, f.Label, change(before, after)))
			}
		}
	}
	return out
}

// paramWords says how a route's query parameters or body fields differ,
// by name: added, removed, or a changed type.
func paramWords(label string, a, b []flow.Param) []string {
	var out []string
	had := map[string]flow.Param{}
	for _, p := range a {
		had[p.ID] = p
	}
	named := map[string]bool{}
	for _, p := range b {
		named[p.ID] = true
		switch h, ok := had[p.ID]; {
		case !ok:
			out = append(out, label+" · "+flow.Printable(p.ID)+" added ("+flow.Word(p.BDType)+")")
		case h.BDType != p.BDType:
			out = append(out, label+" · "+flow.Printable(p.ID)+": "+change(flow.Word(h.BDType), flow.Word(p.BDType)))
		}
	}
	for _, p := range a {
		if !named[p.ID] {
			out = append(out, label+" · "+flow.Printable(p.ID)+" removed")
		}
	}
	if len(out) == 0 { // the same fields in another order
		out = append(out, label+": the order changed")
	}
	return out
}

// objectWords says which fields of a JSON object differ, each with its
// value before and after.
func objectWords(label, a, b string) []string {
	var fa, fb map[string]json.RawMessage
	_ = json.Unmarshal([]byte(a), &fa)
	_ = json.Unmarshal([]byte(b), &fb)
	names := make([]string, 0, len(fa)+len(fb))
	for k := range fa {
		names = append(names, k)
	}
	for k := range fb {
		names = append(names, k)
	}
	slices.Sort(names)
	var out []string
	for _, k := range slices.Compact(names) {
		if !bytes.Equal(fa[k], fb[k]) {
			out = append(out, label+" · "+flow.Printable(k)+": "+change(text(string(fa[k])), text(string(fb[k]))))
		}
	}
	return out
}

// fieldWords says which of the named JSON fields differ between a and b,
// as "name: old → new".
func fieldWords(a, b any, names ...string) []string {
	fa, fb := jsonFields(a), jsonFields(b)
	var out []string
	for _, n := range names {
		if !bytes.Equal(fa[n], fb[n]) {
			out = append(out, n+": "+showRaw(string(fa[n]))+" → "+showRaw(string(fb[n])))
		}
	}
	return out
}

func jsonFields(v any) map[string]json.RawMessage {
	raw, _ := json.Marshal(v)
	var out map[string]json.RawMessage
	_ = json.Unmarshal(raw, &out)
	return out
}

func sameJSON(a, b any) bool {
	ra, _ := json.Marshal(a)
	rb, _ := json.Marshal(b)
	return bytes.Equal(ra, rb)
}

// show is v as compact JSON, cut for a line.
func show(v any) string {
	raw, _ := json.Marshal(v)
	return showRaw(string(raw))
}

// showRaw is a JSON text as a line shows it: a string without its quotes
// unless it is empty, at most 80 characters.
func showRaw(s string) string { return cut(text(s)) }

// text is a JSON text for people: a string without its quotes unless it
// is empty, control characters escaped; nothing is "(none)".
func text(s string) string {
	var str string
	if json.Unmarshal([]byte(s), &str) == nil && str != "" {
		return flow.Printable(str)
	}
	if s == "" {
		return "(none)"
	}
	return flow.Printable(s)
}

// change is "before → after", each cut to about 80 characters around
// where they first differ, so that a long value never hides its change.
func change(before, after string) string {
	if before == "" {
		before = "(none)"
	}
	if after == "" {
		after = "(none)"
	}
	a, b := []rune(before), []rune(after)
	at := 0
	for at < len(a) && at < len(b) && a[at] == b[at] {
		at++
	}
	return around(a, at) + " → " + around(b, at)
}

// around is s cut to at most 80 characters that show rune at, with "…"
// where it was cut.
func around(s []rune, at int) string {
	const width = 80
	if len(s) <= width {
		return string(s)
	}
	from := max(0, min(at-20, len(s)-width+2))
	to := min(len(s), from+width-2)
	out := string(s[from:to])
	if from > 0 {
		out = "…" + out
	}
	if to < len(s) {
		out += "…"
	}
	return out
}

func cut(s string) string {
	if utf8.RuneCountInString(s) <= 80 {
		return s
	}
	return string([]rune(s)[:79]) + "…"
}
