package handlers

import (
	"bytes"
	"errors"
	"mime"
	"net"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"
	"github.com/valyala/fasthttp"

	"stencil/authoring"
	"stencil/jsoncheck"
)

// Request limits beyond Fiber's own (docs/architecture.md).
const (
	maxURLBytes      = 8 << 10  // longer request targets are 431
	maxJSONDepth     = 64       // deeper JSON is 400: no document of ours nests this far
	maxHeaderBytes   = 16 << 10 // larger request headers are 431
	readBufferBytes  = 32 << 10 // room to read them whole and answer in order
	documentMaxBytes = 1 << 20  // template and route documents
)

var knownMethods = []string{fiber.MethodGet, fiber.MethodHead, fiber.MethodPost, fiber.MethodPut,
	fiber.MethodPatch, fiber.MethodDelete, fiber.MethodOptions, fiber.MethodConnect, fiber.MethodTrace}

// transportErrorKey marks a request that could not be read whole: its headers
// may be missing, so it is answered as JSON.
type transportErrorKey struct{}

// guardTransport wraps the server's handler and its read-error handler so
// that requests Fiber cannot route — an unknown method, headers over the
// read buffer, a body over the limit — still reach ErrorHandler and get the
// envelope, never a bare text line.
func (h *Handlers) guardTransport(app *fiber.App) {
	srv := app.Server()
	inner := srv.Handler
	srv.Handler = func(fctx *fasthttp.RequestCtx) {
		if slices.Contains(knownMethods, string(fctx.Method())) {
			inner(fctx)
			return
		}
		c := app.AcquireCtx(fctx)
		defer app.ReleaseCtx(c)
		err := fiber.NewError(fiber.StatusNotFound, "Cannot "+c.Method()+" "+c.Path())
		if len(h.allowed(c.Path())) > 0 {
			err = fiber.ErrMethodNotAllowed
		}
		_ = h.ErrorHandler(c, err)
	}
	srv.ErrorHandler = func(fctx *fasthttp.RequestCtx, err error) {
		c := app.AcquireCtx(fctx)
		defer app.ReleaseCtx(c)
		c.Locals(transportErrorKey{}, true)
		_ = h.ErrorHandler(c, transportError(err))
	}
}

// allowed lists the methods routed at path, for the Allow header of a 405.
func (h *Handlers) allowed(path string) []string {
	return h.allow[strings.TrimRight(path, "/")]
}

// indexMethods records, for every routed path, the methods it takes.
func (h *Handlers) indexMethods(app *fiber.App) {
	h.allow = map[string][]string{}
	for _, r := range app.GetRoutes(true) {
		p := strings.TrimRight(r.Path, "/")
		if !slices.Contains(h.allow[p], r.Method) {
			h.allow[p] = append(h.allow[p], r.Method)
		}
	}
	for p := range h.allow {
		slices.Sort(h.allow[p])
	}
}

// transportError names a request that could not be read, without the
// reader's own words.
func transportError(err error) error {
	var netErr net.Error
	switch {
	case errors.As(err, new(*fasthttp.ErrSmallBuffer)):
		return fiber.NewError(fiber.StatusRequestHeaderFieldsTooLarge, "request headers or URL too large")
	case errors.Is(err, fasthttp.ErrBodyTooLarge):
		return fiber.NewError(fiber.StatusRequestEntityTooLarge, "request body too large (at most 4 MiB; a CSV import, 10 MiB)")
	case errors.As(err, &netErr) && netErr.Timeout(), strings.Contains(err.Error(), "timeout"):
		return fiber.NewError(fiber.StatusRequestTimeout, "request not received in time")
	default:
		return fiber.NewError(fiber.StatusBadRequest, "malformed HTTP request")
	}
}

