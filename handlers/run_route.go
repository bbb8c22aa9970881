package handlers

import (
	"errors"
	"strconv"
	"strings"

	"github.com/gofiber/fiber/v2"

	"stencil/runs"
	"stencil/store"
)

// runRoute answers /x/<api_path><route_path>: the runtime finds the route
// and runs it (runs.Service.Serve); this writes its answer, JSON or empty,
// as the response.
func (h *Handlers) runRoute(c *fiber.Ctx) error {
	// The run is written later, after fasthttp has reused the request's
	// buffers: what it keeps is copied. The path is as sent: an escaped
	// slash stays inside its segment.
	a, err := h.runs.Serve(c.UserContext(), runs.Request{
		// The run's time is the request's: from when fasthttp read it
		// to when its answer is whole (observe finishes the run).
		Arrived:  c.Context().Time(),
		LogLater: true,
		Method:   strings.Clone(c.Method()),
		Path:     string(c.Request().URI().PathOriginal()),
		Query:    string(c.Request().URI().QueryString()),
		Body:     c.Body(),
		Client:   c.IP(),
		Origin:   c.Get(fiber.HeaderOrigin),
		// A preflight's headers (CORS).
		PreflightMethod:  c.Get(fiber.HeaderAccessControlRequestMethod),
		PreflightHeaders: c.Get(fiber.HeaderAccessControlRequestHeaders),
		Hop:              hops(c.Get("Stencil-Hop")),
		Resolve:          func() (*store.Caller, error) { return h.bearerCaller(c) },
		Header:           func(name string) string { return c.Get(name) },
	})
	if err != nil {
		return err
	}
	c.Locals(finishRunKey{}, func() { h.runs.Finish(a) })
	if len(a.Body) > 0 {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	}
	for k, v := range a.Header {
		c.Set(k, strings.Join(v, ", "))
	}
	return c.Status(a.Status).Send(a.Body)
}

// finishRunKey holds, in a request's locals, what logs its run at /x
// once the answer is whole (observe).
type finishRunKey struct{}

// hops is a request's Stencil-Hop as a count: 0 when absent, and the
// limit when it is not a count, so a header no run of ours sent never
// lets a chain of calls begin again from 0.
func hops(header string) int {
	if header == "" {
		return 0
	}
	n, err := strconv.Atoi(header)
	if err != nil || n < 0 {
		return runs.MaxHops
	}
	return n
}

// bearerCaller is the caller of an auth_jwt route at /x: a JWT or PAT of
// this platform, else a refusal (401).
func (h *Handlers) bearerCaller(c *fiber.Ctx) (*store.Caller, error) {
	if _, ok := bearerToken(c); !ok {
		return nil, &runs.Refusal{Status: fiber.StatusUnauthorized, Message: runs.NoTokenMessage}
	}
	p, err := h.resolvePrincipal(c)
	if err != nil {
		return nil, asRefusal(err)
	}
	return &p.Caller, nil
}

// asRefusal is a credential's 401 as the refusal of a route that checks
// its callers; other errors stay the platform's.
func asRefusal(err error) error {
	var fe *fiber.Error
	if errors.As(err, &fe) && fe.Code == fiber.StatusUnauthorized {
		return &runs.Refusal{Status: fiber.StatusUnauthorized, Message: "Error: " + fe.Message}
	}
	return err
}
