package handlers

import (
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/gofiber/fiber/v2"

	"stencil/authoring"
	"stencil/dotenv"
	"stencil/store"
)

// .env import and export (docs/vaults.md): a file pasted or uploaded is parsed
// as common .env parsers read it (dotenv.Parse: comments, export, single
// quotes taken literally, double quotes with JSON escapes; no $NAME
// expansion; lines of any length), its keys compared with the vault's, and
// applied in one transaction; the vault is exported as such a file, which
// reads back the same values. Values are never shown.

// maxImportKeys bounds the keys of one import.
const maxImportKeys = 5000

type vaultImportInput struct {
	ProjectID     string `json:"project_id" form:"project_id" validate:"required"`
	Env           string `json:"env" form:"env" validate:"max=4194304"`
	DeleteMissing bool   `json:"delete_missing" form:"delete_missing"`
	DryRun        bool   `json:"dry_run" form:"dry_run"`
}

// vaultImportDTO is an import's outcome: keys only.
type vaultImportDTO struct {
	Added     []string          `json:"added"`
	Changed   []string          `json:"changed"`
	Unchanged []string          `json:"unchanged"`
	Deleted   []string          `json:"deleted"`
	Invalid   []invalidEnvKey   `json:"invalid"`
	Applied   bool              `json:"applied"`
	reasons   map[string]string // Invalid by key
}

type invalidEnvKey struct {
	Key    string `json:"key"`
	Reason string `json:"reason"`
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
	if strings.TrimSpace(in.Env) == "" {
		return &ValidationError{Fields: map[string]string{"env": "is empty: paste a .env file or choose one"}}
	}
	parsed, err := dotenv.Parse(in.Env)
	if err != nil {
		return &ValidationError{Fields: map[string]string{"env": "cannot be read as a .env file: " + err.Error()}}
	}
	if len(parsed) > maxImportKeys {
		return &ValidationError{Fields: map[string]string{"env": fmt.Sprintf("has %d keys: at most %d can be imported at once", len(parsed), maxImportKeys)}}
	}
	out := vaultImportDTO{Added: []string{}, Changed: []string{}, Unchanged: []string{}, Deleted: []string{}, Invalid: []invalidEnvKey{}, reasons: map[string]string{}}
	ev := vaultAccess(c, in.ProjectID, "")
	_, err = h.vault.Import(c.UserContext(), in.ProjectID, ev, in.DryRun, func(live map[string]store.VaultEntry) (store.VaultImport, error) {
		return h.importEnv(in, parsed, live, &out)
	})
	if errors.Is(err, errImportInvalid) {
		fields := map[string]string{}
		for _, iv := range out.Invalid {
			fields["env."+iv.Key] = iv.Reason
		}
		return &ValidationError{Fields: fields}
	}
	if errors.Is(err, store.ErrConflict) {
		return fiber.NewError(fiber.StatusConflict, "the vault changed while the file was imported (a key was created meanwhile); nothing was written: preview it again")
	}
	if err != nil {
		return err
	}
	out.Applied = !in.DryRun
	view := vaultImportView{Base: h.base(c, "Import · "+p.Name), Project: p, Result: out, DeleteMissing: in.DeleteMissing}
	if in.DryRun {
		return h.respond(c, Reply{Message: "Import previewed", Data: out, Fragment: "vault/import_preview", View: view})
	}
	h.flash(c, "success", fmt.Sprintf("Imported: %d added, %d changed, %d unchanged, %d deleted.", len(out.Added), len(out.Changed), len(out.Unchanged), len(out.Deleted)))
	return h.respond(c, Reply{Message: "Vault imported", Data: out, Redirect: vaultURL(in.ProjectID)})
}

// importEnv compares the parsed .env file with the live entries of the
// vault: out says what importing it adds, changes, leaves and deletes, and
// which keys are invalid; the import it returns is what to write (nothing
// on a dry run).
func (h *Handlers) importEnv(in vaultImportInput, parsed map[string]string, live map[string]store.VaultEntry, out *vaultImportDTO) (store.VaultImport, error) {
	keys := slices.Sorted(maps.Keys(parsed))
	var im store.VaultImport
	for _, k := range keys {
		value := parsed[k]
		// The rules of a key and a value typed into the vault's form.
		if ok, msg := authoring.Rule("vault_key"); !ok(k) {
			out.invalid(k, "a key "+msg)
			continue
		}
		if ok, msg := authoring.Rule("vault_value"); !ok(value) {
			out.invalid(k, "the value "+msg)
			continue
		}
		e, ok := live[k]
		if !ok {
			out.Added = append(out.Added, k)
			if !in.DryRun {
				sealed, err := h.vault.Seal(in.ProjectID, k, value)
				if err != nil {
					return im, err
				}
				im.Add = append(im.Add, sealed)
			}
			continue
		}
		old, err := h.vault.Open(e)
		if err != nil {
			return im, err
		}
		im.Read = append(im.Read, k)
		if old == value {
			out.Unchanged = append(out.Unchanged, k)
			continue
		}
		out.Changed = append(out.Changed, k)
		if !in.DryRun {
			sealed, err := h.vault.Seal(in.ProjectID, k, value)
			if err != nil {
				return im, err
			}
			im.Change = append(im.Change, sealed)
		}
	}
	if in.DeleteMissing {
		for k := range live {
			if _, ok := parsed[k]; !ok {
				out.Deleted = append(out.Deleted, k)
			}
		}
		slices.Sort(out.Deleted)
		im.Delete = out.Deleted
	}
	if len(out.Invalid) > 0 && !in.DryRun {
		return im, errImportInvalid
	}
	return im, nil
}

// invalid notes a key that cannot be imported, and why.
func (o *vaultImportDTO) invalid(key, reason string) {
	o.Invalid = append(o.Invalid, invalidEnvKey{Key: key, Reason: reason})
	o.reasons[key] = reason
}

var errImportInvalid = errors.New("the file has invalid keys")

type vaultImportView struct {
	Base
	Project       store.Project
	Result        vaultImportDTO
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
	values, err := h.vault.Export(c.UserContext(), q.ProjectID, vaultAccess(c, q.ProjectID, ""))
	if err != nil {
		return err
	}
	return c.SendString(dotenv.Format(values))
}
