package handlers

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"stencil/store"
)

// failBlock is a CONDITION that always fails with status.
func failBlock(status string) string {
	return `{"type":"CONDITION","depth":0,"conditions":[],"action":"FAIL","fail":{"status":` + status + `,"message":"no"}}`
}

// TestFailStatusIsAnError: a FAIL answers 400–599 only. A 1xx left clients
// waiting and, on a kept-alive connection, made the next answer read as
// this one's.
func TestFailStatusIsAnError(t *testing.T) {
	ta, h := runApp(t)
	for _, status := range []string{"100", "101", "199", "204", "302", "399", "600"} {
		r := runnable{id: "f" + status, method: "GET", path: "/f" + status, blocks: []string{failBlock(status)}}
		code, body := ta.call(t, "POST", "/route/create", `{"project_id":"shop","route":`+r.JSON()+`}`, h)
		if code != 422 || !strings.Contains(body, `"route.flow.blocks[0].fail.status"`) {
			t.Errorf("FAIL %s saved: %d %s", status, code, body)
		}
	}
	runnable{id: "f418", method: "GET", path: "/f418", blocks: []string{failBlock("418")}}.save(t, ta, h)
	if code, body := ta.call(t, "GET", "/x/shop/f418", "", nil); code != 418 || !strings.Contains(body, "Error: no") {
		t.Fatalf("FAIL 418: %d %s", code, body)
	}
	// A route saved before the rule faults when its FAIL is reached.
	if _, err := ta.pool.Exec(context.Background(), `UPDATE routes SET document = jsonb_set(document, '{flow,blocks,0,fail,status}', '100'), version = version + 1
		WHERE route_id = 'f418'`); err != nil {
		t.Fatal(err)
	}
	if err := ta.h.routes.reload(context.Background(), "shop"); err != nil {
		t.Fatal(err)
	}
	code, body := ta.call(t, "GET", "/x/shop/f418", "", nil)
	if code != 500 || !strings.Contains(body, "fail.status 100 is not an error status") {
		t.Fatalf("stored FAIL 100: %d %s", code, body)
	}
}

