package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"stencil/auth"
	"stencil/authoring"
	"stencil/store"
)

// principal is the authenticated caller of a request.
type principal struct {
	// The user, the personal access token when Via is "pat", and the
	// project the query names, looked up with the caller (nil: none of
	// that id), for member.
	store.Caller
	Via            string // "session", "jwt" or "pat"
	projectQueried string
	// checkedByRead, on a JWT's principal, is the token's credential
	// version when nothing of the caller was read yet: the endpoint's own
	// statement checks it (checksItsCaller). Only User.ID is known then.
	checkedByRead *int
}

type principalKey struct{}

const (
	sessionUserKey    = "uid"
	sessionVersionKey = "cv" // the user's credential version at sign-in
)

// roles lists the roles, highest first.
var roles = []string{store.RoleRoot, store.RoleAdmin, store.RoleAuthor, store.RoleViewer}

// current returns the request's principal, or nil when anonymous.
func current(c *fiber.Ctx) *principal {
	p, _ := c.Locals(principalKey{}).(*principal)
	return p
}

var errUnauthenticated = fiber.NewError(fiber.StatusUnauthorized, "authentication required: sign in or send a bearer token")

// authenticate resolves the caller from a bearer token (JWT or personal
// access token) or the browser session. A bearer token that does not check
// out is refused outright.
func (h *Handlers) authenticate(c *fiber.Ctx) error {
	p, err := h.resolvePrincipal(c)
	if err != nil {
		return err
	}
	if p != nil {
		c.Locals(principalKey{}, p)
		// The store writes who made each change into its event.
		c.SetUserContext(store.WithActor(c.UserContext(), store.Actor{UserID: p.User.ID, Username: p.User.Username, TokenID: p.TokenID}))
	}
	return c.Next()
}

// errInvalidToken refuses a bearer token that does not resolve to a caller.
var errInvalidToken = fiber.NewError(fiber.StatusUnauthorized, "invalid, expired or revoked token")

// tokenPrincipal resolves a bearer token, a JWT or a personal access
// token, to its principal, looking up its membership of project (if any)
// in the same statement. A token that does not resolve is 401.
func (h *Handlers) tokenPrincipal(ctx context.Context, token, project string) (*principal, error) {
	q := store.CallerQuery{ProjectID: project}
	p := &principal{Via: "jwt"}
	version := -1 // PATs outlive password changes: they are revoked one by one
	if auth.IsPAT(token) {
		q.PATHash, p.Via = auth.HashPAT(token), "pat"
	} else {
		var err error
		if q.UserID, version, err = h.jwts.Parse(token, time.Now()); err != nil {
			return nil, errInvalidToken
		}
	}
	caller, err := h.store.Caller(ctx, q)
	if errors.Is(err, store.ErrNotFound) || err == nil && version >= 0 && version != caller.User.CredentialVersion {
		return nil, errInvalidToken
	}
	p.Caller, p.projectQueried = caller, q.ProjectID
	return p, err
}

func (h *Handlers) resolvePrincipal(c *fiber.Ctx) (*principal, error) {
	ctx := c.UserContext()
	// A project named in the query is looked up with the caller, so that
	// the membership check costs no second round trip.
	q := store.CallerQuery{ProjectID: c.Query("project_id")}
	p := &principal{}
	if token, ok := bearerToken(c); ok {
		if checksItsCaller(c) && !auth.IsPAT(token) {
			uid, version, err := h.jwts.Parse(token, time.Now())
			if err != nil {
				return nil, errInvalidToken
			}
			return &principal{Caller: store.Caller{User: store.User{ID: uid}}, Via: "jwt", projectQueried: q.ProjectID, checkedByRead: &version}, nil
		}
		return h.tokenPrincipal(ctx, token, q.ProjectID)
	}
	if !hasSession(ctx) {
		return nil, nil
	}
	if q.UserID = h.sessions.GetInt64(ctx, sessionUserKey); q.UserID == 0 {
		return nil, nil
	}
	caller, err := h.store.Caller(ctx, q)
	if errors.Is(err, store.ErrNotFound) || err == nil && h.sessions.GetInt64(ctx, sessionVersionKey) != int64(caller.User.CredentialVersion) {
		// The account was deleted, or its password changed since this
		// session signed in: the session no longer signs anyone in.
		h.sessions.Remove(ctx, sessionUserKey)
		return nil, nil
	}
	p.Via, p.Caller, p.projectQueried = "session", caller, q.ProjectID
	return p, err
}

