package handlers

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestPagesTakeBearerTokens: a page asked for with a bearer token (a JWT or
// a personal access token) has no browser session behind it; every page and
// browser form of the router answers it without a 5xx, as a page or as the
// envelope, never a panic.
func TestPagesTakeBearerTokens(t *testing.T) {
	t.Parallel()
	ta, h := runApp(t)
	status, body := ta.call(t, "POST", "/pat/create", `{"name":"pages"}`, h)
	var env struct{ Data struct{ Token string } }
	if err := json.Unmarshal([]byte(body), &env); err != nil || status != 201 {
		t.Fatalf("a PAT: %d %s", status, body)
	}
	tokens := map[string]string{"jwt": h["Authorization"], "pat": "Bearer " + env.Data.Token}
	seen := 0
	for _, r := range ta.app.GetRoutes(true) {
		if r.Method == http.MethodHead || !(r.Path == "/" || strings.HasPrefix(r.Path, "/web/") || r.Path == "/scalar") {
			continue
		}
		for kind, token := range tokens {
			for _, accept := range []string{"text/html", "application/json"} {
				path := r.Path + "?project_id=shop&id=shop&route_id=r&key=K&token=t"
				status, body := ta.call(t, r.Method, path, "", map[string]string{"Accept": accept, "Authorization": token})
				if status >= 500 {
					t.Errorf("%s %s with a %s for %s: %d %.200s", r.Method, r.Path, kind, accept, status, body)
				}
				seen++
			}
		}
	}
	// Right credentials on the sign-in form, with a bearer token beside
	// them: there is no browser session to sign in.
	req := httptest.NewRequest("POST", "/web/login", strings.NewReader(url.Values{"auth_data": {"author"}, "password": {testPassword}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Authorization", h["Authorization"])
	if resp, body := ta.do(t, req); resp.StatusCode != 400 || !strings.Contains(body, "signing in and out is for browsers") {
		t.Errorf("the sign-in form with a bearer token: %d %s", resp.StatusCode, body)
	}
	if seen < 100 {
		t.Fatalf("only %d requests: the router's pages were not found", seen)
	}
}
