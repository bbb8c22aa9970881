// Package jsoncheck finds what in JSON text no database column takes —
// invalid UTF-8, NUL, unpaired surrogates — and nesting past a bound,
// before the text is decoded. It knows nothing of HTTP.
package jsoncheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Text refuses JSON text with invalid UTF-8, a string holding NUL or an
// unpaired surrogate (escaped, \u0000 or \ud800, they are text no
// database column takes), or nesting deeper than maxDepth: the error is
// an *Error naming where, under root. Clean text takes the fast path: one
// UTF-8 scan and a search for the escapes. Text that is not JSON passes:
// the decoder that follows reports its syntax.
func Text(body []byte, root string, maxDepth int) error {
	if utf8.Valid(body) && !bytes.Contains(body, []byte(`\u0000`)) && !bytes.Contains(body, []byte(`\ud`)) &&
		!bytes.Contains(body, []byte(`\uD`)) && depthWithin(body, maxDepth) {
		return nil
	}
	return scan(body, root, maxDepth)
}

// Error is where JSON text is not clean: the path of the value (under
// the root given, "" for the text itself), and whether it nests too deep
// or the string at fault is a field name.
type Error struct {
	Path    string
	TooDeep bool
	Key     bool
}

func (e *Error) Error() string {
	switch {
	case e.TooDeep:
		return "the JSON text nests too deep"
	case e.Key:
		return "a field name in " + e.Path + " contains a NUL character or invalid UTF-8"
	}
	return e.Path + " contains a NUL character or invalid UTF-8"
}

// cleanString reports whether a string token is clean text: raw (as
// written, quotes and escapes included) valid UTF-8 with no unpaired
// surrogate escape, and its value t free of NUL.
func cleanString(raw []byte, t string) bool {
	if !utf8.Valid(raw) || strings.IndexByte(t, 0) >= 0 {
		return false
	}
	high := false // the previous escape was a high surrogate
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' || i+1 >= len(raw) {
			continue
		}
		if raw[i+1] != 'u' {
			i++ // an escaped character: \\, \", \n …
			if high {
				return false
			}
			continue
		}
		if i+6 > len(raw) {
			return false
		}
		v, err := strconv.ParseUint(string(raw[i+2:i+6]), 16, 16)
		if err != nil {
			return false
		}
		switch {
		case v >= 0xD800 && v <= 0xDBFF:
			if high {
				return false
			}
			high = true
		case v >= 0xDC00 && v <= 0xDFFF:
			if !high {
				return false
			}
			high = false
		case high:
			return false
		}
		i += 5
	}
	return !high
}

// depthWithin reports whether the brackets of JSON text body nest at most max
// deep, skipping strings.
func depthWithin(body []byte, max int) bool {
	depth, inString, escaped := 0, false, false
	for _, b := range body {
		switch {
		case escaped:
			escaped = false
		case inString && b == '\\':
			escaped = true
		case b == '"':
			inString = !inString
		case inString:
		case b == '{' || b == '[':
			if depth++; depth > max {
				return false
			}
		case b == '}' || b == ']':
			depth--
		}
	}
	return true
}

// scan walks the tokens of body, keeping the path of the current value
// (under root), and reports the first string that is not clean text.
func scan(body []byte, root string, maxDepth int) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	type level struct {
		array bool
		index int
		key   string
		isKey bool // an object's next string token is a key
	}
	var stack []level
	path := func() string {
		var b strings.Builder
		b.WriteString(root)
		for i, l := range stack {
			switch {
			case l.array:
				b.WriteString("[" + strconv.Itoa(l.index) + "]")
			case i > 0 || b.Len() > 0:
				b.WriteString("." + l.key)
			default:
				b.WriteString(l.key)
			}
		}
		return b.String()
	}
	// after moves to the next element once a value is complete.
	after := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].array {
				stack[n-1].index++
			} else {
				stack[n-1].isKey = true
			}
		}
	}
	for {
		start := dec.InputOffset()
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return nil // the decoder that follows reports the syntax error
		}
		raw := body[start:dec.InputOffset()]
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if len(stack) >= maxDepth {
					return &Error{Path: path(), TooDeep: true}
				}
				stack = append(stack, level{array: t == '[', isKey: t == '{'})
			default:
				stack = stack[:len(stack)-1]
				after()
			}
		case string:
			top := len(stack) - 1
			if top >= 0 && !stack[top].array && stack[top].isKey {
				stack[top].key, stack[top].isKey = t, false
				if !cleanString(raw, t) {
					return &Error{Path: path(), Key: true}
				}
				continue
			}
			if !cleanString(raw, t) {
				return &Error{Path: path()}
			}
			after()
		default:
			after()
		}
	}
}

// Syntax says where JSON text breaks its syntax: the line and column (both
// from 1) of the first fault, and ok false when the text is valid JSON or
// fails for another reason. It reads the text once more, to be called
// after a decoder refused it.
func Syntax(text []byte) (line, col int, ok bool) {
	var probe any
	var syntax *json.SyntaxError
	if !errors.As(json.Unmarshal(text, &probe), &syntax) {
		return 0, 0, false
	}
	offset := syntax.Offset
	if offset > int64(len(text)) {
		offset = int64(len(text))
	}
	before := text[:offset]
	line = bytes.Count(before, []byte("\n")) + 1
	col = utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:])
	return line, max(col, 1), true
}
