package projectfile

import "testing"

// TestPlaces: a file's problem paths read in the pages' words, naming the
// route or template by its id or name and the block by number and type.
func TestPlaces(t *testing.T) {
	raw := []byte(`{"id":"shop","routes":[{"route_id":"a"},{"route_id":"list_books","flow":{"blocks":[{"type":"FETCH"},{"type":"RETURN"},{"type":"FILTER"}]}}],
		"templates":[{"name":"lister","flow":{"blocks":[{"type":"LOOP"}]}}],"schedules":[{"route_id":"a"}],"tests":[{"route_id":"a","name":"ok"}]}`)
	for path, want := range map[string]string{
		"document":                             "The file",
		"x_rate_limit":                         "Rate limit (requests a second)",
		"routes[1].flow.blocks[2].source":      "Route list_books · Block 3 (FILTER) · Source list",
		"routes[1].flow.blocks[0].match[1].id": "Route list_books · Block 1 (FETCH) · Match (property = value) 2 · Id",
		"routes[0].route_path":                 "Route a · Route path",
		"routes[7].route_id":                   "Route 8 · Route id",
		"templates[0].flow.blocks[0].min":      "Template lister · Block 1 (LOOP) · From",
		"schedules[0].cron":                    "Schedule 1 (route a) · Cron",
		"tests[0].expect.paths[0].op":          "Test a/ok · Expect · Path 1 · Op",
		"routes[1].flow.blocks[9].ref_col":     "Route list_books · Block 10 (?) · Collection",
	} {
		if got := Places(raw)(path); got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}
	if got := Places([]byte("{"))("routes[0].route_id"); got != "routes[0].route_id" {
		t.Errorf("a file that is no JSON: %q", got)
	}
}
