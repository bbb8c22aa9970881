package handlers

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"stencil/store"
	"stencil/store/storetest"
)

// failBlock is a CONDITION that always fails with status.
func failBlock(status string) string {
	return `{"type":"CONDITION","depth":0,"conditions":[],"action":"FAIL","fail":{"status":` + status + `,"message":"no"}}`
}

// TestFailStatusIsAnError: a FAIL answers 400–599 only. A 1xx left clients
// waiting and, on a kept-alive connection, made the next answer read as
// this one's.
func TestFailStatusIsAnError(t *testing.T) {
	t.Parallel()
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
	if err := ta.h.runs.RoutesChanged(context.Background(), "shop"); err != nil {
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
	t.Parallel()
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
	t.Parallel()
	ta, _ := runApp(t)
	ctx := context.Background()
	admin := ta.newUser(t, "ada", store.RoleAdmin)
	viewer := ta.newUser(t, "vic", store.RoleViewer)
	for _, u := range []store.User{admin, viewer} {
		if err := ta.h.store.AddMember(ctx, "shop", u.ID, store.MembershipRole(u.Role)); err != nil {
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
	// A caller who sends the value itself (say, a key the route checks
	// against the vault) finds it masked in the run log's query string.
	if status, body = ta.call(t, "GET", "/x/shop/derived?guess="+secret, "", nil); status != 200 {
		t.Errorf("GET /x/shop/derived: %d %s", status, body)
	}
	if err := ta.h.runs.FlushLog(ctx); err != nil {
		t.Fatal(err)
	}
	status, body = ta.call(t, "GET", "/route/runs?project_id=shop", "", as(ta.token(t, viewer)))
	if !strings.Contains(body, `"query":"guess=••••••"`) {
		t.Errorf("the run log does not keep the masked query: %s", body)
	}
	if status != 200 || strings.Contains(body, "s3cr3t") || !strings.Contains(body, "not a string of 13 characters") {
		t.Errorf("the run log: %d %s", status, body)
	}
}

// adminOf adds a new ADMIN member to project shop and returns its JSON
// headers.
func adminOf(t *testing.T, ta *testApp, name string) (store.User, map[string]string) {
	t.Helper()
	u := ta.newUser(t, name, store.RoleAdmin)
	if err := ta.h.store.AddMember(context.Background(), "shop", u.ID, store.MembershipRole(u.Role)); err != nil {
		t.Fatal(err)
	}
	return u, as(ta.token(t, u))
}

// TestRateLimit: a project's rate limit at /x answers 429 with
// Retry-After past its burst, runs nothing, logs LIMITED, and holds across
// instances (two apps on one database share the count).
func TestRateLimit(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	_, ah := adminOf(t, ta, "ada")
	runnable{id: "add", method: "POST", path: "/add", blocks: []string{
		`{"type":"OBJECT","depth":0,"local_name":"o","pairs":` + pairsOf("title", lit("STRING", "x")) + `}`,
		`{"type":"CREATE","depth":0,"ref_col":"books","ref_object":"o","save":true,"conditions":[]}`,
	}}.save(t, ta, h)
	for _, tc := range []struct{ body, field string }{
		{`{"project_id":"shop","x_rate_limit":-1}`, "x_rate_limit"},
		{`{"project_id":"shop","x_rate_burst":0}`, "x_rate_burst"},
		{`{"project_id":"shop","x_rate_limit":100001}`, "x_rate_limit"},
	} {
		if status, body := ta.call(t, "PATCH", "/project/update", tc.body, ah); status != 422 || !strings.Contains(body, `"`+tc.field+`"`) {
			t.Errorf("%s: %d %s", tc.body, status, body)
		}
	}
	if status, body := ta.call(t, "PATCH", "/project/update", `{"project_id":"shop","x_rate_limit":1,"x_rate_burst":3}`, ah); status != 200 ||
		!strings.Contains(body, `"x_rate_limit":1,"x_rate_burst":3`) {
		t.Fatalf("set the limit: %d %s", status, body)
	}
	other := newTestAppOn(t, ta.pool) // a second instance on the same database
	answers := map[int]int{}
	for i := range 6 {
		app := ta
		if i%2 == 1 {
			app = other
		}
		req := httptest.NewRequest("POST", "/x/shop/add", nil)
		resp, body := app.do(t, req)
		answers[resp.StatusCode]++
		if resp.StatusCode == 429 && (resp.Header.Get("Retry-After") != "1" || !strings.Contains(body, "Error: rate limit exceeded")) {
			t.Errorf("429 without its Retry-After or message: %q %s", resp.Header.Get("Retry-After"), body)
		}
	}
	if answers[200] != 3 || answers[429] != 3 {
		t.Fatalf("answers by status across two instances: %v, want 3 × 200 then 429", answers)
	}
	if got := ta.records(t, "books"); strings.Count(got, `"title": "x"`) != 3 {
		t.Errorf("limited requests ran: %s", got)
	}
	for _, app := range []*testApp{ta, other} {
		if err := app.h.runs.FlushLog(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if status, body := ta.call(t, "GET", "/route/runs?project_id=shop", "", ah); status != 200 || strings.Count(body, `"ended":"LIMITED"`) != 3 || strings.Count(body, `"status":429`) != 3 {
		t.Errorf("the run log: %d %s", status, body)
	}
	// 0 turns the limit off.
	if status, body := ta.call(t, "PATCH", "/project/update", `{"project_id":"shop","x_rate_limit":0}`, ah); status != 200 {
		t.Fatalf("limit off: %d %s", status, body)
	}
	for range 5 {
		if status, body := ta.call(t, "POST", "/x/shop/add", "", nil); status != 200 {
			t.Fatalf("without a limit: %d %s", status, body)
		}
	}
}

// TestRunsDoNotStarveOtherProjects: 40 anonymous callers of a route of
// project hog that writes and then keeps reading until its time limit
// hold no connection the platform's API needs: project shop's vault read
// and record create answer while every hog run is still under way (before,
// they waited for the hog runs to end, 3–15 s). Hog runs past their
// project's share of the runs' pool answer 503 BUSY.
func TestRunsDoNotStarveOtherProjects(t *testing.T) {
	t.Parallel()
	url := storetest.URL(t)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	ta := newTestAppPools(t, testPools{main: storetest.PoolOn(t, url+sep+"pool_max_conns=8"), runTx: storetest.PoolOn(t, url+sep+"pool_max_conns=4")}, testConfig(t))
	ta.root = ta.newUser(t, "root", store.RoleRoot)
	ta.h.runs.Limits.Time = 3 * time.Second
	ctx := context.Background()
	admin := ta.newUser(t, "ada", store.RoleAdmin)
	for _, p := range []store.Project{{ID: "shop", Name: "Shop", APIPath: "/shop"}, {ID: "hog", Name: "Hog", APIPath: "/hog"}} {
		if err := ta.h.store.CreateProject(ctx, &p, admin.ID); err != nil {
			t.Fatal(err)
		}
		if err := ta.h.store.CreateCollection(ctx, &store.Collection{ProjectID: p.ID, ID: "books", Name: "Books"}, admin.ID); err != nil {
			t.Fatal(err)
		}
	}
	ta.putSecret(t, "shop", "API_KEY", "k", admin)
	h := as(ta.token(t, admin))
	hog := runnable{id: "w", method: "POST", path: "/w", blocks: []string{
		`{"type":"OBJECT","depth":0,"local_name":"o","pairs":` + pairsOf("n", lit("INTEGER", "1")) + `}`,
		`{"type":"CREATE","depth":0,"ref_col":"books","ref_object":"o","save":true,"conditions":[]}`,
		`{"type":"LOOP","depth":0,"local_name":"i","min":` + lit("INTEGER", "0") + `,"max":` + lit("INTEGER", "1000000") + `,"step":` + lit("INTEGER", "1") + `}`,
		`{"type":"FETCH","depth":1,"local_name":"rows","ref_col":"books"}`,
	}}
	if status, body := ta.call(t, "POST", "/route/create", `{"project_id":"hog","route":`+hog.JSON()+`}`, h); status != 201 {
		t.Fatalf("%d %s", status, body)
	}
	base := ta.listen(t)
	var wg sync.WaitGroup
	hogStatus := make(chan int, 40)
	var firstHog atomic.Int64
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := http.Post(base+"/x/hog/w", "application/json", nil)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			firstHog.CompareAndSwap(0, time.Now().UnixNano())
			hogStatus <- resp.StatusCode
		}()
	}
	time.Sleep(300 * time.Millisecond) // the hog runs under way
	var lastShop time.Time
	for i := range 5 {
		for _, req := range []struct{ method, path, body string }{
			{"GET", "/vault/fetch/one?project_id=shop&key=API_KEY", ""},
			{"POST", "/data/create", fmt.Sprintf(`{"project_id":"shop","collection_id":"books","data":{"n":%d}}`, i)},
		} {
			r, _ := http.NewRequest(req.method, base+req.path, strings.NewReader(req.body))
			for k, v := range h {
				r.Header.Set(k, v)
			}
			r.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode/100 != 2 {
				t.Errorf("%s %s beside the hog runs: %d", req.method, req.path, resp.StatusCode)
			}
			lastShop = time.Now()
		}
	}
	wg.Wait()
	close(hogStatus)
	byStatus := map[int]int{}
	for s := range hogStatus {
		byStatus[s]++
	}
	if first := time.Unix(0, firstHog.Load()); !lastShop.Before(first) {
		t.Errorf("shop's last request ended %s after the first hog run: it waited for them", lastShop.Sub(first))
	}
	if byStatus[503] == 0 || byStatus[500]+byStatus[503] != 40 {
		t.Errorf("hog runs by status: %v, want time-limit faults and 503s past the project's share", byStatus)
	}
}

// TestRateLimitForm: the project page's details form sets the rate limit,
// and a value out of range is named beside its field.
func TestRateLimitForm(t *testing.T) {
	t.Parallel()
	ta, _ := runApp(t)
	adminOf(t, ta, "ada")
	b := browser(ta.signIn(t, "ada"))
	form := merge(b, map[string]string{"Content-Type": "application/x-www-form-urlencoded", "HX-Request": "true"})
	ta.run(t, []scenario{
		{name: "the page shows the limit", method: "GET", path: "/web/project?id=shop", headers: b, status: 200,
			want: []string{`name="x_rate_limit"`, `name="x_rate_burst"`, "0 turns the limit off"}},
		{name: "a burst of 0", method: "PATCH", path: "/project/update", headers: form, status: 422,
			body: "project_id=shop&name=Shop&api_path=%2Fshop&description=&x_rate_limit=5&x_rate_burst=0", want: []string{`id="e-x_rate_burst"`}},
		{name: "saved", method: "PATCH", path: "/project/update", headers: form, status: 200,
			body: "project_id=shop&name=Shop&api_path=%2Fshop&description=&x_rate_limit=5&x_rate_burst=7"},
		// Read as the request's own project, as the page's links name it.
		{name: "the page shows what was saved", method: "GET", path: "/web/project?project_id=shop", headers: b, status: 200,
			want: []string{`value="5"`, `value="7"`}},
	})
	p, err := ta.h.store.Project(context.Background(), "shop", 0)
	if err != nil || p.XRateLimit != 5 || p.XRateBurst != 7 {
		t.Fatalf("%+v %v", p, err)
	}
}
