package engine

import (
	"slices"
	"strings"
)

// Router matches request paths of one project to its routes (docs/engine.md):
// a ":name" segment matches any one segment and binds it; a literal
// segment wins over a ":name" segment in the same place. Empty segments
// are ignored, so "/books/" is "/books".
type Router struct {
	root node
}

// Entry is a route in a router: what a match gives back.
type Entry struct {
	Plan   *Plan
	params []string // the names of the path's ":name" segments, in order
}

type node struct {
	literal map[string]*node
	param   *node
	methods map[string]*Entry
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

// Add puts plan's route in the router under its method and path.
func (rt *Router) Add(plan *Plan) {
	n := &rt.root
	for _, seg := range Segments(plan.Route.RoutePath) {
		if name, ok := strings.CutPrefix(seg, ":"); ok && name != "" {
			if n.param == nil {
				n.param = &node{}
			}
			n = n.param
			continue
		}
		if n.literal == nil {
			n.literal = map[string]*node{}
		}
		next, ok := n.literal[seg]
		if !ok {
			next = &node{}
			n.literal[seg] = next
		}
		n = next
	}
	if n.methods == nil {
		n.methods = map[string]*Entry{}
	}
	n.methods[plan.Route.Method] = &Entry{Plan: plan, params: PathParams(plan.Route.RoutePath)}
}

// Match finds the route for method and the path's segments, and the values
// of its path parameters by name. When the path matches routes of other
// methods only, allow lists those methods (405); when it matches nothing,
// both are nil (404).
func (rt *Router) Match(method string, segs []string) (entry *Entry, params map[string]string, allow []string) {
	var values []string
	var methods map[string]bool
	var walk func(n *node, i int) bool
	walk = func(n *node, i int) bool {
		if i == len(segs) {
			if e, ok := n.methods[method]; ok {
				entry = e
				return true
			}
			for m := range n.methods {
				if methods == nil {
					methods = map[string]bool{}
				}
				methods[m] = true
			}
			return false
		}
		if next, ok := n.literal[segs[i]]; ok && walk(next, i+1) {
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
