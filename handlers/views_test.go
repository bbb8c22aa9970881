package handlers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"sort"
	"strings"
	"testing"
	"time"

	"stencil/flow"
	"stencil/mail"
	"stencil/projectfile"
	"stencil/runs"
	"stencil/schema"
	"stencil/store"
	"stencil/vault"
	"stencil/views"
)

// sampleViews gives every template and named fragment a view model to render
// with. A template missing here fails TestEveryTemplateRenders, so new
// templates are rendered in CI before a person meets them.
func sampleViews() map[string]sample {
	base := Base{Title: "Sample", CSRF: "token", Flash: &Flash{Kind: "success", Text: "Saved"},
		Nav: []NavItem{{Label: "Home", Href: "/", Active: true}}}
	errView := errorView{Base: base, Status: 404, Heading: "Not Found", Message: "Error: not found"}
	user := store.User{ID: 1, Username: "ada", Email: "ada@example.com", Role: store.RoleRoot, FirstName: "Ada", LastName: "L"}
	base.User = &user
	form := Form{Values: map[string]string{"name": "x"}, Errors: map[string]string{"name": "is required", "username": "is not a user"}}
	pager := Pager{From: 1, To: 1, Total: 3, Next: "/web/users?offset=1", Filter: "a"}
	now := time.Now()
	users := usersView{Base: base, Users: []store.User{user}, Pager: pager, Roles: roles, Form: form}
	projects := projectsView{Base: base, Projects: []store.Project{{ID: "shop", Name: "Shop", APIPath: "/shop", Members: 2, IsMember: true},
		{ID: "other", Name: "Other", APIPath: "/o"}}, Pager: pager, All: true, CanAll: true, CanAdd: true, Form: form}
	project := projectView{Base: base, Project: store.Project{ID: "shop", Name: "Shop", APIPath: "/shop", Description: "d"},
		Members: []store.Member{{UserID: 1, Username: "ada", Role: store.RoleAdmin, UserRole: store.RoleRoot, AddedAt: now},
			{UserID: 2, Username: "kim", Role: store.RoleAdmin, UserRole: store.RoleViewer, AddedAt: now}}, CanAdmin: true, Form: form, Add: form,
		MemberRoles: memberRoles}
	memberRole := memberRoleView{Project: project.Project, Member: project.Members[1], Roles: memberRoles, Error: "The project's last ADMIN must stay ADMIN."}
	pats := patsView{Base: base, Now: now, Form: form, Created: &patDTO{Name: "ci", Token: "stp_x"},
		Tokens: []store.PAT{{ID: 1, Name: "ci", Hint: "stp_abcd", ValidFrom: now, ValidTo: &now, LastUsedAt: &now}, {ID: 2, Name: "old", RevokedAt: &now}}}
	configs := configsView{Base: base, Configs: []store.Config{{Key: "site.name", Value: "Stencil"}}, Pager: pager, Form: form}
	login := loginView{Base: base, Form: form, Message: "Error: nope", Next: "/web/pats"}
	entry := store.VaultEntry{ProjectID: "shop", Key: "API_KEY", UpdatedAt: now}
	vaultPage := vaultView{Base: base, Project: store.Project{ID: "shop", Name: "Shop"}, Rows: []vaultRowView{newVaultRow(entry)}, Pager: pager, Form: form}
	row := newVaultRow(entry)
	row.Editing, row.Form = true, form
	revealed := vaultEntryView{Base: base, Entry: entry, Value: "s3cret"}
	uid := int64(1)
	tmplDoc := store.RouteTemplate{Template: flow.Template{ID: 7, Name: "fetch_by_id", Description: "d", Method: "GET", RoutePath: "/{c}",
		Variables: []flow.Variable{{Key: "c", Description: "collection"}, {Key: "d", Description: "x", DefaultValue: &entry.Key}}}}
	blocks := []views.Block{{N: 1, Type: "FETCH", Depth: 1, Indent: "margin-left: 1.5rem", Fields: views.Highlight(`{"ref_col": "{c}"}`, map[string]bool{"c": true})}}
	route := store.StoredRoute{Route: flow.Route{ProjectID: "shop", RouteID: "r", RoutePath: "/r", Method: "GET", Template: &flow.TemplateRef{ID: 7, Name: "t"}}}
	vaultLog := vaultLogView{Base: base, Project: store.Project{ID: "shop", Name: "Shop"}, Pager: pager, Action: "read", Actions: []string{"create", "read"},
		Log: []store.VaultAccess{{ID: 1, At: now, UserID: &uid, Username: "ada", TokenID: &uid, Key: "API_KEY", Action: "read", Channel: "api"}}}
	lastError := "the route answered 503: always down"
	ended := now.Add(-time.Minute)
	jobList := jobsView{Base: base, Project: store.Project{ID: "shop", Name: "Shop", APIPath: "/shop"}, Pager: pager, State: "discarded", States: store.JobStates, CanChange: true,
		Jobs: []store.Job{{ID: 7, RouteID: "remind", State: "discarded", Attempts: 5, MaxAttempts: 5, RunAt: now, LastError: &lastError, CreatedAt: now, FinishedAt: &ended},
			{ID: 8, RouteID: "remind", State: "scheduled", MaxAttempts: 5, RunAt: now.Add(time.Hour), CreatedAt: now}}}
	runList := runsView{Base: base, Project: store.Project{ID: "shop", Name: "Shop", APIPath: "/shop"}, Pager: pager, RouteID: "books", Status: "418",
		RouteIDs: []string{"books"}, Statuses: []string{"2xx", "4xx", "5xx"},
		Runs: []runDTO{{ID: 1, At: "2026-01-02T03:04:05.678Z", RouteID: "books", Method: "GET", Path: "/shop/books", Status: 500, Ended: "FAULT", DurationMS: 1.25,
			UserID: &uid, Username: "ada", Fault: "flow.blocks[1] (FILTER): source is null, not an array"}}}
	p99 := 12.5
	unmatched := int64(3)
	statsPage := statsView{Base: base, Project: store.Project{ID: "shop", Name: "Shop", APIPath: "/shop"}, Range: "24h", Ranges: statsRanges, Sort: "requests",
		Stats: statsDTO{Step: "hour", Series: []statsPoint{{At: time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC), statsNumbers: statsNumbers{Requests: 5, Errors5xx: 1, P50: &p99, P95: &p99, P99: &p99}}},
			Totals: statsNumbers{Requests: 5, Errors5xx: 1, P99: &p99}, Routes: []statsRoute{{RouteID: "books", Requests: 5, ErrorRate: 0.2, ErrorRate5xx: 0.2, ErrorRate4xx: 0.4, P99: &p99}},
			Unmatched: &unmatched}}
	collections := collectionsView{Base: base, Project: store.Project{ID: "shop", Name: "Shop"}, Pager: pager, Form: form, CanManage: true,
		Collections: []store.Collection{{ProjectID: "shop", ID: "books", Name: "Books", Description: "All of them", Records: 3}}}
	recRows, recColumns := views.RecordRows([]store.Record{{ID: 7, ProjectID: "shop", CollectionID: "books", Data: []byte(`{"title":"Dune","tags":["sf"],"year":1965}`)}})
	records := recordsView{Base: base, Project: store.Project{ID: "shop", Name: "Shop"}, Collection: store.Collection{ProjectID: "shop", ID: "books", Name: "Books", Records: 1},
		Records: recRows, Columns: recColumns, Where: `{"year":1965}`, Pager: pager, Form: form, CanWrite: true, CanManage: true, Self: "/web/data/collection?project_id=shop&id=books"}
	typed := records
	typed.Collection.Schema = schema.Schema{Fields: []schema.Field{{Name: "title", Type: schema.Text, Required: true}, {Name: "year", Type: schema.Integer},
		{Name: "seen", Type: schema.Boolean, Default: json.RawMessage("true")}, {Name: "shown", Type: schema.Datetime}, {Name: "tags", Type: schema.Select, Values: []string{"sf"}, Multiple: true},
		{Name: "book", Type: schema.Reference, Collection: "books"}, {Name: "extra", Type: schema.JSON}}}
	typed.CollectionIDs, typed.NewField = []string{"books"}, schema.Field{Type: schema.Text}
	ticked := newScheduleDTO(store.Schedule{ID: 1, ProjectID: "shop", RouteID: "read_books", Cron: "30 2 * * *", Timezone: "Europe/Berlin", Active: true}, now)
	ok, failed := 200, 503
	ticked.LastTicks = []tickDTO{{Tick: now, State: store.TickRunning}, {Tick: now, State: store.TickSkipped}, {Tick: now, State: store.TickDone, Status: &ok},
		{Tick: now, State: store.TickDone, Status: &failed}}
	project.Invite, project.InviteRoles, project.InviteLinks, project.Invited = form, roles, map[int64]string{1: "http://localhost:8080/web/invite?token=x"}, 1
	project.Invitations = []store.Invitation{{ID: 1, ProjectID: "shop", Email: "kim@example.com", Role: store.RoleAuthor, ExpiresAt: now}}
	shop := store.Project{ID: "shop", Name: "Shop"}
	etpl := store.EmailTemplate{ProjectID: "shop", Name: "order_done", Subject: "Order {id}", Text: "Hi {name}", HTML: "<p>{name}</p>", UpdatedAt: now}
	emailTemplates := emailTemplatesView{Base: base, Project: shop, Templates: []store.EmailTemplate{etpl}, Form: form, CanManage: true, Held: true}
	emailTemplate := emailTemplateView{Base: base, Project: shop, Template: etpl, Preview: mail.Render(etpl.Subject, etpl.Text, etpl.HTML, map[string]any{"name": "‹name›"}),
		Samples: []string{"id", "name"}, Form: form, CanManage: true}
	subject, text := "Order 7", "Hi Ada"
	message := store.Email{ID: 3, RouteID: "orders", Kind: store.EmailOfRoute, Template: "order_done", Recipients: []string{"ada@example.com"}, Status: store.EmailFailed,
		Attempts: 2, LastError: "550 no such mailbox", Subject: &subject, Text: &text, QueuedAt: now, NextAttemptAt: now}
	outbox := outboxView{Base: base, Project: shop, Messages: []store.Email{message, {ID: 4, Template: "gone", Status: store.EmailQueued, QueuedAt: now, NextAttemptAt: now}},
		Statuses: []string{"held", "queued"}, Status: "queued", Pager: pager, Held: true}
	reset := resetView{Base: base, Token: "t", Sent: "ada@example.com", Form: form}
	invite := inviteView{Base: base, Token: "t", Invitation: store.Invitation{Email: "kim@example.com", Role: store.RoleAuthor}, Project: shop, Form: form}
	return map[string]sample{
		"mail/templates":     {page: true, view: emailTemplates},
		"mail/template_form": {view: emailTemplates},
		"mail/body_fields":   {view: map[string]any{"Text": "t", "HTML": "<b>h</b>", "Form": form}},
		"mail/template":      {page: true, view: emailTemplate},
		"mail/template_edit": {view: emailTemplate},
		"mail/outbox":        {page: true, view: outbox},
		"events/index": {page: true, view: eventsView{Base: base, EventDays: 90, Types: store.EventTypes, Projects: []store.Project{shop},
			Users: []store.Member{{UserID: 1, Username: "ada"}}, Query: eventQuery{Type: "route_update"},
			Events: []eventRow{{Event: store.Event{ID: 1, At: now, UserID: &uid, Username: "ada", TokenID: &uid, Type: "route_update", ProjectID: &shop.ID,
				Object: "books", Summary: "GET /books updated, version 2"}, Href: "/web/routes/history?project_id=shop&route_id=books"}}}},
		"mail/message":        {page: true, view: outboxMessageView{Base: base, Project: shop, Message: message, Rendered: mail.Rendered{Message: mail.Message{Subject: "s", Text: "t", HTML: "<b>h</b>"}}}},
		"projects/invite":     {view: project},
		"session/forgot":      {page: true, view: reset},
		"session/forgot_form": {view: reset},
		"session/reset":       {page: true, view: reset},
		"session/reset_form":  {view: reset},
		"session/invite":      {page: true, view: invite},
		"session/invite_form": {view: invite},
		"home/index":          {page: true, view: homeView{Base: base, Cards: []homeCard{{Title: "T", Text: "x", Href: "/"}}}},
		"errors/page":         {page: true, view: errView},
		"errors/fragment":     {view: errView},
		"partials/nav":        {view: base},
		"partials/nav_links":  {view: map[string]any{"Nav": base.Nav, "Common": true}},
		"partials/nav_more":   {view: base},
		"partials/request":    {view: views.Request{Method: "GET", Path: "/x", Outline: []views.OutlineItem{{Label: "Route id", Value: "r"}}, Raw: "{}"}},
		"users/role":          {view: userRoleView{User: user, Roles: roles, Error: "The last ROOT account must stay ROOT."}},
		"partials/nav_user":   {view: base},
		"partials/flash":      {view: base.Flash},
		"api/scalar":          {page: true, view: scalarView{Base: base, Heading: "Shop routes", DocURL: "/x/shop/openapi.json", Back: "/web/routes?id=shop", BackText: "Routes"}},
		"layouts/title":       {view: base},
		"partials/field":      {view: map[string]any{"Name": "n", "Label": "N", "Error": "bad", "Required": true, "Hint": "h"}},
		"partials/health":     {view: map[string]any{"Health": routeHealth{Requests: 3, Rate: "0.0 %", P99: "1.2 ms", Line: "M0 12L4 10", Range: "1.0 to 1.2 ms"}, "Href": "/x"}},
		"partials/lines":      {view: map[string]any{"Name": "n", "Label": "N", "Error": "bad", "Has": true, "Given": "a\nb", "Hint": "h"}},
		"partials/filter":     {view: map[string]any{"Action": "/web/users", "Value": "a", "Target": "#t", "Label": "Filter"}},
		"partials/pager":      {view: map[string]any{"Pager": pager, "Target": "#t"}},
		"partials/try_field":  {view: map[string]any{"Prefix": "query", "Field": views.TryField{ID: "all", BDType: "BOOLEAN", Kind: "switch"}}},

		"session/login":        {page: true, view: login},
		"session/login_form":   {view: login},
		"session/setup":        {page: true, view: setupView{Base: base, Form: form}},
		"session/setup_form":   {view: setupView{Base: base, Form: form}},
		"account/index":        {page: true, view: accountView{Base: base, Form: form}},
		"account/form":         {view: accountView{Base: base, Form: form}},
		"users/index":          {page: true, view: users},
		"users/table":          {view: users},
		"users/form":           {view: users},
		"projects/index":       {page: true, view: projects},
		"projects/table":       {view: projects},
		"projects/form":        {view: projects},
		"projects/show":        {page: true, view: project},
		"projects/add_member":  {view: project},
		"projects/members":     {view: project},
		"projects/member_role": {view: memberRole},
		"projects/details":     {view: project},
		"pats/index":           {page: true, view: pats},
		"pats/created":         {view: pats},
		"pats/form":            {view: pats},
		"configs/index":        {page: true, view: configs},
		"configs/form":         {view: configs},
		"vault/projects":       {page: true, view: vaultsView{Base: base, Projects: []store.VaultProject{{ID: "shop", Name: "Shop", Entries: 3}}, Pager: pager}},
		"vault/index":          {page: true, view: vaultPage},
		"vault/table":          {view: vaultPage},
		"vault/create":         {view: vaultPage},
		"vault/header":         {view: vaultPage},
		"vault/row":            {view: row},
		"vault/row_page":       {page: true, view: vaultRowView{Base: base, Entry: entry, Query: newVaultRow(entry).Query}},
		"vault/revealed":       {view: revealed},
		"vault/value":          {view: map[string]any{"ID": "f-value", "Label": "Value", "Value": "two\nlines", "Multi": true, "Error": "", "Hint": "h", "Focus": false}},
		"vault/entry":          {page: true, view: revealed},
		"partials/gone":        {view: nil},
		"data/projects":        {page: true, view: dataProjectsView{Base: base, Projects: []store.Project{{ID: "shop", Name: "Shop", APIPath: "/shop"}}, Pager: pager}},
		"data/index":           {page: true, view: collections},
		"data/create":          {view: collections},
		"data/collection":      {page: true, view: records},
		"data/record_form":     {view: records},
		"data/typed_form":      {view: typed},
		"data/field_row":       {view: map[string]any{"F": typed.Collection.Schema.Fields[4], "Collections": []string{"books", "typed"}}},
		"data/record_edit":     {view: records},
		"partials/flash_oob":   {view: base.Flash},
		"vault/log":            {page: true, view: vaultLog},
		"vault/versions": {page: true, view: vaultVersionsView{Base: base, Project: shop, Key: "API_KEY", Query: "project_id=shop&key=API_KEY", Keep: 10,
			Versions: []vaultVersionDTO{{Version: 2, SetAt: now, SetByName: "ada", Live: true}, {Version: 1, SetAt: now}}}},
		"vault/version_value": {view: vaultVersionValueView{Entry: entry, Version: 1, Value: "s3cret"}},
		"routes/runs":         {page: true, view: runList},
		"routes/fault": {view: runView{Project: project.Project, Run: newRunDTO(store.Run{ID: 8, RouteID: "read_books", Status: 500, Ended: "FAULT",
			Fault: "flow.blocks[0] (FETCH): collection books does not exist", Version: 3})}},
		"routes/stats":      {page: true, view: statsPage},
		"routes/stats_span": {view: statsRow{From: now, To: now.Add(5 * time.Hour), Empty: true}},
		"routes/run":        {page: true, view: runView{Base: base, Project: project.Project, Run: runDTO{ID: 7, At: "2026-11-24T10:00:00.000Z", RouteID: "read_books", Method: "GET", Path: "/x/shop/books", Status: 422, Ended: "FAIL", Query: "q=1", Message: "no such book", Attempts: 1}, Trace: []runs.TraceRow{{Block: 0, Type: "FETCH", Held: true, Variable: "rows", Preview: "[]"}, {Block: 1, Type: "CONDITION", Held: true, Outcome: "FAIL", Message: "no such book"}}, CanRetry: true}},
		"partials/blocks":   {view: blocks},
		"templates/index":   {page: true, view: templatesView{Base: base, Templates: []store.RouteTemplate{tmplDoc}, Pager: pager, ProjectID: "shop", Projects: []string{"shop"}, CanWrite: true}},
		"templates/view":    {page: true, view: templateView{Base: base, Template: tmplDoc, Blocks: blocks, Request: views.Request{Method: "GET", Path: "/x", Raw: "<b>x</b>"}, CanWrite: true}},
		"templates/editor":  {page: true, view: editorView{Base: base, Heading: "New", Data: `{"mode":"template"}`, Back: "/"}},
		"routes/index":      {page: true, view: routesView{Base: base, Project: store.Project{ID: "shop", Name: "Shop"}, Routes: []store.StoredRoute{route}, Pager: pager, CanWrite: true}},
		"routes/view": {page: true, view: routeView{Base: base, Route: route, Blocks: blocks, CanWrite: true, Jobs: jobList, Schedules: []scheduleDTO{
			ticked,
			newScheduleDTO(store.Schedule{ID: 2, ProjectID: "shop", RouteID: route.RouteID, Cron: "@every 15m", Timezone: "UTC", Query: "full=1"}, now)}}},
		"routes/schedules":     {view: routeView{Base: base, Route: route, CanWrite: true, Schedules: []scheduleDTO{ticked}}},
		"routes/jobs":          {page: true, view: jobList},
		"routes/jobs-table":    {view: jobList},
		"routes/schedule_form": {view: routeView{Base: base, Route: route, CanWrite: true, Form: Form{Values: map[string]string{"cron": "* * *"}, Errors: map[string]string{"cron": "must be five fields"}}}},
		"routes/history": {page: true, view: historyView{Base: base, Back: "/web/routes/view?project_id=shop&route_id=r", BackText: "Route r", Subject: "GET /books",
			Self: "/web/routes/history?project_id=shop&route_id=r", Keys: []hiddenField{{"project_id", "shop"}}, RestoreURL: "/route/restore",
			RestoreVals: `"project_id":"shop","route_id":"r"`, TryURL: "/web/routes/try?project_id=shop&route_id=r&version=", Live: 3,
			Pager: pager, CanWrite: true, Next: 4, From: 1, To: 3,
			Numbers: []int64{3, 2, 1}, Versions: []versionDTO{{Version: 3, Note: "sf only", CreatedByName: "ada", CreatedAt: now}, {Version: 1, CreatedAt: now}},
			Diff: &views.Diff{From: 1, To: 3, Request: []flow.FieldChange{{Field: "route_path", Label: "Path", Old: `"/a"`, New: `"/b"`}},
				Blocks: []views.BlockChange{{BlockChange: flow.BlockChange{Kind: "changed", From: 0, To: 0, Type: "FETCH", Fields: []flow.FieldChange{{Field: "ref_col", Label: "Collection", Old: `"a"`, New: `"b"`}}}, Summary: "rows ← books"},
					{BlockChange: flow.BlockChange{Kind: "moved", From: 2, To: 1, Type: "RETURN"}}},
				JSON: []views.DiffLine{{Text: "--- version 1", Class: "file"}, {Text: "@@ -1 +1 @@", Class: "hunk"}, {Text: `-  "a"`, Class: "removed"}, {Text: `+  "b"`, Class: "added"}}}}},
		"partials/changes": {view: &views.Diff{Request: []flow.FieldChange{{Field: "route_path", Label: "Path", Old: `"/a"`, New: `"/b"`}},
			Blocks: []views.BlockChange{{BlockChange: flow.BlockChange{Kind: "added", From: -1, To: 0, Type: "FETCH"}, Summary: "rows ← books"}}}},
		"routes/upgrade": {page: true, view: upgradeView{Base: base, Route: store.StoredRoute{Route: flow.Route{ProjectID: "shop", RouteID: "r", Method: "GET", RoutePath: "/r",
			Template: &flow.TemplateRef{ID: 1, Name: "lister", Version: 1}}, Version: 2},
			Plan:      upgradeDTO{FromVersion: 1, ToVersion: 2, Template: flow.TemplateRef{ID: 1, Name: "lister", Version: 2}, Unresolved: 1},
			Variables: []upgradeVariable{{Variable: flow.Variable{Key: "label", Description: "Who"}, New: true, Problem: "has no value"}},
			Template:  &views.Diff{Same: true}, Local: &views.Diff{Same: true}, Result: &views.Diff{Same: true},
			Conflicts: []conflictView{{Conflict: flow.Conflict{Block: 0, Type: "RETURN", Field: "pairs", Label: "Fields", Template: "[]", Route: "[1]", RouteBlock: 1}, Name: "resolve:0:pairs", Where: "Block #2 RETURN"}},
			FirstOpen: 0, Next: 3}},
		"vault/import": {page: true, view: vaultImportView{Base: base, Project: shop}},
		"vault/import_preview": {view: vaultImportView{Base: base, Project: shop, Result: vault.ImportOutcome{Added: []string{"A"}, Changed: []string{"B"}, Deleted: []string{"C"},
			Unchanged: []string{"D"}, Invalid: []vault.InvalidKey{{Key: "e", Reason: "lower case"}}}}},
		"projects/apply": {page: true, view: projectFileView{Base: base, Project: shop}},
		"projects/plan": {view: projectFileView{Base: base, Project: shop, Plan: &planView{planDTO: planDTO{Plan: projectfile.Plan{
			Add: []projectfile.Item{{Kind: "route", ID: "pong", Fields: []string{"GET /pong"}}}, Remove: []projectfile.Item{{Kind: "email_template", ID: "old"}},
			Kept: []projectfile.Item{{Kind: "route", ID: "health"}}, MissingSecrets: []string{"API_KEY"}, SecretRoutes: map[string][]string{"API_KEY": {"pong"}}}, PlanID: "ab"}, Changes: []planChange{{Item: projectfile.Item{Kind: "setting", ID: "name", Fields: []string{"name: a → b"}}},
			{Item: projectfile.Item{Kind: "route", ID: "books"}, Diff: views.DiffOf(0, 0, route.Route, route.Route, nil)}}}}},
		"vault/import_keys": {view: map[string]any{"Title": "To add", "Keys": []string{"A"}, "Class": "", "ID": "added"}},
		"routes/try": {page: true, view: tryView{Base: base, Route: route, APIPath: "/shop", PathParams: []string{"id"}, Version: 2,
			Query: views.TryFields([]flow.Param{{ID: "limit", BDType: "INTEGER"}, {ID: "all", BDType: "BOOLEAN"}}),
			Body:  views.TryFields([]flow.Param{{ID: "title", BDType: "STRING"}, {ID: "price", BDType: "FLOAT"}, {ID: "tags", BDType: "ARRAY"}, {ID: "ok", BDType: "BOOLEAN"}, {ID: "x", BDType: "OTHER"}})}},
	}
}

