package flow

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"unicode"
)

// Problems maps the path of each fault in a document ("flow.blocks[3].ref_col")
// to what is wrong with it.
type Problems map[string]string

func (p Problems) add(path, msg string) {
	if _, seen := p[path]; !seen {
		p[path] = msg
	}
}

// Error lists the problems, first by path.
func (p Problems) Error() string {
	paths := make([]string, 0, len(p))
	for path := range p {
		paths = append(paths, path)
	}
	sort.Strings(paths)
	parts := make([]string, len(paths))
	for i, path := range paths {
		parts[i] = strings.TrimSpace(path + " " + p[path])
	}
	return strings.Join(parts, "; ")
}

// Err returns p as an error, or nil when there is no problem.
func (p Problems) Err() error {
	if len(p) == 0 {
		return nil
	}
	return p
}

// DecodeRoute decodes a route document. Paths of problems start with prefix
// ("route" gives "route.flow.blocks[0].type"; "" gives "flow.blocks[0].type").
func DecodeRoute(raw []byte, prefix string) (Route, Problems) {
	var r Route
	p := Problems{}
	decodeDocument(raw, &r, prefix, p)
	return r, p
}

// DecodeTemplate decodes a template document; see DecodeRoute for prefix.
func DecodeTemplate(raw []byte, prefix string) (Template, Problems) {
	var t Template
	p := Problems{}
	decodeDocument(raw, &t, prefix, p)
	return t, p
}

func decodeDocument(raw []byte, dst any, prefix string, p Problems) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		p.add(prefix, "is not valid JSON")
		return
	}
	if dec.More() {
		p.add(prefix, "has data after the JSON value")
		return
	}
	decodeValue(v, reflect.ValueOf(dst).Elem(), prefix, p)
}

// DecodeValue decodes a value already parsed with json.Decoder.UseNumber
// into dst, a pointer to a model type.
func DecodeValue(v any, dst any, prefix string) Problems {
	p := Problems{}
	decodeValue(v, reflect.ValueOf(dst).Elem(), prefix, p)
	return p
}

// FieldName is how a message names a field a client sent: Printable, and
// `""` for the empty name (which would name nothing).
func FieldName(k string) string {
	if k == "" {
		return `""`
	}
	return Printable(k)
}

// Printable is s with each control character written as a \u escape:
// what a message may echo of an input (a field name a client sent).
func Printable(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			fmt.Fprintf(&b, "\\u%04x", r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// decodeValue sets rv from the parsed JSON value v, strictly: every type
// checked, every unknown field a problem.
func decodeValue(v any, rv reflect.Value, path string, p Problems) {
	if b, ok := rv.Addr().Interface().(*Block); ok {
		b.decode(v, path, p)
		return
	}
	switch rv.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok {
			p.add(path, "must be an object")
			return
		}
		names := jsonNames(rv.Type())
		for _, k := range sortedKeys(obj) {
			i, ok := names[k]
			if !ok {
				p.add(join(path, FieldName(k)), "is not a known field")
				continue
			}
			decodeValue(obj[k], rv.Field(i), join(path, k), p)
		}
	case reflect.Pointer:
		if v == nil {
			rv.SetZero()
			return
		}
		nv := reflect.New(rv.Type().Elem())
		decodeValue(v, nv.Elem(), path, p)
		rv.Set(nv)
	case reflect.Slice:
		if v == nil {
			rv.Set(reflect.MakeSlice(rv.Type(), 0, 0))
			return
		}
		arr, ok := v.([]any)
		if !ok {
			p.add(path, "must be an array")
			return
		}
		s := reflect.MakeSlice(rv.Type(), len(arr), len(arr))
		for i, item := range arr {
			decodeValue(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i), p)
		}
		rv.Set(s)
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			p.add(path, "must be an object")
			return
		}
		m := reflect.MakeMapWithSize(rv.Type(), len(obj))
		for _, k := range sortedKeys(obj) {
			ev := reflect.New(rv.Type().Elem()).Elem()
			decodeValue(obj[k], ev, join(path, k), p)
			m.SetMapIndex(reflect.ValueOf(k), ev)
		}
		rv.Set(m)
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			p.add(path, "must be a string")
			return
		}
		rv.SetString(s)
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			p.add(path, "must be true or false")
			return
		}
		rv.SetBool(b)
	case reflect.Int, reflect.Int64:
		n, ok := v.(json.Number)
		i, err := n.Int64()
		if !ok || err != nil {
			p.add(path, "must be an integer")
			return
		}
		rv.SetInt(i)
	default:
		panic("flow: cannot decode into " + rv.Type().String())
	}
}

// jsonNames maps the json names of a struct's fields to their indexes.
func jsonNames(t reflect.Type) map[string]int {
	names := make(map[string]int, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names[name] = i
		}
	}
	return names
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// decode reads a block: its type first, which decides the fields it may have.
func (b *Block) decode(v any, path string, p Problems) {
	obj, ok := v.(map[string]any)
	if !ok {
		p.add(path, "must be an object")
		return
	}
	t, ok := obj["type"].(string)
	switch {
	case obj["type"] == nil:
		p.add(join(path, "type"), "is required")
		return
	case !ok || !slices.Contains(BlockTypes, t):
		p.add(join(path, "type"), "must be one of "+strings.Join(BlockTypes, ", "))
		return
	}
	b.Type = t
	if _, ok := obj["depth"]; !ok {
		p.add(join(path, "depth"), "is required")
	} else {
		decodeValue(obj["depth"], reflect.ValueOf(&b.Depth).Elem(), join(path, "depth"), p)
	}
	fields := blockFields[t]
	for _, k := range sortedKeys(obj) {
		if k == "type" || k == "depth" {
			continue
		}
		i := slices.IndexFunc(fields, func(f field) bool { return f.name == k })
		if i < 0 {
			p.add(join(path, Printable(k)), "is not a field of a "+t+" block")
			continue
		}
		if fields[i].optional && obj[k] == nil {
			continue // null: absent
		}
		decodeValue(obj[k], reflect.ValueOf(b.slot(k)).Elem(), join(path, k), p)
	}
	if _, given := obj["max_attempts"]; t == "ENQUEUE" && !given {
		b.MaxAttempts = DefaultJobAttempts
	}
}
