package handlers

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"stencil/store"
)

// mailApp is runApp with an ADMIN member, boss, and its headers.
func mailApp(t *testing.T) (*testApp, map[string]string, map[string]string) {
	t.Helper()
	ta, h := runApp(t)
	boss := ta.newUser(t, "boss", store.RoleAdmin)
	if err := ta.h.store.AddMember(context.Background(), "shop", boss.ID, store.MembershipRole(boss.Role)); err != nil {
		t.Fatal(err)
	}
	return ta, h, as(ta.token(t, boss))
}

func TestEmailTemplatesAPI(t *testing.T) {
	t.Parallel()
	ta, h, a := mailApp(t)
	create := `{"project_id":"shop","name":"order_done","subject":"Order {order}","text":"Hello {name}","html":"<p>{name}</p>"}`
	ta.run(t, []scenario{
		{name: "create", method: "POST", path: "/email/template/create", headers: a, body: create,
			status: 201, want: []string{`"name":"order_done"`, `"subject":"Order {order}"`, `"html":"\u003cp\u003e{name}\u003c/p\u003e"`}},
		{name: "the same name again", method: "POST", path: "/email/template/create", headers: a, body: create,
			status: 422, want: []string{`"name":"is already used by another email template of this project"`}},
		{name: "a name of the wrong shape", method: "POST", path: "/email/template/create", headers: a,
			body: `{"project_id":"shop","name":"Order","subject":"s","text":"t"}`, status: 422, want: []string{`"name":"must be 3–50 lowercase`}},
		{name: "a subject of two lines", method: "POST", path: "/email/template/create", headers: a,
			body: `{"project_id":"shop","name":"two_lines","subject":"Hi\r\nBcc: eve@example.com","text":"t"}`, status: 422,
			want: []string{`"subject":"must be one line (no line breaks)"`}},
		{name: "a subject too long", method: "POST", path: "/email/template/create", headers: a,
			body: `{"project_id":"shop","name":"long_one","subject":"` + strings.Repeat("s", 201) + `","text":"t"}`, status: 422},
		{name: "no text", method: "POST", path: "/email/template/create", headers: a,
			body: `{"project_id":"shop","name":"no_text","subject":"s"}`, status: 400, want: []string{"Error: text is required"}},
		{name: "an author may not create one", method: "POST", path: "/email/template/create", headers: h,
			body: `{"project_id":"shop","name":"mine","subject":"s","text":"t"}`, status: 403},
		{name: "members read the list", method: "GET", path: "/email/template/fetch?project_id=shop", headers: h,
			status: 200, want: []string{`"amount":1`, `"name":"order_done"`}},
		{name: "and one", method: "GET", path: "/email/template/fetch/one?project_id=shop&name=order_done", headers: h,
			status: 200, want: []string{`"text":"Hello {name}"`}},
		{name: "an unknown one", method: "GET", path: "/email/template/fetch/one?project_id=shop&name=nope_nope", headers: h, status: 404,
			want: []string{`Error: email template \"nope_nope\" not found`}},
		{name: "another project's", method: "GET", path: "/email/template/fetch?project_id=elsewhere", headers: h, status: 404},
		{name: "update the subject", method: "PATCH", path: "/email/template/update", headers: a,
			body: `{"project_id":"shop","name":"order_done","subject":"Your order {order}"}`, status: 200,
			want: []string{`"subject":"Your order {order}"`, `"text":"Hello {name}"`}},
		{name: "update to an empty text", method: "PATCH", path: "/email/template/update", headers: a,
			body: `{"project_id":"shop","name":"order_done","text":""}`, status: 422},
		{name: "an author may not update", method: "PATCH", path: "/email/template/update", headers: h,
			body: `{"project_id":"shop","name":"order_done","subject":"x"}`, status: 403},
		{name: "update an unknown one", method: "PATCH", path: "/email/template/update", headers: a,
			body: `{"project_id":"shop","name":"nope_nope","subject":"x"}`, status: 404},
	})
	got, err := ta.h.store.EmailTemplate(context.Background(), "shop", "order_done")
	if err != nil || got.Subject != "Your order {order}" || got.HTML != "<p>{name}</p>" {
		t.Fatalf("stored: %+v %v", got, err)
	}
	ta.run(t, []scenario{
		{name: "delete", method: "DELETE", path: "/email/template/delete?project_id=shop&name=order_done", headers: a, status: 200},
		{name: "delete again", method: "DELETE", path: "/email/template/delete?project_id=shop&name=order_done", headers: a, status: 404},
	})
}

