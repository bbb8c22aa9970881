package projectfile

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"stencil/flow"
)

// route is a small valid route document: a FETCH of collection into rows
// and a RETURN of them.
func route(id, col string) string {
	return `{"route_id":"` + id + `","route_path":"/` + id + `","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[
		{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"` + col + `","match":[]},
		{"type":"RETURN","depth":0,"pairs":[{"id":"items","data":{"ref_var":true,"rtype":"OTHER","data":"rows"}}],"conditions":[]}]}}`
}

const sample = `{"format":1,"id":"shop","name":"Shop","description":"","api_path":"/shop","x_rate_limit":0,"x_rate_burst":100,
	"x_cors_origins":[],"x_egress_hosts":[],
	"collections":[{"id":"books","name":"Books","description":"","records":[{"title":"Dune","n":1}]}],
	"routes":[` + "%s" + `],
	"templates":[],
	"email_templates":[{"name":"welcome","subject":"Hi","text":"Hello <b>","html":""}],
	"vault_keys":["API_KEY"]}`

func decode(t *testing.T, raw string) Document {
	t.Helper()
	d, p := Decode([]byte(raw))
	if len(p) > 0 {
		t.Fatalf("problems: %v", p)
	}
	return d
}

// TestEncodeIsStable: the same project gives the same bytes whatever the
// order it was read in, keys in the file's order, HTML left as it is.
func TestEncodeIsStable(t *testing.T) {
	a := decode(t, strings.Replace(sample, "%s", route("b_list", "books")+","+route("a_list", "books"), 1))
	b := decode(t, strings.Replace(sample, "%s", route("a_list", "books")+","+route("b_list", "books"), 1))
	ea, eb := Encode(a), Encode(b)
	if !bytes.Equal(ea, eb) {
		t.Fatalf("two orders, two files:\n%s\n%s", ea, eb)
	}
	text := string(ea)
	order := []string{`"format"`, `"id"`, `"name"`, `"description"`, `"api_path"`, `"x_rate_limit"`, `"x_rate_burst"`, `"x_cors_origins"`,
		`"x_egress_hosts"`, `"collections"`, `"routes"`, `"templates"`, `"email_templates"`, `"vault_keys"`}
	last := -1
	for _, k := range order {
		i := strings.Index(text, "\n  "+k+":")
		if i < last {
			t.Fatalf("%s out of order in\n%s", k, text)
		}
		last = i
	}
	if strings.Index(text, `"a_list"`) > strings.Index(text, `"b_list"`) || !strings.Contains(text, `Hello <b>`) || !strings.HasSuffix(text, "}\n") {
		t.Fatalf("not sorted, or HTML escaped:\n%s", text)
	}
	again := decode(t, text)
	if !bytes.Equal(Encode(again), ea) {
		t.Fatal("a file read back does not write the same bytes")
	}
	if rs := again.Collections[0].Records; rs == nil || len(*rs) != 1 || string((*rs)[0]) != `{"n":1,"title":"Dune"}` {
		t.Fatalf("records: %v", rs)
	}
}