// checksItsCaller tells whether the request is an API client's read of a
// vault entry that its own statement can check the caller of (store.ReaderCheck):
// one statement instead of two for the hottest audited read (docs/vaults.md).
// Its query is exactly a project_id and a key, neither empty; a request
// with anything an earlier check would judge (uid, a body) or another way
// through the handler (version, HEAD, a page) is not.
func checksItsCaller(c *fiber.Ctx) bool {
	args := c.Context().QueryArgs()
	return c.Method() == fiber.MethodGet && c.Path() == "/vault/fetch/one" && len(c.Body()) == 0 &&
		args.Len() == 2 && len(args.Peek("project_id")) > 0 && len(args.Peek("key")) > 0 && representationOf(c) == asJSON
}

// checkCaller reads the caller that checksItsCaller left to the endpoint's
// statement, and makes the checks the request skipped in their order (the
// token, then the role atLeast asks for): a read refused or not found, or a
// bad query, is then answered exactly as any other request.
func (h *Handlers) checkCaller(c *fiber.Ctx) error {
	p := current(c)
	if p == nil || p.checkedByRead == nil {
		return nil
	}
	token, _ := bearerToken(c)
	checked, err := h.tokenPrincipal(c.UserContext(), token, p.projectQueried)
	if err != nil {
		return err
	}
	*p = *checked
	c.SetUserContext(store.WithActor(c.UserContext(), store.Actor{UserID: p.User.ID, Username: p.User.Username, TokenID: p.TokenID}))
	if need, _ := c.Locals(needKey{}).(string); !callerAtLeast(c, need) {
		return roleTooLow(p, need)
	}
	return nil
}

// roleTooLow refuses a caller whose own role is below what the endpoint
// needs.
func roleTooLow(p *principal, need string) error {
	return forbidden("your role (" + p.User.Role + ") may not do this; it needs " + need + " or higher")
}

func bearerToken(c *fiber.Ctx) (string, bool) {
	scheme, token, ok := strings.Cut(c.Get(fiber.HeaderAuthorization), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(token), true
}

// checkUID enforces the compatibility parameter uid: every occurrence, in
// the query and the body, repeated or not, must be the authenticated user's
// id (docs/architecture.md), except in the event log's query.
func (h *Handlers) checkUID(c *fiber.Ctx) error {
	// A method the path does not take is answered 405 by the router, not
	// judged by a rule of the handlers it never reaches.
	if allow := h.allowed(c.Path()); len(allow) > 0 && !slices.Contains(allow, c.Method()) {
		return c.Next()
	}
	// The event log's uid is its filter by user (docs/events.md), not the
	// caller's own id.
	if p := c.Path(); p == "/event/fetch" || p == "/web/events" {
		return c.Next()
	}
	values := uidParams(c)
	if len(values) == 0 {
		return c.Next()
	}
	p := current(c)
	if p == nil {
		return errUnauthenticated
	}
	for _, raw := range values {
		uid, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return badRequest("uid must be an integer")
		}
		if uid != p.User.ID {
			return forbidden("uid does not match the authenticated user")
		}
	}
	return c.Next()
}

// uidParams collects every uid of the query and of a JSON (number or
// string) or form body.
func uidParams(c *fiber.Ctx) []string {
	var values []string
	for _, v := range c.Context().QueryArgs().PeekMulti("uid") {
		values = append(values, string(v))
	}
	if len(c.Body()) == 0 {
		return values
	}
	switch mediaType(c) {
	case fiber.MIMEApplicationJSON:
		// A body that is no JSON object has no uid; its handler says why.
		if raw, ok := jsonFields(c)["uid"]; ok && string(raw) != "null" {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				s = string(raw)
			}
			values = append(values, s)
		}
	case fiber.MIMEApplicationForm:
		for _, v := range c.Context().PostArgs().PeekMulti("uid") {
			values = append(values, string(v))
		}
	}
	return values
}

