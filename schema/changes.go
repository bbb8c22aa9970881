package schema

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// Changes says in words how b differs from a, a line a difference, as a
// plan shows a change of fields: "year: integer → number", "email: now
// unique", "isbn: added (text, required)", "notes: removed".
func Changes(a, b Schema) []string {
	var out []string
	for _, fb := range b.Fields {
		fa, ok := a.Field(fb.Name)
		if !ok {
			out = append(out, fb.Name+": added ("+strings.Join(fb.traits(), ", ")+")")
			continue
		}
		if fa.Type != fb.Type {
			out = append(out, fb.Name+": "+fa.Type+" → "+fb.Type)
		}
		for _, flag := range []struct {
			name   string
			before bool
			after  bool
		}{{"required", fa.Required, fb.Required}, {"unique", fa.Unique, fb.Unique}, {"indexed", fa.Indexed, fb.Indexed}} {
			switch {
			case !flag.before && flag.after:
				out = append(out, fb.Name+": now "+flag.name)
			case flag.before && !flag.after:
				out = append(out, fb.Name+": no longer "+flag.name)
			}
		}
		oa, ob := fa.optionsJSON(), fb.optionsJSON()
		for _, k := range slices.Sorted(func(yield func(string) bool) {
			seen := map[string]bool{}
			for _, m := range []map[string]json.RawMessage{oa, ob} {
				for k := range m {
					if !seen[k] {
						seen[k] = true
						if !yield(k) {
							return
						}
					}
				}
			}
		}) {
			if !bytes.Equal(oa[k], ob[k]) {
				out = append(out, fb.Name+": "+k+" "+shown(oa[k])+" → "+shown(ob[k]))
			}
		}
	}
	for _, fa := range a.Fields {
		if _, ok := b.Field(fa.Name); !ok {
			out = append(out, fa.Name+": removed")
		}
	}
	if len(out) == 0 && !slices.EqualFunc(a.Fields, b.Fields, func(x, y Field) bool { return x.Name == y.Name }) {
		out = append(out, "fields reordered")
	}
	if a.Strict != b.Strict {
		out = append(out, "additional: "+yesNo(!a.Strict)+" → "+yesNo(!b.Strict))
	}
	return out
}

// traits name a new field's type and flags.
func (f Field) traits() []string {
	out := []string{f.Type}
	for _, t := range []struct {
		on   bool
		name string
	}{{f.Required, "required"}, {f.Unique, "unique"}, {f.Indexed, "indexed"}} {
		if t.on {
			out = append(out, t.name)
		}
	}
	return out
}

// optionsJSON is f's options and default as JSON, by name.
func (f Field) optionsJSON() map[string]json.RawMessage {
	f.Name, f.Type, f.Required, f.Unique, f.Indexed = "", "", false, false, false
	raw, _ := json.Marshal(f)
	var out map[string]json.RawMessage
	_ = json.Unmarshal(raw, &out)
	for _, k := range []string{"name", "type", "required", "unique", "indexed"} {
		delete(out, k)
	}
	return out
}

func shown(raw json.RawMessage) string {
	if raw == nil {
		return "none"
	}
	return string(raw)
}

func yesNo(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
