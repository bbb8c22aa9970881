package authoring

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"stencil/engine"
	"stencil/flow"
	"stencil/mail"
	"stencil/store"
)

// The rules of saving a route (docs/routes.md): what a run would refuse
// anyway is refused, what is doubtful is a warning by path.

// Refused is a save the caller's role does not allow (an HTTP answer
// gives it 403), with the reason naming what in the document needs more.
type Refused struct{ Reason string }

func (e *Refused) Error() string { return e.Reason }

// ProblemsOf is p (document faults by path) as an error, nil when p is
// empty.
func ProblemsOf(p flow.Problems) error {
	if len(p) == 0 {
		return nil
	}
	return &Problems{Fields: p}
}

// DecodeRoute reads and checks a route document (given under "route")
// for project.
func DecodeRoute(doc json.RawMessage, project string) (flow.Route, error) {
	r, p := flow.DecodeRoute(doc, "route")
	if err := ProblemsOf(p); err != nil {
		return r, err
	}
	if r.ProjectID != "" && r.ProjectID != project {
		return r, ProblemsOf(flow.Problems{"route.project_id": "must be the project_id of the request, or left out"})
	}
	r.ProjectID = project
	r.Normalize()
	return r, ProblemsOf(flow.ValidateRoute(r, "route"))
}

// CheckRoute refuses what a route's run would refuse anyway
// (docs/engine.md): literals that do not convert to their rtype, BREAK
// and CONTINUE outside a LOOP, and so on (Problems, by path); and a VAULT
// block saved by a caller who may not read the vault (Refused, naming the
// block). What it finds doubtful it returns as warnings, by path:
// variables used before any block sets them, collections, vault keys and
// email templates the project does not have.
func CheckRoute(ctx context.Context, st *store.Store, r flow.Route, readsVault bool) ([]string, error) {
	plan, p := engine.Compile(r, engine.PathParams(r.RoutePath))
	if len(p) > 0 {
		prefixed := flow.Problems{}
		for path, msg := range p {
			prefixed["route."+path] = msg
		}
		return nil, ProblemsOf(prefixed)
	}
	if !readsVault {
		for i, b := range r.Flow.Blocks {
			if b.Type == "VAULT" {
				return nil, &Refused{Reason: fmt.Sprintf("route.flow.blocks[%d] (VAULT) reads the vault: only an ADMIN or ROOT member of the project can save or try a route that does", i)}
			}
		}
	}
	ids, err := st.CollectionIDs(ctx, r.ProjectID)
	if err != nil {
		return nil, err
	}
	uses := plan.Collections
	if r.AuthJWT.Active {
		uses = append(uses, engine.CollectionUse{Name: r.AuthJWT.RefCol, Path: "auth_jwt.ref_col"})
	}
	warnings := []string{}
	for _, w := range plan.Warnings {
		warnings = append(warnings, strings.Replace(w, "(flow.", "(route.flow.", 1))
	}
	for _, u := range uses {
		if !slices.Contains(ids, u.Name) {
			warnings = append(warnings, fmt.Sprintf("collection %s does not exist in this project yet (route.%s)", u.Name, u.Path))
		}
	}
	// A VAULT block whose key the vault does not hold faults on every run.
	// Only ADMIN and ROOT members get here with one, and they may list keys.
	var keys, keyPaths []string
	for i, b := range r.Flow.Blocks {
		if b.Type == "VAULT" {
			keys, keyPaths = append(keys, b.Key), append(keyPaths, fmt.Sprintf("route.flow.blocks[%d].key", i))
		}
	}
	missing, err := st.MissingVaultKeys(ctx, r.ProjectID, keys)
	if err != nil {
		return nil, err
	}
	for i, k := range keys {
		if slices.Contains(missing, k) {
			warnings = append(warnings, fmt.Sprintf("vault key %s does not exist in this project yet: every run would fault (%s)", k, keyPaths[i]))
		}
	}
	mailWarnings, err := emailWarnings(ctx, st, r)
	if err != nil {
		return nil, err
	}
	return flow.CapWarnings(append(warnings, mailWarnings...)), nil
}

// emailWarnings are what saving says of a route's EMAIL blocks: a template
// the project does not have (each message would fail), and placeholders
// of its template that no pair of the block fills (sent as they are).
func emailWarnings(ctx context.Context, st *store.Store, r flow.Route) ([]string, error) {
	var warnings []string
	var templates map[string]store.EmailTemplate
	for i, b := range r.Flow.Blocks {
		if b.Type != "EMAIL" {
			continue
		}
		// A literal recipient that is no address fails every message.
		for j, to := range b.Recipients {
			if !to.RefVar {
				if err := mail.CheckAddress(to.Data); err != nil {
					warnings = append(warnings, fmt.Sprintf("recipient %q %s: every message would fail (route.flow.blocks[%d].recipients[%d].data)", flow.Printable(to.Data), err, i, j))
				}
			}
		}
		if templates == nil {
			list, err := st.EmailTemplates(ctx, r.ProjectID)
			if err != nil {
				return nil, err
			}
			templates = map[string]store.EmailTemplate{}
			for _, t := range list {
				templates[t.Name] = t
			}
		}
		t, ok := templates[b.EmailTemplate]
		if !ok {
			warnings = append(warnings, fmt.Sprintf("email template %s does not exist in this project yet: every message would fail (route.flow.blocks[%d].template)", b.EmailTemplate, i))
			continue
		}
		for _, key := range mail.Placeholders(t.Subject, t.Text, t.HTML) {
			if !slices.ContainsFunc(b.Pairs, func(p flow.Pair) bool { return p.ID == key }) {
				warnings = append(warnings, fmt.Sprintf("email template %s uses {%s}, which no pair of the block fills: it is sent as it is (route.flow.blocks[%d].pairs)", t.Name, key, i))
			}
		}
	}
	return warnings, nil
}