// sample is a view model to render a template with; page templates are
// rendered inside the layout as well.
type sample struct {
	view any
	page bool
}

func TestEveryTemplateRenders(t *testing.T) {
	t.Parallel()
	h := newTestApp(t).h
	engine := views.Engine(false, "", h.templateFuncs())
	parsed, err := engine.(interface {
		Templates() (*template.Template, error)
	}).Templates()
	if err != nil {
		t.Fatal(err)
	}
	samples := sampleViews()
	var names []string
	for _, tmpl := range parsed.Templates() {
		if name := tmpl.Name(); name != "/" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if len(names) < len(samples) {
		t.Fatalf("found only %d templates: %v", len(names), names)
	}
	for _, name := range names {
		if strings.HasPrefix(name, "layouts/") && name != "layouts/title" {
			continue // rendered around every page below
		}
		s, ok := samples[name]
		if !ok {
			t.Errorf("template %q has no sample view in sampleViews", name)
			continue
		}
		var buf bytes.Buffer
		if err := engine.Render(&buf, name, s.view); err != nil {
			t.Errorf("render %s: %v", name, err)
		}
		if !s.page {
			continue
		}
		buf.Reset()
		if err := engine.Render(&buf, name, s.view, "layouts/body", "layouts/base"); err != nil {
			t.Errorf("render %s in the layout: %v", name, err)
		} else if !strings.Contains(buf.String(), "<title>") {
			t.Errorf("%s in the layout has no title", name)
		}
	}
}

// BenchmarkVaultPage renders /web/vault's page of ten entries inside the
// layouts, as a browser gets it.
var benchRows = 10

func BenchmarkVaultPage(b *testing.B) {
	h := newTestApp(b).h
	engine := views.Engine(false, "", h.templateFuncs())
	s := sampleViews()["vault/index"]
	v := s.view.(vaultView)
	v.Base.Flash = nil
	v.Form = Form{}
	for i := range benchRows {
		v.Rows = append(v.Rows, newVaultRow(store.VaultEntry{ProjectID: "shop", Key: fmt.Sprintf("SERVICE_%04d_TOKEN", i), UpdatedAt: time.Now()}))
	}
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := renderRows(engine, v.Rows); err != nil {
			b.Fatal(err)
		}
		if err := engine.Render(&buf, "vault/index", v, "layouts/body", "layouts/base"); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(buf.Len()))
}
