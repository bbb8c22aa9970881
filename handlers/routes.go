package handlers

import (
	"github.com/gofiber/fiber/v2"
)

// Routes registers the whole URL space.
func Routes(app *fiber.App, h *Handlers) {
	app.Use(h.recoverPanics, h.securityHeaders)
	app.Use("/static", h.staticFiles())

	// Operations: always JSON.
	app.Get("/healthz", h.healthShow)
	app.Get("/readyz", h.readyShow)

	// API description and its viewer.
	app.Get("/openapi.json", h.apiDocShow)
	app.Get("/scalar", h.apiViewerShow)

	// Everything below has a browser session; unsafe requests on it need the
	// CSRF token.
	app.Use(h.loadSession, h.checkCSRF)

	// Pages.
	app.Get("/", h.homeShow)
}
