package engine

import (
	"fmt"
	"strings"
	"testing"

	"stencil/flow"
)

func TestRouter(t *testing.T) {
	var rt Router
	for _, r := range []struct{ id, method, path string }{
		{"list", "GET", "/books"},
		{"one", "GET", "/books/:id"},
		{"new", "GET", "/books/new"},
		{"delete", "DELETE", "/books/:book"},
		{"reviews", "GET", "/books/:id/reviews/:rid"},
		{"mine", "GET", "/books/new/reviews/mine"},
		{"root", "GET", "/"},
	} {
		rt.Add(&Plan{Route: flow.Route{RouteID: r.id, Method: r.method, RoutePath: r.path}})
	}
	for _, c := range []struct{ method, path, want string }{
		{"GET", "/books", "list"},
		{"GET", "/books/", "list"},
		{"GET", "/books/42", "one id=42"},
		{"GET", "/books/new", "new"},
		{"DELETE", "/books/new", "delete book=new"},
		{"GET", "/books/7/reviews/9", "reviews id=7 rid=9"},
		// The literal "new" is tried first and leads nowhere for this
		// path: the parameter takes it.
		{"GET", "/books/new/reviews/9", "reviews id=new rid=9"},
		{"GET", "/books/new/reviews/mine", "mine"},
		{"GET", "/", "root"},
		{"GET", "", "root"},
		{"POST", "/books", "405 GET"},
		{"PUT", "/books/1", "405 DELETE GET"},
		{"GET", "/authors", "404"},
		{"GET", "/books/1/2", "404"},
	} {
		e, params, allow := rt.Match(c.method, Segments(c.path))
		got := "404"
		switch {
		case e != nil:
			got = e.Plan.Route.RouteID
			for _, name := range e.params {
				got += fmt.Sprintf(" %s=%s", name, params[name])
			}
		case allow != nil:
			got = "405 " + strings.Join(allow, " ")
		}
		if got != c.want {
			t.Errorf("%s %s: %s, want %s", c.method, c.path, got, c.want)
		}
	}
}
