package authoring

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"stencil/egress"
	"stencil/engine"
	"stencil/flow"
	"stencil/mail"
	"stencil/store"
)

// The rules of saving a route (docs/routes.md): what a run would refuse
// anyway is refused, what is doubtful is a warning by path.

// Refused is a save the caller's role does not allow (an HTTP answer
// gives it 403): the place in the document that needs more, and why.
type Refused struct{ flow.Warning }

func (e *Refused) Error() string { return e.String() }

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
// email templates the project does not have, and hosts its egress list
// (hosts, the project's x_egress_hosts) leaves out.
func CheckRoute(ctx context.Context, st *store.Store, r flow.Route, readsVault bool, hosts []string) ([]flow.Warning, error) {
	plan, p := engine.Compile(r, engine.PathParams(r.RoutePath))
	if len(p) > 0 {
		prefixed := flow.Problems{}
		for path, msg := range p {
			prefixed["route."+path] = msg
		}
		return nil, ProblemsOf(prefixed)
	}
	if !readsVault {
		if r.AuthSignature.Checks() {
			w := flow.Warn("route.auth_signature", "reads the vault (the secret of the signatures): only an ADMIN or ROOT member of the project can save or try a route that does")
			return nil, &Refused{w}
		}
		for i, b := range r.Flow.Blocks {
			if b.Type == "VAULT" {
				w := flow.WarnBlock(fmt.Sprintf("route.flow.blocks[%d]", i), "VAULT", "reads the vault: only an ADMIN or ROOT member of the project can save or try a route that does")
				return nil, &Refused{flow.Named([]flow.Warning{w}, r.Flow.Blocks)[0]}
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
	warnings := []flow.Warning{}
	for _, w := range plan.Warnings {
		warnings = append(warnings, w.Under("route."))
	}
	for _, u := range uses {
		if !slices.Contains(ids, u.Name) {
			warnings = append(warnings, flow.Warn("route."+u.Path, fmt.Sprintf("collection %s does not exist in this project yet", u.Name)))
		}
	}
	// A VAULT block whose key the vault does not hold faults on every run.
	// Only ADMIN and ROOT members get here with one, and they may list keys.
	var keys, keyPaths []string
	if r.AuthSignature.Checks() {
		keys, keyPaths = append(keys, r.AuthSignature.VaultKey), append(keyPaths, "route.auth_signature.vault_key")
	}
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
			warnings = append(warnings, flow.Warn(keyPaths[i], fmt.Sprintf("vault key %s does not exist in this project yet: every run would fault", k)))
		}
	}
	mailWarnings, err := emailWarnings(ctx, st, r)
	if err != nil {
		return nil, err
	}
	jobWarnings, err := enqueueWarnings(ctx, st, r)
	if err != nil {
		return nil, err
	}
	warnings = append(append(append(warnings, mailWarnings...), jobWarnings...), egressWarnings(r, hosts)...)
	return flow.Named(flow.CapWarnings(warnings), r.Flow.Blocks), nil
}

// egressWarnings are what saving says of HTTP blocks whose URL (written
// out, not read from a variable) names a host the project's routes may
// not call under hosts, its "Hosts routes may call" (x_egress_hosts):
// every run of the block would fail (docs/security.md). Each links to the
// setting.
func egressWarnings(r flow.Route, hosts []string) []flow.Warning {
	var warnings []flow.Warning
	for i, b := range r.Flow.Blocks {
		if b.Type != "HTTP" || b.URL == nil || b.URL.RefVar {
			continue
		}
		u, err := url.Parse(strings.TrimSpace(b.URL.Data))
		if err != nil || u.Hostname() == "" {
			continue // the run says what is wrong with the URL
		}
		host := strings.ToLower(u.Hostname())
		if egress.Allows(hosts, host) {
			continue
		}
		msg := fmt.Sprintf("calls %s, which the project's “Hosts routes may call” does not list: every run would fail", host)
		if !egress.Allows(nil, host) {
			msg = fmt.Sprintf("calls %s by its address: an HTTP block calls hosts by name, so every run would fail", host)
		}
		w := flow.Warn(fmt.Sprintf("route.flow.blocks[%d].url", i), msg)
		w.Href = "/web/project?id=" + url.QueryEscape(r.ProjectID) + "#f-x_egress_hosts"
		warnings = append(warnings, w)
	}
	return warnings
}

// enqueueWarnings are what saving says of a route's ENQUEUE blocks: a
// route the project does not have yet, or one that cannot run without a
// caller — every job of it would be cancelled (docs/jobs.md).
func enqueueWarnings(ctx context.Context, st *store.Store, r flow.Route) ([]flow.Warning, error) {
	var warnings []flow.Warning
	for i, b := range r.Flow.Blocks {
		if b.Type != "ENQUEUE" || b.TargetRoute == "" {
			continue
		}
		at := fmt.Sprintf("route.flow.blocks[%d].route_id", i)
		target := r
		if b.TargetRoute != r.RouteID {
			stored, err := st.Route(ctx, r.ProjectID, b.TargetRoute)
			if errors.Is(err, store.ErrNotFound) {
				warnings = append(warnings, flow.Warn(at, fmt.Sprintf("route %s does not exist in this project yet: its jobs would be cancelled", b.TargetRoute)))
				continue
			}
			if err != nil {
				return nil, err
			}
			target = stored.Route
		}
		if len(engine.PathParams(target.RoutePath)) > 0 || target.AuthJWT.Active || target.AuthSignature.Checks() {
			warnings = append(warnings, flow.Warn(at, fmt.Sprintf("route %s cannot run without a caller (path parameters, auth_jwt or auth_signature): its jobs would be cancelled", b.TargetRoute)))
		}
	}
	return warnings, nil
}

// emailWarnings are what saving says of a route's EMAIL blocks: a template
// the project does not have (each message would fail), and placeholders
// of its template that no pair of the block fills (sent as they are).
func emailWarnings(ctx context.Context, st *store.Store, r flow.Route) ([]flow.Warning, error) {
	var warnings []flow.Warning
	var templates map[string]store.EmailTemplate
	for i, b := range r.Flow.Blocks {
		if b.Type != "EMAIL" {
			continue
		}
		// A literal recipient that is no address fails every message.
		for j, to := range b.Recipients {
			if !to.RefVar {
				if err := mail.CheckAddress(to.Data); err != nil {
					warnings = append(warnings, flow.Warn(fmt.Sprintf("route.flow.blocks[%d].recipients[%d].data", i, j), fmt.Sprintf("recipient %q %s: every message would fail", flow.Printable(to.Data), err)))
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
			warnings = append(warnings, flow.Warn(fmt.Sprintf("route.flow.blocks[%d].template", i), fmt.Sprintf("email template %s does not exist in this project yet: every message would fail", b.EmailTemplate)))
			continue
		}
		for _, key := range mail.Placeholders(t.Subject, t.Text, t.HTML) {
			if !slices.ContainsFunc(b.Pairs, func(p flow.Pair) bool { return p.ID == key }) {
				warnings = append(warnings, flow.Warn(fmt.Sprintf("route.flow.blocks[%d].pairs", i), fmt.Sprintf("email template %s uses {%s}, which no pair of the block fills: it is sent as it is", t.Name, key)))
			}
		}
	}
	return warnings, nil
}
