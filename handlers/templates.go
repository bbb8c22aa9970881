package handlers

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"

	"stencil/authoring"
	"stencil/flow"
	"stencil/store"
	"stencil/views"
)

// templateDTO is a template as the API shows it (docs/routes.md).
type templateDTO struct {
	flow.Template
	CreatedBy *int64    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Version   int64     `json:"version"`
}

func newTemplateDTO(t store.RouteTemplate) templateDTO {
	return templateDTO{Template: t.Template, CreatedBy: t.CreatedBy, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt, Version: t.Version}
}

// decodeBody parses a JSON document body into a map, less the read-only
// fields; a body that is no JSON object is 400.
func decodeBody(c *fiber.Ctx) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(c.Body()))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil || doc == nil {
		return nil, badRequest("the request body must be a JSON object")
	}
	for _, f := range authoring.ReadOnlyFields {
		delete(doc, f)
	}
	return doc, nil
}

// templateSave answers POST /route/template/create: a new template (201), or
// with id an update of that template (200); lint warnings either way.
func (h *Handlers) templateSave(c *fiber.Ctx) error {
	doc, err := decodeBody(c)
	if err != nil {
		return err
	}
	note, err := authoring.SaveNote(doc)
	if err != nil {
		return err
	}
	t, err := authoring.Template(doc)
	if err != nil {
		return err
	}
	if t.ProjectID != nil {
		if _, err := h.member(c, *t.ProjectID); err != nil {
			return err
		}
	}
	st := store.RouteTemplate{Template: t, Note: note, SavedBy: &current(c).User.ID}
	status, msg := fiber.StatusCreated, "Template created"
	if t.ID != 0 {
		if _, err := h.visibleTemplate(c, t.ID); err != nil {
			return err
		}
		status, msg = fiber.StatusOK, "Template updated"
	} else {
		st.CreatedBy = &current(c).User.ID
	}
	if err := h.store.SaveTemplate(c.UserContext(), &st); err != nil {
		return err
	}
	return h.respond(c, Reply{Status: status, Message: msg, Data: newTemplateDTO(st), Warnings: flow.Lint(st.Template)})
}

// visibleTemplate loads template id if the caller may see it: global ones
// everybody, a project's its members. Changing one needs the same plus the
// AUTHOR role, which the route checks.
func (h *Handlers) visibleTemplate(c *fiber.Ctx, id int64) (store.RouteTemplate, error) {
	t, err := h.store.Template(c.UserContext(), id)
	if errors.Is(err, store.ErrNotFound) {
		return t, fiber.NewError(fiber.StatusNotFound, "template "+strconv.FormatInt(id, 10)+" not found")
	}
	if err == nil && t.ProjectID != nil {
		_, err = h.member(c, *t.ProjectID)
	}
	return t, err
}

type templateListQuery struct {
	listQuery
	ProjectID string `query:"project_id" json:"project_id"`
}

// templateList answers GET /route/template/fetch: with project_id (members
// only) that project's templates and the global ones; without, the global
// ones and those of the caller's projects.
func (h *Handlers) templateList(c *fiber.Ctx) error {
	var q templateListQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	list, total, err := h.templatePage(c, q)
	if err != nil {
		return err
	}
	out := listBuffers.Get().(*bytes.Buffer)
	defer func() {
		if out.Cap() <= listBufferKept {
			out.Reset()
			listBuffers.Put(out)
		}
	}()
	data, err := storedTemplatesJSON(out, list)
	if err != nil {
		return err
	}
	// respond copies data into the response's own pooled buffer.
	return h.respond(c, Reply{Data: data, Amount: &total, Next: offsetNext(c, len(list), total, false)})
}

// listBuffers are the buffers template lists are written in, reused from
// one list to the next (up to listBufferKept each): a page of 50 large
// templates is a few hundred KiB, and under load a new buffer for each
// was most of the service's garbage.
var listBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const listBufferKept = 4 << 20

// storedTemplatesJSON encodes listed templates as the API shows them: each
// one's columns, then the fields of its stored document, which passes
// through as PostgreSQL returns it (no decoding, no re-encoding). The list
// is written in one pass into out, grown to its size.
func storedTemplatesJSON(out *bytes.Buffer, list []store.RouteTemplate) (rawJSON, error) {
	size := 2
	for _, t := range list {
		size += len(t.Document) + 320
	}
	out.Grow(size)
	out.WriteByte('[')
	enc := json.NewEncoder(out)
	for i, t := range list {
		if i > 0 {
			out.WriteByte(',')
		}
		doc := bytes.TrimSpace(t.Document)
		if len(doc) < 2 || doc[0] != '{' {
			return nil, errors.New("stored template document is not an object")
		}
		err := enc.Encode(struct {
			ID          int64     `json:"id"`
			Name        string    `json:"name"`
			Description string    `json:"description"`
			ProjectID   *string   `json:"project_id"`
			Method      string    `json:"method"`
			CreatedBy   *int64    `json:"created_by"`
			CreatedAt   time.Time `json:"created_at"`
			UpdatedAt   time.Time `json:"updated_at"`
			Version     int64     `json:"version"`
		}{t.ID, t.Name, t.Description, t.ProjectID, t.Method, t.CreatedBy, t.CreatedAt, t.UpdatedAt, t.Version})
		if err != nil {
			return nil, err
		}
		out.Truncate(out.Len() - 2) // the encoder's closing "}\n"
		if inner := bytes.TrimSpace(doc[1 : len(doc)-1]); len(inner) > 0 {
			out.WriteByte(',')
			out.Write(inner)
		}
		out.WriteByte('}')
	}
	out.WriteByte(']')
	return out.Bytes(), nil
}

