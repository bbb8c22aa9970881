package engine

import (
	"fmt"
	"strings"
	"testing"
)

func TestRouter(t *testing.T) {
	var rt Router[string]
	for _, r := range []struct{ id, method, path string }{
		{"list", "GET", "/books"},
		{"one", "GET", "/books/:id"},
		{"new", "GET", "/books/new"},
		{"delete", "DELETE", "/books/:book"},
		{"reviews", "GET", "/books/:id/reviews/:rid"},
		{"mine", "GET", "/books/new/reviews/mine"},
		{"root", "GET", "/"},
	} {
		rt.Add(Route[string]{ID: r.id, Method: r.method, Path: r.path, Value: r.id})
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
			got = e.Route.Value
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

// TestRouterEdit: an edited router answers as one built from its routes
// afresh, and the router it was made from answers as before.
func TestRouterEdit(t *testing.T) {
	route := func(id, method, path string) Route[string] {
		return Route[string]{ID: id, Method: method, Path: path, Value: id + " " + path}
	}
	list, one, renamed := route("list", "GET", "/books"), route("one", "GET", "/books/:id"), route("one", "GET", "/volumes/:id")
	taken, taker := route("old", "POST", "/books"), route("new", "POST", "/books")
	var before Router[string]
	for _, r := range []Route[string]{list, one, taken} {
		before.Add(r)
	}
	// "one" moves to /volumes; "new" takes POST /books from "old", and
	// removing "old" afterwards leaves it to "new".
	after := before.Edit([]Route[string]{one}, []Route[string]{renamed, taker})
	after = after.Edit([]Route[string]{taken}, nil)
	match := func(rt *Router[string], method, path string) string {
		e, _, allow := rt.Match(method, Segments(path))
		switch {
		case e != nil:
			return e.Route.Value
		case allow != nil:
			return "405 " + strings.Join(allow, " ")
		}
		return "404"
	}
	for _, c := range []struct {
		rt                 *Router[string]
		method, path, want string
	}{
		{&before, "GET", "/books/7", "one /books/:id"},
		{&before, "GET", "/volumes/7", "404"},
		{&before, "POST", "/books", "old /books"},
		{after, "GET", "/books/7", "404"},
		{after, "GET", "/volumes/7", "one /volumes/:id"},
		{after, "GET", "/books", "list /books"},
		{after, "POST", "/books", "new /books"},
		{after, "DELETE", "/books", "405 GET POST"},
	} {
		if got := match(c.rt, c.method, c.path); got != c.want {
			t.Errorf("%s %s: %s, want %s", c.method, c.path, got, c.want)
		}
	}
}

// TestRouterWideNode: a node of more literal children than smallFanout
// indexes them, and edits of it leave the router it was made from as it
// was.
func TestRouterWideNode(t *testing.T) {
	route := func(i int) Route[int] {
		return Route[int]{ID: fmt.Sprint(i), Method: "GET", Path: fmt.Sprintf("/c%d", i), Value: i}
	}
	var before Router[int]
	for i := range 3 * smallFanout {
		before.Add(route(i))
	}
	after := before.Edit([]Route[int]{route(5)}, []Route[int]{route(100)})
	for _, c := range []struct {
		rt   *Router[int]
		path string
		want int // -1: none
	}{{&before, "/c5", 5}, {&before, "/c100", -1}, {&before, "/c23", 23}, {after, "/c5", -1}, {after, "/c100", 100}, {after, "/c23", 23}} {
		e, _, _ := c.rt.Match("GET", Segments(c.path))
		got := -1
		if e != nil {
			got = e.Route.Value
		}
		if got != c.want {
			t.Errorf("%s: %d, want %d", c.path, got, c.want)
		}
	}
}
