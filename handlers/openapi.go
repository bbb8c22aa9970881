package handlers

import (
	_ "embed"
	"encoding/json"
	"fmt"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gofiber/fiber/v2"
)

//go:embed openapi.yaml
var apiDocYAML []byte

// apiDoc is the OpenAPI document, checked at start and served as JSON.
type apiDoc struct {
	doc  *openapi3.T
	json []byte
}

func loadAPIDoc() (*apiDoc, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(apiDocYAML)
	if err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	if err := doc.Validate(loader.Context); err != nil {
		return nil, fmt.Errorf("openapi.yaml: %w", err)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return &apiDoc{doc: doc, json: b}, nil
}

// apiDocShow serves the OpenAPI document.
func (h *Handlers) apiDocShow(c *fiber.Ctx) error {
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSONCharsetUTF8)
	c.Set(fiber.HeaderCacheControl, "no-cache")
	return c.Send(h.api.json)
}

// apiViewerShow serves the Scalar API reference, from vendored files only.
func (h *Handlers) apiViewerShow(c *fiber.Ctx) error {
	return c.Render("api/scalar", nil)
}
