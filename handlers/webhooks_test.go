package handlers

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"stencil/webhooks"
)

// Signed webhooks in (docs/webhooks.md): a route with auth_signature runs
// only for a delivery signed with its vault secret — checked on the raw
// body, each scheme; a missing, wrong or expired signature is 401 and runs
// nothing, logged with its reason; a replayed webhook-id answers 200 and
// runs nothing, while a delivery whose run failed (5xx) runs again when
// retried. Only an ADMIN saves such a route; each delivery's secret read
// is in the vault's log.
func TestSignedWebhooks(t *testing.T) {
	t.Parallel()
	ta, author := runApp(t)
	admin := shopAdmin(t, ta)
	const secret = "whsec_c2lnbmVkLXdlYmhvb2tzLWluLXN0ZW5jaWw="
	for _, key := range []string{"HOOK_SECRET"} {
		ta.expectStatus(t, "vault entry", "POST", "/vault/create", `{"project_id":"shop","key":"`+key+`","value":"`+secret+`"}`, admin, 201)
	}
	create := `{"type":"CREATE","depth":0,"ref_col":"books","ref_object":"event","save":true,"conditions":[]}`
	object := `{"type":"OBJECT","depth":0,"local_name":"event","pairs":` + pairsOf("title", ref("title")) + `}`
	ok := `{"type":"RETURN","depth":0,"pairs":` + pairsOf("ok", lit("BOOLEAN", "true")) + `,"conditions":[]}`
	route := func(id, scheme, header string) runnable {
		sig := `{"active":true,"scheme":"` + scheme + `","vault_key":"HOOK_SECRET"` + header + `}`
		return runnable{id: id, method: "POST", path: "/" + id, body: `[{"id":"title","bdtype":"STRING"}]`, signature: sig, blocks: []string{object, create, ok}}
	}
	hook := route("hook", webhooks.StandardWebhooks, "")
	if status, body := ta.call(t, "POST", "/route/create", `{"project_id":"shop","route":`+hook.JSON()+`}`, author); status != 403 ||
		!strings.Contains(body, "only an ADMIN or ROOT member") {
		t.Fatalf("an AUTHOR saving a signed route: %d %s", status, body)
	}
	hook.save(t, ta, admin)
	for _, r := range []runnable{route("stripe_hook", webhooks.Stripe, ""), route("github_hook", webhooks.GitHub, ""),
		route("plain_hook", webhooks.HMACSHA256, `,"header":"X-Signature"`)} {
		r.save(t, ta, admin)
	}
	failing := runnable{id: "failing", method: "POST", path: "/failing", signature: `{"active":true,"scheme":"standard-webhooks","vault_key":"HOOK_SECRET"}`,
		blocks: []string{`{"type":"CONDITION","depth":0,"conditions":[],"action":"FAIL","fail":{"status":503,"message":"not now"}}`}}
	failing.save(t, ta, admin)

	body := `{"title":"Signed"}`
	now := time.Now()
	signed := func(scheme, id string, at time.Time, body string) map[string]string {
		h := webhooks.Sign(scheme, secret, "X-Signature", id, []byte(body), at)
		h["Content-Type"] = "application/json"
		return h
	}
	ta.run(t, []scenario{
		{name: "no signature", method: "POST", path: "/x/shop/hook", body: body, status: 401, want: []string{`"message":"Error: signature does not match"`}},
		{name: "signed", method: "POST", path: "/x/shop/hook", body: body, headers: signed(webhooks.StandardWebhooks, "msg_1", now, body), status: 200, want: []string{`"ok":true`}},
		{name: "the same delivery again", method: "POST", path: "/x/shop/hook", body: body, headers: signed(webhooks.StandardWebhooks, "msg_1", now, body), status: 200,
			want: []string{"Delivery msg_1 was received already: nothing ran"}},
		{name: "another body under the signature", method: "POST", path: "/x/shop/hook", body: `{"title":"Forged"}`, headers: signed(webhooks.StandardWebhooks, "msg_2", now, body), status: 401},
		{name: "an expired timestamp", method: "POST", path: "/x/shop/hook", body: body, headers: signed(webhooks.StandardWebhooks, "msg_3", now.Add(-10*time.Minute), body), status: 401},
		{name: "stripe", method: "POST", path: "/x/shop/stripe_hook", body: body, headers: signed(webhooks.Stripe, "", now, body), status: 200},
		{name: "stripe, expired", method: "POST", path: "/x/shop/stripe_hook", body: body, headers: signed(webhooks.Stripe, "", now.Add(-time.Hour), body), status: 401},
		{name: "github", method: "POST", path: "/x/shop/github_hook", body: body, headers: signed(webhooks.GitHub, "", now, body), status: 200},
		{name: "github, unsigned", method: "POST", path: "/x/shop/github_hook", body: body, status: 401},
		{name: "hmac-sha256", method: "POST", path: "/x/shop/plain_hook", body: body, headers: signed(webhooks.HMACSHA256, "", now, body), status: 200},
		{name: "a failed run", method: "POST", path: "/x/shop/failing", body: `{}`, headers: signed(webhooks.StandardWebhooks, "msg_9", now, `{}`), status: 503},
		{name: "its retry runs again", method: "POST", path: "/x/shop/failing", body: `{}`, headers: signed(webhooks.StandardWebhooks, "msg_9", now, `{}`), status: 503,
			want: []string{"not now"}},
	})
	if got := strings.Count(ta.records(t, "books"), `"title": "Signed"`); got != 4 {
		t.Fatalf("%d records of signed deliveries, want 4 (hook once, stripe, github, hmac)", got)
	}
	// One delivery sent eight times at once (a sender's retries crossing):
	// it runs once, the others are told it was received.
	same := `{"title":"Once"}`
	headers := signed(webhooks.StandardWebhooks, "msg_burst", now, same)
	var wg sync.WaitGroup
	statuses := make(chan string, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, out := ta.call(t, "POST", "/x/shop/hook", same, headers)
			statuses <- fmt.Sprint(status, strings.Contains(out, "received already"))
		}()
	}
	wg.Wait()
	close(statuses)
	ran := 0
	for st := range statuses {
		switch st {
		case "200 false":
			ran++
		case "200 true":
		default:
			t.Fatalf("a delivery sent at once with others: %s", st)
		}
	}
	if got := strings.Count(ta.records(t, "books"), `"title": "Once"`); ran != 1 || got != 1 {
		t.Fatalf("one delivery sent eight times ran %d times and wrote %d records", ran, got)
	}
	if err := ta.h.runs.FlushLog(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, runs := ta.call(t, "GET", "/route/runs?project_id=shop&route_id=hook", "", admin)
	if !strings.Contains(runs, "signature does not match: webhook-id, webhook-timestamp and webhook-signature are all required") ||
		!strings.Contains(runs, "past the tolerance of 300 s") {
		t.Fatalf("the run log does not say why: %s", runs)
	}
	_, log := ta.call(t, "GET", "/vault/log?project_id=shop&key=HOOK_SECRET", "", admin)
	if strings.Count(log, `"channel":"route"`) < 8 {
		t.Fatalf("the deliveries' secret reads are not in the vault's log: %s", log)
	}
	// The route document names the headers; a project's file carries the
	// setting.
	_, doc := ta.call(t, "GET", "/x/shop/openapi.json", "", nil)
	for _, want := range []string{`{"description":"The delivery's signature (standard-webhooks), checked on the raw body before the route runs.","in":"header","name":"webhook-signature","required":true`,
		`"in":"header","name":"X-Signature","required":true`, `"in":"header","name":"Stripe-Signature"`, `"in":"header","name":"X-Hub-Signature-256"`} {
		if !strings.Contains(doc, want) {
			t.Fatalf("the route document lacks %s: %s", want, doc)
		}
	}
	if file := export(t, ta, "shop", "", admin); !strings.Contains(file, `"auth_signature": {
        "active": true,
        "scheme": "hmac-sha256",
        "vault_key": "HOOK_SECRET",
        "header": "X-Signature"
      }`) {
		t.Fatalf("the project's file lacks the signature setting:\n%s", file)
	}
	// An entry the vault lacks: the route cannot check, 500, nothing runs.
	ta.expectStatus(t, "entry gone", "DELETE", "/vault/delete?project_id=shop&key=HOOK_SECRET", "", admin, 200)
	status, out := ta.call(t, "POST", "/x/shop/hook", body, signed(webhooks.StandardWebhooks, "msg_4", now, body))
	if status != 500 || !strings.Contains(out, "its secret is not in the project's vault") {
		t.Fatalf("a route whose secret is gone: %d %s", status, out)
	}
}
