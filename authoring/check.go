package authoring

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/go-playground/validator/v10"

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
	"timestamp": {ok: func(s string) bool { _, err := ParseTime(s); return err == nil },
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

// Check validates v by its fields' rules (validate tags; names as the
// json tags give them). A required top-level field that has says was not
// given at all marks the Problems Missing; one given but empty breaks its
// rule.
func Check(v any, has func(string) bool) error {
	err := validate.Struct(v)
	var verrs validator.ValidationErrors
	if !errors.As(err, &verrs) {
		return err
	}
	verr := &Problems{Fields: make(map[string]string, len(verrs))}
	for _, fe := range verrs {
		path := FieldPath(v, fe.Namespace())
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

// FieldPath turns a validator namespace into the field's JSON path: the
// struct's type name and the names of embedded structs are not part of it.
func FieldPath(v any, namespace string) string {
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

// CheckAt is Check of v as a whole (every field given), its fields named
// under prefix ("collections[2]." gives "collections[2].name").
func CheckAt(prefix string, v any) error {
	err := Check(v, func(string) bool { return true })
	var verr *Problems
	if !errors.As(err, &verr) || prefix == "" {
		return err
	}
	fields := make(map[string]string, len(verr.Fields))
	for k, msg := range verr.Fields {
		fields[prefix+k] = msg
	}
	return &Problems{Fields: fields}
}

// Rule is the string rule of a validation tag ("vault_key", "plain_text"):
// whether s keeps it, and what a value that keeps it looks like.
func Rule(tag string) (ok func(string) bool, msg string) {
	r := stringRules[tag]
	return r.ok, r.msg
}

// ParseTime reads a time as people give one: RFC 3339 or a date
// (YYYY-MM-DD); "" is none.
func ParseTime(s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return &t, nil
		}
	}
	return nil, &Problems{Fields: map[string]string{"": "is not a time"}}
}

// FieldKind is the kind of value the field of struct pointer dst whose
// json, query or form name is name takes, as messages name it ("an
// integer"), looking into embedded structs.
func FieldKind(dst any, name string) (string, bool) {
	t := reflect.TypeOf(dst)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	ft, ok := structField(t, name)
	if !ok {
		return "", false
	}
	return KindOf(ft), true
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

// KindOf is the kind of JSON value type t takes, as messages name it.
func KindOf(t reflect.Type) string {
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
