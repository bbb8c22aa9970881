package handlers

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode"

	"github.com/go-playground/validator/v10"
	"github.com/gofiber/fiber/v2"

	"stencil/flow"
	"stencil/store"
)

// validate is the one validator; field names follow the json tags.
var validate = newValidator()

func newValidator() *validator.Validate {
	v := validator.New(validator.WithRequiredStructEnabled())
	v.RegisterTagNameFunc(func(f reflect.StructField) string {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			return ""
		}
		return name
	})
	for tag, r := range stringRules {
		ok := r.ok
		if err := v.RegisterValidation(tag, func(fl validator.FieldLevel) bool { return ok(fl.Field().String()) }); err != nil {
			panic(err)
		}
	}
	return v
}

// stringRule is a validation tag for strings, with the message that says
// what a valid value looks like.
type stringRule struct {
	ok  func(string) bool
	msg string
}

func matches(pattern, msg string) stringRule {
	return stringRule{ok: regexp.MustCompile(pattern).MatchString, msg: msg}
}

// stringRules are the string rules of the spec, by validation tag.
var stringRules = map[string]stringRule{
	"username":       matches(`^[A-Za-z0-9][A-Za-z0-9_.-]{2,49}$`, "must be 3–50 letters, digits, _ . or -, starting with a letter or digit"),
	"project_id":     matches(`^[a-z][a-z0-9_]{2,49}$`, "must be 3–50 lowercase letters, digits or _, starting with a letter"),
	"email_template": matches(`^[a-z][a-z0-9_]{2,49}$`, "must be 3–50 lowercase letters, digits or _, starting with a letter"),
	// A header's value: a line break in it would start a header of its own.
	"one_line":   {ok: func(s string) bool { return !strings.ContainsAny(s, "\r\n") }, msg: "must be one line (no line breaks)"},
	"api_path":   matches(`^/[A-Za-z0-9_/-]{0,199}$`, "must start with / and contain only letters, digits, _, - and / (at most 200 characters)"),
	"config_key": matches(`^[A-Za-z][A-Za-z0-9_.-]{0,99}$`, "must be 1–100 letters, digits, _ . or -, starting with a letter"),
	"timestamp": {ok: func(s string) bool { _, err := parseTime(s); return err == nil },
		msg: "must be a date (YYYY-MM-DD) or an RFC 3339 time"},
	"run_status": matches(`^[1-5](xx|[0-9]{2})$`, "must be a class such as 4xx or a status such as 404"),
	"event_type": {ok: func(s string) bool { return slices.Contains(store.EventTypes, s) },
		msg: "must be an event type such as route_update, vault_create or member_add (see the API reference)"},
	"vault_key": {ok: flow.VaultKey, msg: flow.VaultKeyRule},
	"vault_value": {ok: func(s string) bool { return len(s) >= 1 && len(s) <= 65536 },
		msg: "must be 1 to 65,536 bytes"},
	// A name people read in lists: no control characters (tabs, escapes, line breaks).
	"plain_text": {ok: func(s string) bool { return !strings.ContainsFunc(s, unicode.IsControl) },
		msg: "must not contain control characters"},
}

// bind decodes the request body (JSON or form-encoded) into dst and validates
// it: a body that does not decode is 400, a rule broken is 422.
func bind(c *fiber.Ctx, dst any) error {
	if err := c.BodyParser(dst); err != nil {
		return decodeError(err, dst)
	}
	return checkPresent(dst, bodyHas(c))
}

// bindQuery decodes the query string into dst and validates it.
func bindQuery(c *fiber.Ctx, dst any) error {
	if err := c.QueryParser(dst); err != nil {
		return decodeError(err, dst)
	}
	return checkPresent(dst, func(key string) bool { return c.Context().QueryArgs().Has(key) })
}

// bodyHas reports which top-level keys the request body carries.
func bodyHas(c *fiber.Ctx) func(string) bool {
	if mediaType(c) == fiber.MIMEApplicationJSON {
		return func(key string) bool { _, ok := jsonFields(c)[key]; return ok }
	}
	return func(key string) bool { return c.Context().PostArgs().Has(key) }
}

