package handlers

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"stencil/store"
)

// TestJobsAPI: a route's ENQUEUE makes jobs a member lists by route and
// state; an AUTHOR cancels and retries them, each an event; a VIEWER
// member reads but changes none; a running or completed job is not
// retried; a job of another project, or none, is 404.
func TestJobsAPI(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	runnable{id: "remind", method: "POST", path: "/remind", blocks: []string{`{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}`}}.save(t, ta, h)
	runnable{id: "signup", method: "POST", path: "/signup", blocks: []string{
		`{"type":"ENQUEUE","depth":0,"route_id":"remind","query":[],"body":null,"delay_ms":` + lit("INTEGER", "3600000") + `,"max_attempts":3,"conditions":[],"local_name":"job"}`,
		`{"type":"RETURN","depth":0,"pairs":` + pairsOf("job", ref("job")) + `,"conditions":[]}`}}.save(t, ta, h)
	for range 3 {
		if status, body := ta.call(t, "POST", "/x/shop/signup", "", nil); status != 200 {
			t.Fatalf("signup: %d %s", status, body)
		}
	}
	ids := func(state string) []int64 {
		t.Helper()
		jobs, _, _, err := ta.h.store.Jobs(context.Background(), store.JobQuery{Project: "shop", State: state, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, j := range jobs {
			out = append(out, j.ID)
		}
		return out
	}
	all := ids("")
	if len(all) != 3 {
		t.Fatalf("%d jobs", len(all))
	}
	first, last := fmt.Sprint(all[2]), fmt.Sprint(all[0])
	viewer := ta.newUser(t, "viewer", store.RoleViewer)
	if err := ta.h.store.AddMember(context.Background(), "shop", viewer.ID, store.MembershipRole(viewer.Role)); err != nil {
		t.Fatal(err)
	}
	v := as(ta.token(t, viewer))
	key := func(id string) string { return `{"project_id":"shop","id":` + id + `}` }
	later := func(route string) string {
		return runnable{id: "later_" + route, method: "POST", path: "/later/" + route, blocks: []string{
			`{"type":"ENQUEUE","depth":0,"route_id":"` + route + `","query":[],"body":null,"delay_ms":null,"max_attempts":5,"conditions":[],"local_name":""}`}}.JSON()
	}
	runnable{id: "one", method: "GET", path: "/books/:id", blocks: []string{`{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}`}}.save(t, ta, h)
	ta.run(t, []scenario{
		{name: "a job of a route not made yet", method: "POST", path: "/route/create", headers: h, body: `{"project_id":"shop","route":` + later("nope") + `}`, status: 201,
			want: []string{"route nope does not exist in this project yet: its jobs would be cancelled (route.flow.blocks[0].route_id)"}},
		{name: "a job of a route that needs a caller", method: "POST", path: "/route/create", headers: h, body: `{"project_id":"shop","route":` + later("one") + `}`, status: 201,
			want: []string{"route one cannot run without a caller (path parameters, auth_jwt or auth_signature): its jobs would be cancelled"}},
		{name: "a delay past 30 days", method: "POST", path: "/route/create", headers: h, status: 422,
			body: `{"project_id":"shop","route":` + strings.Replace(later("remind"), `"delay_ms":null`, `"delay_ms":`+lit("INTEGER", "2592000001"), 1) + `}`,
			want: []string{"delay_ms.data must be a whole number of milliseconds from 0 to 2592000000 (30 days)"}},
		{name: "the project's jobs", method: "GET", path: "/route/job/fetch?project_id=shop", headers: v, status: 200,
			want: []string{`"amount":3`, `"id":` + last + `,"route_id":"remind","state":"scheduled","attempts":0,"max_attempts":3,"run_at":"`, `"last_error":null`, `"finished_at":null`}},
		{name: "one route's, none", method: "GET", path: "/route/job/fetch?project_id=shop&route_id=signup", headers: v, status: 200, want: []string{`"amount":0`, `"data":[]`}},
		{name: "a page", method: "GET", path: "/route/job/fetch?project_id=shop&limit=1&offset=1", headers: v, status: 200, want: []string{`"amount":3`, `"next":"`}},
		{name: "a state that is none", method: "GET", path: "/route/job/fetch?project_id=shop&state=lost", headers: v, status: 422,
			want: []string{"Error: state must be one of: scheduled, running, retryable, completed, discarded, cancelled"}},
		{name: "a viewer cancels", method: "POST", path: "/route/job/cancel", headers: v, body: key(first), status: 403},
		{name: "cancelled", method: "POST", path: "/route/job/cancel", headers: h, body: key(first), status: 200,
			want: []string{`"message":"Job cancelled"`, `"state":"cancelled"`, `"finished_at":"`}},
		{name: "cancelled ones", method: "GET", path: "/route/job/fetch?project_id=shop&state=cancelled", headers: v, status: 200, want: []string{`"amount":1`, `"id":` + first}},
		{name: "retried", method: "POST", path: "/route/job/retry", headers: h, body: key(first), status: 200,
			want: []string{`"message":"Job due now"`, `"state":"scheduled"`, `"finished_at":null`}},
		{name: "no such job", method: "POST", path: "/route/job/retry", headers: h, body: key("999999"), status: 404, want: []string{"Error: job 999999 not found"}},
		{name: "another project's", method: "POST", path: "/route/job/cancel", headers: h, body: `{"project_id":"other","id":` + first + `}`, status: 404},
		{name: "no id", method: "POST", path: "/route/job/cancel", headers: h, body: `{"project_id":"shop"}`, status: 400, want: []string{"Error: id is required"}},
	})
	// A completed job is not retried.
	if _, err := ta.h.store.Pool().Exec(context.Background(), "UPDATE river_job SET state = 'completed', finalized_at = now() WHERE id = $1", all[1]); err != nil {
		t.Fatal(err)
	}
	ta.expectStatus(t, "a completed job retried", "POST", "/route/job/retry", key(fmt.Sprint(all[1])), h, 409)
	_, events := ta.call(t, "GET", "/event/fetch?project_id=shop&type=job_cancel", "", as(ta.token(t, ta.root)))
	if !strings.Contains(events, `"object":"remind/`+first+`"`) || !strings.Contains(events, "job "+first+" of route remind cancelled") {
		t.Fatalf("events: %s", events)
	}
}
