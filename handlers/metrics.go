package handlers

import (
	"crypto/subtle"
	"net/http"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp/fasthttpadaptor"
)

// observe records every request by its route pattern (never its concrete
// path, which would make a series per id) once ErrorHandler has answered.
func (h *Handlers) observe(c *fiber.Ctx) error {
	start := time.Now()
	if err := c.Next(); err != nil {
		if herr := c.App().ErrorHandler(c, err); herr != nil {
			return herr
		}
	}
	// A run at /x is logged and counted now that its answer is whole
	// (compressed, if it is): its time is the request's (runRoute).
	if finish, ok := c.Locals(finishRunKey{}).(func()); ok {
		finish()
	}
	// The app's paths have no parameters: a routed path is its own
	// pattern. Any other path shares one label, so that no request can
	// make a series of its own.
	// Fiber's strings point into buffers that the next request reuses:
	// labels, which outlive the request, are copies.
	route, method := "unmatched", strings.Clone(c.Method())
	if p := strings.TrimRight(c.Path(), "/"); len(h.allowed(p)) > 0 || c.Path() == "/" {
		route = strings.Clone(c.Path())
	}
	h.metrics.Request(route, method, c.Response().StatusCode(), time.Since(start).Seconds())
	return nil
}

// MetricsHandler serves the metrics in the Prometheus text format, for
// METRICS_ADDR's own listener.
func (h *Handlers) MetricsHandler() http.Handler {
	return h.metrics.Handler()
}

// metricsByToken serves /metrics to a bearer of METRICS_TOKEN (compared
// in constant time); other requests go on to the ROOT check, which
// answers 401 to a request without credentials, in JSON unless a browser
// asks for a page (representationOf).
func (h *Handlers) metricsByToken(c *fiber.Ctx) error {
	token, ok := strings.CutPrefix(c.Get(fiber.HeaderAuthorization), "Bearer ")
	if want := h.cfg.MetricsToken; ok && want != "" && subtle.ConstantTimeCompare([]byte(token), []byte(want)) == 1 {
		return h.metricsShow(c)
	}
	return c.Next()
}

// metricsShow answers GET /metrics (ROOT only on the main listener).
func (h *Handlers) metricsShow(c *fiber.Ctx) error {
	fasthttpadaptor.NewFastHTTPHandler(h.MetricsHandler())(c.Context())
	return nil
}
