package handlers

import "github.com/gofiber/fiber/v2"

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
		view.Cards = append(view.Cards,
			homeCard{Title: "Projects", Text: "Your projects and their members.", Href: "/web/projects"},
			homeCard{Title: "Access tokens", Text: "Personal access tokens for scripts and API clients.", Href: "/web/pats"})
	}
	view.Cards = append(view.Cards,
		homeCard{Title: "API reference", Text: "Every JSON endpoint, its parameters and responses, with a console to try them.", Href: "/scalar"})
	return h.respond(c, Reply{Page: "home/index", View: view})
}
