package runs

import (
	"testing"

	"stencil/flow"
)

// The cURL command of a route: query parameters joined by the route's own
// delimiter, a sample per type, the bearer token left to the shell, every
// argument quoted (a quote inside one closed and escaped).
func TestCurlCommand(t *testing.T) {
	for _, tc := range []struct {
		name  string
		route flow.Route
		want  string
	}{
		{"a GET with query parameters and a custom delimiter",
			flow.Route{Method: "GET", Params: flow.Params{Delimiter: ";", Pairs: []flow.Param{{ID: "q", BDType: "STRING"}, {ID: "limit", BDType: "INTEGER"}}}},
			`curl -sS -g 'http://h/x/shop/items?q={q};limit=1' -H 'Accept: application/json'`},
		{"a POST with a body, behind a JWT",
			flow.Route{Method: "POST", AuthJWT: flow.AuthJWT{Active: true}, Body: []flow.Param{{ID: "it's", BDType: "BOOLEAN"}}},
			`curl -sS -g -X POST 'http://h/x/shop/items' -H 'Accept: application/json' -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' --data '{"it'\''s":true}'`},
	} {
		if got := CurlCommand("http://h/x/shop/items", tc.route); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}
