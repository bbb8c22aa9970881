package handlers

import (
	"errors"
	"fmt"
	"html/template"
	"net/url"
	"time"

	"github.com/gofiber/fiber/v2"

	"stencil/store"
)

// Vault versions and the trash (SPEC §12): an update keeps the value it
// replaces; an ADMIN reads an older one (logged with its number) and
// restores it; a deleted entry can be undeleted for 7 days, or destroyed
// at once with every version.

// vaultVersionDTO is a version of an entry: never its value.
type vaultVersionDTO struct {
	Version   int64     `json:"version"`
	SetAt     time.Time `json:"set_at"`
	SetBy     *int64    `json:"set_by"`
	SetByName string    `json:"set_by_name"`
	Live      bool      `json:"live"`
}

type vaultVersionsView struct {
	Base
	Project  store.Project
	Key      string
	Query    template.URL
	Versions []vaultVersionDTO
	Keep     int
}

// vaultVersionList answers GET /vault/versions and renders
// /web/vault/versions: an entry's versions, the live one first; nothing
// is read, so nothing is logged.
func (h *Handlers) vaultVersionList(c *fiber.Ctx) error {
	var q vaultKeyQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	p, err := h.member(c, q.ProjectID)
	if err != nil {
		return err
	}
	list, err := h.store.VaultVersions(c.UserContext(), q.ProjectID, q.Key)
	if err != nil {
		return vaultNotFound(err, q.Key)
	}
	dtos := make([]vaultVersionDTO, len(list))
	for i, v := range list {
		dtos[i] = vaultVersionDTO(v)
	}
	view := vaultVersionsView{Base: h.base(c, "Versions · "+q.Key), Project: p, Key: q.Key, Versions: dtos, Keep: h.cfg.VaultVersions,
		Query: template.URL("project_id=" + url.QueryEscape(p.ID) + "&key=" + url.QueryEscape(q.Key))}
	return h.respond(c, Reply{Data: dtos, Page: "vault/versions", View: view})
}

// vaultNotFound names the key an entry was not found by.
func vaultNotFound(err error, key string) error {
	if errors.Is(err, store.ErrNotFound) {
		return fiber.NewError(fiber.StatusNotFound, "vault entry "+quote(key)+" not found")
	}
	return err
}

type vaultVersionValueView struct {
	Entry   store.VaultEntry
	Version int64
	Value   string
}

// vaultVersionShow answers GET /vault/fetch/one with version: that
// version's value, its read logged with the version's number. In the
// versions page it is the revealed cell.
func (h *Handlers) vaultVersionShow(c *fiber.Ctx, q vaultReadQuery) error {
	if _, err := h.member(c, q.ProjectID); err != nil {
		return err
	}
	ev := vaultAccess(c, q.ProjectID, q.Key)
	n := *q.Version
	e, err := h.store.ReadVaultVersion(c.UserContext(), q.ProjectID, q.Key, n, ev)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fiber.NewError(fiber.StatusNotFound, fmt.Sprintf("vault entry %s has no version %d", quote(q.Key), n))
		}
		return err
	}
	h.metrics.vaultReads.WithLabelValues(ev.Channel).Inc()
	value, err := h.keyring.Open(e.KeyID, e.ProjectID, e.Key, e.Sealed)
	if err != nil {
		return err
	}
	v := string(value)
	return h.respond(c, Reply{Data: newVaultEntryDTO(e, &v), Fragment: "vault/version_value",
		View: vaultVersionValueView{Entry: e, Version: n, Value: v}})
}

type vaultVersionInput struct {
	ProjectID string `json:"project_id" form:"project_id" validate:"required"`
	Key       string `json:"key" form:"key" validate:"required"`
	Version   int64  `json:"version" form:"version" validate:"required,min=1"`
}

