package handlers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"stencil/store"
)

// Schedules through the API (docs/schedules.md): made, listed with their
// next runs, paused and resumed, deleted; what cannot run on a schedule is
// refused by name.
func TestSchedulesAPI(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	runnable{id: "nightly", method: "POST", path: "/nightly", blocks: []string{`{"type":"RETURN","depth":0,"pairs":` + pairsOf("ok", lit("BOOLEAN", "true")) + `,"conditions":[]}`}}.save(t, ta, h)
	runnable{id: "one", method: "GET", path: "/books/:id", blocks: []string{`{"type":"RETURN","depth":0,"pairs":` + pairsOf("ok", lit("BOOLEAN", "true")) + `,"conditions":[]}`}}.save(t, ta, h)
	runnable{id: "mine", method: "GET", path: "/mine", auth: `{"active":true,"field":"uid","ref_col":"books"}`,
		blocks: []string{`{"type":"RETURN","depth":0,"pairs":` + pairsOf("ok", lit("BOOLEAN", "true")) + `,"conditions":[]}`}}.save(t, ta, h)
	create := func(body string) string { return `{"project_id":"shop",` + body + `}` }
	ta.run(t, []scenario{
		{name: "a nightly schedule", method: "POST", path: "/route/schedule/create", headers: h, body: create(`"route_id":"nightly","cron":"30 2 * * *","timezone":"Europe/Berlin","body":{"full":true}`),
			status: 201, want: []string{`"cron":"30 2 * * *"`, `"timezone":"Europe/Berlin"`, `"body":{"full":true}`, `"active":true`, `"next_runs":["`}},
		{name: "every 15 minutes, UTC by default", method: "POST", path: "/route/schedule/create", headers: h, body: create(`"route_id":"nightly","cron":"@every 15m"`),
			status: 201, want: []string{`"timezone":"UTC"`, `"body":null`}},
		{name: "a bad expression", method: "POST", path: "/route/schedule/create", headers: h, body: create(`"route_id":"nightly","cron":"* * *"`),
			status: 422, want: []string{`"message":"Error: cron must be five fields (minute hour day-of-month month day-of-week) or one of @hourly`}},
		{name: "seconds", method: "POST", path: "/route/schedule/create", headers: h, body: create(`"route_id":"nightly","cron":"@every 30s"`),
			status: 422, want: []string{"Error: cron @every takes a whole number of minutes or hours, at least 1m"}},
		{name: "a zone that is none", method: "POST", path: "/route/schedule/create", headers: h, body: create(`"route_id":"nightly","cron":"@daily","timezone":"Mars/Olympus"`),
			status: 422, want: []string{`Error: timezone \"Mars/Olympus\" is not an IANA time zone`}},
		{name: "a route with path parameters", method: "POST", path: "/route/schedule/create", headers: h, body: create(`"route_id":"one","cron":"@daily"`),
			status: 422, want: []string{"Error: route_id names a route whose path has parameters to fill"}},
		{name: "a route that checks its callers", method: "POST", path: "/route/schedule/create", headers: h, body: create(`"route_id":"mine","cron":"@daily"`),
			status: 422, want: []string{"Error: route_id names a route that checks its callers (auth_jwt)"}},
		{name: "no such route", method: "POST", path: "/route/schedule/create", headers: h, body: create(`"route_id":"nope","cron":"@daily"`),
			status: 404, want: []string{"Error: route nope not found"}},
		{name: "a body that is no object", method: "POST", path: "/route/schedule/create", headers: h, body: create(`"route_id":"nightly","cron":"@daily","body":[1]`),
			status: 422, want: []string{"Error: body must be a JSON object or null"}},
		{name: "the route's schedules", method: "GET", path: "/route/schedule/fetch?project_id=shop&route_id=nightly", headers: h, status: 200,
			want: []string{`"amount":2`, `"cron":"@every 15m"`}},
		{name: "paused", method: "PATCH", path: "/route/schedule/update", headers: h, body: `{"project_id":"shop","id":1,"active":false}`, status: 200,
			want: []string{`"message":"Schedule paused"`, `"active":false`, `"next_runs":[]`}},
		{name: "resumed", method: "PATCH", path: "/route/schedule/update", headers: h, body: `{"project_id":"shop","id":1,"active":true}`, status: 200,
			want: []string{`"message":"Schedule resumed"`, `"active":true`, `"next_runs":["`}},
		{name: "a change to a bad zone", method: "PATCH", path: "/route/schedule/update", headers: h, body: `{"project_id":"shop","id":1,"timezone":"Nowhere"}`, status: 422},
		{name: "deleted", method: "DELETE", path: "/route/schedule/delete?project_id=shop&id=2", headers: h, status: 200},
		{name: "gone", method: "DELETE", path: "/route/schedule/delete?project_id=shop&id=2", headers: h, status: 404, want: []string{"Error: schedule 2 not found"}},
		{name: "another project's", method: "PATCH", path: "/route/schedule/update", headers: h, body: `{"project_id":"shop","id":99,"active":false}`, status: 404},
	})
	// Berlin's 02:30, in UTC: 00:30 in summer, 01:30 in winter.
	_, list := ta.call(t, "GET", "/route/schedule/fetch?project_id=shop", "", h)
	if !strings.Contains(list, "T01:30:00Z") && !strings.Contains(list, "T00:30:00Z") {
		t.Fatalf("the next runs of 30 2 * * * in Berlin: %s", list)
	}
	// A schedule follows its route when the route's id changes, and goes
	// with it.
	renamed := runnable{id: "nightly_run", method: "POST", path: "/nightly", blocks: []string{`{"type":"RETURN","depth":0,"pairs":` + pairsOf("ok", lit("BOOLEAN", "true")) + `,"conditions":[]}`}}
	ta.expectStatus(t, "rename", "PATCH", "/route/update", `{"project_id":"shop","route_id":"nightly","route":`+renamed.JSON()+`}`, h, 200)
	if _, list := ta.call(t, "GET", "/route/schedule/fetch?project_id=shop&route_id=nightly_run", "", h); !strings.Contains(list, `"amount":1`) {
		t.Fatalf("the schedule after its route's rename: %s", list)
	}
	ta.expectStatus(t, "route gone", "DELETE", "/route/delete?project_id=shop&route_id=nightly_run", "", h, 200)
	if _, list := ta.call(t, "GET", "/route/schedule/fetch?project_id=shop", "", h); !strings.Contains(list, `"amount":0`) {
		t.Fatalf("the schedules after their route was deleted: %s", list)
	}
}

