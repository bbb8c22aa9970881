package handlers

import (
	"html/template"
	"net/url"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"stencil/store"
	"stencil/views"
)

type vaultsView struct {
	Base
	Projects []store.VaultProject
	Pager    Pager
}

// vaultProjects renders /web/vaults: the projects whose vault the caller
// manages, with their sizes.
func (h *Handlers) vaultProjects(c *fiber.Ctx) error {
	var q listQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	page := q.page(defaultLimit(c, 20))
	projects, total, err := h.store.ListVaultProjects(c.UserContext(), current(c).User.ID, page)
	if err != nil {
		return err
	}
	view := vaultsView{Base: h.base(c, "Vaults"), Projects: projects, Pager: newPager(c, page, len(projects), total)}
	return h.respond(c, Reply{Data: projects, Amount: &total, Page: "vault/projects", View: view})
}

type vaultView struct {
	Base
	Project store.Project
	Rows    []vaultRowView // entries without values: the page never holds one
	Pager   Pager
	Form    Form   // the create form
	Self    string // the table's own URL (filter and page), to reload it in place
}

// TableKey names everything the entries table shows (vault/table): its
// URL, its pager, and its rows, each of which its key, time and project
// name whole (renderRows).
func (v vaultView) TableKey() string {
	p := v.Pager
	k := []string{"vault/table", v.Self, v.Project.ID, strconv.Itoa(p.From), strconv.Itoa(p.To), strconv.Itoa(p.Total),
		strconv.FormatBool(p.AtLeast), p.Prev, p.Next, p.Filter}
	for _, r := range v.Rows {
		k = append(k, r.Entry.Key, r.Updated)
	}
	return strings.Join(k, "\x00")
}

// HeaderKey names everything the page's header shows (vault/header): the
// project and the filter.
func (v vaultView) HeaderKey() string {
	return strings.Join([]string{"vault/header", v.Project.ID, v.Project.Name, v.Pager.Filter}, "\x00")
}

// CreateKey names what the create form shows while it has no values or
// errors (vault/create): the project and the CSRF placeholder. A form shown
// again after a failed submission is not kept ("").
func (v vaultView) CreateKey() string {
	if len(v.Form.Values) > 0 || len(v.Form.Errors) > 0 {
		return ""
	}
	return strings.Join([]string{"vault/create", v.Project.ID, v.CSRF}, "\x00")
}

// vaultIndex renders /web/vault: the project's entries, masked, 10 a page.
func (h *Handlers) vaultIndex(c *fiber.Ctx) error {
	var q vaultListQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	view, err := h.vaultPage(c, q.ProjectID, q.page(10))
	if err != nil {
		return err
	}
	dtos := make([]vaultEntryDTO, len(view.Rows))
	for i, r := range view.Rows {
		dtos[i] = newVaultEntryDTO(r.Entry, nil)
	}
	return h.respond(c, Reply{Data: dtos, Amount: &view.Pager.Total, Page: "vault/index", View: view})
}

// vaultPage is the view of a project's vault at page.
func (h *Handlers) vaultPage(c *fiber.Ctx, project string, page store.Page) (vaultView, error) {
	p, err := h.member(c, project)
	if err != nil {
		return vaultView{}, err
	}
	entries, total, err := h.store.VaultListing(c.UserContext(), p, page)
	if err != nil {
		return vaultView{}, err
	}
	self := vaultURL(project)
	if c.Path() == "/web/vault" {
		self = c.OriginalURL()
	}
	rows := make([]vaultRowView, len(entries))
	for i, e := range entries {
		rows[i] = newVaultRow(e)
	}
	if representationOf(c) != asJSON {
		if err := renderRows(c.App().Config().Views.(views.Renderer), rows); err != nil {
			return vaultView{}, err
		}
	}
	return vaultView{Base: h.base(c, "Vault · "+p.Name), Project: p, Rows: rows, Pager: newPager(c, page, len(entries), total), Self: self}, nil
}

type vaultRowView struct {
	Base
	Entry   store.VaultEntry
	Query   template.URL // project_id and key, for the row's links
	Updated string
	Editing bool
	Value   string // editing: the current value, read and logged when Edit was pressed
	Multi   bool   // the value has a line break: edited in a textarea
	Form    Form
	// HTML is the row rendered, masked, for a page's table (Renderer.Cached).
	HTML template.HTML
}

// newVaultRow is the view of entry e's row, its links and date made once
// here rather than by template calls per row.
func newVaultRow(e store.VaultEntry) vaultRowView {
	q := "project_id=" + url.QueryEscape(e.ProjectID) + "&key=" + url.QueryEscape(e.Key)
	return vaultRowView{Entry: e, Query: template.URL(q), Updated: e.UpdatedAt.Format("2006-01-02 15:04")}
}

// renderRows fills each masked row's HTML. A masked row shows its project,
// key and update time and nothing else, the same for every reader, so it
// is rendered once (Renderer.Cached).
func renderRows(r views.Renderer, rows []vaultRowView) error {
	for i := range rows {
		e := rows[i].Entry
		key := "vault/row\x00" + e.ProjectID + "\x00" + e.Key + "\x00" + rows[i].Updated + "\x00" + e.UpdatedByName + "\x00" + strconv.FormatInt(e.Version, 10)
		html, err := r.Cached("vault/row", key, rows[i])
		if err != nil {
			return err
		}
		rows[i].HTML = html
	}
	return nil
}

