package handlers

import (
	"encoding/json"
	"html/template"
	"slices"

	"github.com/gofiber/fiber/v2"

	"stencil/authoring"
	"stencil/flow"
	"stencil/store"
	"stencil/views"
	"stencil/webhooks"
)

type templatesView struct {
	Base
	Templates []store.RouteTemplate
	Pager     Pager
	ProjectID string
	Projects  []string
	CanWrite  bool     // the caller writes global templates (AUTHOR+)
	Writable  []string // the projects whose templates the caller writes
}

// Writes reports whether the caller may edit or delete t: a global one by
// their own role, a project's by their role there (docs/roles.md).
func (v templatesView) Writes(t store.RouteTemplate) bool {
	if t.ProjectID == nil {
		return v.CanWrite
	}
	return slices.Contains(v.Writable, *t.ProjectID)
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
	projects, err := h.store.MemberProjects(c.UserContext(), me.ID, store.RoleViewer)
	if err != nil {
		return err
	}
	view := templatesView{Base: h.base(c, "Route templates"), Templates: list, Pager: newPager(c, page, len(list), total),
		ProjectID: project, Projects: projects, CanWrite: callerAtLeast(c, store.RoleAuthor)}
	if view.CanWrite {
		if view.Writable, err = h.store.MemberProjects(c.UserContext(), me.ID, store.RoleAuthor); err != nil {
			return err
		}
	}
	return h.respond(c, Reply{Page: "templates/index", View: view})
}

type templateView struct {
	Base
	Template store.RouteTemplate
	Blocks   []views.Block
	Request  views.Request
	CanWrite bool
	Projects []string // where the author may use a global template
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
	// Routes are the project's route ids, which an ENQUEUE names.
	Routes []string `json:"routes,omitempty"`
}

func newEditorData(mode string, doc any) editorData {
	d := editorData{Mode: mode, Doc: doc, BlockTypes: flow.BlockTypes, Blocks: map[string][]flow.FieldInfo{},
		Enums: map[string][]string{"method": flow.Methods, "bdtype": flow.BDTypes, "condition_type": flow.ConditionTypes,
			"operation_type": flow.OperationTypes, "next": flow.Nexts, "signature_scheme": webhooks.Schemes}, Words: flow.Words, About: flow.Blocks}
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
		project, err := h.member(c, data.ProjectID)
		if err != nil {
			return err
		}
		data.CanVault = canIn(c, project, store.RoleAdmin)
		if data.Collections, err = h.store.CollectionIDs(c.UserContext(), data.ProjectID); err != nil {
			return err
		}
		if data.Routes, err = h.store.RouteIDs(c.UserContext(), data.ProjectID); err != nil {
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
	projects, err := h.store.MemberProjects(c.UserContext(), me.ID, store.RoleAuthor)
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
