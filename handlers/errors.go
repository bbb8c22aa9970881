package handlers

import (
	"errors"
	"fmt"
	"html"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gofiber/fiber/v2"

	"stencil/store"
)

// ValidationError lists the fields that break a rule, by JSON name; it
// answers 422 with data.fields.
type ValidationError struct {
	Fields  map[string]string
	Missing bool // a required parameter is absent: 400 rather than 422
}

func (e *ValidationError) Error() string {
	keys := slices.Sorted(maps.Keys(e.Fields))
	// A missing parameter is named first: it is the reason for the status.
	for _, k := range keys {
		if e.Missing && strings.HasPrefix(e.Fields[k], "is required") {
			return k + " " + e.Fields[k]
		}
	}
	switch {
	case len(keys) == 0:
		return "invalid input"
	case keys[0] == "":
		return e.Fields[""]
	}
	return keys[0] + " " + e.Fields[keys[0]]
}

// peopleMessage is msg as a page says it: the JSON envelope's "Error: "
// prefix goes, a missing page is named by its path, and the sentence starts
// with a capital.
func peopleMessage(c *fiber.Ctx, status int, msg string) string {
	msg = strings.TrimPrefix(msg, "Error: ")
	if status >= 500 && msg == "internal error" {
		return "Something went wrong on our side. Try again in a moment."
	}
	if status == fiber.StatusNotFound && strings.HasPrefix(msg, "not found: ") {
		return "There is no page at " + cut(c.Path()) + "."
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

// constraintFields names the input field and message of each unique
// constraint, so that a conflict reads as a validation failure.
var constraintFields = map[string][2]string{
	"users_username_key":        {"username", "is already taken"},
	"users_email_key":           {"email", "is already registered"},
	"projects_pkey":             {"id", "is already taken"},
	"projects_api_path_key":     {"api_path", "is already used by another project"},
	"projects_api_path_overlap": {"api_path", "overlaps another project's: neither path may lie inside the other"},
	"project_members_pkey":      {"target_uid", "is already a member of this project"},
	"configs_pkey":              {"key", "already exists"},
	"vault_entries_pkey":        {"key", "already exists in this vault"},
	"email_templates_pkey":      {"name", "is already used by another email template of this project"},
	"collections_pkey":          {"id", "is already used by another collection of this project"},
	"route_templates_name_key":  {"name", "is already taken in this scope"},
	"routes_pkey":               {"route.route_id", "is already taken in this project"},
	"routes_method_path_key":    {"route.route_path", "is already used with this method by another route"},
}

// asValidation returns err as a validation failure: a ValidationError, a
// unique-constraint conflict or a rule of the store; nil for anything else.
func asValidation(err error) *ValidationError {
	var verr *ValidationError
	var conflict *store.ConflictError
	switch {
	case errors.As(err, &verr):
		return verr
	case errors.As(err, &conflict):
		if f, ok := constraintFields[conflict.Constraint]; ok {
			return &ValidationError{Fields: map[string]string{f[0]: f[1]}}
		}
		return &ValidationError{Fields: map[string]string{"": "conflicts with an existing entry"}}
	case errors.Is(err, store.ErrLastRoot):
		return &ValidationError{Fields: map[string]string{"target_uid": "is the last ROOT user and cannot be demoted or deleted"}}
	}
	return nil
}

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
		msg = "not found: " + cut(html.UnescapeString(strings.TrimPrefix(msg, "Cannot ")))
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

// badRequest answers 400 with msg.
func badRequest(format string, args ...any) error {
	return fiber.NewError(fiber.StatusBadRequest, fmt.Sprintf(format, args...))
}

// forbidden answers 403 with msg.
func forbidden(msg string) error {
	return fiber.NewError(fiber.StatusForbidden, msg)
}
