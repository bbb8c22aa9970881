package projectfile

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
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
	if len(p.Add) != 1 || p.Add[0].ID != "new" || !slices.Equal(p.Add[0].Fields, []string{"GET /new"}) {
		t.Fatalf("add: %+v", p.Add)
	}
	var changed []string
	for _, it := range p.Change {
		changed = append(changed, it.Kind+" "+it.ID+": "+strings.Join(it.Fields, "; "))
	}
	wantChanged := []string{
		"setting x_rate_burst: x_rate_burst: 100 → 200",
		"route a_list: Block 1 (FETCH) Collection: books → shelves",
	}
	if !slices.Equal(changed, wantChanged) {
		t.Fatalf("change:\n%s\nwant:\n%s", strings.Join(changed, "\n"), strings.Join(wantChanged, "\n"))
	}
	// 6 settings, a collection, an email template.
	if p.Unchanged != 8 || !slices.Equal(p.MissingSecrets, []string{"SMTP_PASSWORD"}) {
		t.Fatalf("unchanged %d, missing %v", p.Unchanged, p.MissingSecrets)
	}
	pruned := Compare(&have, want, true)
	if len(pruned.Remove) != 1 || pruned.Remove[0].Kind != KindRoute || pruned.Remove[0].ID != "old" {
		t.Fatalf("prune: %+v", pruned.Remove)
	}
	if same := Compare(&have, have, true); !same.Empty() || same.Unchanged != 11 {
		t.Fatalf("a project compared with itself: %+v", same)
	}
	fresh := Compare(nil, want, false)
	if len(fresh.Add) != 7+1+2+1 || len(fresh.MissingSecrets) != 2 {
		t.Fatalf("a new project: %+v", fresh)
	}
	raw, _ := json.Marshal(Compare(&have, have, false))
	if string(raw) != `{"add":[],"change":[],"remove":[],"unchanged":11,"missing_secrets":[]}` {
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
	if p := Compare(nil, want, false); !slices.Contains(p.MissingSecrets, "GH_SECRET") {
		t.Fatalf("missing secrets: %v", p.MissingSecrets)
	}
}