// A schedule of @every 1m with two instances on one database, driven by a
// clock the test sets: each tick runs the route once, whichever instance
// claims it; after a time away only the latest missed tick runs, once; a
// tick runs with the schedule's query and body, logged with trigger
// schedule.
func TestScheduleRunsOncePerTick(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	tb := newTestAppOn(t, ta.pool)
	object := `{"type":"OBJECT","depth":0,"local_name":"row","pairs":` + pairsOf("title", ref("title"), "tag", ref("tag")) + `}`
	create := `{"type":"CREATE","depth":0,"ref_col":"books","ref_object":"row","save":true,"conditions":[]}`
	runnable{id: "tick", method: "POST", path: "/tick", params: `[{"id":"tag","bdtype":"STRING"}]`, body: `[{"id":"title","bdtype":"STRING"}]`,
		blocks: []string{object, create, `{"type":"RETURN","depth":0,"pairs":` + pairsOf("ok", lit("BOOLEAN", "true")) + `,"conditions":[]}`}}.save(t, ta, h)
	ta.expectStatus(t, "schedule", "POST", "/route/schedule/create", `{"project_id":"shop","route_id":"tick","cron":"@every 1m","query":"tag=nightly","body":{"title":"Ticked"}}`, h, 201)

	base := time.Now().Truncate(time.Minute).Add(time.Minute)
	s1, s2 := ta.h.runs.Scheduler(nil), tb.h.runs.Scheduler(nil)
	look := func(at time.Time) {
		s1.Now, s2.Now = func() time.Time { return at }, func() time.Time { return at }
		var wg sync.WaitGroup
		for _, s := range []interface{ Once(context.Context) }{s1, s2} {
			wg.Add(1)
			go func() { defer wg.Done(); s.Once(context.Background()) }()
		}
		wg.Wait()
		s1.Wait()
		s2.Wait()
	}
	ticked := func() int { return strings.Count(ta.records(t, "books"), `"Ticked"`) }
	for k := range 3 {
		look(base.Add(time.Duration(k)*time.Minute + 10*time.Second))
		look(base.Add(time.Duration(k)*time.Minute + 40*time.Second)) // the same tick, looked at again
		if got := ticked(); got != k+1 {
			t.Fatalf("after tick %d: %d runs", k+1, got)
		}
	}
	// Away for 16 minutes: the latest missed tick runs, once.
	look(base.Add(18*time.Minute + 5*time.Second))
	look(base.Add(18*time.Minute + 6*time.Second))
	if got := ticked(); got != 4 {
		t.Fatalf("after a time away: %d runs, want 4", got)
	}
	if !strings.Contains(ta.records(t, "books"), `"tag": "nightly"`) {
		t.Fatalf("the schedule's query did not reach the run: %s", ta.records(t, "books"))
	}
	if err := ta.h.runs.FlushLog(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := tb.h.runs.FlushLog(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, runs := ta.call(t, "GET", "/route/runs?project_id=shop&route_id=tick", "", h)
	if strings.Count(runs, `"trigger":"schedule"`) != 4 {
		t.Fatalf("the run log's scheduled runs: %s", runs)
	}
	if _, page := ta.call(t, "GET", "/web/routes/runs?project_id=shop", "", browser(ta.signIn(t, "author"))); strings.Count(page, `data-testid="run-trigger">on a schedule`) != 4 {
		t.Fatalf("the run log page does not say the runs were scheduled")
	}
	// The run log filtered by what started the runs: counted, up to a cap.
	if _, only := ta.call(t, "GET", "/route/runs?project_id=shop&trigger=schedule", "", h); strings.Count(only, `"trigger":"schedule"`) != 4 ||
		!strings.Contains(only, `"amount":4`) || strings.Contains(only, `"amount_capped":true`) {
		t.Fatalf("the scheduled runs: %s", only)
	}
	if _, none := ta.call(t, "GET", "/route/runs?project_id=shop&trigger=http", "", h); !strings.Contains(none, `"amount":0`) {
		t.Fatalf("the runs requests started: %s", none)
	}
	if status, bad := ta.call(t, "GET", "/route/runs?project_id=shop&trigger=cron", "", h); status < 400 || status >= 500 || !strings.Contains(bad, "trigger") {
		t.Fatalf("a trigger that is none: %d %s", status, bad)
	}
	if _, page := ta.call(t, "GET", "/web/routes/runs?project_id=shop&trigger=schedule", "", browser(ta.signIn(t, "author"))); !strings.Contains(page, `<option value="schedule" selected>`) {
		t.Fatal("the run log page does not keep its trigger filter")
	}
	// The schedule says how its last ticks went.
	_, list := ta.call(t, "GET", "/route/schedule/fetch?project_id=shop&route_id=tick", "", h)
	if strings.Count(list, `"state":"done","status":200`) != 4 {
		t.Fatalf("the schedule's last ticks: %s", list)
	}
}

// A tick claimed while the schedule's previous run still runs is skipped;
// a claim left by an instance that died (older than the stale bound) does
// not hold later ticks off; a tick is claimed once.
func TestTickClaims(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	runnable{id: "slow", method: "POST", path: "/slow", blocks: []string{`{"type":"RETURN","depth":0,"pairs":` + pairsOf("ok", lit("BOOLEAN", "true")) + `,"conditions":[]}`}}.save(t, ta, h)
	_, body := ta.call(t, "POST", "/route/schedule/create", `{"project_id":"shop","route_id":"slow","cron":"@every 1m"}`, h)
	id := dataID(t, body)
	ctx, st := context.Background(), ta.h.store
	t0 := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	claim := func(tick time.Time, stale time.Duration, want string) {
		t.Helper()
		if got, err := st.ClaimTick(ctx, id, tick, stale); err != nil || got != want {
			t.Fatalf("claim of %s: %q %v, want %q", tick.Format(time.TimeOnly), got, err, want)
		}
	}
	claim(t0, time.Minute, store.TickRunning)
	claim(t0, time.Minute, "") // claimed already
	claim(t0.Add(time.Minute), time.Minute, store.TickSkipped)
	claim(t0.Add(2*time.Minute), time.Microsecond, store.TickRunning) // the first claim counts as stale
	if err := st.FinishTick(ctx, id, t0, 200); err != nil {
		t.Fatal(err)
	}
	if err := st.FinishTick(ctx, id, t0.Add(2*time.Minute), 200); err != nil {
		t.Fatal(err)
	}
	claim(t0.Add(3*time.Minute), time.Minute, store.TickRunning)
	all, err := st.Ticks(ctx, []int64{id, id + 1}, 10)
	ticks := all[id]
	if err != nil || len(all) != 1 || len(ticks) != 4 || ticks[2].State != store.TickSkipped || ticks[3].State != store.TickDone || *ticks[3].Status != 200 {
		t.Fatalf("ticks: %+v %v", ticks, err)
	}
}

// The route page's form: a schedule added as a browser sends it, a bad
// expression answered with the form and the error beside its field, and
// a pause from the page's button.
func TestScheduleForm(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	runnable{id: "nightly", method: "POST", path: "/nightly", blocks: []string{`{"type":"RETURN","depth":0,"pairs":` + pairsOf("ok", lit("BOOLEAN", "true")) + `,"conditions":[]}`}}.save(t, ta, h)
	cookie, csrf := ta.signIn(t, "author")
	send := func(method, path string, form url.Values) (int, string, http.Header) {
		form.Set("csrf_token", csrf)
		req := httptest.NewRequest(method, path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range merge(browser(cookie, csrf), map[string]string{"HX-Request": "true"}) {
			req.Header.Set(k, v)
		}
		resp, body := ta.do(t, req)
		return resp.StatusCode, body, resp.Header
	}
	status, body, header := send("POST", "/route/schedule/create", url.Values{"project_id": {"shop"}, "route_id": {"nightly"}, "cron": {"0 3 * * *"},
		"timezone": {"Europe/Berlin"}, "query": {"full=1"}, "body": {`{"deep":true}`}})
	if status != 200 || header.Get("HX-Location") == "" {
		t.Fatalf("the form's schedule: %d %s %v", status, body, header)
	}
	status, body, _ = send("POST", "/route/schedule/create", url.Values{"project_id": {"shop"}, "route_id": {"nightly"}, "cron": {"* * *"}, "timezone": {"UTC"}})
	if status != 422 || !strings.Contains(body, `id="schedule-form"`) || !strings.Contains(body, `<p id="se-cron" class="field-error">must be five fields`) || !strings.Contains(body, `value="* * *"`) {
		t.Fatalf("a bad expression from the form: %d %s", status, body)
	}
	status, body, _ = send("PATCH", "/route/schedule/update", url.Values{"project_id": {"shop"}, "id": {"1"}, "active": {"false"}})
	if status != 200 || !strings.Contains(body, `<section id="schedules"`) || !strings.Contains(body, "Schedule 0 3 * * * paused.") {
		t.Fatalf("a pause from the page: %d %s", status, body)
	}
	_, list := ta.call(t, "GET", "/route/schedule/fetch?project_id=shop", "", h)
	if !strings.Contains(list, `"active":false`) || !strings.Contains(list, `"body":{"deep":true}`) || !strings.Contains(list, `"query":"full=1"`) {
		t.Fatalf("the schedule after the page's pause: %s", list)
	}
}
