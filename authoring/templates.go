package authoring

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"stencil/flow"
	"stencil/store"
)

// The rules of saving and applying a route template (docs/routes.md).

// ReadOnlyFields may come back in a template document a client fetched;
// they are set by the platform, never by the document, and are dropped.
var ReadOnlyFields = []string{"uid", "created_by", "created_at", "updated_at", "version"}

// SaveNote takes the note of a save (docs/routes.md) out of a document:
// at most 500 characters, no control characters.
func SaveNote(doc map[string]any) (string, error) {
	raw, ok := doc["note"]
	delete(doc, "note")
	if !ok || raw == nil {
		return "", nil
	}
	note, isText := raw.(string)
	switch {
	case !isText:
		return "", &Problems{Fields: map[string]string{"note": "must be a string"}}
	case utf8.RuneCountInString(note) > 500:
		return "", &Problems{Fields: map[string]string{"note": "must be at most 500 characters"}}
	case strings.ContainsFunc(note, unicode.IsControl):
		_, msg := Rule("plain_text")
		return "", &Problems{Fields: map[string]string{"note": msg}}
	}
	return note, nil
}

// Template reads a template document (less its note, see SaveNote) as
// saving it does: strictly, normalized, every rule checked.
func Template(doc map[string]any) (flow.Template, error) {
	var t flow.Template
	if err := ProblemsOf(flow.DecodeValue(doc, &t, "")); err != nil {
		return t, err
	}
	t.Normalize()
	return t, ProblemsOf(flow.ValidateTemplate(t, ""))
}

// ApplyTemplate is the route t makes in project with values (a nil value
// counts as not supplied): a route that could be saved, remembering the
// version applied and the values given, so that an upgrade to a newer
// version can apply them again.
func ApplyTemplate(t store.RouteTemplate, project string, given map[string]*string) (flow.Route, error) {
	values := make(map[string]string, len(given))
	for k, v := range given {
		if v != nil {
			values[k] = *v
		}
	}
	route, p := flow.ApplySized(t.Template, project, values, t.DocumentSize)
	if err := ProblemsOf(p); err != nil {
		return route, err
	}
	route.Normalize()
	// The result must be a route that could be saved (docs/routes.md rule 6).
	if err := ProblemsOf(flow.ValidateRoute(route, "")); err != nil {
		return route, err
	}
	route.Template.Version = t.Version
	if len(values) > 0 {
		route.Template.Values = values
	}
	return route, nil
}

// CheckTemplate is what the editor's checks say of a template document as
// the author types: what saving it would refuse, by path (the decoding's
// problems first, then the rules'), and its lint warnings.
func CheckTemplate(doc map[string]any) (flow.Problems, []flow.Warning) {
	var t flow.Template
	p := flow.DecodeValue(doc, &t, "")
	t.Normalize()
	for path, msg := range flow.ValidateTemplate(t, "") {
		if _, ok := p[path]; !ok {
			p[path] = msg
		}
	}
	return p, flow.Lint(t)
}