func (h *Handlers) templatePage(c *fiber.Ctx, q templateListQuery) ([]store.RouteTemplate, int, error) {
	var projects []string
	if q.ProjectID != "" {
		if _, err := h.member(c, q.ProjectID); err != nil {
			return nil, 0, err
		}
		projects = []string{q.ProjectID}
	} else {
		var err error
		if projects, err = h.store.MemberProjects(c.UserContext(), current(c).User.ID, store.RoleViewer); err != nil {
			return nil, 0, err
		}
	}
	return h.store.ListTemplates(c.UserContext(), projects, true, q.page(50))
}

type templateOneQuery struct {
	ID        int64  `query:"id" json:"id" validate:"required_without=Name,omitempty,min=1"`
	Name      string `query:"name" json:"name"`
	ProjectID string `query:"project_id" json:"project_id"`
	Version   int64  `query:"version" json:"version" validate:"omitempty,min=1"` // a kept version instead of the live one
}

// writesTemplate reports whether the caller may change t: a global
// template by their own role, a project's by their role there
// (docs/roles.md).
func (h *Handlers) writesTemplate(c *fiber.Ctx, t store.RouteTemplate) (bool, error) {
	if !callerAtLeast(c, store.RoleAuthor) || t.ProjectID == nil {
		return callerAtLeast(c, store.RoleAuthor), nil
	}
	project, err := h.member(c, *t.ProjectID)
	return canIn(c, project, store.RoleAuthor), err
}

// templateShow answers GET /route/template/fetch/one: by id, or by name
// (with project_id for a project's template, without for the global one);
// and renders /web/routes/templates/view, read-only with the placeholders
// highlighted.
func (h *Handlers) templateShow(c *fiber.Ctx) error {
	var q templateOneQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	var t store.RouteTemplate
	var err error
	if q.ID != 0 {
		t, err = h.visibleTemplate(c, q.ID)
	} else {
		var project *string
		if q.ProjectID != "" {
			if _, err := h.member(c, q.ProjectID); err != nil {
				return err
			}
			project = &q.ProjectID
		}
		t, err = h.store.TemplateByName(c.UserContext(), q.Name, project)
	}
	if err != nil {
		return err
	}
	if q.Version > 0 && q.Version != t.Version {
		v, err := h.templateVersion(c, t, q.Version)
		if err != nil {
			return err
		}
		t, t.Version = v.Template, v.Version
	}
	declared := map[string]bool{}
	for _, v := range t.Variables {
		declared[v.Key] = true
	}
	view := templateView{Base: h.base(c, t.Name), Template: t,
		Blocks: views.Blocks(t.Flow, declared), Request: views.RequestOf(t.Template, declared)}
	if representationOf(c) != asJSON {
		if view.CanWrite, err = h.writesTemplate(c, t); err != nil {
			return err
		}
	}
	if view.CanWrite && t.ProjectID == nil && representationOf(c) != asJSON {
		if view.Projects, err = h.store.MemberProjects(c.UserContext(), current(c).User.ID, store.RoleAuthor); err != nil {
			return err
		}
	}
	return h.respond(c, Reply{Data: newTemplateDTO(t), Page: "templates/view", View: view})
}

type templateIDQuery struct {
	ID int64 `query:"id" json:"id" validate:"required,min=1"`
}

// templateDelete answers DELETE /route/template/delete; routes made from the
// template keep their copy.
func (h *Handlers) templateDelete(c *fiber.Ctx) error {
	var q templateIDQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	t, err := h.visibleTemplate(c, q.ID)
	if err != nil {
		return err
	}
	if err := h.store.DeleteTemplate(c.UserContext(), q.ID); err != nil {
		return err
	}
	h.flash(c, "success", "Template "+t.Name+" deleted.")
	return h.respond(c, Reply{Message: "Template deleted", Redirect: "/web/routes/templates"})
}

type applyInput struct {
	ID        int64              `json:"id" validate:"required,min=1"`
	ProjectID string             `json:"project_id" validate:"required"`
	Values    map[string]*string `json:"values"` // null counts as not supplied
}

// templateApply answers POST /route/template/apply: the route the template
// makes in the project with the values given (not saved).
func (h *Handlers) templateApply(c *fiber.Ctx) error {
	var in applyInput
	if err := bind(c, &in); err != nil {
		return err
	}
	if _, err := h.member(c, in.ProjectID); err != nil {
		return err
	}
	t, err := h.templateFor(c, in.ID, in.ProjectID)
	if err != nil {
		return err
	}
	route, err := authoring.ApplyTemplate(t, in.ProjectID, in.Values)
	if err != nil {
		return err
	}
	return h.respond(c, Reply{Message: "Template applied", Data: route})
}

// templateFor loads template id for use in project: a global template or
// one of that project.
func (h *Handlers) templateFor(c *fiber.Ctx, id int64, project string) (store.RouteTemplate, error) {
	t, err := h.templates.Load(c.UserContext(), h.store, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && t.ProjectID != nil && *t.ProjectID != project {
		return t, fiber.NewError(fiber.StatusNotFound, "template "+strconv.FormatInt(id, 10)+" is not available in project "+project)
	}
	return t, err
}
