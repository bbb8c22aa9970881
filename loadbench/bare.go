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

// seedCreate makes POST /x/bench/add, a route that creates one record in
// collection items (OBJECT, CREATE, RETURN).
func (b *bench) seedCreate(operand func(bool, string, string) string) error {
	if _, err := b.must(201, "POST", "/collection/create", b.jwt, `{"project_id":"bench","id":"items","name":"Items"}`); err != nil {
		return err
	}
	route := `{"project_id":"bench","route":{"route_id":"add","route_path":"/add","method":"POST","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[
		{"type":"OBJECT","depth":0,"local_name":"o","pairs":[{"id":"title","data":` + operand(false, "STRING", "x") + `},{"id":"status","data":` + operand(false, "STRING", "open") + `}]},
		{"type":"CREATE","depth":0,"ref_col":"items","ref_object":"o","save":true,"conditions":[]},
		{"type":"RETURN","depth":0,"pairs":[{"id":"ok","data":` + operand(false, "BOOLEAN", "true") + `}],"conditions":[]}]}}}`
	_, err := b.must(201, "POST", "/route/create", b.jwt, route)
	return err
}
