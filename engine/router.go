package engine

import (
	"maps"
	"slices"
	"strings"
)

// Router matches request paths of one project to its routes (docs/engine.md):
// a ":name" segment matches any one segment and binds it; a literal
// segment wins over a ":name" segment in the same place. Empty segments
// are ignored, so "/books/" is "/books". A match gives back the route's
// Value: its plan, or what the caller keeps to find its plan.
type Router[T any] struct {
	root node[T]
}

// Route is a route in a router: its id, method and path, and its value.
type Route[T any] struct {
	ID, Method, Path string
	Value            T
}

// Entry is what a match gives back.
type Entry[T any] struct {
	Route  Route[T]
	params []string // the names of the path's ":name" segments, in order
}

// node is a place in the tree. Most nodes have one literal child and one
// method or none, so both are short slices, searched in turn; a node of
// more than smallFanout literal children indexes them by a map. A project
// of 10,000 routes holds a node or three a route, and maps of one entry
// cost some 250 bytes each (docs/performance.md).
type node[T any] struct {
	segs    []string   // the segments of the literal children, in step with kids
	kids    []*node[T] // the literal children
	index   map[string]*node[T]
	param   *node[T]
	methods []*Entry[T]
}

const smallFanout = 8

// literal is n's child at the literal segment seg, or nil.
func (n *node[T]) literal(seg string) *node[T] {
	if n.index != nil {
		return n.index[seg]
	}
	for i, s := range n.segs {
		if s == seg {
			return n.kids[i]
		}
	}
	return nil
}

// setLiteral makes c n's child at the literal segment seg.
func (n *node[T]) setLiteral(seg string, c *node[T]) {
	if n.index != nil {
		n.index[seg] = c
		return
	}
	if i := slices.Index(n.segs, seg); i >= 0 {
		n.kids[i] = c
		return
	}
	n.segs, n.kids = append(n.segs, seg), append(n.kids, c)
	if len(n.segs) > smallFanout {
		n.index = make(map[string]*node[T], len(n.segs))
		for i, s := range n.segs {
			n.index[s] = n.kids[i]
		}
		n.segs, n.kids = nil, nil
	}
}

// method is n's entry for method, or nil.
func (n *node[T]) method(method string) *Entry[T] {
	for _, e := range n.methods {
		if e.Route.Method == method {
			return e
		}
	}
	return nil
}

// setMethod puts e at n under its method.
func (n *node[T]) setMethod(e *Entry[T]) {
	for i, old := range n.methods {
		if old.Route.Method == e.Route.Method {
			n.methods[i] = e
			return
		}
	}
	n.methods = append(n.methods, e)
}

// Segments splits a path into its non-empty segments.
func Segments(path string) []string {
	return strings.FieldsFunc(path, func(r rune) bool { return r == '/' })
}

// PathParams returns the names a route path binds.
func PathParams(path string) []string {
	var names []string
	for _, seg := range Segments(path) {
		if name, ok := strings.CutPrefix(seg, ":"); ok && name != "" {
			names = append(names, name)
		}
	}
	return names
}

// Add puts r in the router under its method and path.
func (rt *Router[T]) Add(r Route[T]) {
	n := &rt.root
	for _, seg := range Segments(r.Path) {
		if name, ok := strings.CutPrefix(seg, ":"); ok && name != "" {
			if n.param == nil {
				n.param = &node[T]{}
			}
			n = n.param
			continue
		}
		next := n.literal(seg)
		if next == nil {
			next = &node[T]{}
			n.setLiteral(seg, next)
		}
		n = next
	}
	n.setMethod(&Entry[T]{Route: r, params: PathParams(r.Path)})
}

// Edit returns a router holding rt's routes without those of remove and
// with those of add, leaving rt as it is: routers are read without locks
// while a new one is made. Only the nodes on the paths of the routes
// changed are copied (with their maps), so a change costs the depth of
// its path and the size of the maps on it, not the number of routes. A
// route of remove leaves its method and path only if it still holds them
// (one of add may have taken them).
func (rt *Router[T]) Edit(remove, add []Route[T]) *Router[T] {
	e := editor[T]{fresh: map[*node[T]]bool{}}
	out := &Router[T]{root: *e.own(&rt.root)}
	root := &out.root
	e.fresh[root] = true
	for _, r := range remove {
		n := root
		for _, seg := range Segments(r.Path) {
			if n = e.child(n, seg, false); n == nil {
				break
			}
		}
		if n != nil {
			n.methods = slices.DeleteFunc(n.methods, func(e *Entry[T]) bool { return e.Route.Method == r.Method && e.Route.ID == r.ID })
		}
	}
	for _, r := range add {
		n := root
		for _, seg := range Segments(r.Path) {
			n = e.child(n, seg, true)
		}
		n.setMethod(&Entry[T]{Route: r, params: PathParams(r.Path)})
	}
	return out
}

// editor copies the nodes an Edit changes, each once.
type editor[T any] struct{ fresh map[*node[T]]bool }

// own returns n when it is a copy of this edit's, else a copy of it with
// maps of its own.
func (e *editor[T]) own(n *node[T]) *node[T] {
	if e.fresh[n] {
		return n
	}
	c := &node[T]{segs: slices.Clone(n.segs), kids: slices.Clone(n.kids), index: maps.Clone(n.index), param: n.param, methods: slices.Clone(n.methods)}
	e.fresh[c] = true
	return c
}

// child is the copy of n's child at seg (n is a copy of this edit's);
// when there is none, a new one if create, else nil.
func (e *editor[T]) child(n *node[T], seg string, create bool) *node[T] {
	if name, ok := strings.CutPrefix(seg, ":"); ok && name != "" {
		switch {
		case n.param != nil:
			n.param = e.own(n.param)
		case create:
			n.param = e.own(&node[T]{})
		}
		return n.param
	}
	next := n.literal(seg)
	switch {
	case next != nil:
		next = e.own(next)
	case create:
		next = e.own(&node[T]{})
	default:
		return nil
	}
	n.setLiteral(seg, next)
	return next
}

// Match finds the route for method and the path's segments, and the values
// of its path parameters by name. When the path matches routes of other
// methods only, allow lists those methods (405); when it matches nothing,
// both are nil (404).
func (rt *Router[T]) Match(method string, segs []string) (entry *Entry[T], params map[string]string, allow []string) {
	var values []string
	var methods map[string]bool
	var walk func(n *node[T], i int) bool
	walk = func(n *node[T], i int) bool {
		if i == len(segs) {
			if e := n.method(method); e != nil {
				entry = e
				return true
			}
			for _, e := range n.methods {
				if methods == nil {
					methods = map[string]bool{}
				}
				methods[e.Route.Method] = true
			}
			return false
		}
		if next := n.literal(segs[i]); next != nil && walk(next, i+1) {
			return true
		}
		if n.param != nil {
			values = append(values, segs[i])
			if walk(n.param, i+1) {
				return true
			}
			values = values[:len(values)-1]
		}
		return false
	}
	if walk(&rt.root, 0) {
		if len(entry.params) > 0 {
			params = make(map[string]string, len(entry.params))
			for i, name := range entry.params {
				params[name] = values[i]
			}
		}
		return entry, params, nil
	}
	for m := range methods {
		allow = append(allow, m)
	}
	slices.Sort(allow)
	return nil, nil, allow
}
