package handlers

import (
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"stencil/store"
)

type eventQuery struct {
	keysetQuery
	Offset    int    `query:"offset" json:"offset" validate:"min=0,max=10000000"`
	Limit     *int   `query:"limit" json:"limit" validate:"omitempty,min=1,max=1000"`
	ProjectID string `query:"project_id" json:"project_id" validate:"max=200"`
	Type      string `query:"type" json:"type" validate:"omitempty,event_type"`
	UID       int64  `query:"uid" json:"uid" validate:"min=0"`
}

// eventDTO is one event as the API shows it.
type eventDTO struct {
	ID        int64   `json:"id"`
	At        string  `json:"at"`
	UID       *int64  `json:"uid"`
	Username  string  `json:"username"`
	TokenID   *int64  `json:"token_id"`
	Type      string  `json:"type"`
	ProjectID *string `json:"project_id"`
	Object    string  `json:"object"`
	Summary   string  `json:"summary"`
}

// eventRow is an event on the page, with the link to its object (none when
// the object is gone or the reader may not open it).
type eventRow struct {
	store.Event
	Href string
}

type eventsView struct {
	Base
	Events   []eventRow
	Pager    Pager
	Query    eventQuery
	Types    []string
	Projects []store.Project
	Users    []store.Member
	// EventDays is how long events are kept.
	EventDays int
}

// events answers GET /event/fetch and renders /web/events: the event log,
// newest first — everything for ROOT, the events of their projects for an
// ADMIN — filtered by project, type and user.
func (h *Handlers) events(c *fiber.Ctx) error {
	var q eventQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	k := q.keyset()
	me := current(c)
	ctx := c.UserContext()
	sq := store.EventQuery{ProjectID: q.ProjectID, Type: q.Type, UserID: q.UID, Keyset: k, Offset: q.Offset}
	root := me.User.Role == store.RoleRoot
	if !root {
		mine, err := h.store.MemberProjects(ctx, me.User.ID, store.RoleAdmin)
		if err != nil {
			return err
		}
		if q.ProjectID != "" && !slices.Contains(mine, q.ProjectID) {
			if _, err := h.member(c, q.ProjectID); err != nil {
				return err
			}
		}
		sq.Projects = append([]string{}, mine...)
	}
	page := store.Page{Offset: q.Offset, Limit: defaultLimit(c, 25)}
	if q.Limit != nil {
		page.Limit = *q.Limit
	}
	read := func(limit int) ([]store.Event, int, error) {
		q := sq
		q.Limit = limit
		return h.store.Events(ctx, q)
	}
	list, total, more, err := logPage(c, page, k, read)
	if err != nil {
		return err
	}
	countCap := math.MaxInt
	if !store.EventsCounted(sq) {
		countCap = store.LogCountCap
	}
	pager := newLogPager(c, page, k, len(list), func(i int) int64 { return list[i].ID }, more, total, countCap)
	if representationOf(c) == asJSON {
		dtos := make([]eventDTO, len(list))
		for i, e := range list {
			dtos[i] = eventDTO{ID: e.ID, At: e.At.UTC().Format("2006-01-02T15:04:05.000Z"), UID: e.UserID, Username: e.Username,
				TokenID: e.TokenID, Type: e.Type, ProjectID: e.ProjectID, Object: e.Object, Summary: e.Summary}
		}
		return h.respond(c, Reply{Data: dtos, Amount: &pager.Total, Capped: pager.AtLeast, Next: pager.Next, Last: pager.Next == ""})
	}
	view := eventsView{Base: h.base(c, "Events"), Pager: pager, Query: q, Types: store.EventTypes,
		EventDays: int(h.cfg.EventRetention.Hours() / 24)}
	for _, e := range list {
		view.Events = append(view.Events, eventRow{Event: e, Href: eventHref(e, root)})
	}
	if view.Projects, _, err = h.store.ListProjects(ctx, me.User.ID, root, store.Page{Limit: 500}); err != nil {
		return err
	}
	if !root {
		// Only the projects they manage: an ADMIN's events are theirs.
		view.Projects = slices.DeleteFunc(view.Projects, func(p store.Project) bool { return !slices.Contains(sq.Projects, p.ID) })
	}
	if view.Users, err = h.eventUsers(c, view.Projects, root); err != nil {
		return err
	}
	return h.respond(c, Reply{Page: "events/index", View: view})
}

// eventUsers are the users the page's filter offers: every user for ROOT,
// the members of their projects for an ADMIN.
func (h *Handlers) eventUsers(c *fiber.Ctx, projects []store.Project, root bool) ([]store.Member, error) {
	ctx := c.UserContext()
	if root {
		users, _, err := h.store.ListUsers(ctx, store.Page{Limit: 500})
		members := make([]store.Member, len(users))
		for i, u := range users {
			members[i] = store.Member{UserID: u.ID, Username: u.Username}
		}
		return members, err
	}
	seen := map[int64]bool{}
	var members []store.Member
	for _, p := range projects {
		list, err := h.store.Members(ctx, p.ID)
		if err != nil {
			return nil, err
		}
		for _, m := range list {
			if !seen[m.UserID] {
				seen[m.UserID] = true
				members = append(members, m)
			}
		}
	}
	slices.SortFunc(members, func(a, b store.Member) int {
		return strings.Compare(strings.ToLower(a.Username), strings.ToLower(b.Username))
	})
	return members, nil
}

// eventHref is the page of an event's object, "" when the event removed it
// or the page is not the reader's (users and configs are ROOT's).
func eventHref(e store.Event, root bool) string {
	kind, verb, _ := strings.Cut(e.Type, "_")
	if strings.HasSuffix(e.Type, "_delete") || strings.HasSuffix(e.Type, "_destroy") || strings.HasSuffix(e.Type, "_revoke") && kind != "token" {
		return ""
	}
	project := ""
	if e.ProjectID != nil {
		project = url.QueryEscape(*e.ProjectID)
	}
	object := url.QueryEscape(e.Object)
	switch kind {
	case "user", "password":
		if root {
			return "/web/users"
		}
	case "config":
		if root {
			return "/web/configs?filter=" + object
		}
	case "token":
		return "/web/pats"
	case "project", "member", "invitation":
		return "/web/project?id=" + project
	case "route":
		return "/web/routes/history?project_id=" + project + "&route_id=" + object
	case "template":
		return "/web/routes/templates/history?id=" + object
	case "collection":
		return collectionURL(*e.ProjectID, e.Object)
	case "record":
		collection, _, _ := strings.Cut(e.Object, "/")
		return collectionURL(*e.ProjectID, collection)
	case "vault":
		if verb == "import" {
			return "/web/vault?project_id=" + project
		}
		return "/web/vault/versions?project_id=" + project + "&key=" + object
	case "email":
		if verb == "retry" || verb == "cancel" {
			id, _ := strconv.ParseInt(e.Object, 10, 64)
			return outboxMessageURL(*e.ProjectID, id)
		}
		return "/web/email/template?project_id=" + project + "&name=" + object
	}
	return ""
}
