package handlers

import "github.com/gofiber/fiber/v2"

type homeCard struct {
	Title, Text, Href string
}

type homeView struct {
	Base
	Cards []homeCard
}

// homeShow renders the start page.
func (h *Handlers) homeShow(c *fiber.Ctx) error {
	view := homeView{Base: h.base(c, "Home"), Cards: []homeCard{
		{Title: "API reference", Text: "Every JSON endpoint, its parameters and responses, with a console to try them.", Href: "/scalar"},
		{Title: "Machine-readable API", Text: "The OpenAPI 3.1 document behind the reference.", Href: "/openapi.json"},
		{Title: "Health", Text: "Readiness of this instance: database and migrations.", Href: "/readyz"},
	}}
	return h.respond(c, Reply{Page: "home/index", View: view})
}
