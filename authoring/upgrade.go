package authoring

import (
	"context"
	"errors"
	"fmt"

	"stencil/flow"
	"stencil/store"
)

// Upgrading a route to its template's newest version (docs/routes.md):
// a three-way merge of the version it was made from, the newest one and
// the route as it is.

// Upgrade is an upgrade's answer: what it merges, and, applied, the
// route's new version.
type Upgrade struct {
	RouteID      string           `json:"route_id"`
	Template     flow.TemplateRef `json:"template"` // the newest version, with the values it is applied with
	FromVersion  int64            `json:"from_version"`
	ToVersion    int64            `json:"to_version"`
	NewVariables []flow.Variable  `json:"new_variables"`
	Changes      flow.RouteDiff   `json:"changes"`
	Local        flow.RouteDiff   `json:"local"`
	Conflicts    []flow.Conflict  `json:"conflicts"`
	Unresolved   int              `json:"unresolved"`
	Route        flow.Route       `json:"route"`
	Applied      bool             `json:"applied"`
	Version      int64            `json:"version"` // the route's version: the new one when applied

	// Base and Theirs are the older and the newest version applied;
	// Variables the newest version's.
	Base, Theirs flow.Route      `json:"-"`
	Variables    []flow.Variable `json:"-"`
}

// PlanUpgrade merges route r with t, the newest version of the template
// it was made from as its project sees it (nil: none there any more);
// given are values for variables and resolve chooses conflicts' sides.
func PlanUpgrade(ctx context.Context, st *store.Store, r store.StoredRoute, t *store.RouteTemplate, given map[string]*string, resolve func(flow.Conflict) string) (Upgrade, error) {
	refuse := func(msg string) error {
		return &Problems{Fields: map[string]string{"route_id": msg}}
	}
	ref := r.Template
	if ref == nil {
		return Upgrade{}, refuse("was not made from a template: there is nothing to upgrade from")
	}
	if ref.Version == 0 {
		return Upgrade{}, refuse("was made before templates kept versions: make it again from template " + Quote(ref.Name))
	}
	if t == nil {
		return Upgrade{}, refuse(fmt.Sprintf("was made from template %s (#%d), which no longer exists here", Quote(ref.Name), ref.ID))
	}
	if t.Version <= ref.Version {
		return Upgrade{}, refuse(fmt.Sprintf("is at version %d of template %s, its newest", ref.Version, Quote(t.Name)))
	}
	old, err := st.TemplateVersionOf(ctx, *t, ref.Version)
	if errors.Is(err, store.ErrNotFound) {
		return Upgrade{}, refuse(fmt.Sprintf("was made from version %d of template %s, which is no longer kept", ref.Version, Quote(t.Name)))
	} else if err != nil {
		return Upgrade{}, err
	}
	base, p := flow.Apply(old.Template.Template, r.ProjectID, ref.Values)
	if len(p) > 0 {
		return Upgrade{}, refuse(fmt.Sprintf("was made with values that version %d of template %s no longer takes: %s", ref.Version, Quote(t.Name), p.Error()))
	}
	base.Normalize()
	// The kept values the newest version still declares, then those given.
	declared := map[string]bool{}
	for _, v := range t.Variables {
		declared[v.Key] = true
	}
	values := map[string]string{}
	for k, v := range ref.Values {
		if declared[k] {
			values[k] = v
		}
	}
	for k, v := range given {
		if v != nil {
			values[k] = *v
		}
	}
	out := Upgrade{RouteID: r.RouteID, Template: flow.TemplateRef{ID: t.ID, Name: t.Name, Version: t.Version, Values: values},
		FromVersion: ref.Version, ToVersion: t.Version, NewVariables: []flow.Variable{}, Version: r.Version, Variables: t.Variables}
	if len(values) == 0 {
		out.Template.Values = nil
	}
	had := map[string]bool{}
	for _, v := range old.Template.Variables {
		had[v.Key] = true
	}
	for _, v := range t.Variables {
		if !had[v.Key] {
			out.NewVariables = append(out.NewVariables, v)
		}
	}
	// What is known so far comes back with the values' problems, for the
	// page to ask them.
	theirs, p := flow.ApplySized(t.Template, r.ProjectID, values, t.DocumentSize)
	if err := ProblemsOf(p); err != nil {
		return out, err
	}
	theirs.Normalize()
	m := flow.MergeRoutes(base, theirs, r.Route, resolve)
	ref2 := out.Template
	m.Route.Template = &ref2
	out.Changes, out.Local, out.Conflicts, out.Unresolved, out.Route = m.Template, m.Local, m.Conflicts, m.Unresolved, m.Route
	out.Base, out.Theirs = base, theirs
	return out, nil
}
