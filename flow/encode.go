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