// TestRouteRefusalsAreJSON: what /x refuses before a route runs (a body
// type it does not take, JSON nested too deep, NUL) is the JSON envelope
// for every client, a browser's Accept or none.
func TestRouteRefusalsAreJSON(t *testing.T) {
	ta, h := runApp(t)
	runnable{id: "post", method: "POST", path: "/post", body: `[{"id":"a","bdtype":"OTHER"}]`, blocks: []string{
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("a", ref("a")) + `,"conditions":[]}`,
	}}.save(t, ta, h)
	runnable{id: "get", method: "GET", path: "/get", params: `[{"id":"limit","bdtype":"STRING"}]`, blocks: []string{
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("limit", ref("limit")) + `,"conditions":[]}`,
	}}.save(t, ta, h)
	deep := strings.Repeat(`{"a":`, 70) + `1` + strings.Repeat(`}`, 70)
	for _, accept := range []string{"", "text/html", "*/*"} {
		for _, tc := range []struct {
			method, path, ctype, body string
			status                    int
		}{
			{"POST", "/x/shop/post", "application/xml", "<a/>", 415},
			{"POST", "/x/shop/post", "application/json", `{"a":` + deep + `}`, 400},
			{"GET", "/x/shop/get?limit=%00", "", "", 400},
			{"GET", "/x/shop/nothing", "", "", 404},
		} {
			req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			if accept != "" {
				req.Header.Set("Accept", accept)
			}
			resp, body := ta.do(t, req)
			if resp.StatusCode != tc.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || !strings.HasPrefix(body, "{") {
				t.Errorf("%s %s (Accept %q): %d %s %.80s", tc.method, tc.path, accept, resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
		}
	}
}

// TestFaultsNeverQuoteSecrets: a vault value passed where a block cannot
// use it faults without quoting it: in the anonymous caller's answer, in
// /route/run's trace and answer, and in the run log a VIEWER reads, dry
// runs included. What is computed from a secret (its LENGTH, a comparison
// with the caller's input) is masked in /route/run too.
func TestFaultsNeverQuoteSecrets(t *testing.T) {
	ta, _ := runApp(t)
	ctx := context.Background()
	admin := ta.newUser(t, "ada", store.RoleAdmin)
	viewer := ta.newUser(t, "vic", store.RoleViewer)
	for _, u := range []store.User{admin, viewer} {
		if err := ta.h.store.AddMember(ctx, "shop", u.ID); err != nil {
			t.Fatal(err)
		}
	}
	const secret = "s3cr3t-7d1e0a"
	ta.putSecret(t, "shop", "API_KEY", secret, admin)
	h := as(ta.token(t, admin))
	runnable{id: "leak", method: "GET", path: "/leak", blocks: []string{
		`{"type":"VAULT","depth":0,"local_name":"s","key":"API_KEY"}`,
		`{"type":"FUNCTION","depth":0,"local_name":"p","func":"PAGINATE","params":[` + lit("ARRAY", "[1,2,3]") + `,` + ref("s") + `]}`,
	}}.save(t, ta, h)
	runnable{id: "derived", method: "GET", path: "/derived", params: `[{"id":"guess","bdtype":"STRING"}]`, blocks: []string{
		`{"type":"VAULT","depth":0,"local_name":"s","key":"API_KEY"}`,
		`{"type":"PROPERTY","depth":0,"local_name":"n","data":` + ref("s") + `,"apply":"LENGTH","additional":""}`,
		`{"type":"ASSIGNMENT","depth":0,"local_name":"right","conditions":[],"operations":[{"left":` + ref("s") + `,"right":` + ref("guess") + `,"operation_type":"EQUAL_TO","not":false,"next":"NONE"}]}`,
		`{"type":"ASSIGNMENT","depth":0,"local_name":"plain","conditions":[],"operations":[{"left":` + lit("INTEGER", "2") + `,"right":` + lit("INTEGER", "3") + `,"operation_type":"ADDITION","not":false,"next":"NONE"}]}`,
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("length", ref("n"), "right", ref("right"), "plain", ref("plain")) + `,"conditions":[]}`,
	}}.save(t, ta, h)

	status, body := ta.call(t, "GET", "/x/shop/leak", "", nil)
	if status != 500 || strings.Contains(body, "s3cr3t") || !strings.Contains(body, "not a string of 13 characters") {
		t.Errorf("anonymous answer: %d %s", status, body)
	}
	for _, dry := range []string{"true", "false"} {
		status, body = ta.call(t, "POST", "/route/run", `{"project_id":"shop","route_id":"leak","dry_run":`+dry+`}`, h)
		if status != 200 || strings.Contains(body, "s3cr3t") || !strings.Contains(body, `"outcome":"FAULT"`) {
			t.Errorf("/route/run (dry run %s): %d %s", dry, status, body)
		}
	}
	status, body = ta.call(t, "POST", "/route/run", `{"project_id":"shop","route_id":"derived","query":"guess=`+secret+`"}`, h)
	if status != 200 || !strings.Contains(body, `"body":{"length":"••••••","plain":5,"right":"••••••"}`) ||
		!strings.Contains(body, `"variable":"n","preview":"•••••• (from a vault value)"`) ||
		!strings.Contains(body, `"variable":"right","preview":"•••••• (from a vault value)"`) || !strings.Contains(body, `"variable":"plain","preview":"5"`) {
		t.Errorf("derived values: %d %s", status, body)
	}
	if err := ta.h.runs.flush(ctx); err != nil {
		t.Fatal(err)
	}
	status, body = ta.call(t, "GET", "/route/runs?project_id=shop", "", as(ta.token(t, viewer)))
	if status != 200 || strings.Contains(body, "s3cr3t") || !strings.Contains(body, "not a string of 13 characters") {
		t.Errorf("the run log: %d %s", status, body)
	}
}