// TestDecodeNamesThePath: each fault of a file is named by its path.
func TestDecodeNamesThePath(t *testing.T) {
	bad := strings.Replace(route("x", "books"), `"ref_col":"books"`, `"ref_col":""`, 1)
	cases := []struct{ doc, path string }{
		{`[]`, "document"},
		{`{"id":"x"}`, "format"},
		{`{"format":2}`, "format"},
		{`{"format":1,"colour":"red"}`, "colour"},
		{`{"format":1,"x_rate_limit":"fast"}`, "x_rate_limit"},
		{`{"format":1,"routes":[` + route("ok", "books") + `,` + bad + `]}`, "routes[1].flow.blocks[0].ref_col"},
		{`{"format":1,"routes":[` + route("ok", "books") + `,` + route("ok", "books") + `]}`, "routes[1].route_id"},
		{`{"format":1,"collections":[{"id":"a","name":"A","description":"","records":[1]}]}`, "collections[0].records[0]"},
		{`{"format":1,"collections":[{"id":"a","name":"A","description":"","size":1}]}`, "collections[0].size"},
		{`{"format":1,"templates":[{"id":3,"name":"t"}]}`, "templates[0].id"},
		{`{"format":1,"email_templates":[{"name":"a","subject":"s","text":"t","html":""},{"name":"a","subject":"s","text":"t","html":""}]}`, "email_templates[1].name"},
		{`{"format":1,"vault_keys":["A","A"]}`, "vault_keys[1]"},
		{`{"format":1,"vault_keys":["OK","lower"]}`, "vault_keys[1]"},
		{`{"format":1,"vault_keys":["A\r\nB"]}`, "vault_keys[0]"},
		{`{"format":1,"vault_keys":["` + strings.Repeat("A", 300) + `"]}`, "vault_keys[0]"},
		{`{"format":1,"vault_keys":["_A"]}`, "vault_keys[0]"},
		{`{"format":1,"vault_keys":[` + strings.Repeat(`"K",`, 20000) + `"K"]}`, "vault_keys"},
	}
	for _, c := range cases {
		_, p := Decode([]byte(c.doc))
		if _, ok := p[c.path]; !ok {
			t.Errorf("%s: want a problem at %s, got %v", c.doc, c.path, p)
		}
	}
}

// TestCompare: adds, changes in the outline's words, removes only with
// prune, counts what is the same, lists secrets the project lacks.
func TestCompare(t *testing.T) {
	have := decode(t, strings.Replace(sample, "%s", route("a_list", "books")+","+route("old", "books"), 1))
	wantText := strings.Replace(sample, "%s", route("a_list", "shelves")+","+route("new", "books"), 1)
	wantText = strings.Replace(wantText, `"x_rate_burst":100`, `"x_rate_burst":200`, 1)
	wantText = strings.Replace(wantText, `"vault_keys":["API_KEY"]`, `"vault_keys":["API_KEY","SMTP_PASSWORD"]`, 1)
	want := decode(t, wantText)

	p := Compare(&have, want, false)
	if len(p.Remove) != 0 {
		t.Fatalf("removed without prune: %+v", p.Remove)
	}
	// What the file does not name is drift: kept, and listed.
	if len(p.Kept) != 1 || p.Kept[0].Kind != KindRoute || p.Kept[0].ID != "old" || p.Settled() {
		t.Fatalf("kept without prune: %+v (settled %t)", p.Kept, p.Settled())
	}
	if len(p.Add) != 1 || p.Add[0].ID != "new" || !slices.Equal(p.Add[0].Fields, []string{"GET /new"}) {
		t.Fatalf("add: %+v", p.Add)
	}
	var changed []string
	for _, it := range p.Change {
		changed = append(changed, it.Kind+" "+it.ID+": "+strings.Join(it.Fields, "; "))
	}
	wantChanged := []string{
		"setting x_rate_burst: x_rate_burst: 100 → 200",
		"route a_list: Block 1 (FETCH) · Collection: books → shelves",
	}
	if !slices.Equal(changed, wantChanged) {
		t.Fatalf("change:\n%s\nwant:\n%s", strings.Join(changed, "\n"), strings.Join(wantChanged, "\n"))
	}
	// 6 settings, a collection, an email template.
	if p.Unchanged != 8 || !slices.Equal(p.MissingSecrets, []string{"SMTP_PASSWORD"}) {
		t.Fatalf("unchanged %d, missing %v", p.Unchanged, p.MissingSecrets)
	}
	pruned := Compare(&have, want, true)
	if len(pruned.Remove) != 1 || pruned.Remove[0].Kind != KindRoute || pruned.Remove[0].ID != "old" || len(pruned.Kept) != 0 {
		t.Fatalf("prune: %+v, kept %+v", pruned.Remove, pruned.Kept)
	}
	// The same file without the old route: nothing to write, but drift.
	drift := Compare(&have, decode(t, strings.Replace(sample, "%s", route("a_list", "books"), 1)), false)
	if !drift.Empty() || drift.Settled() || len(drift.Kept) != 1 {
		t.Fatalf("drift alone: %+v", drift)
	}
	if same := Compare(&have, have, true); !same.Empty() || !same.Settled() || same.Unchanged != 11 {
		t.Fatalf("a project compared with itself: %+v", same)
	}
	fresh := Compare(nil, want, false)
	if len(fresh.Add) != 7+1+2+1 || len(fresh.MissingSecrets) != 2 {
		t.Fatalf("a new project: %+v", fresh)
	}
	raw, _ := json.Marshal(Compare(&have, have, false))
	if string(raw) != `{"add":[],"change":[],"remove":[],"kept":[],"unchanged":11,"missing_secrets":[],"secret_routes":{}}` {
		t.Fatalf("empty plan: %s", raw)
	}
}

