package flow

import (
	"fmt"
	"strings"
	"testing"
)

func TestMergeRoutes(t *testing.T) {
	fetch := func(col string) string {
		return `{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"` + col + `","match":[],"sort":null,"limit":null}`
	}
	vault := func(key string) string { return `{"type":"VAULT","depth":0,"local_name":"k","key":"` + key + `"}` }
	ret := `{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}`
	fail := `{"type":"ASSIGNMENT","depth":0,"local_name":"x","conditions":[],"operations":[]}`
	route := func(path string, blocks ...string) Route {
		return Route{RouteID: "r", RoutePath: path, Method: "GET", Flow: Flow{Blocks: blocksOf(t, blocks...)}}
	}
	outline := func(r Route) string {
		var out []string
		for _, b := range r.Flow.Blocks {
			s := b.Type
			switch b.Type {
			case "FETCH":
				s += ":" + b.RefCol
			case "VAULT":
				s += ":" + b.Key
			}
			out = append(out, s)
		}
		return r.RoutePath + " " + strings.Join(out, " ")
	}
	conflicts := func(m Merge) string {
		var out []string
		for _, c := range m.Conflicts {
			out = append(out, fmt.Sprintf("%d.%s %s|%s", c.Block, c.Field, c.Template, c.Route))
		}
		return strings.Join(out, "; ")
	}
	for _, tc := range []struct {
		name              string
		base, theirs, our Route
		side              string
		want, conflicts   string
	}{
		{"nothing changed", route("/a", fetch("books"), ret), route("/a", fetch("books"), ret), route("/a", fetch("books"), ret),
			"", "/a FETCH:books RETURN", ""},
		{"the template's field change", route("/a", fetch("books"), ret), route("/a", fetch("orders"), ret), route("/a", fetch("books"), ret),
			"", "/a FETCH:orders RETURN", ""},
		{"the route's field change survives", route("/a", fetch("books"), ret), route("/a", fetch("books"), ret), route("/a", fetch("mine"), ret),
			"", "/a FETCH:mine RETURN", ""},
		{"both change, the template's side", route("/a", fetch("books"), ret), route("/a", fetch("orders"), ret), route("/a", fetch("mine"), ret),
			TakeTemplate, "/a FETCH:orders RETURN", `0.ref_col "orders"|"mine"`},
		{"both change, the route's side", route("/a", fetch("books"), ret), route("/a", fetch("orders"), ret), route("/a", fetch("mine"), ret),
			TakeRoute, "/a FETCH:mine RETURN", `0.ref_col "orders"|"mine"`},
		{"both change alike", route("/a", fetch("books"), ret), route("/a", fetch("same"), ret), route("/a", fetch("same"), ret),
			"", "/a FETCH:same RETURN", ""},
		{"request fields merge", route("/a", ret), route("/b", ret), route("/a", ret), "", "/b RETURN", ""},
		{"request fields conflict", route("/a", ret), route("/b", ret), route("/c", ret), TakeTemplate, "/b RETURN", `-1.route_path "/b"|"/c"`},
		{"the template adds a block after its anchor", route("/a", fetch("books"), ret), route("/a", fetch("books"), vault("NEW"), ret),
			route("/a", vault("MINE"), fetch("books"), ret), "", "/a VAULT:MINE FETCH:books VAULT:NEW RETURN", ""},
		{"both add at the start", route("/a", ret), route("/a", vault("T"), ret), route("/a", vault("R"), ret),
			"", "/a VAULT:T VAULT:R RETURN", ""},
		{"the template removes an untouched block", route("/a", fetch("books"), vault("OLD"), ret), route("/a", fetch("books"), ret),
			route("/a", fetch("mine"), vault("OLD"), ret), "", "/a FETCH:mine RETURN", ""},
		{"the route removes an untouched block", route("/a", fetch("books"), vault("OLD"), ret), route("/a", fetch("orders"), vault("OLD"), ret),
			route("/a", fetch("books"), ret), "", "/a FETCH:orders RETURN", ""},
		{"removed by the template, changed by the route: kept", route("/a", fetch("books"), ret), route("/a", ret),
			route("/a", fetch("mine"), ret), TakeRoute, "/a FETCH:mine RETURN", `0.block |{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"mine","match":[],"sort":null,"limit":null}`},
		{"removed by the template, changed by the route: removed", route("/a", fetch("books"), ret), route("/a", ret),
			route("/a", fetch("mine"), ret), TakeTemplate, "/a RETURN", `0.block |{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"mine","match":[],"sort":null,"limit":null}`},
		{"removed by the route, changed by the template: back", route("/a", fail, fetch("books"), ret), route("/a", fail, fetch("orders"), ret),
			route("/a", fail, ret), TakeTemplate, "/a ASSIGNMENT FETCH:orders RETURN", `1.block {"type":"FETCH","depth":0,"local_name":"rows","ref_col":"orders","match":[],"sort":null,"limit":null}|`},
		{"removed by the route, changed by the template: gone", route("/a", fail, fetch("books"), ret), route("/a", fail, fetch("orders"), ret),
			route("/a", fail, ret), TakeRoute, "/a ASSIGNMENT RETURN", `1.block {"type":"FETCH","depth":0,"local_name":"rows","ref_col":"orders","match":[],"sort":null,"limit":null}|`},
		{"the template's move", route("/a", vault("A"), fetch("books"), ret), route("/a", fetch("books"), vault("A"), ret),
			route("/a", vault("A"), fetch("mine"), ret), "", "/a FETCH:mine VAULT:A RETURN", ""},
		{"both move, the route's order", route("/a", vault("A"), fetch("books"), fail, ret), route("/a", fetch("books"), vault("A"), fail, ret),
			route("/a", vault("A"), fail, fetch("books"), ret), TakeRoute, "/a VAULT:A ASSIGNMENT FETCH:books RETURN", "-1.order [2,1,3,4]|[1,3,2,4]"},
		{"both move, the template's order", route("/a", vault("A"), fetch("books"), fail, ret), route("/a", fetch("books"), vault("A"), fail, ret),
			route("/a", vault("A"), fail, fetch("books"), ret), TakeTemplate, "/a FETCH:books VAULT:A ASSIGNMENT RETURN", "-1.order [2,1,3,4]|[1,3,2,4]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := MergeRoutes(tc.base, tc.theirs, tc.our, func(Conflict) string { return tc.side })
			if got := outline(m.Route); got != tc.want {
				t.Errorf("merged %s, want %s", got, tc.want)
			}
			if got := conflicts(m); got != tc.conflicts {
				t.Errorf("conflicts %s\nwant      %s", got, tc.conflicts)
			}
			if tc.side == "" && m.Unresolved != len(m.Conflicts) {
				t.Errorf("unresolved %d of %d", m.Unresolved, len(m.Conflicts))
			}
		})
	}
}
