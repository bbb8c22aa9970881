package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"stencil/flow"
	"stencil/store"
	"stencil/views"
)

// Template versions (docs/routes.md): every save of a template keeps it whole;
// whoever reads the template reads its versions; AUTHOR and up restore one.

type templateVersionsQuery struct {
	listQuery
	ID   int64 `query:"id" json:"id" validate:"required,min=1"`
	From int64 `query:"from" json:"from" validate:"min=0"`
	To   int64 `query:"to" json:"to" validate:"min=0"`
}

func newTemplateVersionDTO(v store.TemplateVersion) versionDTO {
	return versionDTO{Version: v.Version, Note: v.Note, CreatedBy: v.CreatedBy, CreatedByName: v.CreatedByName,
		CreatedAt: v.CreatedAt, Blocks: len(v.Template.Flow.Blocks)}
}

// templateVersionList answers GET /route/template/versions and renders
// /web/routes/templates/history: a template's versions, newest first; the
// page also compares two of them.
func (h *Handlers) templateVersionList(c *fiber.Ctx) error {
	var q templateVersionsQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	t, err := h.visibleTemplate(c, q.ID)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	page := q.page(defaultLimit(c, 25))
	list, total, err := h.store.TemplateVersions(ctx, t, page)
	if err != nil {
		return err
	}
	dtos := make([]versionDTO, len(list))
	for i, v := range list {
		dtos[i] = newTemplateVersionDTO(v)
	}
	if representationOf(c) == asJSON {
		return h.respond(c, Reply{Data: dtos, Amount: &total})
	}
	id := strconv.FormatInt(t.ID, 10)
	canWrite, err := h.writesTemplate(c, t)
	if err != nil {
		return err
	}
	view := newHistoryView(c, h.base(c, "History · "+t.Name), page, dtos, total, t.Version, q.From, q.To, canWrite)
	view.Back, view.BackText, view.Subject = "/web/routes/templates/view?id="+id, "Template "+t.Name, "template "+t.Name
	view.Self, view.Keys = "/web/routes/templates/history?id="+id, []hiddenField{{"id", id}}
	view.RestoreURL, view.RestoreVals = "/route/template/restore", `"id": `+id
	if view.From > 0 && view.From != view.To {
		var docs [2]store.TemplateVersion
		for i, n := range []int64{view.From, view.To} {
			if docs[i], err = h.store.TemplateVersionOf(ctx, t, n); err != nil {
				return versionMissing(err, i, n)
			}
		}
		a, b := docs[0].Template, docs[1].Template
		var extra []flow.FieldChange
		for _, f := range []struct {
			name, label string
			old, new    any
		}{{"name", "Name", a.Name, b.Name}, {"description", "Description", a.Description, b.Description}, {"variables", "Variables", a.Variables, b.Variables}} {
			o, _ := json.Marshal(f.old)
			n, _ := json.Marshal(f.new)
			if string(o) != string(n) {
				extra = append(extra, flow.FieldChange{Field: f.name, Label: f.label, Old: string(o), New: string(n)})
			}
		}
		view.Diff = views.DiffOf(view.From, view.To, templateAsRoute(a.Template), templateAsRoute(b.Template), extra)
	}
	return h.respond(c, Reply{Data: dtos, Amount: &total, Page: "routes/history", View: view})
}

// templateAsRoute is the route part of a template, for comparing two.
func templateAsRoute(t flow.Template) flow.Route {
	return flow.Route{RouteID: t.RouteID, RoutePath: t.RoutePath, Method: t.Method, AuthJWT: t.AuthJWT, Params: t.Params, Body: t.Body, Flow: t.Flow}
}

// templateVersion reads version n of template t; one it does not have is
// 404.
func (h *Handlers) templateVersion(c *fiber.Ctx, t store.RouteTemplate, n int64) (store.TemplateVersion, error) {
	v, err := h.store.TemplateVersionOf(c.UserContext(), t, n)
	if errors.Is(err, store.ErrNotFound) {
		return v, fiber.NewError(fiber.StatusNotFound, fmt.Sprintf("template %d has no version %d", t.ID, n))
	}
	return v, err
}

type templateRestoreInput struct {
	ID      int64  `json:"id" form:"id" validate:"required,min=1"`
	Version int64  `json:"version" form:"version" validate:"required,min=1"`
	Note    string `json:"note" form:"note" validate:"max=500,plain_text"`
}

// templateRestore answers POST /route/template/restore: a new version
// equal to an older one (its name, description, method and document; the
// template stays where it is, global or a project's).
func (h *Handlers) templateRestore(c *fiber.Ctx) error {
	var in templateRestoreInput
	if err := bind(c, &in); err != nil {
		return err
	}
	t, err := h.visibleTemplate(c, in.ID)
	if err != nil {
		return err
	}
	v, err := h.templateVersion(c, t, in.Version)
	if err != nil {
		return err
	}
	note := in.Note
	if note == "" {
		note = fmt.Sprintf("Restored version %d", in.Version)
	}
	st := store.RouteTemplate{Template: v.Template.Template, Note: note, SavedBy: &current(c).User.ID, RestoredFrom: in.Version}
	st.ProjectID = t.ProjectID
	if err := h.store.SaveTemplate(c.UserContext(), &st); err != nil {
		return err
	}
	h.flash(c, "success", fmt.Sprintf("Version %d restored as version %d.", in.Version, st.Version))
	return h.respond(c, Reply{Message: "Template restored", Data: newTemplateDTO(st), Warnings: flow.Lint(st.Template),
		Redirect: "/web/routes/templates/history?id=" + strconv.FormatInt(st.ID, 10)})
}
