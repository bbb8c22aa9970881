package handlers

import (
	"encoding/json"
	"fmt"
	"html/template"
	"regexp"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"stencil/authoring"
	"stencil/flow"
	"stencil/store"
)

type templatesView struct {
	Base
	Templates []store.RouteTemplate
	Pager     Pager
	ProjectID string
	Projects  []string
	CanWrite  bool
}

// templatesIndex renders /web/routes/templates: the global templates, and
// with ?id= a project's as well (members only).
func (h *Handlers) templatesIndex(c *fiber.Ctx) error {
	var q listQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	me := current(c).User
	project := c.Query("id")
	var scope []string
	if project != "" {
		if _, err := h.member(c, project); err != nil {
			return err
		}
		scope = []string{project}
	}
	page := q.page(20)
	list, total, err := h.store.ListTemplates(c.UserContext(), scope, true, page)
	if err != nil {
		return err
	}
	projects, err := h.store.MemberProjects(c.UserContext(), me.ID)
	if err != nil {
		return err
	}
	view := templatesView{Base: h.base(c, "Route templates"), Templates: list, Pager: newPager(c, page, len(list), total),
		ProjectID: project, Projects: projects, CanWrite: callerAtLeast(c, store.RoleAuthor)}
	return h.respond(c, Reply{Page: "templates/index", View: view})
}

type templateView struct {
	Base
	Template store.RouteTemplate
	Blocks   []blockView
	Request  requestView
	CanWrite bool
	Projects []string // where the author may use a global template
}

// blockView is one block of a read-only flow.
type blockView struct {
	N       int
	Type    string
	Depth   int
	Indent  template.CSS  // left margin by depth
	Summary template.HTML // one line of its key fields, placeholders marked
	Fields  template.HTML // the block's fields as JSON, placeholders marked
}

// blockViews renders each block's own fields as indented JSON.
func blockViews(f flow.Flow, declared map[string]bool) []blockView {
	out := make([]blockView, len(f.Blocks))
	for i, b := range f.Blocks {
		raw, _ := json.Marshal(b)
		var fields map[string]json.RawMessage
		_ = json.Unmarshal(raw, &fields)
		delete(fields, "type")
		delete(fields, "depth")
		out[i] = blockView{N: i + 1, Type: b.Type, Depth: b.Depth, Indent: template.CSS(fmt.Sprintf("margin-left: %.1frem", 1.5*float64(b.Depth))),
			Summary: highlight(flow.Summary(b), declared), Fields: highlight(prettyJSON(fields, b.Type), declared)}
	}
	return out
}

// requestView is a request as the template and route pages show it: the
// method and path, an outline for people and the JSON behind a disclosure,
// placeholders marked.
type requestView struct {
	Method  string
	Path    template.HTML
	Outline []outlineItem
	Raw     template.HTML
}

// outlineItem is one line of a request's outline.
type outlineItem struct {
	Label string
	Value template.HTML
}