// checkInput refuses, before any handler runs, what no handler may see
// (docs/architecture.md): an over-long URL, a body of a type no endpoint takes, and text
// that holds NUL or is not UTF-8 in any parameter or JSON string.
func (h *Handlers) checkInput(c *fiber.Ctx) error {
	// The header's bytes, as sent: Request.RequestURI would rebuild them
	// from the parsed URI, unescaping the path (a%2Fb became a/b for every
	// handler after this one).
	if len(c.Request().Header.RequestURI()) > maxURLBytes {
		return fiber.NewError(fiber.StatusRequestHeaderFieldsTooLarge, "URL too long (at most 8 KiB)")
	}
	// Headers are read whole up to the read buffer, so that an answer to
	// oversized ones reaches a client still sending; past it the server
	// itself answers 431.
	if len(c.Request().Header.RawHeaders()) > maxHeaderBytes {
		return fiber.NewError(fiber.StatusRequestHeaderFieldsTooLarge, "request headers too large (at most 16 KiB)")
	}
	if err := checkArgs(c.Context().QueryArgs(), "query parameter"); err != nil {
		return err
	}
	if len(c.Body()) == 0 || c.Method() == fiber.MethodGet || c.Method() == fiber.MethodHead {
		return c.Next()
	}
	switch mediaType(c) {
	case fiber.MIMEApplicationJSON:
		if err := checkJSONText(c.Body(), ""); err != nil {
			return err
		}
	case "text/csv":
		// Records to import, the one body of this type (docs/collections.md).
		if c.Path() != importPath {
			return errUnsupportedMedia
		}
		if !utf8.Valid(c.Body()) || bytes.IndexByte(c.Body(), 0) >= 0 {
			return fiber.NewError(fiber.StatusBadRequest, "the CSV must be UTF-8 text without NUL characters")
		}
	case fiber.MIMEApplicationForm:
		if err := checkArgs(c.Context().PostArgs(), "form field"); err != nil {
			return err
		}
	default:
		return errUnsupportedMedia
	}
	return c.Next()
}

// maxBodyBytes bounds every request body but an import's (importPath),
// which may reach 10 MiB (docs/collections.md).
const (
	maxBodyBytes = 4 << 20
	importPath   = "/data/import"
)

// bodyLimits lets the transport read an import's body up to its own
// limit once the request's header names its path; every other body is
// refused past maxBodyBytes before it is read, as the header arrives.
func bodyLimits(header *fasthttp.RequestHeader) fasthttp.RequestConfig {
	path, _, _ := bytes.Cut(header.RequestURI(), []byte("?"))
	if string(path) == importPath && string(header.Method()) == fiber.MethodPost {
		return fasthttp.RequestConfig{MaxRequestBodySize: importMaxBytes}
	}
	return fasthttp.RequestConfig{}
}

var errUnsupportedMedia = fiber.NewError(fiber.StatusUnsupportedMediaType,
	"send the body as application/json (or application/x-www-form-urlencoded from a form)")

// documentBody guards the endpoints that take template and route
// documents: JSON only, at most 1 MiB (docs/architecture.md).
func documentBody(c *fiber.Ctx) error {
	switch {
	case len(c.Body()) > documentMaxBytes:
		return fiber.NewError(fiber.StatusRequestEntityTooLarge, "document too large (at most 1 MiB)")
	case len(c.Body()) > 0 && mediaType(c) != fiber.MIMEApplicationJSON:
		return fiber.NewError(fiber.StatusUnsupportedMediaType, "send the body as application/json")
	}
	return c.Next()
}

// mediaType is the request body's media type, lower-case, without parameters.
func mediaType(c *fiber.Ctx) string {
	mt, _, err := mime.ParseMediaType(c.Get(fiber.HeaderContentType))
	if err != nil {
		return ""
	}
	return mt
}

// checkArgs finds a name or value that holds NUL or is not UTF-8.
func checkArgs(args *fasthttp.Args, what string) error {
	var bad error
	args.VisitAll(func(k, v []byte) {
		switch {
		case bad != nil:
		case !cleanText(k):
			bad = badRequest("a %s name contains a NUL character or invalid UTF-8", what)
		case !cleanText(v):
			bad = badRequest("%s contains a NUL character or invalid UTF-8", authoring.Cut(string(k)))
		}
	})
	return bad
}

func cleanText(b []byte) bool {
	return utf8.Valid(b) && bytes.IndexByte(b, 0) < 0
}

// checkJSONText refuses JSON text that is not clean (jsoncheck.Text),
// naming the field under root (a parameter holding JSON; "" for the
// request body).
func checkJSONText(body []byte, root string) error {
	err := jsoncheck.Text(body, root, maxJSONDepth)
	var bad *jsoncheck.Error
	if !errors.As(err, &bad) {
		return nil
	}
	where := "the request body"
	if bad.Path != "" {
		where = authoring.Cut(bad.Path)
	}
	switch {
	case bad.TooDeep:
		return badRequest("the request body nests deeper than %d levels", maxJSONDepth)
	case bad.Key:
		return badRequest("a field name in %s contains a NUL character or invalid UTF-8", where)
	}
	return badRequest("%s contains a NUL character or invalid UTF-8", where)
}
