package handlers

import (
	"github.com/gofiber/fiber/v2"
)

// apiDocShow serves the OpenAPI document.
func (h *Handlers) apiDocShow(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-cache")
	return c.Send(h.api.JSON)
}

// apiViewerShow serves the Scalar API reference, from vendored files only.
func (h *Handlers) apiViewerShow(c *fiber.Ctx) error {
	return h.respond(c, Reply{Page: "api/scalar", View: scalarView{Base: h.base(c, "API reference"), Heading: "API reference",
		DocURL: "/openapi.json", Back: "/", BackText: "Home"}})
}

// scalarView is the Scalar viewer's page: which document, and the way back.
type scalarView struct {
	Base
	Heading, DocURL, Back, BackText string
}
