package handlers

import (
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strings"

	"github.com/gofiber/fiber/v2"

	"stencil/authoring"
	"stencil/flow"
)

// bind decodes the request body (JSON or form-encoded) into dst and validates
// it: a body that does not decode is 400, a rule broken is 422.
func bind(c *fiber.Ctx, dst any) error {
	if err := c.BodyParser(dst); err != nil {
		return decodeError(err, dst)
	}
	if err := refuseUnknownFields(c, dst); err != nil {
		return err
	}
	return authoring.Check(dst, bodyHas(c))
}

// bindQuery decodes the query string into dst and validates it.
func bindQuery(c *fiber.Ctx, dst any) error {
	if err := c.QueryParser(dst); err != nil {
		return decodeError(err, dst)
	}
	return authoring.Check(dst, func(key string) bool { return c.Context().QueryArgs().Has(key) })
}

// bodyHas reports which top-level keys the request body carries.
func bodyHas(c *fiber.Ctx) func(string) bool {
	if mediaType(c) == fiber.MIMEApplicationJSON {
		return func(key string) bool { _, ok := jsonFields(c)[key]; return ok }
	}
	return func(key string) bool { return c.Context().PostArgs().Has(key) }
}

// refuseUnknownFields refuses a JSON body with a top-level field that dst
// (a struct or a pointer to one) has no json name for, other than the uid
// every body may carry: 422 naming each. One rule for every body: a
// field the body does not know is refused, not ignored, so a typo never
// saves silently (every request schema says additionalProperties: false).
func refuseUnknownFields(c *fiber.Ctx, dst any) error {
	if mediaType(c) != fiber.MIMEApplicationJSON {
		return nil
	}
	known := map[string]bool{"uid": true}
	jsonNames(reflect.TypeOf(dst), known)
	fields := map[string]string{}
	for k := range jsonFields(c) {
		if !known[k] {
			fields[flow.FieldName(k)] = "is not a known field"
		}
	}
	if len(fields) > 0 {
		return &ValidationError{Fields: fields}
	}
	return nil
}

// jsonNames adds the json names of struct t's fields (and of the
// structs it embeds) to names.
func jsonNames(t reflect.Type, names map[string]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-":
		case name == "" && f.Anonymous:
			jsonNames(f.Type, names)
		case name == "":
			names[f.Name] = true
		default:
			names[name] = true
		}
	}
}

type jsonFieldsKey struct{}

// jsonFields returns the top-level fields of a JSON object body (nil for
// anything else), parsed once per request: the uid check and the binding
// both ask.
func jsonFields(c *fiber.Ctx) map[string]json.RawMessage {
	if fields, ok := c.Locals(jsonFieldsKey{}).(map[string]json.RawMessage); ok {
		return fields
	}
	var fields map[string]json.RawMessage
	if len(c.Body()) > 0 && mediaType(c) == fiber.MIMEApplicationJSON && json.Unmarshal(c.Body(), &fields) != nil {
		fields = nil
	}
	if fields == nil {
		fields = map[string]json.RawMessage{}
	}
	c.Locals(jsonFieldsKey{}, fields)
	return fields
}

// conversionError is how Fiber's query and form decoder names a value that
// does not convert to its field's type.
var conversionError = regexp.MustCompile(`error converting value for "([^"]+)"`)

// decodeError describes a body or query that could not be decoded, without
// echoing the input or the server's type names.
func decodeError(err error, dst any) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	var ferr *fiber.Error
	if m := conversionError.FindStringSubmatch(err.Error()); m != nil {
		if kind, ok := authoring.FieldKind(dst, m[1]); ok {
			return badRequest("%s must be %s", m[1], kind)
		}
	}
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		// The decoder's path names embedded structs too; the JSON has none.
		return badRequest("%s must be %s", authoring.FieldPath(dst, "body."+typeErr.Field), authoring.KindOf(typeErr.Type))
	case errors.As(err, &typeErr):
		return badRequest("the request body must be a JSON object")
	case errors.As(err, &syntaxErr), err.Error() == "unexpected end of JSON input":
		return badRequest("the request body is not valid JSON")
	case errors.As(err, &ferr) && ferr.Code == fiber.StatusUnprocessableEntity:
		return badRequest("send the body as application/json or application/x-www-form-urlencoded")
	case strings.Contains(err.Error(), "exceeded max depth"):
		return badRequest("the request body nests too deeply")
	default:
		return badRequest("the request could not be read: check the parameters' types")
	}
}
