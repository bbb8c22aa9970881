package flow

import (
	"bytes"
	"encoding/json"
	"reflect"
)

// MarshalJSON writes a block with its type, depth and every field of its
// type, in a fixed order: empty lists as [], absent optional objects as null.
func (b Block) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteString(`{"type":`)
	t, _ := json.Marshal(b.Type)
	buf.Write(t)
	buf.WriteString(`,"depth":`)
	d, _ := json.Marshal(b.Depth)
	buf.Write(d)
	for _, f := range blockFields[b.Type] {
		buf.WriteString(`,"` + f.name + `":`)
		v := reflect.ValueOf(b.slot(f.name)).Elem()
		if v.Kind() == reflect.Slice && v.IsNil() {
			v = reflect.MakeSlice(v.Type(), 0, 0)
		}
		raw, err := json.Marshal(v.Interface())
		if err != nil {
			return nil, err
		}
		buf.Write(raw)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// UnmarshalJSON reads a block in the form MarshalJSON writes — a document
// that was validated when it was stored: the block's type picks the fields,
// each decoded straight into its place. Documents from clients go through
// the strict decoder (DecodeRoute, DecodeTemplate) instead, which names every
// fault by its path.
func (b *Block) UnmarshalJSON(raw []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return err
	}
	*b = Block{}
	if err := json.Unmarshal(fields["type"], &b.Type); err != nil {
		return err
	}
	if d, ok := fields["depth"]; ok {
		if err := json.Unmarshal(d, &b.Depth); err != nil {
			return err
		}
	}
	for _, f := range blockFields[b.Type] {
		if v, ok := fields[f.name]; ok {
			if err := json.Unmarshal(v, b.slot(f.name)); err != nil {
				return err
			}
		}
	}
	return nil
}
