package views

import (
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/aymanbagabas/go-udiff"

	"stencil/flow"
	"stencil/projectfile"
	"stencil/schema"
	"stencil/store"
)

// How a flow, a request and a change between two versions read on a page,
// and the functions templates format with. Pure: they build what a view
// model holds from what they are given.

// Funcs are the functions the templates format with (the HTTP layer adds
// asset, which versions static URLs).
func Funcs() map[string]any {
	return map[string]any{
		"dict": dict,
		// list makes a list of its arguments (rows of a form).
		"list": func(items ...any) []any { return items },
		// join writes a list with sep between its items.
		"join": strings.Join,
		// json is a value as JSON text (a field's definition, for a page's
		// script).
		"json": func(v any) (string, error) {
			text, err := json.Marshal(v)
			return string(text), err
		},
		// fieldTypes are the types a collection's field may have.
		"fieldTypes": func() []string { return schema.Types },
		// raw is JSON text as a string (a field's default).
		"raw": func(b json.RawMessage) string { return string(b) },
		// kind names a kind of object of a project's file ("email template").
		"kind": func(k string) string { return strings.ReplaceAll(k, "_", " ") },
		// setting names a project's setting as its page does; settingChange
		// is a plan's line of it without the setting's name.
		"setting":       func(name string) string { return projectfile.SettingLabels[name] },
		"settingChange": func(name, line string) string { return strings.TrimPrefix(line, name+": ") },
		// lines writes a list one item a line, for a textarea.
		"lines": func(list []string) string { return strings.Join(list, "\n") },
		// statusClass colours an outbox message's status badge.
		"statusClass": func(status string) string {
			switch status {
			case store.EmailSent:
				return "bg-emerald-100 text-emerald-800"
			case store.EmailFailed:
				return "bg-red-100 text-red-800"
			case store.EmailHeld:
				return "bg-amber-100 text-amber-900"
			case store.EmailQueued:
				return "bg-sky-100 text-sky-800"
			}
			return "bg-slate-100 text-slate-700"
		},
		// eventClass colours an event's type: removals red, additions
		// green, the rest blue.
		"eventClass": func(kind string) string {
			_, verb, _ := strings.Cut(kind, "_")
			switch verb[strings.LastIndex(verb, "_")+1:] {
			case "delete", "destroy", "revoke", "remove":
				return "bg-red-100 text-red-800"
			case "create", "add", "accept":
				return "bg-emerald-100 text-emerald-800"
			}
			return "bg-sky-100 text-sky-800"
		},
	}
}

// dict builds a map from alternating keys and values, to pass several named
// arguments to a partial.
func dict(kv ...any) (map[string]any, error) {
	if len(kv)%2 != 0 {
		return nil, errors.New("dict takes key, value pairs")
	}
	m := make(map[string]any, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		k, ok := kv[i].(string)
		if !ok {
			return nil, errors.New("dict keys must be strings")
		}
		m[k] = kv[i+1]
	}
	return m, nil
}

// Block is one block of a read-only flow.
type Block struct {
	N       int
	Type    string
	Depth   int
	Indent  template.CSS  // left margin by depth
	Summary template.HTML // one line of its key fields, placeholders marked
	Fields  template.HTML // the block's fields as JSON, placeholders marked
}

// Blocks renders each block's own fields as indented JSON.
func Blocks(f flow.Flow, declared map[string]bool) []Block {
	out := make([]Block, len(f.Blocks))
	for i, b := range f.Blocks {
		raw, _ := json.Marshal(b)
		var fields map[string]json.RawMessage
		_ = json.Unmarshal(raw, &fields)
		delete(fields, "type")
		delete(fields, "depth")
		out[i] = Block{N: i + 1, Type: b.Type, Depth: b.Depth, Indent: template.CSS(fmt.Sprintf("margin-left: %.1frem", 1.5*float64(b.Depth))),
			Summary: Highlight(flow.Summary(b), declared), Fields: Highlight(prettyJSON(fields, b.Type), declared)}
	}
	return out
}