// needKey holds, in a request's locals, the role its endpoint needs.
type needKey struct{}

// atLeast admits signed-in callers whose role is min or higher, and keeps
// min as what the endpoint needs: inside a project, member checks the
// caller's role there against it too (docs/roles.md).
func (h *Handlers) atLeast(min string) fiber.Handler {
	return func(c *fiber.Ctx) error {
		p := current(c)
		if p == nil {
			return errUnauthenticated
		}
		c.Locals(needKey{}, min)
		if p.checkedByRead == nil && !callerAtLeast(c, min) {
			return roleTooLow(p, min)
		}
		return c.Next()
	}
}

// callerAtLeast reports whether the signed-in caller's own role is min or
// higher: outside projects (global templates, users) the role that
// applies, and the most a role in a project can be.
func callerAtLeast(c *fiber.Ctx, min string) bool {
	p := current(c)
	return p != nil && store.RoleRank(p.User.Role) >= store.RoleRank(min)
}

// projectRole is the caller's effective role in project: the lower of
// their own role and their membership's, ROOT everywhere for a ROOT user,
// "" when not a member (docs/roles.md).
func projectRole(c *fiber.Ctx, project store.Project) string {
	p := current(c)
	if p == nil {
		return ""
	}
	return store.EffectiveRole(p.User.Role, project.Role)
}

// canIn reports whether the caller's role in project is min or higher:
// what a project's pages offer, and the rights inside an endpoint that
// go beyond what it needs (a route that reads the vault needs ADMIN).
func canIn(c *fiber.Ctx, project store.Project, min string) bool {
	return store.RoleRank(projectRole(c, project)) >= store.RoleRank(min)
}

// capNote says, after a membership's role, what the member works as when
// that differs: the account's lower role, or ROOT (docs/roles.md).
func capNote(role, effective string) string {
	switch effective {
	case role:
		return ""
	case store.RoleRoot:
		return " (ROOT in every project)"
	}
	return " (works as " + effective + ": their account's role caps it)"
}

// notByPAT refuses requests authenticated by a personal access token.
func (h *Handlers) notByPAT(c *fiber.Ctx) error {
	if p := current(c); p != nil && p.Via == "pat" {
		return forbidden("a personal access token cannot do this: sign in or use a session token")
	}
	return c.Next()
}

// member returns project id if the caller is a member of it whose role
// there reaches what the endpoint needs (atLeast): an unknown project is
// 404, a project of others or a role too low there 403, for every role.
func (h *Handlers) member(c *fiber.Ctx, id string) (store.Project, error) {
	p := current(c)
	if p == nil {
		return store.Project{}, errUnauthenticated
	}
	var project store.Project
	var err error
	switch {
	case id == p.projectQueried && id != "" && p.Project != nil:
		project = *p.Project
	case id == p.projectQueried && id != "":
		err = store.ErrNotFound
	default:
		project, err = h.store.Project(c.UserContext(), id, p.User.ID)
	}
	if errors.Is(err, store.ErrNotFound) {
		return project, fiber.NewError(fiber.StatusNotFound, "project "+authoring.Quote(id)+" not found")
	}
	if err == nil && !project.IsMember {
		return project, forbidden("you are not a member of project " + authoring.Quote(id))
	}
	if need, _ := c.Locals(needKey{}).(string); err == nil && !canIn(c, project, need) {
		return project, forbidden("your role in project " + authoring.Quote(id) + " (" + projectRole(c, project) + ") may not do this; it needs " + need + " or higher")
	}
	return project, err
}

// signIn attaches user to the browser session under a new session token.
// A request with a bearer token has no session to sign in.
func (h *Handlers) signIn(c *fiber.Ctx, user store.User) error {
	ctx := c.UserContext()
	if !hasSession(ctx) {
		return errNoBrowserSession
	}
	if err := h.sessions.RenewToken(ctx); err != nil {
		return err
	}
	h.sessions.Put(ctx, sessionUserKey, user.ID)
	h.sessions.Put(ctx, sessionVersionKey, int64(user.CredentialVersion))
	return nil
}
