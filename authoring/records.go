package authoring

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"stencil/jsoncheck"
	"stencil/schema"
	"stencil/store"
)

// The rules of a record's data (docs/collections.md): a JSON object of at
// most 1 MiB whose numbers fit a float64.

// RecordData checks a record's data as saving it does, and gives it
// compacted. Data typed into a form (typed) is JSON text whose faults are
// Problems by "data", a syntax error named by its line and column; data
// sent in a JSON body that is no object is store.ErrRecordNotObject as it
// is (a parameter of the wrong type).
func RecordData(raw []byte, typed bool) (json.RawMessage, error) {
	data, err := store.RecordData(raw)
	var syntax *json.SyntaxError
	switch {
	case err == nil:
		return data, nil
	case !typed && errors.Is(err, store.ErrRecordNotObject):
		return nil, err
	case errors.As(err, &syntax):
		// Compacting reports no position; decoding does.
		line, col, _ := jsoncheck.Syntax(raw)
		return nil, &Problems{Fields: map[string]string{"data": fmt.Sprintf("is not valid JSON: look at line %d, column %d", max(line, 1), max(col, 1))}}
	case errors.Is(err, store.ErrRecordNotObject), errors.Is(err, store.ErrRecordTooLarge), errors.Is(err, store.ErrNumberRange):
		return nil, &Problems{Fields: map[string]string{"data": err.Error()}}
	default:
		return nil, err
	}
}

// Schema is the schema of collection c as given: its fields checked
// (problems by "fields[i]…"), a reference naming a collection of the
// project (existing, or c itself). Additional defaults to true; have is
// the schema c has now, kept where c gives neither fields nor additional.
func Schema(ctx context.Context, st *store.Store, c *Collection, have schema.Schema) (schema.Schema, error) {
	if c.Fields == nil && c.Additional == nil {
		return have, nil
	}
	next := schema.Schema{Fields: c.Fields, Strict: have.Strict}
	if c.Fields == nil {
		next.Fields = have.Fields
	}
	if c.Additional != nil {
		next.Strict = !*c.Additional
	}
	var ids []string
	exists := func(id string) bool {
		if ids == nil {
			var err error
			if ids, err = st.CollectionIDs(ctx, c.ProjectID); err != nil || ids == nil {
				ids = []string{}
			}
		}
		return slices.Contains(ids, id)
	}
	if err := next.Check(c.ID, exists); err != nil {
		return next, err
	}
	return next, nil
}

// Backfill checks the values a change of fields fills into records that
// lack them: each names a field of next and is of its type.
func Backfill(next schema.Schema, backfill map[string]json.RawMessage) error {
	for name, v := range backfill {
		f, ok := next.Field(name)
		at := "backfill." + name
		switch {
		case !ok:
			return &Problems{Fields: map[string]string{at: "is not a field of the collection"}}
		case string(bytes.TrimSpace(v)) == "null":
			return &Problems{Fields: map[string]string{at: "must not be null"}}
		}
		one := schema.Schema{Fields: []schema.Field{f}}
		if _, _, err := one.Prepare(fmt.Appendf(nil, `{%q:%s}`, name, v), false); err != nil {
			var viol *schema.Violation
			if errors.As(err, &viol) {
				return &Problems{Fields: map[string]string{at: viol.Message}}
			}
			return &Problems{Fields: map[string]string{at: "must be JSON"}}
		}
	}
	return nil
}

// Rename checks a change's renames of fields (old name → new name): each
// old name is a field the collection has (have) and next has not, each new
// name a field of next that have has not, no two renamed to one name.
func Rename(have, next schema.Schema, rename map[string]string) error {
	taken := map[string]string{}
	for _, old := range slices.Sorted(maps.Keys(rename)) {
		name, at := rename[old], "rename."+old
		_, had := have.Field(old)
		_, kept := next.Field(old)
		_, known := have.Field(name)
		_, named := next.Field(name)
		switch {
		case !had:
			return &Problems{Fields: map[string]string{at: "is not a field of the collection"}}
		case kept:
			return &Problems{Fields: map[string]string{at: "is still a field: a renamed field leaves the fields"}}
		case !named:
			return &Problems{Fields: map[string]string{at: "must name a field of fields (" + name + " is not one)"}}
		case known:
			return &Problems{Fields: map[string]string{at: "must be a new name (" + name + " is already a field)"}}
		case taken[name] != "":
			return &Problems{Fields: map[string]string{at: "must differ from the new name of " + taken[name]}}
		}
		taken[name] = old
	}
	return nil
}