// Request is a request as the template and route pages show it: the
// method and path, an outline for people and the JSON behind a disclosure,
// placeholders marked.
type Request struct {
	Method  string
	Path    template.HTML
	Outline []OutlineItem
	Raw     template.HTML
}

// OutlineItem is one line of a request's outline.
type OutlineItem struct {
	Label string
	Value template.HTML
}

// RequestOf shows t's request: its id, who may call it, its URL
// parameters and its body fields. With no declared map (a route), nothing
// is marked.
func RequestOf(t flow.Template, declared map[string]bool) Request {
	params := func(ps []flow.Param) string {
		out := make([]string, len(ps))
		for i, p := range ps {
			out[i] = p.ID + " (" + p.BDType + ")"
		}
		return strings.Join(out, ", ")
	}
	auth := "anyone"
	if t.AuthJWT.Active {
		auth = "a valid JWT; the caller is " + t.AuthJWT.Field + " in " + t.AuthJWT.RefCol
	}
	items := []OutlineItem{
		{"Route id", Highlight(t.RouteID, declared)},
		{"Who may call", Highlight(auth, declared)},
	}
	if len(t.Params.Pairs) > 0 {
		items = append(items, OutlineItem{"URL parameters", Highlight(params(t.Params.Pairs)+", joined by "+strconv.Quote(t.Params.Delimiter), declared)})
	}
	if len(t.Body) > 0 {
		items = append(items, OutlineItem{"Body fields", Highlight(params(t.Body), declared)})
	}
	parts := map[string]any{"route_id": t.RouteID, "route_path": t.RoutePath, "method": t.Method, "auth_jwt": t.AuthJWT, "params": t.Params, "body": t.Body}
	return Request{Method: t.Method, Path: Highlight(t.RoutePath, declared), Outline: items, Raw: Highlight(prettyJSON(parts, ""), declared)}
}

// AddSignature shows a route's check of signed webhooks in its request's
// outline, after who may call it (docs/webhooks.md).
func AddSignature(r *Request, sig *flow.AuthSignature) {
	if !sig.Checks() {
		return
	}
	line := OutlineItem{"Signed webhooks", template.HTML(template.HTMLEscapeString(
		"only deliveries signed with the secret in vault entry " + sig.VaultKey + " (" + sig.Scheme + "); others get 401"))}
	r.Outline = slices.Insert(r.Outline, min(2, len(r.Outline)), line)
}

// prettyJSON writes v indented; a block's fields in the order of its type.
// It does not escape HTML characters: the result is escaped where shown.
func prettyJSON(v any, blockType string) string {
	if m, ok := v.(map[string]json.RawMessage); ok && blockType != "" {
		var b strings.Builder
		b.WriteString("{\n")
		fields := flow.BlockFields(blockType)
		for i, f := range fields {
			var val any
			_ = json.Unmarshal(m[f.Name], &val)
			b.WriteString("  \"" + f.Name + "\": " + indentJSON(val, "  "))
			if i < len(fields)-1 {
				b.WriteString(",")
			}
			b.WriteString("\n")
		}
		b.WriteString("}")
		return b.String()
	}
	return indentJSON(v, "")
}

func indentJSON(v any, prefix string) string {
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, "  ")
	_ = enc.Encode(v)
	return strings.TrimSuffix(buf.String(), "\n")
}

var placeholderPattern = regexp.MustCompile(`\{[A-Za-z_][A-Za-z0-9_]{0,63}\}`)