// A route's EMAIL block queues a message; without a mail server it is
// held, and the outbox shows it rendered; saving warns of a template the
// project lacks and of placeholders no pair fills.
func TestOutboxHeld(t *testing.T) {
	t.Parallel()
	ta, h, a := mailApp(t)
	if status, body := ta.call(t, "POST", "/email/template/create",
		`{"project_id":"shop","name":"added","subject":"Added {title}","text":"{title} is on the shelf {shelf}.","html":"<b>{title}</b>"}`, a); status != 201 {
		t.Fatalf("template: %d %s", status, body)
	}
	route := runnable{id: "add_note", method: "POST", path: "/notes", body: `[{"id":"title","bdtype":"STRING"}]`, blocks: []string{
		`{"type":"EMAIL","depth":0,"template":"added","recipients":[` + lit("STRING", "ada@example.com") + `],"pairs":` + pairsOf("title", ref("title")) + `,"conditions":[]}`,
		`{"type":"EMAIL","depth":0,"template":"missing","recipients":[` + lit("STRING", "ada@example.com") + `],"pairs":[],"conditions":[]}`,
		`{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}`,
	}}
	status, body := ta.call(t, "POST", "/route/create", `{"project_id":"shop","route":`+route.JSON()+`}`, h)
	if status != 201 || !strings.Contains(body, `email template missing does not exist in this project yet: every message would fail (route.flow.blocks[1].template)`) ||
		!strings.Contains(body, `email template added uses {shelf}, which no pair of the block fills: it is sent as it is (route.flow.blocks[0].pairs)`) {
		t.Fatalf("saving: %d %s", status, body)
	}
	// A literal recipient that is no address fails every message: saving says so.
	bad := runnable{id: "bad_to", method: "POST", path: "/bad_to", blocks: []string{
		`{"type":"EMAIL","depth":0,"template":"added","recipients":[` + lit("STRING", "ada at example.com") + `,` + lit("STRING", "ada@example.com") + `],"pairs":` + pairsOf("title", lit("STRING", "t"), "shelf", lit("STRING", "s")) + `,"conditions":[]}`,
	}}
	status, body = ta.call(t, "POST", "/route/create", `{"project_id":"shop","route":`+bad.JSON()+`}`, h)
	if status != 201 || !strings.Contains(body, `recipient \"ada at example.com\" is not an email address: every message would fail (route.flow.blocks[0].recipients[0].data)`) ||
		strings.Contains(body, "recipients[1]") {
		t.Fatalf("saving a literal recipient that is no address: %d %s", status, body)
	}
	if status, body := ta.call(t, "POST", "/x/shop/notes", `{"title":"<Dune>"}`, nil); status != 200 {
		t.Fatalf("run: %d %s", status, body)
	}
	list, total, err := ta.h.store.Outbox(context.Background(), "shop", "", store.Page{Limit: 10})
	if err != nil || total != 2 {
		t.Fatalf("outbox: %d %v", total, err)
	}
	held, missing := list[1].ID, list[0].ID
	heldPath := fmt.Sprintf("/outbox/fetch/one?project_id=shop&id=%d", held)
	ta.run(t, []scenario{
		{name: "the outbox, newest first", method: "GET", path: "/outbox/fetch?project_id=shop", headers: a, status: 200,
			want: []string{`"amount":2`, `"status":"held"`, `"template":"missing"`, `"recipients":["ada@example.com"]`}},
		{name: "held only", method: "GET", path: "/outbox/fetch?project_id=shop&status=held", headers: a, status: 200, want: []string{`"amount":2`}},
		{name: "none sent", method: "GET", path: "/outbox/fetch?project_id=shop&status=sent", headers: a, status: 200, want: []string{`"amount":0`}},
		{name: "a status that is none", method: "GET", path: "/outbox/fetch?project_id=shop&status=lost", headers: a, status: 422},
		{name: "an author does not see it", method: "GET", path: "/outbox/fetch?project_id=shop", headers: h, status: 403},
		{name: "one, rendered", method: "GET", path: heldPath, headers: a, status: 200,
			want: []string{`"subject":"Added \u003cDune\u003e"`, `"text":"\u003cDune\u003e is on the shelf {shelf}."`, `"html":"\u003cb\u003e\u0026lt;Dune\u0026gt;\u003c/b\u003e"`}},
		{name: "one whose template is missing", method: "GET", path: fmt.Sprintf("/outbox/fetch/one?project_id=shop&id=%d", missing), headers: a, status: 200,
			unwanted: []string{`"subject"`}},
		{name: "an unknown one", method: "GET", path: "/outbox/fetch/one?project_id=shop&id=999999", headers: a, status: 404},
		{name: "retry without a server", method: "POST", path: "/outbox/retry", headers: a, body: fmt.Sprintf(`{"project_id":"shop","id":%d}`, held),
			status: 409, want: []string{"no mail server is configured"}},
		{name: "cancel", method: "POST", path: "/outbox/cancel", headers: a, body: fmt.Sprintf(`{"project_id":"shop","id":%d}`, held),
			status: 200, want: []string{`"status":"cancelled"`}},
		{name: "cancel again", method: "POST", path: "/outbox/cancel", headers: a, body: fmt.Sprintf(`{"project_id":"shop","id":%d}`, held),
			status: 409, want: []string{"only a held, queued or failed message"}},
		{name: "an author may not cancel", method: "POST", path: "/outbox/cancel", headers: h, body: fmt.Sprintf(`{"project_id":"shop","id":%d}`, missing), status: 403},
	})
}

