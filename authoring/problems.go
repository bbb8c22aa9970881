// Package authoring holds what a change to a project may do
// (docs/architecture.md): the rules of the values people save — a
// project's settings, its collections and email templates, names in lists
// — checked the same whether they come from the API, a page's form or a
// project file, and the plan and application of a project file in one
// transaction. Its refusals are Problems, by the JSON path of each field.
// It speaks no HTTP (handlers bind requests and render answers), keeps no
// state between calls and never seals or opens a secret.
package authoring

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"stencil/flow"
	"stencil/schema"

	"stencil/store"
)

// Problems lists the fields that break a rule, by JSON path (an HTTP
// answer gives them as data.fields, with 422, or 400 when Missing).
type Problems struct {
	Fields  map[string]string
	Missing bool // a required parameter is absent: 400 rather than 422
}

func (e *Problems) Error() string {
	keys := slices.Sorted(maps.Keys(e.Fields))
	// A missing parameter is named first: it is the reason for the status.
	for _, k := range keys {
		if e.Missing && strings.HasPrefix(e.Fields[k], "is required") {
			return k + " " + e.Fields[k]
		}
	}
	switch {
	case len(keys) == 0:
		return "invalid input"
	case keys[0] == "":
		return e.Fields[""]
	}
	return keys[0] + " " + e.Fields[keys[0]]
}

// constraintFields names the input field and message of each unique
// constraint, so that a conflict reads as a validation failure.
var constraintFields = map[string][2]string{
	"users_username_key":        {"username", "is already taken"},
	"users_email_key":           {"email", "is already registered"},
	"projects_pkey":             {"id", "is already taken"},
	"projects_api_path_key":     {"api_path", "is already used by another project"},
	"projects_api_path_overlap": {"api_path", "overlaps another project's: neither path may lie inside the other"},
	"project_members_pkey":      {"target_uid", "is already a member of this project"},
	"configs_pkey":              {"key", "already exists"},
	"vault_entries_pkey":        {"key", "already exists in this vault"},
	"email_templates_pkey":      {"name", "is already used by another email template of this project"},
	"collections_pkey":          {"id", "is already used by another collection of this project"},
	"route_templates_name_key":  {"name", "is already taken in this scope"},
	"routes_pkey":               {"route.route_id", "is already taken in this project"},
	"routes_method_path_key":    {"route.route_path", "is already used with this method by another route"},
}

// AsProblems returns err as the fields it breaks: Problems, a
// unique-constraint conflict or a rule of the store; nil for anything else.
func AsProblems(err error) *Problems {
	var verr *Problems
	var conflict *store.ConflictError
	var problem *schema.Problem
	var violation *schema.Violation
	switch {
	case errors.As(err, &verr):
		return verr
	case errors.As(err, &conflict):
		if f, ok := constraintFields[conflict.Constraint]; ok {
			return &Problems{Fields: map[string]string{f[0]: f[1]}}
		}
		return &Problems{Fields: map[string]string{"": "conflicts with an existing entry"}}
	case errors.As(err, &problem):
		return &Problems{Fields: map[string]string{problem.Path: problem.Message}}
	case errors.As(err, &violation) && !violation.Conflict:
		return &Problems{Fields: map[string]string{"data." + violation.Field: violation.Message}}
	case errors.Is(err, store.ErrLastRoot):
		return &Problems{Fields: map[string]string{"target_uid": "is the last ROOT user and cannot be demoted or deleted"}}
	case errors.Is(err, store.ErrLastAdmin):
		return &Problems{Fields: map[string]string{"target_uid": "is the project's last ADMIN: make another member ADMIN first"}}
	}
	return nil
}

// maxEchoedChars is how much of an input value a message quotes.
const maxEchoedChars = 100

// Cut shortens an input value for a message (docs/architecture.md), its
// control characters written as \u escapes: a message never echoes one.
func Cut(s string) string {
	if utf8.RuneCountInString(s) > maxEchoedChars {
		s = string([]rune(s)[:maxEchoedChars]) + "…"
	}
	return flow.Printable(s)
}

// Quote is strconv.Quote of an input value, cut first.
func Quote(s string) string { return strconv.Quote(Cut(s)) }
