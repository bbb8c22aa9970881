package handlers

import (
	"net/url"

	"github.com/gofiber/fiber/v2"

	"stencil/store"
)

type homeCard struct {
	Title, Text, Href string
}

type homeView struct {
	Base
	Cards []homeCard
	Steps []homeStep // the first day's checklist, while any step of the user's is open
	Done  int        // how many of the user's steps are done
	Own   int        // how many steps are the user's to take (the rest are another role's)
}

// homeStep is one step of the first day's checklist, ticked from the data.
type homeStep struct {
	N                         int // its place, from 1
	Title, Text, Href, Action string
	Done                      bool
	Next                      bool // the first step of the user's not done: its button leads
	Theirs                    bool // a step the user's role cannot take: said, not counted
}

// docsReadKey marks, in the session, that its user opened a project's
// route document.
const docsReadKey = "docs_read"

// firstDay is the checklist of a user's first day: create a project, add a
// secret, build a template or route, try it, read its document. Each step
// ticks itself from the user's own work in their projects; steps their
// role cannot take say who can, and do not count.
func (h *Handlers) firstDay(c *fiber.Ctx, u *store.User) (_ []homeStep, done, own int, _ error) {
	p, err := h.store.UserProgress(c.UserContext(), u.ID)
	if err != nil {
		return nil, 0, 0, err
	}
	// The most they can do in their projects: their role in the one where
	// it is highest (docs/roles.md); with none, their own role.
	rank := store.RoleRank(u.Role)
	if p.Role != "" {
		rank = store.RoleRank(store.EffectiveRole(u.Role, p.Role))
	}
	project := url.QueryEscape(p.FirstProject)
	steps := []homeStep{
		{Title: "Create a project", Text: "A project holds routes, templates, collections and one vault, under an API path of its own.",
			Href: "/web/projects#project-form", Action: "Create a project", Done: p.Projects > 0},
		{Title: "Add a secret", Text: "Keep an API key in the project's vault: masked on every page, every read logged.",
			Href: "/web/vault?project_id=" + project + "#vault-create", Action: "Open the vault", Done: p.Secrets},
		{Title: "Build a template or a route", Text: "Lay out a route's blocks in the editor, or fill a template's blanks.",
			Href: "/web/routes/create?id=" + project, Action: "Build a route", Done: p.Templates || p.Routes},
		{Title: "Try it", Text: "Send a request from the playground and read each block it ran; a dry run writes nothing.",
			Href: "/web/routes?id=" + project, Action: "Choose a route to try", Done: p.Runs},
		{Title: "Read its document", Text: "Every project's routes are described in an OpenAPI document clients can be generated from.",
			Href: "/web/routes/docs?project_id=" + project, Action: "Open the document", Done: h.sessionInt(c, docsReadKey) == 1},
	}
	if p.Projects == 0 {
		for i := 1; i < len(steps); i++ {
			steps[i].Href, steps[i].Action = "", ""
		}
		if rank < store.RoleRank(store.RoleAdmin) {
			steps[0].Text, steps[0].Href, steps[0].Action, steps[0].Theirs = "An ADMIN creates projects; ask one to add you to a project.", "", "", true
		}
	}
	if rank < store.RoleRank(store.RoleAdmin) && !p.Secrets {
		steps[1].Text, steps[1].Href, steps[1].Action, steps[1].Theirs = "Vaults are an ADMIN's: ask one to add the secrets your routes read.", "", "", true
	}
	if rank < store.RoleRank(store.RoleAuthor) {
		steps[2].Href, steps[2].Action, steps[3].Href, steps[3].Action = "", "", "", ""
		steps[2].Text = "Routes are built by AUTHORs and ADMINs of the project."
		steps[2].Theirs, steps[3].Theirs = !p.Templates && !p.Routes, !p.Runs
	}
	next := false
	for i := range steps {
		steps[i].N = i + 1
		if steps[i].Theirs {
			continue
		}
		own++
		if steps[i].Done {
			done++
		} else if !next {
			steps[i].Next, next = true, true
		}
	}
	return steps, done, own, nil
}

// homeShow renders the start page: where to go next, by who is asking.
func (h *Handlers) homeShow(c *fiber.Ctx) error {
	view := homeView{Base: h.base(c, "Home")}
	if view.User == nil {
		view.Cards = append(view.Cards, homeCard{Title: "Sign in", Text: "Use your Stencil account to manage projects, templates and vaults.", Href: "/web/login"})
	} else {
		steps, done, own, err := h.firstDay(c, view.User)
		if err != nil {
			return err
		}
		if done < own {
			view.Steps, view.Done, view.Own = steps, done, own
		}
		// What this role can do, and nothing it cannot.
		rank := store.RoleRank(view.User.Role)
		view.Cards = append(view.Cards,
			homeCard{Title: "Projects", Text: "Your projects, their members and their routes.", Href: "/web/projects"},
			homeCard{Title: "Routes", Text: "The routes of your projects, their runs and their playground.", Href: "/web/routes"},
			homeCard{Title: "Data", Text: "Each project's collections of records, read and written by its routes.", Href: "/web/data"},
			homeCard{Title: "Route templates", Text: "Reusable route blueprints, global and per project.", Href: "/web/routes/templates"})
		if rank >= store.RoleRank(store.RoleAuthor) {
			view.Cards = append(view.Cards, homeCard{Title: "New template", Text: "Build a route template in the visual editor.", Href: "/web/routes/templates/create"})
		}
		if rank >= store.RoleRank(store.RoleAdmin) {
			view.Cards = append(view.Cards, homeCard{Title: "Vaults", Text: "Each project's secrets, masked until revealed, every access logged.", Href: "/web/vaults"})
		}
		if rank >= store.RoleRank(store.RoleRoot) {
			view.Cards = append(view.Cards,
				homeCard{Title: "Users", Text: "Accounts and their roles.", Href: "/web/users"},
				homeCard{Title: "Configs", Text: "Site-wide settings.", Href: "/web/configs"})
		}
		view.Cards = append(view.Cards, homeCard{Title: "Access tokens", Text: "Personal access tokens for scripts and API clients.", Href: "/web/pats"})
	}
	view.Cards = append(view.Cards,
		homeCard{Title: "API reference", Text: "Every JSON endpoint, its parameters and responses, with a console to try them.", Href: "/scalar"})
	return h.respond(c, Reply{Page: "home/index", View: view})
}