// vaultRestore answers POST /vault/restore: a kept version's value becomes
// the live one, as a new version; the value it replaces is kept.
func (h *Handlers) vaultRestore(c *fiber.Ctx) error {
	var in vaultVersionInput
	if err := bind(c, &in); err != nil {
		return err
	}
	if _, err := h.member(c, in.ProjectID); err != nil {
		return err
	}
	e, err := h.store.RestoreVaultVersion(c.UserContext(), in.ProjectID, in.Key, in.Version, vaultAccess(c, in.ProjectID, in.Key), h.cfg.VaultVersions)
	if errors.Is(err, store.ErrNotFound) {
		if _, err := h.store.VaultEntryInfo(c.UserContext(), in.ProjectID, in.Key); err != nil {
			return vaultNotFound(err, in.Key)
		}
		return fiber.NewError(fiber.StatusNotFound, fmt.Sprintf("vault entry %s keeps no older version %d (the live one cannot be restored)", quote(in.Key), in.Version))
	}
	if err != nil {
		return err
	}
	h.flash(c, "success", fmt.Sprintf("Version %d of %s restored as version %d.", in.Version, in.Key, e.Version))
	return h.respond(c, Reply{Message: "Entry restored", Data: newVaultEntryDTO(e, nil),
		Redirect: "/web/vault/versions?project_id=" + url.QueryEscape(in.ProjectID) + "&key=" + url.QueryEscape(in.Key)})
}

type vaultKeyInput struct {
	ProjectID string `json:"project_id" form:"project_id" validate:"required"`
	Key       string `json:"key" form:"key" validate:"required"`
}

// vaultUndelete answers POST /vault/undelete: an entry back from the
// trash, with its versions.
func (h *Handlers) vaultUndelete(c *fiber.Ctx) error {
	var in vaultKeyInput
	if err := bind(c, &in); err != nil {
		return err
	}
	if _, err := h.member(c, in.ProjectID); err != nil {
		return err
	}
	e, err := h.store.UndeleteVaultEntry(c.UserContext(), in.ProjectID, in.Key, vaultAccess(c, in.ProjectID, in.Key))
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fiber.NewError(fiber.StatusNotFound, "vault entry "+quote(in.Key)+" is not in the trash")
		}
		return err
	}
	h.flash(c, "success", "Entry "+e.Key+" undeleted.")
	return h.respond(c, Reply{Message: "Entry undeleted", Data: newVaultEntryDTO(e, nil), Redirect: vaultURL(in.ProjectID)})
}

// vaultDestroy answers DELETE /vault/destroy: an entry, live or in the
// trash, removed now with every version it keeps.
func (h *Handlers) vaultDestroy(c *fiber.Ctx) error {
	var q vaultKeyQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if _, err := h.member(c, q.ProjectID); err != nil {
		return err
	}
	if err := h.store.DestroyVaultEntry(c.UserContext(), q.ProjectID, q.Key, vaultAccess(c, q.ProjectID, q.Key)); err != nil {
		return vaultNotFound(err, q.Key)
	}
	h.flash(c, "success", "Entry "+q.Key+" destroyed with every version.")
	return h.respond(c, Reply{Message: "Entry destroyed", Redirect: vaultURL(q.ProjectID)})
}

// deletedEntryDTO is an entry in the trash.
type deletedEntryDTO struct {
	Key           string    `json:"key"`
	Version       int64     `json:"version"`
	DeletedAt     time.Time `json:"deleted_at"`
	DeletedBy     *int64    `json:"deleted_by"`
	DeletedByName string    `json:"deleted_by_name"`
	DestroyedAt   time.Time `json:"destroyed_at"`
}

type vaultTrashView struct {
	Project store.Project
	Entries []deletedEntryDTO
}

// vaultTrash answers GET /vault/trash and renders the vault page's
// Deleted entries: what can still be undeleted, and when it goes.
func (h *Handlers) vaultTrash(c *fiber.Ctx) error {
	var q projectQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	p, err := h.member(c, q.ProjectID)
	if err != nil {
		return err
	}
	list, err := h.store.VaultTrash(c.UserContext(), p.ID)
	if err != nil {
		return err
	}
	dtos := make([]deletedEntryDTO, len(list))
	for i, d := range list {
		dtos[i] = deletedEntryDTO{Key: d.Key, Version: d.Version, DeletedAt: d.DeletedAt, DeletedBy: d.DeletedBy, DeletedByName: d.DeletedByName,
			DestroyedAt: d.DeletedAt.AddDate(0, 0, store.VaultTrashDays)}
	}
	return h.respond(c, Reply{Data: dtos, Fragment: "vault/trash", View: vaultTrashView{Project: p, Entries: dtos}})
}