// A route's EMAIL block, run for real, reaches the mail server rendered.
func TestRouteEmailDelivered(t *testing.T) {
	t.Parallel()
	ta, srv := mailedApp(t)
	author := ta.newUser(t, "author", store.RoleAdmin)
	ctx := context.Background()
	if err := ta.h.store.CreateProject(ctx, &store.Project{ID: "shop", Name: "Shop", APIPath: "/shop"}, author.ID); err != nil {
		t.Fatal(err)
	}
	h := as(ta.token(t, author))
	if status, body := ta.call(t, "POST", "/email/template/create",
		`{"project_id":"shop","name":"thanks","subject":"Thanks, {name}","text":"Order {order} for {name}.","html":"<p>Order <b>{order}</b> for {name}</p>"}`, h); status != 201 {
		t.Fatalf("template: %d %s", status, body)
	}
	runnable{id: "order", method: "POST", path: "/orders", body: `[{"id":"name","bdtype":"STRING"},{"id":"email","bdtype":"STRING"}]`, blocks: []string{
		`{"type":"EMAIL","depth":0,"template":"thanks","recipients":[` + ref("email") + `],"pairs":` + pairsOf("name", ref("name"), "order", lit("INTEGER", "42")) + `,"conditions":[]}`,
		`{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}`,
	}}.save(t, ta, h)
	if status, body := ta.call(t, "POST", "/x/shop/orders", `{"name":"Ada & Co","email":"ada@example.com"}`, nil); status != 200 {
		t.Fatalf("run: %d %s", status, body)
	}
	got := srv.Wait(t, 1, 10*time.Second)[0]
	if got.To[0] != "ada@example.com" || got.Subject != "Thanks, Ada & Co" || got.Text != "Order 42 for Ada & Co." || got.HTML != "<p>Order <b>42</b> for Ada &amp; Co</p>" {
		t.Fatalf("delivered: %+v", got)
	}
	// The outcome is written beside the sending, just after the server
	// took the message.
	var list []store.Email
	var err error
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if list, _, err = ta.h.store.Outbox(ctx, "shop", store.EmailSent, store.Page{Limit: 5}); err != nil || len(list) > 0 {
			break
		}
	}
	if err != nil || len(list) != 1 || list[0].Attempts != 1 {
		t.Fatalf("outbox: %+v %v", list, err)
	}
}

