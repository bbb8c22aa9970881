package flow

import (
	"fmt"
	"strings"
	"testing"
)

// blocksOf decodes a flow from its blocks' JSON, one a string.
func blocksOf(t *testing.T, blocks ...string) []Block {
	t.Helper()
	r, p := DecodeRoute([]byte(`{"route_id":"r","route_path":"/r","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},`+
		`"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[`+strings.Join(blocks, ",")+`]}}`), "route")
	if len(p) > 0 {
		t.Fatal(p)
	}
	return r.Flow.Blocks
}

func TestDiffRoutes(t *testing.T) {
	fetch := `{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"books","match":[],"sort":null,"limit":null}`
	fetchOrders := `{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"orders","match":[],"sort":null,"limit":null}`
	vault := `{"type":"VAULT","depth":0,"local_name":"k","key":"API_KEY"}`
	ret := `{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}`
	retIndented := `{"type":"RETURN","depth":1,"pairs":[],"conditions":[]}`
	loop := `{"type":"LOOP","depth":0,"local_name":"i","min":{"ref_var":false,"data":"0","rtype":"INTEGER"},"max":{"ref_var":false,"data":"3","rtype":"INTEGER"},"step":{"ref_var":false,"data":"1","rtype":"INTEGER"}}`
	describe := func(cs []BlockChange) string {
		var out []string
		for _, c := range cs {
			s := fmt.Sprintf("%s %s %d→%d", c.Kind, c.Type, c.From, c.To)
			for _, f := range c.Fields {
				s += fmt.Sprintf(" %s:%s→%s", f.Field, f.Old, f.New)
			}
			out = append(out, s)
		}
		return strings.Join(out, "; ")
	}
	for _, tc := range []struct {
		name     string
		old, new []string
		want     string
	}{
		{"the same", []string{fetch, ret}, []string{fetch, ret}, ""},
		{"added at the end", []string{fetch}, []string{fetch, ret}, "added RETURN -1→1"},
		{"added in the middle", []string{fetch, ret}, []string{fetch, vault, ret}, "added VAULT -1→1"},
		{"removed", []string{fetch, vault, ret}, []string{fetch, ret}, "removed VAULT 1→-1"},
		{"a field changed", []string{fetch, ret}, []string{fetchOrders, ret}, `changed FETCH 0→0 ref_col:"books"→"orders"`},
		{"indented", []string{loop, ret}, []string{loop, retIndented}, "changed RETURN 1→1 depth:0→1"},
		{"moved", []string{vault, fetch, ret}, []string{fetch, ret, vault}, "moved VAULT 0→2"},
		{"replaced by another type", []string{fetch, ret}, []string{vault, ret}, "removed FETCH 0→-1; added VAULT -1→0"},
		{"everything new", nil, []string{fetch, ret}, "added FETCH -1→0; added RETURN -1→1"},
		{"everything gone", []string{fetch, ret}, nil, "removed FETCH 0→-1; removed RETURN 1→-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := describe(diffBlocks(blocksOf(t, tc.old...), blocksOf(t, tc.new...)))
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	a := Route{RouteID: "r", Method: "GET", RoutePath: "/r", Flow: Flow{Blocks: blocksOf(t, fetch)}}
	b := a
	b.Method, b.RoutePath = "POST", "/s"
	d := DiffRoutes(a, b)
	if len(d.Request) != 2 || d.Request[0].Field != "method" || d.Request[1].New != `"/s"` || len(d.Blocks) != 0 || d.Empty() {
		t.Errorf("request: %+v", d)
	}
	if !DiffRoutes(a, a).Empty() {
		t.Error("a route differs from itself")
	}
}

// A large flow with one change in the middle is compared in time, and the
// change is found.
func TestDiffLargeFlows(t *testing.T) {
	var old, changed []Block
	for i := range 5000 {
		b := Block{Type: "OBJECT", LocalName: fmt.Sprintf("v%d", i)}
		old = append(old, b)
		if i == 2500 {
			b.LocalName = "changed"
		}
		changed = append(changed, b)
	}
	cs := diffBlocks(old, changed)
	if len(cs) != 1 || cs[0].Kind != "changed" || cs[0].From != 2500 || cs[0].To != 2500 {
		t.Fatalf("%+v", cs)
	}
}
