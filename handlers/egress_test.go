package handlers

import (
	"net/url"
	"strings"
	"testing"
)

// TestEgressHosts: a project's egress hosts are set on create and update
// (ADMIN+), by JSON and by the page's form, kept in lower case and each
// once; what is not a host is refused naming the field and changes
// nothing; the project page shows the list.
func TestEgressHosts(t *testing.T) {
	t.Parallel()
	ta, _ := runApp(t)
	_, ah := adminOf(t, ta, "ada")
	ta.run(t, []scenario{
		{name: "created with hosts", method: "POST", path: "/project/create", headers: ah, status: 201,
			body: `{"id":"pay","name":"Pay","api_path":"/pay","x_egress_hosts":["API.Stripe.com","*.example.com","api.stripe.com"]}`,
			want: []string{`"x_egress_hosts":["api.stripe.com","*.example.com"]`}},
		{name: "created without", method: "POST", path: "/project/create", headers: ah, status: 201,
			body: `{"id":"open","name":"Open","api_path":"/open"}`, want: []string{`"x_egress_hosts":[]`}},
		{name: "updated", method: "PATCH", path: "/project/update", headers: ah, status: 200,
			body: `{"project_id":"open","x_egress_hosts":["hooks.example.com"]}`, want: []string{`"x_egress_hosts":["hooks.example.com"]`}},
		{name: "left out: unchanged", method: "PATCH", path: "/project/update", headers: ah, status: 200,
			body: `{"project_id":"open","name":"Open 2"}`, want: []string{`"x_egress_hosts":["hooks.example.com"]`}},
	})
	for hosts, want := range map[string]string{
		`["https://api.example.com"]`: "without scheme, port or path",
		`["api.example.com:443"]`:     "without scheme, port or path",
		`["api.example.com/v1"]`:      "without scheme, port or path",
		`["*"]`:                       "must be a host name",
		`["*.com"]`:                   "must be a host name",
		`["bad_name.example.com"]`:    "must be a host name",
		`[` + strings.Repeat(`"a.example.com",`, 100) + `"b.example.com"]`: "at most 100",
	} {
		status, body := ta.call(t, "PATCH", "/project/update", `{"project_id":"open","x_egress_hosts":`+hosts+`}`, ah)
		if status != 422 || !strings.Contains(body, `"x_egress_hosts":"`) || !strings.Contains(body, want) {
			t.Errorf("%.60s: %d %s", hosts, status, body)
		}
	}
	if status, body := ta.call(t, "GET", "/project/fetch/one?project_id=open", "", ah); status != 200 || !strings.Contains(body, `"x_egress_hosts":["hooks.example.com"]`) {
		t.Fatalf("after the refusals: %d %s", status, body)
	}
	b := browser(ta.signIn(t, "ada"))
	form := url.Values{"project_id": {"open"}, "name": {"Open"}, "api_path": {"/open"}, "x_rate_limit": {"50"}, "x_rate_burst": {"100"},
		"x_cors_origins": {""}, "x_egress_hosts": {"api.example.com\r\n\r\n *.hooks.example.com \r\n"}}
	page := merge(b, map[string]string{"Content-Type": "application/x-www-form-urlencoded", "HX-Request": "true"})
	if status, body := ta.call(t, "PATCH", "/project/update", form.Encode(), page); status >= 400 {
		t.Fatalf("the form: %d %s", status, body)
	}
	if status, body := ta.call(t, "GET", "/project/fetch/one?project_id=open", "", ah); status != 200 || !strings.Contains(body, `"x_egress_hosts":["api.example.com","*.hooks.example.com"]`) {
		t.Fatalf("after the form: %d %s", status, body)
	}
	if status, body := ta.call(t, "GET", "/web/project?id=open", "", b); status != 200 || !strings.Contains(body, `name="x_egress_hosts"`) || !strings.Contains(body, "api.example.com\n*.hooks.example.com") {
		t.Fatalf("the page: %d %s", status, body)
	}
}