// TestMailBounds: one request to a public route queues at most 100
// messages of at most 50 recipients each, nothing when it asks for more
// (the run faults and rolls back); a recipient that is not an address
// fails its message at once, held or not; a project with MAIL_BACKLOG
// messages waiting gets 503 with Retry-After from its EMAIL blocks
// (docs/mail.md).
func TestMailBounds(t *testing.T) {
	t.Parallel()
	ta, h, a := mailApp(t)
	if status, body := ta.call(t, "POST", "/email/template/create", `{"project_id":"shop","name":"news","subject":"News","text":"Hi"}`, a); status != 201 {
		t.Fatalf("template: %d %s", status, body)
	}
	email := func(depth int, recipients string) string {
		return fmt.Sprintf(`{"type":"EMAIL","depth":%d,"template":"news","recipients":[%s],"pairs":[],"conditions":[]}`, depth, recipients)
	}
	runnable{id: "to_list", method: "POST", path: "/news", body: `[{"id":"to","bdtype":"ARRAY"}]`, blocks: []string{email(0, ref("to"))}}.save(t, ta, h)
	runnable{id: "to_one", method: "POST", path: "/one", body: `[{"id":"to","bdtype":"STRING"}]`, blocks: []string{email(0, ref("to"))}}.save(t, ta, h)
	runnable{id: "flood", method: "POST", path: "/flood", params: `[{"id":"n","bdtype":"INTEGER"}]`, blocks: []string{
		`{"type":"LOOP","depth":0,"local_name":"i","min":` + lit("INTEGER", "0") + `,"max":` + ref("n") + `}`,
		email(1, lit("STRING", "ada@example.com")),
	}}.save(t, ta, h)
	addresses := func(n int) string {
		var list []string
		for i := range n {
			list = append(list, fmt.Sprintf(`"r%d@example.com"`, i))
		}
		return `{"to":[` + strings.Join(list, ",") + `]}`
	}
	waiting := func() int {
		var n int
		if err := ta.pool.QueryRow(context.Background(), "SELECT count(*) FROM outbox WHERE project_id = 'shop'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	ta.run(t, []scenario{
		{name: "20,000 recipients", method: "POST", path: "/x/shop/news", body: addresses(20000), status: 500,
			want: []string{`"Error: flow.blocks[0] (EMAIL): a message has at most 50 recipients, not 20000"`}},
		{name: "51 recipients", method: "POST", path: "/x/shop/news", body: addresses(51), status: 500},
		{name: "3,000 messages", method: "POST", path: "/x/shop/flood?n=3000", status: 500,
			want: []string{`"Error: flow.blocks[1] (EMAIL): a run queues at most 100 messages"`}},
	})
	if n := waiting(); n != 0 {
		t.Fatalf("refused runs queued %d messages", n)
	}
	ta.run(t, []scenario{
		{name: "50 recipients", method: "POST", path: "/x/shop/news", body: addresses(50), status: 200},
		{name: "100 messages", method: "POST", path: "/x/shop/flood?n=100", status: 200},
		{name: "not an address", method: "POST", path: "/x/shop/one", body: `{"to":"not an address"}`, status: 200},
	})
	if n := waiting(); n != 102 {
		t.Fatalf("%d messages queued, want 102", n)
	}
	var status, reason string
	if err := ta.pool.QueryRow(context.Background(), "SELECT status, last_error FROM outbox WHERE 'not an address' = ANY(recipients)").Scan(&status, &reason); err != nil {
		t.Fatal(err)
	}
	if status != store.EmailFailed || reason != `recipient 1 "not an address" is not an email address` {
		t.Fatalf("a message to no address is %s: %q", status, reason)
	}
	// The project's backlog: the 101 held messages are its limit here.
	ta.h.runs.MailBacklog = 101
	status2, body := ta.call(t, "POST", "/x/shop/one", `{"to":"kim@example.com"}`, nil)
	if status2 != 503 || !strings.Contains(body, `"Error: flow.blocks[0] (EMAIL): the project's outbox is full: too many messages wait to be sent; try again later"`) {
		t.Fatalf("over the backlog: %d %s", status2, body)
	}
	req := httptest.NewRequest("POST", "/x/shop/one", strings.NewReader(`{"to":"kim@example.com"}`))
	req.Header.Set("Content-Type", "application/json")
	if resp, _ := ta.do(t, req); resp.Header.Get("Retry-After") != "60" {
		t.Fatalf("over the backlog, Retry-After %q", resp.Header.Get("Retry-After"))
	}
	if n := waiting(); n != 102 {
		t.Fatalf("over the backlog, %d messages, want 102", n)
	}
}

// TestPlatformMailAheadOfRoutes: an invitation is delivered within seconds
// while 10,000 route messages wait to be sent at their project's rate.
func TestPlatformMailAheadOfRoutes(t *testing.T) {
	t.Parallel()
	ta, srv := mailedApp(t)
	boss := ta.newUser(t, "boss", store.RoleAdmin)
	ctx := context.Background()
	if err := ta.h.store.CreateProject(ctx, &store.Project{ID: "shop", Name: "Shop", APIPath: "/shop"}, boss.ID); err != nil {
		t.Fatal(err)
	}
	if err := ta.h.store.CreateEmailTemplate(ctx, &store.EmailTemplate{ProjectID: "shop", Name: "news", Subject: "News", Text: "Hi"}, boss.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := ta.pool.Exec(ctx, `INSERT INTO outbox (project_id, route_id, kind, template, recipients, pairs, status)
		SELECT 'shop', 'news', 'route', 'news', ARRAY['r' || i || '@example.com'], '{}', 'queued' FROM generate_series(1, 10000) i`); err != nil {
		t.Fatal(err)
	}
	// The route mail flows, and has used its project's burst of the rate.
	srv.Wait(t, 60, 20*time.Second)
	start := time.Now()
	if status, body := ta.call(t, "POST", "/project/invite", `{"project_id":"shop","email":"kim@example.com","role":"VIEWER"}`, as(ta.token(t, boss))); status != 201 {
		t.Fatalf("invite: %d %s", status, body)
	}
	for time.Since(start) < 10*time.Second {
		for _, m := range srv.Messages() {
			if m.To[0] == "kim@example.com" {
				var left int
				_ = ta.pool.QueryRow(ctx, "SELECT count(*) FROM outbox WHERE kind = 'route' AND status = 'queued'").Scan(&left)
				t.Logf("the invitation arrived %v after it was sent, with %d route messages waiting", time.Since(start).Round(time.Millisecond), left)
				if left < 9800 {
					t.Fatalf("only %d route messages were waiting", left)
				}
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the invitation did not arrive in 10 s behind the route mail")
}
