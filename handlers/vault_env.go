package handlers

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/gofiber/fiber/v2"

	"stencil/authoring"
	"stencil/store"
	"stencil/vault"
)

// .env import and export (docs/vaults.md, vault.ImportEnv and ExportEnv).

type vaultImportInput struct {
	ProjectID     string `json:"project_id" form:"project_id" validate:"required"`
	Env           string `json:"env" form:"env" validate:"max=4194304"`
	DeleteMissing bool   `json:"delete_missing" form:"delete_missing"`
	DryRun        bool   `json:"dry_run" form:"dry_run"`
}

// vaultImport answers POST /vault/import: what the file would add, change,
// leave and delete, and, unless dry_run, all of it applied at once. A file
// with an invalid key or value is applied not at all.
func (h *Handlers) vaultImport(c *fiber.Ctx) error {
	var in vaultImportInput
	if err := bind(c, &in); err != nil {
		return err
	}
	p, err := h.member(c, in.ProjectID)
	if err != nil {
		return err
	}
	out, err := h.vault.ImportEnv(c.UserContext(), vault.ImportRequest{Project: in.ProjectID, Env: in.Env, DeleteMissing: in.DeleteMissing, DryRun: in.DryRun,
		Check: importable}, vaultAccess(c, in.ProjectID, ""))
	var problems vault.ImportProblems
	if errors.As(err, &problems) {
		return &ValidationError{Fields: problems}
	}
	if errors.Is(err, vault.ErrImportConflict) {
		return fiber.NewError(fiber.StatusConflict, err.Error())
	}
	if err != nil {
		return err
	}
	view := vaultImportView{Base: h.base(c, "Import · "+p.Name), Project: p, Result: out, DeleteMissing: in.DeleteMissing}
	if in.DryRun {
		return h.respond(c, Reply{Message: "Import previewed", Data: out, Fragment: "vault/import_preview", View: view})
	}
	h.flash(c, "success", fmt.Sprintf("Imported: %d added, %d changed, %d unchanged, %d deleted.", len(out.Added), len(out.Changed), len(out.Unchanged), len(out.Deleted)))
	return h.respond(c, Reply{Message: "Vault imported", Data: out, Redirect: vaultURL(in.ProjectID)})
}

// importable applies the rules of a key and a value typed into the
// vault's form to a pair of an imported file.
func importable(key, value string) string {
	if ok, msg := authoring.Rule("vault_key"); !ok(key) {
		return "a key " + msg
	}
	if ok, msg := authoring.Rule("vault_value"); !ok(value) {
		return "the value " + msg
	}
	return ""
}

type vaultImportView struct {
	Base
	Project       store.Project
	Result        vault.ImportOutcome
	DeleteMissing bool
}

// vaultImportPage renders /web/vault/import.
func (h *Handlers) vaultImportPage(c *fiber.Ctx) error {
	var q projectQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	p, err := h.member(c, q.ProjectID)
	if err != nil {
		return err
	}
	return h.respond(c, Reply{Page: "vault/import", View: vaultImportView{Base: h.base(c, "Import · "+p.Name), Project: p}})
}

// vaultExport answers GET /vault/export: the vault as a .env file, every
// value read logged; never cached.
func (h *Handlers) vaultExport(c *fiber.Ctx) error {
	var q projectQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if _, err := h.member(c, q.ProjectID); err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+url.PathEscape(q.ProjectID)+`.env"`)
	c.Set(fiber.HeaderContentType, "text/plain; charset=utf-8")
	if c.Method() == fiber.MethodHead {
		return nil // no value is returned, so none is read or logged (docs/vaults.md)
	}
	env, err := h.vault.ExportEnv(c.UserContext(), q.ProjectID, vaultAccess(c, q.ProjectID, ""))
	if err != nil {
		return err
	}
	return c.SendString(env)
}
