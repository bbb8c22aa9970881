package handlers

import (
	"errors"
	"fmt"
	"html/template"
	"net/url"
	"time"

	"github.com/gofiber/fiber/v2"

	"stencil/authoring"
	"stencil/store"
)

// Vault versions (docs/vaults.md): an update keeps the value it replaces; an
// ADMIN reads an older one (logged with its number) and restores it.

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
	view := vaultVersionsView{Base: h.base(c, "Versions · "+q.Key), Project: p, Key: q.Key, Versions: dtos, Keep: h.vault.Versions(),
		Query: template.URL("project_id=" + url.QueryEscape(p.ID) + "&key=" + url.QueryEscape(q.Key))}
	return h.respond(c, Reply{Data: dtos, Page: "vault/versions", View: view})
}

// vaultNotFound names the key an entry was not found by.
func vaultNotFound(err error, key string) error {
	if errors.Is(err, store.ErrNotFound) {
		return fiber.NewError(fiber.StatusNotFound, "vault entry "+authoring.Quote(key)+" not found")
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
	n := *q.Version
	e, v, err := h.vault.ReadVersion(c.UserContext(), q.ProjectID, q.Key, n, vaultAccess(c, q.ProjectID, q.Key))
	if errors.Is(err, store.ErrNotFound) {
		return fiber.NewError(fiber.StatusNotFound, fmt.Sprintf("vault entry %s has no version %d", authoring.Quote(q.Key), n))
	}
	if err != nil {
		return err
	}
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
	e, err := h.vault.Restore(c.UserContext(), in.ProjectID, in.Key, in.Version, vaultAccess(c, in.ProjectID, in.Key))
	if errors.Is(err, store.ErrNotFound) {
		if _, err := h.store.VaultEntryInfo(c.UserContext(), in.ProjectID, in.Key); err != nil {
			return vaultNotFound(err, in.Key)
		}
		return fiber.NewError(fiber.StatusNotFound, fmt.Sprintf("vault entry %s keeps no older version %d (the live one cannot be restored)", authoring.Quote(in.Key), in.Version))
	}
	if err != nil {
		return err
	}
	h.flash(c, "success", fmt.Sprintf("Version %d of %s restored as version %d.", in.Version, in.Key, e.Version))
	return h.respond(c, Reply{Message: "Entry restored", Data: newVaultEntryDTO(e, nil),
		Redirect: "/web/vault/versions?project_id=" + url.QueryEscape(in.ProjectID) + "&key=" + url.QueryEscape(in.Key)})
}
