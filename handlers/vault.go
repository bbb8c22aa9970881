package handlers

import (
	"errors"
	"time"

	"github.com/gofiber/fiber/v2"

	"stencil/store"
)

// vaultEntryDTO is an entry as the API shows it; Value is present only in
// answers that read it (and logged the read).
type vaultEntryDTO struct {
	ProjectID string    `json:"project_id"`
	Key       string    `json:"key"`
	Value     *string   `json:"value,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	CreatedBy *int64    `json:"created_by"`
	UpdatedBy *int64    `json:"updated_by"`
	Version   int64     `json:"version"`
}

func newVaultEntryDTO(e store.VaultEntry, value *string) vaultEntryDTO {
	return vaultEntryDTO{ProjectID: e.ProjectID, Key: e.Key, Value: value, CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt,
		CreatedBy: e.CreatedBy, UpdatedBy: e.UpdatedBy, Version: e.Version}
}

type vaultInput struct {
	ProjectID string `json:"project_id" form:"project_id" validate:"required"`
	Key       string `json:"key" form:"key" validate:"required,vault_key"`
	Value     string `json:"value" form:"value" validate:"required,vault_value"`
}

type vaultKeyQuery struct {
	ProjectID string `query:"project_id" json:"project_id" validate:"required"`
	Key       string `query:"key" json:"key" validate:"required"`
}

type vaultReadQuery struct {
	vaultKeyQuery
	Version *int64 `query:"version" json:"version" validate:"omitempty,min=1"` // a kept version, its read logged with its number
}

type vaultListQuery struct {
	listQuery
	ProjectID string `query:"project_id" json:"project_id" validate:"required"`
}

// vaultAccess describes the caller for the access log.
func vaultAccess(c *fiber.Ctx, project, key string) store.VaultAccess {
	p := current(c)
	channel := "api"
	if p.Via == "session" {
		channel = "web"
	}
	return store.VaultAccess{UserID: &p.User.ID, Username: p.User.Username, TokenID: p.TokenID, ProjectID: project, Key: key, Channel: channel}
}

// vaultCreate answers POST /vault/create.
func (h *Handlers) vaultCreate(c *fiber.Ctx) error {
	var in vaultInput
	if err := bind(c, &in); err != nil {
		return h.vaultFormError(c, err, in.ProjectID)
	}
	p, err := h.member(c, in.ProjectID)
	if err != nil {
		return err
	}
	e, err := h.vault.Create(c.UserContext(), in.ProjectID, in.Key, in.Value, vaultAccess(c, in.ProjectID, in.Key))
	if err != nil {
		return h.vaultFormError(c, err, in.ProjectID)
	}
	// In the page: a fresh form, the table refreshed where the user is.
	form := vaultView{Base: h.base(c, ""), Project: p}
	h.flash(c, "success", "Entry "+e.Key+" created.")
	return h.respond(c, Reply{Status: fiber.StatusCreated, Message: "Entry created", Data: newVaultEntryDTO(e, nil),
		Fragment: "vault/create", View: form, Event: `{"` + vaultChanged + `":{"key":"` + e.Key + `"}}`, Redirect: vaultURL(in.ProjectID)})
}

// vaultChanged is the event after which the entries table reloads itself.
const vaultChanged = "vault-changed"

// vaultFormError answers a failed create: the browser gets the create form
// back with its errors and the key it typed, never the value.
func (h *Handlers) vaultFormError(c *fiber.Ctx, err error, project string) error {
	if project == "" {
		return err // no page to show the form on
	}
	return h.formError(c, err, func() (Reply, *Form, error) {
		view, err := h.vaultPage(c, project, store.Page{Limit: 10})
		return Reply{Page: "vault/index", Fragment: "vault/create", View: &view}, &view.Form, err
	}, "value")
}

// vaultList answers GET /vault/fetch: entries with their values, each read
// logged.
func (h *Handlers) vaultList(c *fiber.Ctx) error {
	var q vaultListQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if _, err := h.member(c, q.ProjectID); err != nil {
		return err
	}
	ev := vaultAccess(c, q.ProjectID, "")
	page := q.page(50)
	if c.Method() == fiber.MethodHead {
		_, _, err := h.store.ListVaultEntries(c.UserContext(), q.ProjectID, page, nil)
		return err // no values returned: none read, none logged
	}
	entries, values, total, err := h.vault.List(c.UserContext(), q.ProjectID, page, ev)
	if err != nil {
		return err
	}
	dtos := make([]vaultEntryDTO, len(entries))
	for i, e := range entries {
		dtos[i] = newVaultEntryDTO(e, &values[i])
	}
	return h.respond(c, Reply{Data: dtos, Amount: &total})
}

type vaultEntryView struct {
	Base
	Entry store.VaultEntry
	Value string
}

// vaultShow answers GET /vault/fetch/one: the value, its read logged. The
// entries table reveals a value through it (the fragment holds the value and
// a way to hide it again).
func (h *Handlers) vaultShow(c *fiber.Ctx) error {
	if p := current(c); p != nil && p.checkedByRead != nil {
		// One statement checks the caller, reads and logs (docs/vaults.md);
		// the query is a project_id and a key (checksItsCaller).
		args := c.Context().QueryArgs()
		project, key := string(args.Peek("project_id")), string(args.Peek("key"))
		by := vaultAccess(c, project, key)
		need, _ := c.Locals(needKey{}).(string)
		by.Reader = &store.ReaderCheck{CredentialVersion: *p.checkedByRead, Need: need}
		e, v, err := h.vault.Read(c.UserContext(), project, key, by)
		if !errors.Is(err, store.ErrNotFound) {
			if err != nil {
				return err
			}
			return h.respond(c, Reply{Data: newVaultEntryDTO(e, &v)})
		}
		// Refused or not found: the usual checks say which.
		if err := h.checkCaller(c); err != nil {
			return err
		}
	}
	var q vaultReadQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if q.Version != nil && c.Method() != fiber.MethodHead {
		return h.vaultVersionShow(c, q)
	}
	if _, err := h.member(c, q.ProjectID); err != nil {
		return err
	}
	if c.Method() == fiber.MethodHead {
		// No value is returned, so nothing is read or logged (docs/vaults.md).
		_, err := h.store.VaultEntryInfo(c.UserContext(), q.ProjectID, q.Key)
		return err
	}
	e, v, err := h.vault.Read(c.UserContext(), q.ProjectID, q.Key, vaultAccess(c, q.ProjectID, q.Key))
	if err != nil {
		return err
	}
	view := vaultEntryView{Base: h.base(c, e.Key), Entry: e, Value: v}
	return h.respond(c, Reply{Data: newVaultEntryDTO(e, &v), Page: "vault/entry", Fragment: "vault/revealed", View: view})
}

// vaultUpdate answers PATCH /vault/update; the key never changes.
func (h *Handlers) vaultUpdate(c *fiber.Ctx) error {
	var in vaultInput
	if err := bind(c, &in); err != nil {
		return h.vaultEditError(c, err, in)
	}
	if _, err := h.member(c, in.ProjectID); err != nil {
		return err
	}
	e, err := h.vault.Update(c.UserContext(), in.ProjectID, in.Key, in.Value, vaultAccess(c, in.ProjectID, in.Key))
	if err != nil {
		return err
	}
	h.flash(c, "success", "Value of "+e.Key+" updated.")
	// The answer is the row, in place: an update changes neither the keys
	// nor their order, and reloading the table after it would wipe a value
	// revealed meanwhile.
	return h.respond(c, Reply{Message: "Entry updated", Data: newVaultEntryDTO(e, nil),
		Fragment: "vault/row", View: newVaultRow(e), Redirect: vaultURL(in.ProjectID)})
}

// vaultDelete answers DELETE /vault/delete: the entry and every version it
// kept are gone at once, for good (docs/vaults.md).
func (h *Handlers) vaultDelete(c *fiber.Ctx) error {
	var q vaultKeyQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if _, err := h.member(c, q.ProjectID); err != nil {
		return err
	}
	if err := h.store.DeleteVaultEntry(c.UserContext(), q.ProjectID, q.Key, vaultAccess(c, q.ProjectID, q.Key)); err != nil {
		return err
	}
	h.flash(c, "success", "Entry "+q.Key+" deleted with every version.")
	return h.respond(c, Reply{Message: "Entry deleted", Fragment: "partials/gone", Event: vaultChanged, Redirect: vaultURL(q.ProjectID)})
}

func vaultURL(project string) string {
	return "/web/vault?project_id=" + project
}
