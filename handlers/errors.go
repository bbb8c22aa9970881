package handlers

import (
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"stencil/authoring"
	"stencil/schema"
	"stencil/store"
)

// ValidationError lists the fields that break a rule, by JSON name; it
// answers 422 with data.fields (authoring.Problems).
type ValidationError = authoring.Problems

// peopleMessage is msg as a page says it: the JSON envelope's "Error: "
// prefix goes, a missing page is named by its path, and the sentence starts
// with a capital.
func peopleMessage(c *fiber.Ctx, status int, msg string) string {
	msg = strings.TrimPrefix(msg, "Error: ")
	if status >= 500 && msg == "internal error" {
		return "Something went wrong on our side. Try again in a moment."
	}
	if status == fiber.StatusNotFound && strings.HasPrefix(msg, "not found: ") {
		return "There is no page at " + authoring.Cut(c.Path()) + "."
	}
	if r, size := utf8.DecodeRuneInString(msg); size > 0 {
		msg = string(unicode.ToUpper(r)) + msg[size:]
	}
	return msg
}

// errorView is the view model of the error page and fragment.
type errorView struct {
	Base
	Status  int
	Heading string
	Message string
}

// ErrorHandler is the only place that turns an error into a response. 5xx
// errors are logged and answered with a fixed message; 4xx carry their own
// safe message.
func (h *Handlers) ErrorHandler(c *fiber.Ctx, err error) error {
	status, msg, data := classify(err)
	if status >= 500 {
		h.log.Error("request failed", "method", c.Method(), "path", c.Path(), "err", err)
	}
	if origin := c.Get(fiber.HeaderOrigin); origin != "" && strings.HasPrefix(c.Path(), "/x/") {
		// A route's answer carries its project's CORS headers even when a
		// layer in front of the runtime refused the request.
		for k, v := range h.runs.CORSHeaders(c.UserContext(), string(c.Request().URI().PathOriginal()), origin) {
			c.Set(k, strings.Join(v, ", "))
		}
	}
	switch {
	case status == fiber.StatusTooManyRequests && c.GetRespHeader(fiber.HeaderRetryAfter) == "":
		c.Set(fiber.HeaderRetryAfter, "60")
	case status == fiber.StatusServiceUnavailable && c.GetRespHeader(fiber.HeaderRetryAfter) == "":
		c.Set(fiber.HeaderRetryAfter, "2")
	case status == fiber.StatusMethodNotAllowed:
		c.Set(fiber.HeaderAllow, strings.Join(h.allowed(c.Path()), ", "))
	}
	if status == fiber.StatusUnauthorized && c.Method() == fiber.MethodGet && representationOf(c) != asJSON {
		// A browser that is not signed in goes to the sign-in page, and back after.
		return h.respond(c, Reply{Redirect: "/web/login?next=" + url.QueryEscape(c.OriginalURL())})
	}
	if representationOf(c) == asFragment {
		// Errors of htmx requests show in the flash area, whatever the target.
		c.Set("HX-Retarget", "#flash")
		c.Set("HX-Reswap", "innerHTML")
	}
	view := errorView{Status: status, Heading: http.StatusText(status), Message: peopleMessage(c, status, msg)}
	if representationOf(c) == asPage {
		view.Base = h.base(c, view.Heading)
	}
	rerr := h.respond(c, Reply{Status: status, Message: msg, Data: data, Page: "errors/page", Fragment: "errors/fragment", View: view})
	if rerr != nil {
		// The error page itself failed: fall back to plain text.
		h.log.Error("render error response", "err", rerr)
		c.Set(fiber.HeaderContentType, fiber.MIMETextPlainCharsetUTF8)
		return c.Status(status).SendString(msg)
	}
	return nil
}

// asValidation returns err as a validation failure (authoring.AsProblems).
func asValidation(err error) *ValidationError { return authoring.AsProblems(err) }

// classify maps an error to its status, its "Error: …" message and, for
// validation failures, the envelope's data.
func classify(err error) (int, string, any) {
	var ferr *fiber.Error
	if verr := asValidation(err); verr != nil {
		status := fiber.StatusUnprocessableEntity
		if verr.Missing {
			status = fiber.StatusBadRequest
		}
		return status, "Error: " + verr.Error(), fiber.Map{"fields": verr.Fields}
	}
	// A save the caller's role does not allow names the place that needs
	// more, as a warning does, for the editor to show beside it.
	var refused *authoring.Refused
	if errors.As(err, &refused) {
		return fiber.StatusForbidden, "Error: " + refused.Error(), fiber.Map{"refused": refused.Warning}
	}
	// A unique value another record holds, and a change of fields that
	// stored records break (docs/collections.md).
	var taken *schema.Violation
	if errors.As(err, &taken) && taken.Conflict {
		return fiber.StatusConflict, "Error: " + taken.Error(), fiber.Map{"fields": fiber.Map{"data." + taken.Field: taken.Message}}
	}
	var refusedImport *importRefused
	if errors.As(err, &refusedImport) {
		return fiber.StatusUnprocessableEntity, "Error: " + refusedImport.Error(), fiber.Map{"problems": refusedImport.problems}
	}
	var unfit *store.FieldsRefused
	if errors.As(err, &unfit) {
		return fiber.StatusConflict, "Error: " + unfit.Error(), fiber.Map{"count": unfit.Count, "ids": unfit.IDs}
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fiber.StatusNotFound, "Error: not found", nil
	case store.Unavailable(err):
		return fiber.StatusServiceUnavailable, "Error: the database is busy or unreachable; try again shortly", nil
	case errors.Is(err, store.ErrAlreadySetUp):
		return fiber.StatusForbidden, "Error: " + store.ErrAlreadySetUp.Error(), nil
	case errors.As(err, &ferr) && (ferr.Code < 500 || ferr.Code == fiber.StatusServiceUnavailable):
		return ferr.Code, errorMessage(ferr), nil
	default:
		return fiber.StatusInternalServerError, "Error: internal error", nil
	}
}

func errorMessage(e *fiber.Error) string {
	msg := e.Message
	switch {
	case e.Code == fiber.StatusNotFound && strings.HasPrefix(msg, "Cannot "):
		msg = "not found: " + authoring.Cut(html.UnescapeString(strings.TrimPrefix(msg, "Cannot ")))
	case e.Code == fiber.StatusMethodNotAllowed:
		msg = "method not allowed"
	case msg == "" || msg == http.StatusText(e.Code): // Fiber's default message
		msg = strings.ToLower(http.StatusText(e.Code))
	}
	if strings.HasPrefix(msg, "Error: ") {
		return msg
	}
	return "Error: " + msg
}

// notFound answers 404 with msg (what was not found) when err is the
// store's not found, and is err otherwise.
func notFound(err error, msg string) error {
	if errors.Is(err, store.ErrNotFound) {
		return fiber.NewError(fiber.StatusNotFound, msg)
	}
	return err
}

// badRequest answers 400 with msg.
func badRequest(format string, args ...any) error {
	return fiber.NewError(fiber.StatusBadRequest, fmt.Sprintf(format, args...))
}

// forbidden answers 403 with msg.
func forbidden(msg string) error {
	return fiber.NewError(fiber.StatusForbidden, msg)
}
