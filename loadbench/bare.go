package main

import (
	"net"

	"github.com/gofiber/fiber/v2"
)

// The anchor of the one-block route's row (docs/performance.md): a bare
// Fiber handler, in the load generator's process, answering the bytes the
// route answers. The row then measures what a run costs beside serving
// HTTP at all: routing, admission, the run, the run log and analytics.

// okBody is what both answer.
const okBody = `{"ok":true}`

// startBare serves the bare handler on a free loopback port and returns
// its address (host:port) and how to stop it.
func startBare() (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	app.Get("/ok", func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.SendString(okBody)
	})
	go func() { _ = app.Listener(ln) }()
	return ln.Addr().String(), func() { _ = app.Shutdown() }, nil
}

// seedReturn makes GET /x/bench/ok, a route of one RETURN block.
func (b *bench) seedReturn(operand func(bool, string, string) string) error {
	route := `{"project_id":"bench","route":{"route_id":"ok","route_path":"/ok","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[
		{"type":"RETURN","depth":0,"pairs":[{"id":"ok","data":` + operand(false, "BOOLEAN", "true") + `}],"conditions":[]}]}}}`
	_, err := b.must(201, "POST", "/route/create", b.jwt, route)
	return err
}
