package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"stencil/store"
)

// noEventOperations change nothing the event log tells of: signing in,
// running a route or its tests (the run log has every run) and filling a
// template in (the route it makes is not saved).
var noEventOperations = []string{"userLogin", "routeRun", "testRun", "templateApply", "projectPlan", "projectExport"}

// loggedEvent is a row of the events table as a test reads it.
type loggedEvent struct {
	ID                             int64
	Type, Object, Project, Summary string
	UID                            *int64
}

func eventsAfter(t *testing.T, ta *testApp, id int64) []loggedEvent {
	t.Helper()
	rows, err := ta.pool.Query(context.Background(),
		"SELECT id, type, object, coalesce(project_id, ''), summary, uid FROM events WHERE id > $1 ORDER BY id", id)
	if err != nil {
		t.Fatal(err)
	}
	list, err := pgx.CollectRows(rows, pgx.RowToStructByPos[loggedEvent])
	if err != nil {
		t.Fatal(err)
	}
	return list
}

func lastEventID(t *testing.T, ta *testApp) int64 {
	t.Helper()
	var id int64
	if err := ta.pool.QueryRow(context.Background(), "SELECT coalesce(max(id), 0) FROM events").Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestEventPerChange walks every operation of the served API document that
// changes something: each success writes exactly one event, of its type,
// naming its object (and its project); each refusal writes none. An
// operation the walk does not cover fails the test, so a new operation
// must say what it logs.
func TestEventPerChange(t *testing.T) {
	t.Parallel()
	ta, author, boss := mailApp(t)
	root := as(ta.token(t, ta.root))
	bossUser, err := ta.h.store.UserByUsername(context.Background(), "boss")
	if err != nil {
		t.Fatal(err)
	}
	// An operation's id by its method and path, from the served document.
	opOf := map[string]string{}
	var mutating []string
	for path, item := range ta.h.api.Doc.Paths.Map() {
		for method, o := range item.Operations() {
			opOf[method+" "+path] = o.OperationID
			if method != http.MethodGet && !strings.HasPrefix(path, "/web/") && path != "/x/{path}" && !slices.Contains(noEventOperations, o.OperationID) {
				mutating = append(mutating, o.OperationID)
			}
		}
	}
	succeeded, refused := map[string]bool{}, map[string]bool{}
	var last string // the body of the last success
	operation := func(t *testing.T, method, path string) string {
		t.Helper()
		route, _, _ := strings.Cut(path, "?")
		op := opOf[method+" "+route]
		if op == "" {
			t.Fatalf("%s %s is not in the document", method, route)
		}
		return op
	}
	// ok calls and expects status and one event of kind naming object
	// ("" : the id in the answer's data) in project ("": none).
	ok := func(name string, headers map[string]string, method, path, body string, status int, kind, object, project string) {
		t.Run(name, func(t *testing.T) {
			op := operation(t, method, path)
			before := lastEventID(t, ta)
			got, answer := ta.call(t, method, path, body, headers)
			if got != status {
				t.Fatalf("%s %s: %d, want %d: %s", method, path, got, status, answer)
			}
			last = answer
			if object == "" {
				object = strconv.FormatInt(dataID(t, answer), 10)
			}
			events := eventsAfter(t, ta, before)
			if len(events) != 1 {
				t.Fatalf("%s wrote %d events, want 1: %+v", op, len(events), events)
			}
			e := events[0]
			if e.Type != kind || e.Object != object || e.Project != project || e.Summary == "" {
				t.Fatalf("%s wrote %+v, want type %s, object %q, project %q", op, e, kind, object, project)
			}
			succeeded[op] = true
		})
	}
	// refuse calls and expects status and no event.
	refuse := func(name string, headers map[string]string, method, path, body string, status int) {
		t.Run(name, func(t *testing.T) {
			op := operation(t, method, path)
			before := lastEventID(t, ta)
			got, answer := ta.call(t, method, path, body, headers)
			if got != status {
				t.Fatalf("%s %s: %d, want %d: %s", method, path, got, status, answer)
			}
			last = answer
			if events := eventsAfter(t, ta, before); len(events) != 0 {
				t.Fatalf("%s refused wrote %+v", op, events)
			}
			refused[op] = true
		})
	}
	id := func() int64 { return dataID(t, last) }

	// Users, as ROOT.
	ok("register", root, "POST", "/user/register", `{"username":"eve_user","email":"eve@example.com","password":"a-long-password","role":"VIEWER"}`, 201, "user_create", "", "")
	eve := id()
	refuse("register a taken name", root, "POST", "/user/register", `{"username":"eve_user","email":"eve2@example.com","password":"a-long-password","role":"VIEWER"}`, 422)
	eveID := strconv.FormatInt(eve, 10)
	ok("role", root, "PATCH", "/user/update/role", fmt.Sprintf(`{"target_uid":%d,"role":"AUTHOR"}`, eve), 200, "user_role", eveID, "")
	refuse("a role that is none", root, "PATCH", "/user/update/role", fmt.Sprintf(`{"target_uid":%d,"role":"KING"}`, eve), 422)
	ok("password", root, "POST", "/user/password", fmt.Sprintf(`{"target_uid":%d,"new_password":"another-long-one"}`, eve), 200, "user_password", eveID, "")
	refuse("a short password", root, "POST", "/user/password", fmt.Sprintf(`{"target_uid":%d,"new_password":"x"}`, eve), 422)

	// Projects and members, as the ADMIN.
	ok("project", boss, "POST", "/project/create", `{"id":"eve_proj","name":"Eve","api_path":"/eve"}`, 201, "project_create", "eve_proj", "eve_proj")
	refuse("a project id taken", boss, "POST", "/project/create", `{"id":"eve_proj","name":"Eve","api_path":"/eve2"}`, 422)
	ok("project update", boss, "PATCH", "/project/update", `{"project_id":"eve_proj","name":"Eve two"}`, 200, "project_update", "eve_proj", "eve_proj")
	refuse("an api_path another project has", boss, "PATCH", "/project/update", `{"project_id":"eve_proj","api_path":"/shop"}`, 422)
	// A file changing one thing writes that one event (each change its own:
	// TestProjectPlanAndApply).
	ok("project file", boss, "POST", "/project/apply", `{"project_id":"eve_proj","document":{"format":1,"name":"Eve three"}}`, 200, "project_update", "eve_proj", "eve_proj")
	refuse("a project file of another format", boss, "POST", "/project/apply", `{"project_id":"eve_proj","document":{"format":2,"name":"Eve"}}`, 422)
	ok("member", boss, "POST", "/project/member/add", fmt.Sprintf(`{"project_id":"eve_proj","target_uid":%d}`, eve), 200, "member_add", eveID, "eve_proj")
	refuse("a member twice", boss, "POST", "/project/member/add", fmt.Sprintf(`{"project_id":"eve_proj","target_uid":%d}`, eve), 422)
	ok("member role", boss, "PATCH", "/project/member/role", fmt.Sprintf(`{"project_id":"eve_proj","target_uid":%d,"role":"VIEWER"}`, eve), 200, "member_role", eveID, "eve_proj")
	refuse("a member role of no member", boss, "PATCH", "/project/member/role", `{"project_id":"eve_proj","target_uid":999999,"role":"VIEWER"}`, 404)
	ok("member removed", boss, "POST", "/project/member/remove", fmt.Sprintf(`{"project_id":"eve_proj","target_uid":%d}`, eve), 200, "member_remove", eveID, "eve_proj")
	refuse("a member removed twice", boss, "POST", "/project/member/remove", fmt.Sprintf(`{"project_id":"eve_proj","target_uid":%d}`, eve), 404)

	// Tokens and configs.
	ok("token", boss, "POST", "/pat/create", `{"name":"ci"}`, 201, "token_create", "", "")
	pat := id()
	refuse("a token without a name", boss, "POST", "/pat/create", `{"name":""}`, 422)
	ok("token revoked", boss, "DELETE", fmt.Sprintf("/pat/delete?id=%d", pat), "", 200, "token_revoke", strconv.FormatInt(pat, 10), "")
	refuse("a token revoked twice", boss, "DELETE", fmt.Sprintf("/pat/delete?id=%d", pat), "", 404)
	ok("config", root, "POST", "/config/create", `{"key":"site.name","value":"Stencil"}`, 201, "config_create", "site.name", "")
	refuse("a config twice", root, "POST", "/config/create", `{"key":"site.name","value":"Stencil"}`, 422)
	ok("config update", root, "PATCH", "/config/update", `{"key":"site.name","value":"Stencil 2"}`, 200, "config_update", "site.name", "")
	refuse("an unknown config", root, "PATCH", "/config/update", `{"key":"site.none","value":"x"}`, 404)
	ok("config delete", root, "DELETE", "/config/delete?key=site.name", "", 200, "config_delete", "site.name", "")
	refuse("a config deleted twice", root, "DELETE", "/config/delete?key=site.name", "", 404)

	// The vault: keys and versions, never values.
	ok("secret", boss, "POST", "/vault/create", `{"project_id":"shop","key":"API_KEY","value":"first-secret"}`, 201, "vault_create", "API_KEY", "shop")
	refuse("a secret twice", boss, "POST", "/vault/create", `{"project_id":"shop","key":"API_KEY","value":"x"}`, 422)
	ok("secret update", boss, "PATCH", "/vault/update", `{"project_id":"shop","key":"API_KEY","value":"second-secret"}`, 200, "vault_update", "API_KEY", "shop")
	refuse("an unknown secret", boss, "PATCH", "/vault/update", `{"project_id":"shop","key":"NONE","value":"x"}`, 404)
	ok("secret restore", boss, "POST", "/vault/restore", `{"project_id":"shop","key":"API_KEY","version":1}`, 200, "vault_restore", "API_KEY", "shop")
	refuse("a version not kept", boss, "POST", "/vault/restore", `{"project_id":"shop","key":"API_KEY","version":99}`, 404)
	ok("secret delete", boss, "DELETE", "/vault/delete?project_id=shop&key=API_KEY", "", 200, "vault_delete", "API_KEY", "shop")
	refuse("a secret deleted twice", boss, "DELETE", "/vault/delete?project_id=shop&key=API_KEY", "", 404)
	ok("a deleted key created again", boss, "POST", "/vault/create", `{"project_id":"shop","key":"API_KEY","value":"again-secret"}`, 201, "vault_create", "API_KEY", "shop")
	refuse("a dry run imports nothing", boss, "POST", "/vault/import", `{"project_id":"shop","env":"NEW_ONE=1\n","dry_run":true}`, 200)
	ok("import", boss, "POST", "/vault/import", `{"project_id":"shop","env":"NEW_ONE=1\nAPI_KEY=third-secret\n"}`, 200, "vault_import", ".env", "shop")
	refuse("an import with a bad key", boss, "POST", "/vault/import", `{"project_id":"shop","env":"bad key=1\n"}`, 422)
	ok("an imported secret deleted", boss, "DELETE", "/vault/delete?project_id=shop&key=NEW_ONE", "", 200, "vault_delete", "NEW_ONE", "shop")
	for _, e := range eventsAfter(t, ta, 0) {
		if strings.Contains(e.Summary, "secret") {
			t.Errorf("an event quotes a value: %+v", e)
		}
	}

	// Templates, routes and their versions, as the AUTHOR.
	ok("template", author, "POST", "/route/template/create", fetchByID("eve_tpl", ptr("shop")), 201, "template_create", "", "shop")
	tid := id()
	tidS := strconv.FormatInt(tid, 10)
	refuse("a template name taken", author, "POST", "/route/template/create", fetchByID("eve_tpl", ptr("shop")), 422)
	ok("template restore", author, "POST", "/route/template/restore", fmt.Sprintf(`{"id":%d,"version":1}`, tid), 200, "template_restore", tidS, "shop")
	refuse("a template version not kept", author, "POST", "/route/template/restore", fmt.Sprintf(`{"id":%d,"version":99}`, tid), 404)
	refuse("apply saves nothing", author, "POST", "/route/template/apply", fmt.Sprintf(`{"id":%d,"project_id":"shop","values":{"collection":"books","id_param":"id"}}`, tid), 200)
	var applied struct{ Data json.RawMessage }
	if err := json.Unmarshal([]byte(last), &applied); err != nil {
		t.Fatal(err)
	}
	ok("route from the template", author, "POST", "/route/create", `{"project_id":"shop","route":`+string(applied.Data)+`}`, 201, "route_create", "fetch_books", "shop")
	update := strings.Replace(fetchByID("eve_tpl", ptr("shop")), `"name":`, fmt.Sprintf(`"id":%d,"name":`, tid), 1)
	update = strings.Replace(update, `"description":"Fetch one item"`, `"description":"Fetch one item, newer"`, 1)
	update = strings.Replace(update, `"status":404`, `"status":410`, 1)
	ok("template update", author, "POST", "/route/template/create", update, 200, "template_update", tidS, "shop")
	refuse("a dry-run upgrade", author, "POST", "/route/upgrade", `{"project_id":"shop","route_id":"fetch_books","dry_run":true}`, 200)
	ok("upgrade", author, "POST", "/route/upgrade", `{"project_id":"shop","route_id":"fetch_books"}`, 200, "route_upgrade", "fetch_books", "shop")
	refuse("upgrade at the newest", author, "POST", "/route/upgrade", `{"project_id":"shop","route_id":"fetch_books"}`, 422)
	ok("route", author, "POST", "/route/create", `{"project_id":"shop","route":`+plainRoute("eve_route")+`}`, 201, "route_create", "eve_route", "shop")
	refuse("a route twice", author, "POST", "/route/create", `{"project_id":"shop","route":`+plainRoute("eve_route")+`}`, 422)
	ok("route update", author, "PATCH", "/route/update", `{"project_id":"shop","route_id":"eve_route","note":"same again","route":`+plainRoute("eve_route")+`}`, 200, "route_update", "eve_route", "shop")
	refuse("an unknown route", author, "PATCH", "/route/update", `{"project_id":"shop","route_id":"nope","route":`+plainRoute("nope")+`}`, 404)
	ok("route restore", author, "POST", "/route/restore", `{"project_id":"shop","route_id":"eve_route","version":1}`, 200, "route_restore", "eve_route", "shop")
	refuse("a route version not kept", author, "POST", "/route/restore", `{"project_id":"shop","route_id":"eve_route","version":99}`, 404)
	ok("schedule", author, "POST", "/route/schedule/create", `{"project_id":"shop","route_id":"eve_route","cron":"@daily"}`, 201, "schedule_create", "eve_route/1", "shop")
	sid := strconv.FormatInt(id(), 10)
	refuse("a schedule of no route", author, "POST", "/route/schedule/create", `{"project_id":"shop","route_id":"nope","cron":"@daily"}`, 404)
	ok("schedule paused", author, "PATCH", "/route/schedule/update", `{"project_id":"shop","id":`+sid+`,"active":false}`, 200, "schedule_update", "eve_route/"+sid, "shop")
	refuse("a schedule of a bad expression", author, "PATCH", "/route/schedule/update", `{"project_id":"shop","id":`+sid+`,"cron":"* *"}`, 422)
	ok("schedule delete", author, "DELETE", "/route/schedule/delete?project_id=shop&id="+sid, "", 200, "schedule_delete", "eve_route/"+sid, "shop")
	refuse("a schedule deleted twice", author, "DELETE", "/route/schedule/delete?project_id=shop&id="+sid, "", 404)
	ok("test", author, "POST", "/route/test/create", `{"project_id":"shop","route_id":"eve_route","name":"ok","request":{"caller":"anonymous"},"expect":{"status":200}}`,
		201, "route_test_create", "eve_route/ok", "shop")
	refuse("a test of no route", author, "POST", "/route/test/create", `{"project_id":"shop","route_id":"nope","name":"ok","request":{"caller":"anonymous"},"expect":{}}`, 404)
	ok("test renamed", author, "PATCH", "/route/test/update", `{"project_id":"shop","route_id":"eve_route","name":"ok","new_name":"fine"}`, 200, "route_test_update", "eve_route/fine", "shop")
	refuse("a test of a bad op", author, "PATCH", "/route/test/update", `{"project_id":"shop","route_id":"eve_route","name":"fine","expect":{"paths":[{"path":"a","op":"?"}]}}`, 422)
	ok("test delete", author, "DELETE", "/route/test/delete?project_id=shop&route_id=eve_route&name=fine", "", 200, "route_test_delete", "eve_route/fine", "shop")
	refuse("a test deleted twice", author, "DELETE", "/route/test/delete?project_id=shop&route_id=eve_route&name=fine", "", 404)
	enq := strings.Replace(plainRoute("eve_enq"), `{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}`,
		`{"type":"ENQUEUE","depth":0,"route_id":"eve_route","query":[],"body":null,"delay_ms":null,"max_attempts":5,"conditions":[],"local_name":"job"},`+
			`{"type":"RETURN","depth":0,"pairs":[{"id":"job","data":{"ref_var":true,"rtype":"OTHER","data":"job"}}],"conditions":[]}`, 1)
	ok("a route that enqueues", author, "POST", "/route/create", `{"project_id":"shop","route":`+enq+`}`, 201, "route_create", "eve_enq", "shop")
	_, ran := ta.call(t, "GET", "/x/shop/eve_enq", "", nil)
	var job struct{ Job int64 }
	if err := json.Unmarshal([]byte(ran), &job); err != nil || job.Job == 0 {
		t.Fatalf("the enqueueing route answered %s", ran)
	}
	jid := strconv.FormatInt(job.Job, 10)
	ok("job cancel", author, "POST", "/route/job/cancel", `{"project_id":"shop","id":`+jid+`}`, 200, "job_cancel", "eve_route/"+jid, "shop")
	refuse("a job of none cancelled", author, "POST", "/route/job/cancel", `{"project_id":"shop","id":999999}`, 404)
	ok("job retry", author, "POST", "/route/job/retry", `{"project_id":"shop","id":`+jid+`}`, 200, "job_retry", "eve_route/"+jid, "shop")
	refuse("a job of none retried", author, "POST", "/route/job/retry", `{"project_id":"shop","id":999999}`, 404)
	ok("route delete", author, "DELETE", "/route/delete?project_id=shop&route_id=eve_route", "", 200, "route_delete", "eve_route", "shop")
	refuse("a route deleted twice", author, "DELETE", "/route/delete?project_id=shop&route_id=eve_route", "", 404)
	ok("template delete", author, "DELETE", fmt.Sprintf("/route/template/delete?id=%d", tid), "", 200, "template_delete", tidS, "shop")
	refuse("a template deleted twice", author, "DELETE", fmt.Sprintf("/route/template/delete?id=%d", tid), "", 404)

	// Collections and records.
	ok("collection", boss, "POST", "/collection/create", `{"project_id":"shop","id":"notes","name":"Notes"}`, 201, "collection_create", "notes", "shop")
	refuse("a collection twice", boss, "POST", "/collection/create", `{"project_id":"shop","id":"notes","name":"Notes"}`, 422)
	ok("collection update", boss, "PATCH", "/collection/update", `{"project_id":"shop","id":"notes","name":"Notes too"}`, 200, "collection_update", "notes", "shop")
	refuse("an unknown collection", boss, "PATCH", "/collection/update", `{"project_id":"shop","id":"nope","name":"x"}`, 404)
	refuse("a record in no collection", boss, "POST", "/data/create", `{"project_id":"shop","collection_id":"nope","data":{"a":1}}`, 404)
	created := func() string { return "notes/" + strconv.FormatInt(id(), 10) }
	t.Run("record", func(t *testing.T) {
		before := lastEventID(t, ta)
		status, body := ta.call(t, "POST", "/data/create", `{"project_id":"shop","collection_id":"notes","data":{"a":1}}`, boss)
		last = body
		if e := eventsAfter(t, ta, before); status != 201 || len(e) != 1 || e[0].Type != "record_create" || e[0].Object != created() || e[0].Project != "shop" {
			t.Fatalf("%d %s: %+v", status, body, e)
		}
		succeeded["recordCreate"] = true
	})
	rid := id()
	csvBoss := map[string]string{"Content-Type": "text/csv"}
	for k, v := range boss {
		csvBoss[k] = v
	}
	ok("record import", csvBoss, "POST", "/data/import?project_id=shop&collection_id=notes", "a\n1\n2\n", 201, "record_import", "notes", "shop")
	refuse("an import naming a column twice", csvBoss, "POST", "/data/import?project_id=shop&collection_id=notes", "a,a\n1,2\n", 422)
	ok("record update", boss, "PATCH", "/data/update", fmt.Sprintf(`{"project_id":"shop","collection_id":"notes","id":%d,"data":{"a":2}}`, rid), 200, "record_update", fmt.Sprintf("notes/%d", rid), "shop")
	refuse("an unknown record", boss, "PATCH", "/data/update", `{"project_id":"shop","collection_id":"notes","id":999999,"data":{"a":2}}`, 404)
	ok("record delete", boss, "DELETE", fmt.Sprintf("/data/delete?project_id=shop&collection_id=notes&id=%d", rid), "", 200, "record_delete", fmt.Sprintf("notes/%d", rid), "shop")
	refuse("a record deleted twice", boss, "DELETE", fmt.Sprintf("/data/delete?project_id=shop&collection_id=notes&id=%d", rid), "", 404)
	ok("collection delete", boss, "DELETE", "/collection/delete?project_id=shop&id=notes", "", 200, "collection_delete", "notes", "shop")
	refuse("a collection deleted twice", boss, "DELETE", "/collection/delete?project_id=shop&id=notes", "", 404)

	// Mail: templates, invitations, resets, the outbox.
	ok("email template", boss, "POST", "/email/template/create", `{"project_id":"shop","name":"order_done","subject":"Order","text":"Thanks"}`, 201, "email_template_create", "order_done", "shop")
	refuse("an email template twice", boss, "POST", "/email/template/create", `{"project_id":"shop","name":"order_done","subject":"Order","text":"Thanks"}`, 422)
	ok("email template update", boss, "PATCH", "/email/template/update", `{"project_id":"shop","name":"order_done","subject":"Your order"}`, 200, "email_template_update", "order_done", "shop")
	refuse("an unknown email template", boss, "PATCH", "/email/template/update", `{"project_id":"shop","name":"nope_nope","subject":"x"}`, 404)
	ok("email template delete", boss, "DELETE", "/email/template/delete?project_id=shop&name=order_done", "", 200, "email_template_delete", "order_done", "shop")
	refuse("an email template deleted twice", boss, "DELETE", "/email/template/delete?project_id=shop&name=order_done", "", 404)
	ok("invite", boss, "POST", "/project/invite", `{"project_id":"shop","email":"first@example.com","role":"VIEWER"}`, 201, "invitation_create", "", "shop")
	invite := id()
	refuse("an invite above the inviter", boss, "POST", "/project/invite", `{"project_id":"shop","email":"x@example.com","role":"ROOT"}`, 403)
	ok("invite revoked", boss, "DELETE", fmt.Sprintf("/project/invitation/delete?project_id=shop&id=%d", invite), "", 200, "invitation_revoke", strconv.FormatInt(invite, 10), "shop")
	refuse("an invite revoked twice", boss, "DELETE", fmt.Sprintf("/project/invitation/delete?project_id=shop&id=%d", invite), "", 404)
	ok("invite again", boss, "POST", "/project/invite", `{"project_id":"shop","email":"second@example.com","role":"VIEWER"}`, 201, "invitation_create", "", "shop")
	var env struct{ Data struct{ Link string } }
	if err := json.Unmarshal([]byte(last), &env); err != nil {
		t.Fatal(err)
	}
	accept := fmt.Sprintf(`{"token":%q,"username":"newbie","password":"a-long-password"}`, linkToken(t, env.Data.Link))
	ok("accept", asJSONHeaders, "POST", "/user/invite/accept", accept, 201, "invitation_accept", strconv.FormatInt(id(), 10), "shop")
	refuse("accepted twice", asJSONHeaders, "POST", "/user/invite/accept", accept, 410)
	refuse("a reset for an address that is none", asJSONHeaders, "POST", "/user/password/forgot", `{"email":"not an address"}`, 422)
	refuse("a reset for no account", asJSONHeaders, "POST", "/user/password/forgot", `{"email":"nobody@example.com"}`, 200)
	ok("forgot", asJSONHeaders, "POST", "/user/password/forgot", `{"email":"eve@example.com"}`, 200, "password_reset_request", eveID, "")
	// The message keeps its link sealed (docs/mail.md): the test opens it
	// as the mailer would.
	var keyID string
	var sealed []byte
	if err := ta.pool.QueryRow(context.Background(), "SELECT link_key_id, link_sealed FROM outbox WHERE kind = 'reset' ORDER BY id DESC LIMIT 1").Scan(&keyID, &sealed); err != nil {
		t.Fatal(err)
	}
	link, err := ta.h.vault.OpenLink(keyID, "", store.LinkPlace("eve@example.com"), sealed)
	if err != nil {
		t.Fatal(err)
	}
	reset := fmt.Sprintf(`{"token":%q,"new_password":"a-brand-new-one"}`, linkToken(t, link))
	ok("reset", asJSONHeaders, "POST", "/user/password/reset", reset, 200, "password_reset", eveID, "")
	refuse("reset twice", asJSONHeaders, "POST", "/user/password/reset", reset, 410)
	var held int64
	if err := ta.pool.QueryRow(context.Background(), "SELECT id FROM outbox WHERE project_id = 'shop' AND status = 'held' ORDER BY id LIMIT 1").Scan(&held); err != nil {
		t.Fatal(err)
	}
	heldS := strconv.FormatInt(held, 10)
	refuse("retry without a mail server", boss, "POST", "/outbox/retry", `{"project_id":"shop","id":`+heldS+`}`, 409)
	t.Run("retry with a mail server", func(t *testing.T) {
		mt, _ := mailedApp(t)
		ctx := context.Background()
		p := store.Project{ID: "shop", Name: "Shop", APIPath: "/shop"}
		if err := mt.h.store.CreateProject(ctx, &p, mt.root.ID); err != nil {
			t.Fatal(err)
		}
		m := store.Email{ProjectID: &p.ID, Template: "order_done", Recipients: []string{"ada@example.com"}, Status: store.EmailFailed}
		if err := mt.h.store.QueueEmail(ctx, &m); err != nil {
			t.Fatal(err)
		}
		before := lastEventID(t, mt)
		a := as(mt.token(t, mt.root))
		if status, body := mt.call(t, "POST", "/outbox/retry", fmt.Sprintf(`{"project_id":"shop","id":%d}`, m.ID), a); status != 200 {
			t.Fatalf("retry: %d %s", status, body)
		}
		if e := eventsAfter(t, mt, before); len(e) != 1 || e[0].Type != "email_retry" || e[0].Object != strconv.FormatInt(m.ID, 10) || e[0].Project != "shop" {
			t.Fatalf("retry wrote %+v", e)
		}
		succeeded["outboxRetry"] = true
	})
	ok("cancel", boss, "POST", "/outbox/cancel", `{"project_id":"shop","id":`+heldS+`}`, 200, "email_cancel", heldS, "shop")
	refuse("cancelled twice", boss, "POST", "/outbox/cancel", `{"project_id":"shop","id":`+heldS+`}`, 409)

	// Last, what takes the others with it.
	refuse("the last ROOT", root, "DELETE", fmt.Sprintf("/user/delete?target_uid=%d", ta.root.ID), "", 422)
	ok("user delete", root, "DELETE", "/user/delete?target_uid="+eveID, "", 200, "user_delete", eveID, "")
	refuse("a user deleted twice", root, "DELETE", "/user/delete?target_uid="+eveID, "", 404)
	ok("project delete", boss, "DELETE", "/project/delete?project_id=eve_proj", "", 200, "project_delete", "eve_proj", "eve_proj")
	refuse("a project deleted twice", boss, "DELETE", "/project/delete?project_id=eve_proj", "", 404)

	for _, op := range mutating {
		if !succeeded[op] || !refused[op] {
			t.Errorf("%s: the walk has no success (%v) or no refusal (%v) of it", op, succeeded[op], refused[op])
		}
	}
	// Who: the user, and the token when one was used.
	for _, e := range eventsAfter(t, ta, 0) {
		if e.Type == "email_cancel" && (e.UID == nil || *e.UID != bossUser.ID) {
			t.Errorf("email_cancel by %v, want boss %d", e.UID, bossUser.ID)
		}
	}
}

// TestEventFetch reads the log back: ROOT reads everything, an ADMIN the
// events of their projects, others nothing; the filters narrow it; a
// change made with a personal access token names the token; the page
// links each event to its object.
func TestEventFetch(t *testing.T) {
	t.Parallel()
	ta, author, boss := mailApp(t)
	ctx := context.Background()
	root := as(ta.token(t, ta.root))
	bossUser, err := ta.h.store.UserByUsername(ctx, "boss")
	if err != nil {
		t.Fatal(err)
	}
	status, body := ta.call(t, "POST", "/pat/create", `{"name":"deploy"}`, boss)
	if status != 201 {
		t.Fatalf("pat: %d %s", status, body)
	}
	var pat struct {
		Data struct {
			ID    int64
			Token string
		}
	}
	if err := json.Unmarshal([]byte(body), &pat); err != nil || pat.Data.Token == "" {
		t.Fatalf("no token in %s", body)
	}
	tok := as(pat.Data.Token)
	for _, c := range []struct {
		headers      map[string]string
		method, path string
		body         string
	}{
		{tok, "POST", "/vault/create", `{"project_id":"shop","key":"API_KEY","value":"v"}`},
		{root, "POST", "/project/create", `{"id":"other","name":"Other","api_path":"/other"}`},
		{root, "POST", "/config/create", `{"key":"site.name","value":"Stencil"}`},
		{boss, "POST", "/collection/create", `{"project_id":"shop","id":"notes","name":"Notes"}`},
	} {
		if status, body := ta.call(t, c.method, c.path, c.body, c.headers); status != 201 {
			t.Fatalf("%s: %d %s", c.path, status, body)
		}
	}
	uid := strconv.FormatInt(bossUser.ID, 10)
	tokenID := fmt.Sprintf(`"token_id":%d`, pat.Data.ID)
	ta.run(t, []scenario{
		{name: "an ADMIN reads their projects' events, newest first", method: "GET", path: "/event/fetch?uid=" + uid, headers: boss, status: 200,
			want: []string{`"amount":2`, `"type":"collection_create","project_id":"shop","object":"notes","summary":"collection notes created"}`,
				`"type":"vault_create","project_id":"shop","object":"API_KEY","summary":"API_KEY created"}`, tokenID, `"username":"boss"`},
			unwanted: []string{"site.name", `"project_id":"other"`, "token_create"}},
		{name: "ROOT reads every event", method: "GET", path: "/event/fetch?limit=100", headers: root, status: 200,
			want: []string{`"object":"site.name"`, `"type":"project_create","project_id":"other"`, `"type":"token_create","project_id":null`}},
		{name: "by type", method: "GET", path: "/event/fetch?type=vault_create", headers: root, status: 200,
			want: []string{`"amount":1`, `"object":"API_KEY"`}},
		{name: "by user: uid is a filter here, not the caller's id", method: "GET", path: "/event/fetch?limit=100&uid=" + uid, headers: root, status: 200,
			want: []string{`"type":"vault_create"`, `"type":"collection_create"`}, unwanted: []string{"site.name"}},
		{name: "by project", method: "GET", path: "/event/fetch?project_id=other", headers: root, status: 200,
			want: []string{`"amount":1`, `"type":"project_create"`}},
		{name: "an ADMIN's read stays in their projects", method: "GET", path: "/event/fetch?limit=100", headers: boss, status: 200,
			want: []string{`"type":"project_create","project_id":"shop"`}, unwanted: []string{"site.name", `"project_id":"other"`, `"project_id":null`}},
		{name: "a page", method: "GET", path: "/event/fetch?limit=1&offset=1&uid=" + uid, headers: boss, status: 200,
			want: []string{`"amount":2`, `"type":"vault_create"`}, unwanted: []string{"collection_create"}},
		{name: "a project the ADMIN is not in", method: "GET", path: "/event/fetch?project_id=other", headers: boss, status: 403},
		{name: "a project that is none", method: "GET", path: "/event/fetch?project_id=nowhere", headers: boss, status: 404},
		{name: "a type that is none", method: "GET", path: "/event/fetch?type=route_eaten", headers: boss, status: 422,
			want: []string{`"type":"must be an event type`}},
		{name: "a limit too large", method: "GET", path: "/event/fetch?limit=1001", headers: boss, status: 422},
		{name: "an AUTHOR may not read it", method: "GET", path: "/event/fetch", headers: author, status: 403},
		{name: "nor may anyone signed out", method: "GET", path: "/event/fetch", headers: asJSONHeaders, status: 401},
	})
	page := browser(ta.signIn(t, "boss"))
	ta.run(t, []scenario{
		{name: "the page links each event to its object", method: "GET", path: "/web/events", headers: page, status: 200,
			want: []string{"<h1", "Events", `href="/web/vault/versions?project_id=shop&amp;key=API_KEY"`, `href="/web/data/collection?project_id=shop&amp;id=notes"`,
				"token #", `<option value="shop"`, `<option value="` + uid + `"`, "kept 90 days"},
			unwanted: []string{"site.name", `<option value="other"`}},
		{name: "filtered on the page", method: "GET", path: "/web/events?type=collection_create", headers: page, status: 200,
			want: []string{"collection notes created", `<option value="collection_create" selected>`}, unwanted: []string{"API_KEY created"}},
		{name: "nothing that matches", method: "GET", path: "/web/events?type=route_delete", headers: page, status: 200,
			want: []string{"No events that match."}},
	})
}

// TestEventTypesDocumented: the document's list of event types is the
// store's, in the same order.
func TestEventTypesDocumented(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	var listed []string
	for _, v := range ta.h.api.Doc.Components.Schemas["EventType"].Value.Enum {
		listed = append(listed, v.(string))
	}
	if !slices.Equal(listed, store.EventTypes) {
		t.Fatalf("the document lists %v\nthe store writes %v", listed, store.EventTypes)
	}
}
