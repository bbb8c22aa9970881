package handlers

import (
	"github.com/gofiber/fiber/v2"

	"stencil/store"
)

type homeCard struct {
	Title, Text, Href string
}

type homeView struct {
	Base
	Cards []homeCard
}

// homeShow renders the start page: where to go next, by who is asking.
func (h *Handlers) homeShow(c *fiber.Ctx) error {
	view := homeView{Base: h.base(c, "Home")}
	if view.User == nil {
		view.Cards = append(view.Cards, homeCard{Title: "Sign in", Text: "Use your Stencil account to manage projects, templates and vaults.", Href: "/web/login"})
	} else {
		// What this role can do, and nothing it cannot.
		rank := roleRank[view.User.Role]
		view.Cards = append(view.Cards,
			homeCard{Title: "Projects", Text: "Your projects, their members and their routes.", Href: "/web/projects"},
			homeCard{Title: "Route templates", Text: "Reusable route blueprints, global and per project.", Href: "/web/routes/templates"})
		if rank >= roleRank[store.RoleAuthor] {
			view.Cards = append(view.Cards, homeCard{Title: "New template", Text: "Build a route template in the visual editor.", Href: "/web/routes/templates/create"})
		}
		if rank >= roleRank[store.RoleAdmin] {
			view.Cards = append(view.Cards, homeCard{Title: "Vaults", Text: "Each project's secrets, masked until revealed, every access logged.", Href: "/web/vaults"})
		}
		if rank >= roleRank[store.RoleRoot] {
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