// newRequestView shows t's request: its id, who may call it, its URL
// parameters and its body fields. With no declared map (a route), nothing
// is marked.
func newRequestView(t flow.Template, declared map[string]bool) requestView {
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
	items := []outlineItem{
		{"Route id", highlight(t.RouteID, declared)},
		{"Who may call", highlight(auth, declared)},
	}
	if len(t.Params.Pairs) > 0 {
		items = append(items, outlineItem{"URL parameters", highlight(params(t.Params.Pairs)+", joined by "+strconv.Quote(t.Params.Delimiter), declared)})
	}
	if len(t.Body) > 0 {
		items = append(items, outlineItem{"Body fields", highlight(params(t.Body), declared)})
	}
	parts := map[string]any{"route_id": t.RouteID, "route_path": t.RoutePath, "method": t.Method, "auth_jwt": t.AuthJWT, "params": t.Params, "body": t.Body}
	return requestView{Method: t.Method, Path: highlight(t.RoutePath, declared), Outline: items, Raw: highlight(prettyJSON(parts, ""), declared)}
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

// highlight escapes s and marks each {placeholder}: declared ones as
// variables, others as undeclared. With no declared map (a route), nothing
// is marked: braces there are URL parameters.
func highlight(s string, declared map[string]bool) template.HTML {
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

// editorData is what the editor script starts from, embedded in the page as
// JSON.
type editorData struct {
	Mode       string                      `json:"mode"` // template or route
	Doc        any                         `json:"doc"`
	Projects   []string                    `json:"projects,omitempty"`
	ProjectID  string                      `json:"project_id,omitempty"`
	Template   *templateDTO                `json:"template,omitempty"` // route mode: start from it
	RouteID    string                      `json:"route_id,omitempty"` // route mode: the route being edited
	Enums      map[string][]string         `json:"enums"`
	BlockTypes []string                    `json:"block_types"`
	Blocks     map[string][]flow.FieldInfo `json:"blocks"`
	Words      map[string]string           `json:"words"`     // enum values as people read them
	About      map[string]flow.BlockInfo   `json:"about"`     // the palette's glyph and line per block type
	CanVault   bool                        `json:"can_vault"` // the reader may save a route with a VAULT block
	// Suggestions for the route's fields: the project's collections and,
	// for ADMIN and ROOT, its vault keys (names only).
	Collections []string `json:"collections,omitempty"`
	VaultKeys   []string `json:"vault_keys,omitempty"`
}

func newEditorData(mode string, doc any) editorData {
	d := editorData{Mode: mode, Doc: doc, BlockTypes: flow.BlockTypes, Blocks: map[string][]flow.FieldInfo{},
		Enums: map[string][]string{"method": flow.Methods, "bdtype": flow.BDTypes, "condition_type": flow.ConditionTypes,
			"operation_type": flow.OperationTypes, "next": flow.Nexts}, Words: flow.Words, About: flow.Blocks}
	for _, t := range flow.BlockTypes {
		d.Blocks[t] = flow.BlockFields(t)
	}
	return d
}

type editorView struct {
	Base
	Heading string
	Data    template.JS // editorData as JSON; json.Marshal escapes <, > and &
	Back    string
}

func (h *Handlers) editorPage(c *fiber.Ctx, heading, back string, data editorData) error {
	data.CanVault = callerAtLeast(c, store.RoleAdmin)
	if data.ProjectID != "" {
		var err error
		if data.Collections, err = h.store.CollectionIDs(c.UserContext(), data.ProjectID); err != nil {
			return err
		}
		if data.CanVault {
			if data.VaultKeys, err = h.store.VaultKeys(c.UserContext(), data.ProjectID, 500); err != nil {
				return err
			}
		}
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return err
	}
	view := editorView{Base: h.base(c, heading), Heading: heading, Data: template.JS(raw), Back: back}
	view.Base.Scripted = true
	return h.respond(c, Reply{Page: "templates/editor", View: view})
}

// templateEditor renders /web/routes/templates/create and /edit?id=.
func (h *Handlers) templateEditor(c *fiber.Ctx) error {
	me := current(c).User
	projects, err := h.store.MemberProjects(c.UserContext(), me.ID)
	if err != nil {
		return err
	}
	doc := flow.Template{Method: "GET", RoutePath: "/", Params: flow.Params{Delimiter: "&"}}
	heading := "New route template"
	if c.Path() == "/web/routes/templates/edit" {
		var q templateIDQuery
		if err := bindQuery(c, &q); err != nil {
			return err
		}
		t, err := h.visibleTemplate(c, q.ID)
		if err != nil {
			return err
		}
		doc, heading = t.Template, "Edit "+t.Name
	} else if id := c.Query("project_id"); id != "" {
		doc.ProjectID = &id
	}
	doc.Normalize()
	data := newEditorData("template", doc)
	data.Projects = projects
	return h.editorPage(c, heading, "/web/routes/templates", data)
}

// templateLint answers the editor as the author types: the lint warnings of
// the document and its problems, by path.
func (h *Handlers) templateLint(c *fiber.Ctx) error {
	doc, err := decodeBody(c)
	if err != nil {
		return err
	}
	p, warnings := authoring.CheckTemplate(doc)
	return h.respond(c, Reply{Message: "Checked", Data: fiber.Map{"fields": p, "checks": warnings}, Warnings: warnings})
}
