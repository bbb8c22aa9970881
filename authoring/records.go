package authoring

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

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
		offset := int64(len(raw))
		var probe any
		if errors.As(json.Unmarshal(raw, &probe), &syntax) {
			offset = syntax.Offset
		}
		line, col := position(raw, offset)
		return nil, &Problems{Fields: map[string]string{"data": fmt.Sprintf("is not valid JSON: look at line %d, column %d", line, col)}}
	case errors.Is(err, store.ErrRecordNotObject), errors.Is(err, store.ErrRecordTooLarge), errors.Is(err, store.ErrNumberRange):
		return nil, &Problems{Fields: map[string]string{"data": err.Error()}}
	default:
		return nil, err
	}
}

// position turns a byte offset of text into its line and column (both from
// 1).
func position(text []byte, offset int64) (line, col int) {
	if offset > int64(len(text)) {
		offset = int64(len(text))
	}
	before := text[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:])
	return line, max(col, 1)
}