// vaultRow renders one row of the entries table, masked; with edit=true, the
// row's form for a new value.
func (h *Handlers) vaultRow(c *fiber.Ctx) error {
	var q vaultKeyQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if _, err := h.member(c, q.ProjectID); err != nil {
		return err
	}
	if !c.QueryBool("edit") {
		e, err := h.store.VaultEntryInfo(c.UserContext(), q.ProjectID, q.Key)
		if err != nil {
			return err
		}
		view := newVaultRow(e)
		view.Base = h.base(c, e.Key)
		return h.respond(c, Reply{Data: newVaultEntryDTO(e, nil), Page: "vault/row_page", Fragment: "vault/row", View: view})
	}
	// Editing starts from the current value: it is read, and the read
	// logged, only now that Edit was pressed.
	e, value, err := h.vault.Read(c.UserContext(), q.ProjectID, q.Key, vaultAccess(c, q.ProjectID, q.Key))
	if err != nil {
		return err
	}
	view := newVaultRow(e)
	view.Base, view.Editing, view.Value, view.Multi = h.base(c, e.Key), true, value, strings.ContainsAny(value, "\r\n")
	return h.respond(c, Reply{Data: newVaultEntryDTO(e, nil), Page: "vault/row_page", Fragment: "vault/row", View: view})
}

// vaultEditError answers a failed update: the browser gets the row's form
// back with the error, never the value.
func (h *Handlers) vaultEditError(c *fiber.Ctx, err error, in vaultInput) error {
	return h.formError(c, err, func() (Reply, *Form, error) {
		if _, err := h.member(c, in.ProjectID); err != nil {
			return Reply{}, nil, err
		}
		e, err := h.store.VaultEntryInfo(c.UserContext(), in.ProjectID, in.Key)
		view := newVaultRow(e)
		view.Base, view.Editing = h.base(c, e.Key), true
		return Reply{Page: "vault/row_page", Fragment: "vault/row", View: &view}, &view.Form, err
	}, "value")
}

type vaultLogQuery struct {
	listQuery
	ProjectID string `query:"project_id" json:"project_id" validate:"required"`
	Action    string `query:"action" json:"action" validate:"omitempty,oneof=create read update delete restore undelete destroy export import"`
	Batch     int64  `query:"batch" json:"batch" validate:"omitempty,min=1"`
}

// vaultAccessDTO is one access-log row as the API shows it.
type vaultAccessDTO struct {
	ID       int64   `json:"id"`
	At       string  `json:"at"`
	UserID   *int64  `json:"user_id"`
	Username string  `json:"username"`
	TokenID  *int64  `json:"token_id"`
	Key      string  `json:"key"`
	Action   string  `json:"action"`
	Channel  string  `json:"channel"`
	RouteID  *string `json:"route_id"`
	Version  *int64  `json:"version"`
	Batch    *int64  `json:"batch"`
	Keys     *int    `json:"keys"`
}

// vaultActions are the kinds of access the log records.
var vaultActions = []string{"create", "read", "update", "delete", "restore", "export", "import"}

type vaultLogView struct {
	Base
	Project store.Project
	Log     []store.VaultAccess
	Pager   Pager
	Action  string
	Actions []string
	Batch   int64
}

// vaultLog answers GET /vault/log and renders /web/vault/log: the project's
// access log, newest first, filterable by key and action.
func (h *Handlers) vaultLog(c *fiber.Ctx) error {
	var q vaultLogQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	p, err := h.member(c, q.ProjectID)
	if err != nil {
		return err
	}
	page := q.page(defaultLimit(c, 25))
	// The page folds an export's or import's rows into its own row (which
	// links to them) unless a filter asks for rows; the API lists them all.
	folded := representationOf(c) != asJSON && q.Action == "" && page.Filter == "" && q.Batch == 0
	log, total, err := h.store.ListVaultAccess(c.UserContext(), q.ProjectID, store.VaultLogQuery{Page: page, Action: q.Action, Batch: q.Batch, Folded: folded})
	if err != nil {
		return err
	}
	dtos := make([]vaultAccessDTO, len(log))
	for i, a := range log {
		dtos[i] = vaultAccessDTO{ID: a.ID, At: a.At.UTC().Format("2006-01-02T15:04:05.000Z"), UserID: a.UserID, Username: a.Username,
			TokenID: a.TokenID, Key: a.Key, Action: a.Action, Channel: a.Channel, RouteID: a.RouteID, Version: a.Version, Batch: a.Batch, Keys: a.Keys}
	}
	view := vaultLogView{Base: h.base(c, "Vault log · "+p.Name), Project: p, Log: log, Pager: newCappedPager(c, page, len(log), total, store.LogCountCap),
		Action: q.Action, Actions: vaultActions, Batch: q.Batch}
	return h.respond(c, Reply{Data: dtos, Amount: &view.Pager.Total, Capped: view.Pager.AtLeast, Page: "vault/log", View: view})
}