// A route's auth_signature travels in the file, and the secret it names is
// a missing secret of a project that lacks it, as a VAULT block's key is.
func TestSignatureInFile(t *testing.T) {
	signed := strings.Replace(route("hook", "books"), `"auth_jwt":`, `"auth_signature":{"active":true,"scheme":"github","vault_key":"GH_SECRET"},"auth_jwt":`, 1)
	want := decode(t, strings.Replace(sample, "%s", signed, 1))
	if s := want.Routes[0].AuthSignature; !s.Checks() || s.VaultKey != "GH_SECRET" {
		t.Fatalf("decoded: %+v", s)
	}
	if !strings.Contains(string(Encode(want)), `"vault_key": "GH_SECRET"`) {
		t.Fatalf("encoded:\n%s", Encode(want))
	}
	if p := Compare(nil, want, false); !slices.Contains(p.MissingSecrets, "GH_SECRET") || !slices.Equal(p.SecretRoutes["GH_SECRET"], []string{"hook"}) ||
		p.SecretRoutes["API_KEY"] == nil || len(p.SecretRoutes["API_KEY"]) != 0 || p.Settled() {
		t.Fatalf("missing secrets: %v, read by %v", p.MissingSecrets, p.SecretRoutes)
	}
}

// The plan names each changed field of a block by its label with its
// value before and after — a FETCH's sort and limit, an HTTP block's
// timeout, a query parameter's type — and never cuts a long value before
// where it changes.
func TestRouteWordsShowEveryChange(t *testing.T) {
	op := func(ref bool, rtype, data string) string {
		return fmt.Sprintf(`{"ref_var":%t,"rtype":%q,"data":%q}`, ref, rtype, data)
	}
	routeOf := func(descending bool, limit, limitType, timeout, message string) flow.Route {
		doc := `{"route_id":"r","route_path":"/r","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},
			"params":{"delimiter":"&","pairs":[{"id":"lim","bdtype":"INTEGER"},{"id":"n","bdtype":"` + limitType + `"}]},"body":[],"flow":{"blocks":[
			{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"books","match":[],"sort":{"property":"title","descending":` + fmt.Sprint(descending) + `},"limit":` + op(true, "OTHER", limit) + `},
			{"type":"HTTP","depth":0,"local_name":"res","method":"GET","url":` + op(false, "STRING", "https://api.example.com/x") + `,"query":[],"headers":[],"body":null,"timeout_ms":` + op(false, "INTEGER", timeout) + `,"conditions":[]},
			{"type":"TEMPLATE","depth":0,"local_name":"note","templatestring":"` + message + `","data":[],"conditions":[]}]}}`
		r, problems := flow.DecodeRoute([]byte(doc), "")
		if len(problems) > 0 {
			t.Fatal(problems)
		}
		return r
	}
	long := strings.Repeat("a long message that says a great deal ", 5)
	a := routeOf(false, "lim", "INTEGER", "2000", long+"before")
	b := routeOf(true, "n", "STRING", "5000", long+"after")
	got := strings.Join(RouteWords(a, b), "\n")
	for _, want := range []string{
		"Query parameters · n: INTEGER → STRING",
		"Block 1 (FETCH) · Sort by: title → title, descending",
		"Block 1 (FETCH) · At most: lim → n",
		"Block 2 (HTTP) · Timeout (ms): 2000 → 5000",
		"before → …",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the plan lacks %q:\n%s", want, got)
		}
	}
	for _, line := range RouteWords(a, b) {
		if strings.Contains(line, "TEMPLATE") && (!strings.Contains(line, "before") || !strings.Contains(line, "after")) {
			t.Errorf("a long value cut before its change: %q", line)
		}
	}
}