// Highlight escapes s and marks each {placeholder}: declared ones as
// variables, others as undeclared. With no declared map (a route), nothing
// is marked: braces there are URL parameters.
func Highlight(s string, declared map[string]bool) template.HTML {
	if declared == nil {
		return template.HTML(template.HTMLEscapeString(s))
	}
	var b strings.Builder
	last := 0
	for _, m := range placeholderPattern.FindAllStringIndex(s, -1) {
		b.WriteString(template.HTMLEscapeString(s[last:m[0]]))
		name := s[m[0]+1 : m[1]-1]
		class := "placeholder"
		if !declared[name] {
			class = "placeholder placeholder-undeclared"
		}
		b.WriteString(`<mark class="` + class + `">` + template.HTMLEscapeString(s[m[0]:m[1]]) + `</mark>`)
		last = m[1]
	}
	b.WriteString(template.HTMLEscapeString(s[last:]))
	return template.HTML(b.String())
}

// Diff is a comparison of two versions: the request's fields and the
// blocks in the outline's words, and the documents' JSON diff.
type Diff struct {
	From, To int64
	Request  []flow.FieldChange
	Blocks   []BlockChange
	JSON     []DiffLine
	Same     bool
}

type BlockChange struct {
	flow.BlockChange
	Summary template.HTML // the block as the outline reads it, in the newer version (the older when removed)
	Before  template.HTML // a changed block as the outline read it in the older version, when that reads otherwise
	Changed []FieldChange
}

// FieldChange is a changed field of a block in the outline's words
// (the API's FieldChange keeps its values as compact JSON).
type FieldChange struct {
	Label, Old, New string
}

// N is the block's place as people count it, from 1, in the version it
// is shown from.
func (b BlockChange) N() int {
	if b.To >= 0 {
		return b.To + 1
	}
	return b.From + 1
}

// FromN is the block's place in the older version, from 1.
func (b BlockChange) FromN() int { return b.From + 1 }

type DiffLine struct {
	Text  string
	Class string // added, removed, hunk or empty
}

// orNone is a field's text, or "none" for an empty one.
func orNone(text string) string {
	if text == "" {
		return "none"
	}
	return text
}

// DiffOf compares a, version from, with b, version to; extra are
// changes of fields beside the route's parts (a template's name, its
// variables).
func DiffOf(from, to int64, a, b flow.Route, extra []flow.FieldChange) *Diff {
	d := flow.DiffRoutes(a, b)
	view := &Diff{From: from, To: to, Request: append(extra, d.Request...)}
	view.Same = len(view.Request) == 0 && len(d.Blocks) == 0
	older, newer := Blocks(a.Flow, nil), Blocks(b.Flow, nil)
	for _, bc := range d.Blocks {
		cv := BlockChange{BlockChange: bc}
		if bc.To >= 0 {
			cv.Summary = newer[bc.To].Summary
		} else {
			cv.Summary = older[bc.From].Summary
		}
		if bc.Kind == "changed" && older[bc.From].Summary != cv.Summary {
			cv.Before = older[bc.From].Summary
		}
		for _, f := range bc.Fields {
			fc := FieldChange{Label: f.Label, Old: f.Old, New: f.New}
			if f.Field != "depth" {
				fc.Old, fc.New = orNone(flow.FieldText(a.Flow.Blocks[bc.From], f.Field)), orNone(flow.FieldText(b.Flow.Blocks[bc.To], f.Field))
			}
			cv.Changed = append(cv.Changed, fc)
		}
		view.Blocks = append(view.Blocks, cv)
	}
	da, _ := json.MarshalIndent(a, "", "  ")
	db, _ := json.MarshalIndent(b, "", "  ")
	unified := udiff.Unified("version "+strconv.FormatInt(from, 10), "version "+strconv.FormatInt(to, 10), string(da)+"\n", string(db)+"\n")
	for line := range strings.SplitSeq(strings.TrimSuffix(unified, "\n"), "\n") {
		class := ""
		switch {
		case strings.HasPrefix(line, "+++"), strings.HasPrefix(line, "---"):
			class = "file"
		case strings.HasPrefix(line, "@@"):
			class = "hunk"
		case strings.HasPrefix(line, "+"):
			class = "added"
		case strings.HasPrefix(line, "-"):
			class = "removed"
		}
		if line != "" {
			view.JSON = append(view.JSON, DiffLine{Text: line, Class: class})
		}
	}
	return view
}
