package flow

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// variableKey is the form of a variable's key, and of the name inside a
// placeholder.
var variableKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// MaxRouteBytes is the largest route, as JSON, that applying a template
// may make (docs/routes.md rule 6).
const MaxRouteBytes = 1 << 20

// substitution fills placeholders while keeping count of how much the
// route's JSON grows, and stops as soon as it would pass its budget: memory
// stays bounded whatever the template and the values.
type substitution struct {
	values map[string]string
	growth map[string]int // JSON bytes one replacement adds: the escaped value less its placeholder
	left   int            // bytes the route may still grow by
	over   bool
}

func newSubstitution(values map[string]string, budget int) *substitution {
	s := &substitution{values: values, growth: make(map[string]int, len(values)), left: budget}
	for k, v := range values {
		escaped, _ := json.Marshal(v)
		s.growth[k] = len(escaped) - 2 - len(k) - 2
	}
	return s
}

// replace replaces each {key} whose key is in values, in one pass: the text
// of a value is never scanned again. Braces around anything else ({},
// {name} of no declared key, {a b}) stay as they are. Past the budget it
// gives up and marks the substitution over.
func (sub *substitution) replace(s string) string {
	if sub.over || !strings.Contains(s, "{") {
		return s
	}
	var out strings.Builder
	for {
		open := strings.IndexByte(s, '{')
		if open < 0 {
			out.WriteString(s)
			return out.String()
		}
		end := strings.IndexByte(s[open+1:], '}')
		if end < 0 {
			out.WriteString(s)
			return out.String()
		}
		name := s[open+1 : open+1+end]
		if v, ok := sub.values[name]; ok && variableKey.MatchString(name) {
			if sub.left -= sub.growth[name]; sub.left < 0 {
				sub.over = true
				return ""
			}
			out.WriteString(s[:open])
			out.WriteString(v)
			s = s[open+2+end:]
			continue
		}
		// Not a placeholder of ours: keep the brace and look again after it.
		out.WriteString(s[:open+1])
		s = s[open+1:]
	}
}

// substitute replaces placeholders in s without a budget.
func substitute(s string, values map[string]string) string {
	return newSubstitution(values, math.MaxInt/2).replace(s)
}

// placeholders returns the names of the well-formed {name} placeholders in s.
func placeholders(s string) []string {
	var names []string
	for {
		open := strings.IndexByte(s, '{')
		if open < 0 {
			return names
		}
		end := strings.IndexByte(s[open+1:], '}')
		if end < 0 {
			return names
		}
		if name := s[open+1 : open+1+end]; variableKey.MatchString(name) {
			names = append(names, name)
			s = s[open+2+end:]
			continue
		}
		s = s[open+1:]
	}
}

// Apply fills the template's placeholders for project (docs/routes.md): each
// variable takes its supplied value, else its default. A variable with
// neither, or a supplied key that is not declared, is a problem under
// "values.<key>". Substitution works on the parsed structure, so no value
// can change its shape.
func Apply(t Template, project string, values map[string]string) (Route, Problems) {
	return ApplySized(t, project, values, -1)
}

// ApplySized is Apply for a template whose document is known to take about
// size bytes of JSON (its stored form), which spares encoding it to learn
// how much the result may grow; -1 means unknown.
func ApplySized(t Template, project string, values map[string]string, size int) (Route, Problems) {
	p := Problems{}
	filled := make(map[string]string, len(t.Variables))
	declared := make(map[string]bool, len(t.Variables))
	for _, v := range t.Variables {
		declared[v.Key] = true
		switch value, ok := values[v.Key]; {
		case ok:
			filled[v.Key] = value
		case v.DefaultValue != nil:
			filled[v.Key] = *v.DefaultValue
		default:
			p.add("values."+v.Key, "has no value and the variable has no default")
		}
	}
	for key := range values {
		if !declared[key] {
			p.add("values."+key, "is not a variable of this template")
		}
	}
	if len(p) > 0 {
		return Route{}, p
	}
	r := Route{ProjectID: project, RouteID: t.RouteID, RoutePath: t.RoutePath, Method: t.Method, AuthJWT: t.AuthJWT,
		Params: t.Params, Body: t.Body, Flow: t.Flow, Template: &TemplateRef{ID: t.ID, Name: t.Name}}
	r = r.clone()
	if size < 0 {
		base, err := json.Marshal(r)
		if err != nil {
			p.add("", "the template cannot be encoded")
			return Route{}, p
		}
		size = len(base)
	}
	sub := newSubstitution(filled, MaxRouteBytes-size)
	walkRouteParts(&r.RouteID, &r.RoutePath, &r.AuthJWT, &r.Params, r.Body, &r.Flow, func(path string, s *string) {
		if *s = sub.replace(*s); sub.over && p[""] == "" {
			p.add("", fmt.Sprintf("the route would be larger than 1 MiB (stopped at %s): use shorter values or fewer placeholders", path))
		}
	})
	if sub.over {
		return Route{}, p
	}
	return r, nil
}

