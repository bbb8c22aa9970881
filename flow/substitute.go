package flow

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
)

// variableKey is the form of a variable's key, and of the name inside a
// placeholder.
var variableKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// substitute replaces each {key} whose key is in values, in one pass: the
// text of a value is never scanned again. Braces around anything else ({},
// {name} of no declared key, {a b}) stay as they are.
func substitute(s string, values map[string]string) string {
	if !strings.Contains(s, "{") {
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
		if v, ok := values[name]; ok && variableKey.MatchString(name) {
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

// Apply fills the template's placeholders for project (SPEC §6.4): each
// variable takes its supplied value, else its default. A variable with
// neither, or a supplied key that is not declared, is a problem under
// "values.<key>". Substitution works on the parsed structure, so no value
// can change its shape.
func Apply(t Template, project string, values map[string]string) (Route, Problems) {
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
	walkRouteParts(&r.RouteID, &r.RoutePath, &r.AuthJWT, &r.Params, r.Body, &r.Flow, func(_ string, s *string) {
		*s = substitute(*s, filled)
	})
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
func Lint(t Template) []string {
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
	warnings := []string{}
	names := make([]string, 0, len(undeclared))
	for name := range undeclared {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		warnings = append(warnings, fmt.Sprintf("placeholder {%s} is used but not declared (%s)", name, strings.Join(undeclared[name], ", ")))
	}
	for _, v := range t.Variables {
		if !used[v.Key] {
			warnings = append(warnings, fmt.Sprintf("variable %s is declared but never used", v.Key))
		}
	}
	return warnings
}
