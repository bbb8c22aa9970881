package handlers

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"stencil/store"
)

// TestRouteStatsEqualTheRunLog: known numbers of 2xx, 4xx and 5xx runs
// through /x across two routes; /route/stats counts what the run log
// holds, by project, by route and by class, and its percentiles are
// numbers; a range too fine is refused naming step; a VIEWER member
// reads them, a non-member does not.
func TestRouteStatsEqualTheRunLog(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	fail := `{"type":"CONDITION","depth":0,"conditions":[` + cond(ref("n"), "EQUAL_TO", lit("INTEGER", "0")) + `],"action":"FAIL","fail":{"status":404,"message":"none"}}`
	runnable{id: "find", method: "GET", path: "/find", params: `[{"id":"n","bdtype":"INTEGER"}]`, blocks: []string{
		fail, `{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}`}}.save(t, ta, h)
	runnable{id: "broken", method: "GET", path: "/broken", blocks: []string{
		`{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"nowhere"}`}}.save(t, ta, h)
	want := map[string]int{"/x/shop/find?n=1": 7, "/x/shop/find?n=0": 3, "/x/shop/broken": 2, "/x/shop/nowhere": 4, "/x/shop/find/deeper": 1}
	for path, n := range want {
		for range n {
			ta.call(t, "GET", path, "", nil)
		}
	}
	if err := ta.h.runs.FlushLog(context.Background()); err != nil {
		t.Fatal(err)
	}
	count := func(query string) int {
		_, body := ta.call(t, "GET", "/route/runs?project_id=shop&limit=1"+query, "", h)
		var env struct{ Amount int }
		_ = json.Unmarshal([]byte(body), &env)
		return env.Amount
	}
	status, body := ta.call(t, "GET", "/route/stats?project_id=shop", "", h)
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	var got struct {
		Data struct {
			Series []struct {
				Requests int64
				P99      *float64 `json:"p99_ms"`
			}
			Totals struct {
				Requests  int
				Errors4xx int      `json:"errors_4xx"`
				Errors5xx int      `json:"errors_5xx"`
				P50       *float64 `json:"p50_ms"`
				P99       *float64 `json:"p99_ms"`
			}
			Routes []struct {
				RouteID      string `json:"route_id"`
				Requests     int
				ErrorRate    float64 `json:"error_rate"`
				ErrorRate4xx float64 `json:"error_rate_4xx"`
				ErrorRate5xx float64 `json:"error_rate_5xx"`
			}
			Unmatched *int
		}
	}
	_ = json.Unmarshal([]byte(body), &got)
	tot := got.Data.Totals
	if tot.Requests != count("") || tot.Requests != 12 || tot.Errors4xx != count("&status=4xx") || tot.Errors5xx != count("&status=5xx") ||
		tot.Errors4xx != 3 || tot.Errors5xx != 2 || tot.P50 == nil || tot.P99 == nil || *tot.P99 < *tot.P50 {
		t.Fatalf("totals %+v; the run log holds %d (%d 4xx, %d 5xx): %s", tot, count(""), count("&status=4xx"), count("&status=5xx"), body)
	}
	if len(got.Data.Series) != 24*60+1 && len(got.Data.Series) != 24*60 {
		t.Fatalf("%d points in 24 hours by minute", len(got.Data.Series))
	}
	if r := got.Data.Routes; len(r) != 2 || r[0].RouteID != "find" || r[0].Requests != count("&route_id=find") || r[0].ErrorRate != 0 ||
		r[0].ErrorRate4xx != 0.3 || r[0].ErrorRate5xx != 0 || r[1].RouteID != "broken" || r[1].Requests != 2 || r[1].ErrorRate != 1 || r[1].ErrorRate5xx != 1 {
		t.Fatalf("routes %+v", r)
	}
	// Requests no route matched: counted apart, in none of the above.
	if got.Data.Unmatched == nil || *got.Data.Unmatched != 5 || !strings.Contains(body, `"unmatched":5`) {
		t.Fatalf("unmatched %v: %s", got.Data.Unmatched, body)
	}
	_, one := ta.call(t, "GET", "/route/stats?project_id=shop&route_id=find&step=hour", "", h)
	if !strings.Contains(one, `"requests":10`) || strings.Contains(one, `"routes"`) || strings.Contains(one, `"unmatched"`) {
		t.Fatalf("one route by hour: %s", one)
	}
	for query, want := range map[string]string{
		"&step=minute&from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z": `"step":"gives 84960 points`,
		"&from=yesterday": `"from":"must be a time in RFC 3339`,
		"&to=2026-01-01T00:00:00Z&from=2026-01-02T00:00:00Z": `"from":"must be before to"`,
		"&step=week": `"step":"must be one of: minute, hour, day"`,
	} {
		if status, body := ta.call(t, "GET", "/route/stats?project_id=shop"+query, "", h); status != 422 || !strings.Contains(body, want) {
			t.Errorf("%s: %d %s", query, status, body)
		}
	}
	// /metrics counts the same, and forgets a route deleted.
	metrics := func() string {
		req := httptest.NewRequest("GET", "/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+ta.token(t, ta.root))
		_, body := ta.do(t, req)
		return body
	}
	m := metrics()
	for _, line := range []string{`stencil_x_requests_total{class="2xx",project="shop",route="find"} 7`, `stencil_x_requests_total{class="4xx",project="shop",route="find"} 3`,
		`stencil_x_requests_total{class="5xx",project="shop",route="broken"} 2`, `stencil_x_request_duration_seconds_count{project="shop",route="find"} 10`,
		`stencil_x_unmatched_total{project="shop"} 5`} {
		if !strings.Contains(m, line+"\n") {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	if status, body := ta.call(t, "DELETE", "/route/delete?project_id=shop&route_id=broken", "", h); status != 200 {
		t.Fatalf("delete: %d %s", status, body)
	}
	if m := metrics(); strings.Contains(m, `route="broken"`) || !strings.Contains(m, `route="find"`) {
		t.Fatal("/metrics keeps the series of a deleted route")
	}
	viewer := ta.newUser(t, "vera", store.RoleViewer)
	if err := ta.h.store.AddMember(context.Background(), "shop", viewer.ID, store.MembershipRole(viewer.Role)); err != nil {
		t.Fatal(err)
	}
	if status, _ := ta.call(t, "GET", "/route/stats?project_id=shop", "", as(ta.token(t, viewer))); status != 200 {
		t.Fatalf("a VIEWER member: %d", status)
	}
	outsider := ta.newUser(t, "otto", store.RoleAuthor)
	if status, body := ta.call(t, "GET", "/route/stats?project_id=shop", "", as(ta.token(t, outsider))); status != 403 && status != 404 {
		t.Fatalf("a non-member: %d %s", status, body)
	}
}
