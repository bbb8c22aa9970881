package flow

import (
	"encoding/json"
	"reflect"
)

// Encoding and decoding of stored documents. Blocks of different types have
// different fields, so encoding/json cannot see a Block's shape from its Go
// type. For each block type a struct type is made once, from the field
// table, with exactly that type's fields in their order (wireTypes); a block
// is copied into one and encoding/json does the rest. Decoding goes through
// wireBlock, which has every field name of every type.

// wireTypes holds, per block type, the struct type of its JSON form and, per
// field, where the field lives in a Block.
var wireTypes = func() map[string]wireType {
	out := map[string]wireType{}
	for typ, fields := range blockFields {
		sf := []reflect.StructField{
			{Name: "Type", Type: reflect.TypeFor[string](), Tag: `json:"type"`},
			{Name: "Depth", Type: reflect.TypeFor[int](), Tag: `json:"depth"`},
		}
		probe := &Block{Type: typ}
		for i, f := range fields {
			tag := `json:"` + f.name + `"`
			if f.optional {
				tag = `json:"` + f.name + `,omitempty"`
			}
			sf = append(sf, reflect.StructField{
				Name: "F" + string(rune('A'+i)),
				Type: reflect.TypeOf(probe.slot(f.name)).Elem(),
				Tag:  reflect.StructTag(tag),
			})
		}
		out[typ] = wireType{typ: reflect.StructOf(sf), fields: fields}
	}
	return out
}()

type wireType struct {
	typ    reflect.Type
	fields []field
}

// wire returns b in its JSON form: every field of its type, empty lists as
// [], absent optional objects as null, empty optional fields left out.
func (b *Block) wire() any {
	wt, ok := wireTypes[b.Type]
	if !ok {
		return struct {
			Type  string `json:"type"`
			Depth int    `json:"depth"`
		}{b.Type, b.Depth}
	}
	v := reflect.New(wt.typ).Elem()
	v.Field(0).SetString(b.Type)
	v.Field(1).SetInt(int64(b.Depth))
	for i, f := range wt.fields {
		src := reflect.ValueOf(b.slot(f.name)).Elem()
		if src.Kind() == reflect.Slice && src.IsNil() {
			src = reflect.MakeSlice(src.Type(), 0, 0)
		}
		v.Field(i + 2).Set(src)
	}
	return v.Interface()
}

// MarshalJSON writes a block with its type, depth and every field of its
// type, in a fixed order: empty lists as [], absent optional objects as null.
func (b Block) MarshalJSON() ([]byte, error) {
	return json.Marshal(b.wire())
}

// MarshalJSON writes the blocks in one pass of the encoder.
func (f Flow) MarshalJSON() ([]byte, error) {
	blocks := make([]any, len(f.Blocks))
	for i := range f.Blocks {
		blocks[i] = f.Blocks[i].wire()
	}
	return json.Marshal(struct {
		Blocks []any `json:"blocks"`
	}{blocks})
}

// wireBlock is a block in any type's JSON form. "data" and "targets" mean
// different things in different types and are decoded once the type is
// known.
type wireBlock struct {
	Type           string          `json:"type"`
	Depth          int             `json:"depth"`
	LocalName      string          `json:"local_name"`
	RefCol         string          `json:"ref_col"`
	RefProperty    string          `json:"ref_property"`
	RefObject      string          `json:"ref_object"`
	Source         string          `json:"source"`
	TemplateString string          `json:"templatestring"`
	Additional     string          `json:"additional"`
	Key            string          `json:"key"`
	EmailTemplate  string          `json:"template"`
	Action         string          `json:"action"`
	Apply          string          `json:"apply"`
	Func           string          `json:"func"`
	Save           bool            `json:"save"`
	Conditions     []Condition     `json:"conditions"`
	Operations     []Operation     `json:"operations"`
	Filters        []Filter        `json:"filters"`
	Pairs          []Pair          `json:"pairs"`
	Params         []Operand       `json:"params"`
	Recipients     []Operand       `json:"recipients"`
	Min            *Operand        `json:"min"`
	Max            *Operand        `json:"max"`
	Step           *Operand        `json:"step"`
	Set            *Operand        `json:"set"`
	Add            *Operand        `json:"add"`
	Filter         *Filter         `json:"filter"`
	Fail           *Fail           `json:"fail"`
	Match          []Pair          `json:"match"`
	Sort           *Sort           `json:"sort"`
	Limit          *Operand        `json:"limit"`
	Status         int             `json:"status"`
	Headers        []Pair          `json:"headers"`
	CallMethod     string          `json:"method"`
	URL            *Operand        `json:"url"`
	Query          []Pair          `json:"query"`
	CallBody       *Operand        `json:"body"`
	Timeout        *Operand        `json:"timeout_ms"`
	TargetRoute    string          `json:"route_id"`
	Delay          *Operand        `json:"delay_ms"`
	MaxAttempts    int             `json:"max_attempts"`
	Data           json.RawMessage `json:"data"`
	Targets        json.RawMessage `json:"targets"`
}

// block turns w into a Block.
func (w *wireBlock) block() (Block, error) {
	b := Block{Type: w.Type, Depth: w.Depth, LocalName: w.LocalName, RefCol: w.RefCol, RefProperty: w.RefProperty,
		RefObject: w.RefObject, Source: w.Source, TemplateString: w.TemplateString, Additional: w.Additional, Key: w.Key,
		EmailTemplate: w.EmailTemplate, Action: w.Action, Apply: w.Apply, Func: w.Func, Save: w.Save,
		Conditions: w.Conditions, Operations: w.Operations, Filters: w.Filters, Pairs: w.Pairs, Params: w.Params,
		Recipients: w.Recipients, Min: w.Min, Max: w.Max, Step: w.Step, Set: w.Set, Add: w.Add, Filter: w.Filter, Fail: w.Fail,
		Match: w.Match, Sort: w.Sort, Limit: w.Limit, Status: w.Status, Headers: w.Headers, CallMethod: w.CallMethod,
		URL: w.URL, Query: w.Query, CallBody: w.CallBody, Timeout: w.Timeout, TargetRoute: w.TargetRoute, Delay: w.Delay, MaxAttempts: w.MaxAttempts}
	for name, raw := range map[string]json.RawMessage{"data": w.Data, "targets": w.Targets} {
		if len(raw) > 0 {
			if err := json.Unmarshal(raw, b.slot(name)); err != nil {
				return b, err
			}
		}
	}
	return b, nil
}

// UnmarshalJSON reads a block in the form MarshalJSON writes — a document
// that was validated when it was stored. Documents from clients go through
// the strict decoder (DecodeRoute, DecodeTemplate) instead, which names every
// fault by its path.
func (b *Block) UnmarshalJSON(raw []byte) error {
	var w wireBlock
	if err := json.Unmarshal(raw, &w); err != nil {
		return err
	}
	var err error
	*b, err = w.block()
	return err
}

// UnmarshalJSON reads stored blocks in one pass of the decoder.
func (f *Flow) UnmarshalJSON(raw []byte) error {
	var w struct {
		Blocks []wireBlock `json:"blocks"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return err
	}
	f.Blocks = make([]Block, len(w.Blocks))
	for i := range w.Blocks {
		var err error
		if f.Blocks[i], err = w.Blocks[i].block(); err != nil {
			return err
		}
	}
	return nil
}