// clone returns a deep copy of r, so that substitution never writes into
// the template's slices.
func (r Route) clone() Route {
	r.Params.Pairs = slices.Clone(r.Params.Pairs)
	r.Body = slices.Clone(r.Body)
	blocks := make([]Block, len(r.Flow.Blocks))
	for i, b := range r.Flow.Blocks {
		blocks[i] = b.clone()
	}
	r.Flow.Blocks = blocks
	if r.Template != nil {
		ref := *r.Template
		r.Template = &ref
	}
	return r
}

func (b Block) clone() Block {
	b.Conditions = slices.Clone(b.Conditions)
	b.Operations = slices.Clone(b.Operations)
	b.Filters = slices.Clone(b.Filters)
	b.Pairs = slices.Clone(b.Pairs)
	b.TemplateData = slices.Clone(b.TemplateData)
	b.Params = slices.Clone(b.Params)
	b.Recipients = slices.Clone(b.Recipients)
	b.SimpleTargets = slices.Clone(b.SimpleTargets)
	b.UpdateTargets = slices.Clone(b.UpdateTargets)
	for i := range b.UpdateTargets {
		b.UpdateTargets[i].Conditions = slices.Clone(b.UpdateTargets[i].Conditions)
	}
	b.PropertyData, b.Min, b.Max, b.Step, b.Set, b.Add = clonePtr(b.PropertyData), clonePtr(b.Min), clonePtr(b.Max), clonePtr(b.Step), clonePtr(b.Set), clonePtr(b.Add)
	b.Filter, b.Fail = clonePtr(b.Filter), clonePtr(b.Fail)
	b.Match, b.Headers, b.Query = slices.Clone(b.Match), slices.Clone(b.Headers), slices.Clone(b.Query)
	b.Sort, b.Limit, b.URL, b.CallBody, b.Timeout = clonePtr(b.Sort), clonePtr(b.Limit), clonePtr(b.URL), clonePtr(b.CallBody), clonePtr(b.Timeout)
	return b
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	c := *p
	return &c
}

// Lint reports placeholders used in the template but not declared, and
// variables declared but never used. The template is saved all the same.
func Lint(t Template) []Warning {
	declared := map[string]bool{}
	for _, v := range t.Variables {
		declared[v.Key] = true
	}
	used := map[string]bool{}
	undeclared := map[string][]string{} // placeholder → paths
	walkRouteParts(&t.RouteID, &t.RoutePath, &t.AuthJWT, &t.Params, t.Body, &t.Flow, func(path string, s *string) {
		for _, name := range placeholders(*s) {
			used[name] = true
			if !declared[name] {
				undeclared[name] = append(undeclared[name], path)
			}
		}
	})
	warnings := []Warning{}
	names := make([]string, 0, len(undeclared))
	for name := range undeclared {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		paths := undeclared[name]
		w := Warn(paths[0], fmt.Sprintf("placeholder {%s} is used but not declared", name))
		w.Also = paths[1:min(len(paths), maxLintPaths)]
		w.More = max(len(paths)-maxLintPaths, 0)
		if len(w.Also) == 0 {
			w.Also = nil
		}
		warnings = append(warnings, w)
	}
	for _, v := range t.Variables {
		if !used[v.Key] {
			warnings = append(warnings, Warn("", fmt.Sprintf("variable %s is declared but never used", v.Key)))
		}
	}
	return Named(CapWarnings(warnings), t.Flow.Blocks)
}

// CapWarnings keeps the first warnings of a long list and says how many
// more there were.
func CapWarnings(warnings []Warning) []Warning {
	if len(warnings) > maxLintWarnings {
		n := len(warnings) - maxLintWarnings
		warnings = append(warnings[:maxLintWarnings], Warn("", fmt.Sprintf("and %d more warnings", n)))
	}
	return warnings
}

// Lint answers stay small whatever the document: at most this many
// warnings, each naming at most this many places.
const (
	maxLintWarnings = 50
	maxLintPaths    = 5
)