// refuseUnknownFields refuses a JSON body with a top-level field that dst
// (a struct) has no json name for, other than the uid every body may
// carry: 422 naming each.
func refuseUnknownFields(c *fiber.Ctx, dst any) error {
	known := map[string]bool{"uid": true}
	t := reflect.TypeOf(dst)
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		known[name] = true
	}
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
		if t, ok := fieldType(dst, m[1]); ok {
			return badRequest("%s must be %s", m[1], jsonKind(t))
		}
	}
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		// The decoder's path names embedded structs too; the JSON has none.
		return badRequest("%s must be %s", fieldPath(dst, "body."+typeErr.Field), jsonKind(typeErr.Type))
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

// fieldType finds the type of the field of struct pointer dst whose json,
// query or form name is name, looking into embedded structs.
func fieldType(dst any, name string) (reflect.Type, bool) {
	t := reflect.TypeOf(dst)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return structField(t, name)
}

func structField(t reflect.Type, name string) (reflect.Type, bool) {
	if t.Kind() != reflect.Struct {
		return nil, false
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			if ft, ok := structField(f.Type, name); ok {
				return ft, true
			}
			continue
		}
		for _, tag := range []string{"json", "query", "form"} {
			if n, _, _ := strings.Cut(f.Tag.Get(tag), ","); n == name {
				return f.Type, true
			}
		}
	}
	return nil, false
}

func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}

// checkPresent validates v. A required top-level field that the request
// does not carry at all marks the error Missing (400); one that is there but
// empty is a broken rule (422).
func checkPresent(v any, has func(string) bool) error {
	err := validate.Struct(v)
	var verrs validator.ValidationErrors
	if !errors.As(err, &verrs) {
		return err
	}
	verr := &ValidationError{Fields: make(map[string]string, len(verrs))}
	for _, fe := range verrs {
		path := fieldPath(v, fe.Namespace())
		if _, seen := verr.Fields[path]; seen {
			continue
		}
		msg := message(fe)
		if strings.HasPrefix(fe.Tag(), "required") && !strings.Contains(path, ".") {
			if has(path) {
				msg = "must not be empty"
			} else {
				verr.Missing = true
			}
		}
		verr.Fields[path] = msg
	}
	return verr
}

// fieldPath turns a validator namespace into the field's JSON path: the
// struct's type name and the names of embedded structs are not part of it.
func fieldPath(v any, namespace string) string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	embedded := map[string]bool{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for i := 0; t.Kind() == reflect.Struct && i < t.NumField(); i++ {
			if f := t.Field(i); f.Anonymous {
				embedded[f.Name] = true
				walk(f.Type)
			}
		}
	}
	walk(t)
	parts := strings.Split(namespace, ".")[1:]
	kept := parts[:0]
	for _, p := range parts {
		if !embedded[p] {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, ".")
}

// message is the human text of one failed rule.
func message(fe validator.FieldError) string {
	if r, ok := stringRules[fe.Tag()]; ok {
		return r.msg
	}
	kind := fe.Kind()
	unit := ""
	switch kind {
	case reflect.String:
		unit = " characters"
	case reflect.Slice, reflect.Map, reflect.Array:
		unit = " items"
	}
	switch fe.Tag() {
	case "required", "required_if", "required_unless", "required_with":
		return "is required"
	case "required_without":
		return "is required (or give " + jsonName(fe.Param()) + ")"
	case "max", "lte":
		return fmt.Sprintf("must be at most %s%s", fe.Param(), unit)
	case "min", "gte":
		return fmt.Sprintf("must be at least %s%s", fe.Param(), unit)
	case "len":
		return fmt.Sprintf("must be exactly %s%s", fe.Param(), unit)
	case "oneof":
		return "must be one of: " + strings.ReplaceAll(fe.Param(), " ", ", ")
	case "email":
		return "must be a valid email address"
	case "startswith":
		return fmt.Sprintf("must start with %q", fe.Param())
	default:
		return "is invalid"
	}
}

// jsonName is the JSON name of a Go field name as this package's inputs
// spell them (TargetUID is target_uid), for messages that name another
// field: messages name fields by their JSON names.
func jsonName(goName string) string {
	var b strings.Builder
	runes := []rune(goName)
	for i, r := range runes {
		upper := unicode.IsUpper(r)
		if upper && i > 0 && (unicode.IsLower(runes[i-1]) || i+1 < len(runes) && unicode.IsLower(runes[i+1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(r))
	}
	return b.String()
}
