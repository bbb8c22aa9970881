package flow

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// enumKeys are the string fields whose values are names, never text.
var enumKeys = map[string]bool{"type": true, "method": true, "bdtype": true, "rtype": true, "action": true, "apply": true,
	"func": true, "condition_type": true, "operation_type": true, "next": true}

// shape keeps what substitution must never change: every key, list length,
// number, boolean, null and enum; other strings become "".
func shape(v any, key string) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			out[k] = shape(e, k)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = shape(e, key)
		}
		return out
	case string:
		if enumKeys[key] {
			return v
		}
		return ""
	default:
		return v
	}
}

func routeShape(t *testing.T, r Route) any {
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	_ = json.Unmarshal(raw, &v)
	return shape(v, "")
}

// FuzzApply: for any template document and value, substitution does not
// panic, keeps the structure, and changes nothing more once no placeholder
// of a declared variable is left.
func FuzzApply(f *testing.F) {
	seed, _ := os.ReadFile("testdata/all_blocks.json")
	f.Add(seed, "value")
	f.Add(seed, `{v}"}]{`)
	f.Add([]byte(`{"route_id":"{a}{b}","variables":[{"key":"a","description":"x"},{"key":"b","description":"y","default_value":"{a}"}],"flow":{"blocks":[]}}`), "{b}")
	f.Fuzz(func(t *testing.T, doc []byte, value string) {
		tmpl, p := DecodeTemplate(doc, "")
		if len(p) > 0 {
			return
		}
		tmpl.Normalize()
		values := map[string]string{}
		for _, v := range tmpl.Variables {
			values[v.Key] = value
		}
		route, p := Apply(tmpl, "p", values)
		if len(p) > 0 {
			return // e.g. a variable declared twice; validation refuses those
		}
		same := Route{ProjectID: "p", RouteID: tmpl.RouteID, RoutePath: tmpl.RoutePath, Method: tmpl.Method, AuthJWT: tmpl.AuthJWT,
			Params: tmpl.Params, Body: tmpl.Body, Flow: tmpl.Flow, Template: &TemplateRef{ID: tmpl.ID, Name: tmpl.Name}}
		if !reflect.DeepEqual(routeShape(t, route), routeShape(t, same)) {
			t.Fatalf("substitution changed the structure")
		}
		raw, _ := json.Marshal(route)
		if _, p := DecodeRoute(raw, ""); len(p) > 0 {
			t.Fatalf("the result does not decode: %v", p)
		}
		// Idempotent once no placeholder of a declared variable remains.
		left := false
		walkRouteParts(&route.RouteID, &route.RoutePath, &route.AuthJWT, &route.Params, route.Body, &route.Flow, func(_ string, s *string) {
			for _, name := range placeholders(*s) {
				if _, ok := values[name]; ok {
					left = true
				}
			}
		})
		if left {
			return
		}
		again := tmpl
		again.RouteID, again.RoutePath, again.AuthJWT, again.Params, again.Body, again.Flow = route.RouteID, route.RoutePath, route.AuthJWT, route.Params, route.Body, route.Flow
		twice, _ := Apply(again, "p", values)
		if !reflect.DeepEqual(twice, route) {
			t.Fatalf("applying again changed the route")
		}
	})
}

func TestSubstituteSinglePass(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"{a}", "{b}"}, {"{b}", "B"}, {"{a}{b}", "{b}B"}, {"{{a}}", "{{b}}"}, {"{}", "{}"}, {"{ a }", "{ a }"},
		{"x{a", "x{a"}, {"}{a}{", "}{b}{"}, {"{c}", "{c}"}, {strings.Repeat("{a}", 3), "{b}{b}{b}"},
	} {
		if got := substitute(tc.in, map[string]string{"a": "{b}", "b": "B"}); got != tc.want {
			t.Errorf("substitute(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
