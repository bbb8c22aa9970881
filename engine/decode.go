package engine

import (
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Decoder turns record data (JSON objects as PostgreSQL writes jsonb) into
// values, without reflection: a FETCH of many records spends most of its
// time here. Object keys repeat from record to record; the decoder keeps
// one string of each, so a collection's keys are allocated once per read.
type Decoder struct {
	keys map[string]string
	// Short strings and numbers repeat too (a genre, a status, a year):
	// each is kept once, already an interface value.
	strs, nums map[string]any
}

// NewDecoder returns a decoder with empty tables.
func NewDecoder() *Decoder {
	return &Decoder{keys: map[string]string{}, strs: map[string]any{}, nums: map[string]any{}}
}

// Limits of the tables: what is longer, or comes when a table is full, is
// made afresh each time. Values that repeat (a genre, a status) come
// early; a table that kept every distinct title would cost more to grow
// than the values it saves.
const (
	keysMax   = 10_000
	sharedMax = 32 // bytes of a shared string or number
	valuesMax = 256
)

var errSyntax = errors.New("invalid JSON")

// Object decodes a JSON object.
func (d *Decoder) Object(data []byte) (map[string]any, error) {
	v, err := d.Value(data)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errSyntax
	}
	return m, nil
}

// Value decodes any JSON value: a record's data, what an upstream
// answered (docs/engine.md).
func (d *Decoder) Value(data []byte) (any, error) {
	p := parser{data: data, Decoder: d}
	p.space()
	v, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i != len(p.data) {
		return nil, errSyntax
	}
	return v, nil
}

// Field decodes the value of key in the JSON object data and checks the
// rest without decoding it: nil when data has no such key, the last value
// of a repeated key, an error whenever Object would fail.
func (d *Decoder) Field(data []byte, key string) (any, error) {
	p := parser{data: data, Decoder: d}
	p.space()
	if p.i >= len(p.data) || p.data[p.i] != '{' {
		return nil, errSyntax
	}
	p.i++
	var found any
	p.space()
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
	} else {
		for {
			p.space()
			if p.i >= len(p.data) || p.data[p.i] != '"' {
				return nil, errSyntax
			}
			raw, plain, err := p.stringBytes()
			if err != nil {
				return nil, err
			}
			match := plain && string(raw) == key
			if !plain {
				k, err := unescape(raw)
				if err != nil {
					return nil, err
				}
				match = k == key
			}
			p.space()
			if p.i >= len(p.data) || p.data[p.i] != ':' {
				return nil, errSyntax
			}
			p.i++
			if match {
				if found, err = p.value(1); err != nil {
					return nil, err
				}
			} else if err := p.skip(1); err != nil {
				return nil, err
			}
			p.space()
			if p.i < len(p.data) && p.data[p.i] == ',' {
				p.i++
				continue
			}
			if p.i < len(p.data) && p.data[p.i] == '}' {
				p.i++
				break
			}
			return nil, errSyntax
		}
	}
	p.space()
	if p.i != len(p.data) {
		return nil, errSyntax
	}
	return found, nil
}

type parser struct {
	*Decoder
	data []byte
	i    int
}

// maxDepth bounds nesting, as encoding/json does.
const maxDepth = 10000

func (p *parser) space() {
	i := p.i
	for i < len(p.data) && (p.data[i] == ' ' || p.data[i] == '\t' || p.data[i] == '\n' || p.data[i] == '\r') {
		i++
	}
	p.i = i
}

func (p *parser) value(depth int) (any, error) {
	if depth > maxDepth {
		return nil, errSyntax
	}
	p.space()
	if p.i >= len(p.data) {
		return nil, errSyntax
	}
	switch c := p.data[p.i]; {
	case c == '{':
		p.i++
		m := map[string]any{}
		p.space()
		if p.i < len(p.data) && p.data[p.i] == '}' {
			p.i++
			return m, nil
		}
		for {
			p.space()
			if p.i >= len(p.data) || p.data[p.i] != '"' {
				return nil, errSyntax
			}
			key, err := p.key()
			if err != nil {
				return nil, err
			}
			p.space()
			if p.i >= len(p.data) || p.data[p.i] != ':' {
				return nil, errSyntax
			}
			p.i++
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			m[key] = v
			if done, err := p.after('}'); done || err != nil {
				return m, err
			}
		}
	case c == '[':
		p.i++
		a := []any{}
		p.space()
		if p.i < len(p.data) && p.data[p.i] == ']' {
			p.i++
			return a, nil
		}
		for {
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			a = append(a, v)
			if done, err := p.after(']'); done || err != nil {
				return a, err
			}
		}
	case c == '"':
		raw, plain, err := p.stringBytes()
		if err != nil {
			return nil, err
		}
		if !plain {
			return unescape(raw)
		}
		return shared(p.strs, raw, func() any { return string(raw) }), nil
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		start := p.i
		f, err := p.float()
		if err != nil {
			return nil, err
		}
		return shared(p.nums, p.data[start:p.i], func() any { return f }), nil
	}
	return nil, errSyntax
}

// shared returns the value table holds for raw, or makes it and keeps it.
func shared(table map[string]any, raw []byte, fresh func() any) any {
	if len(raw) > sharedMax {
		return fresh()
	}
	if v, ok := table[string(raw)]; ok {
		return v
	}
	v := fresh()
	if len(table) < valuesMax {
		table[string(raw)] = v
	}
	return v
}

func (p *parser) float() (float64, error) {
	start := p.i
	if ok, _ := p.number(); !ok {
		return 0, errSyntax
	}
	f, err := strconv.ParseFloat(string(p.data[start:p.i]), 64)
	if err != nil {
		return 0, errSyntax // out of float64's range
	}
	return f, nil
}

// skip checks a value as value does, keeping nothing.
func (p *parser) skip(depth int) error {
	if depth > maxDepth {
		return errSyntax
	}
	p.space()
	if p.i >= len(p.data) {
		return errSyntax
	}
	switch c := p.data[p.i]; {
	case c == '{' || c == '[':
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		p.i++
		p.space()
		if p.i < len(p.data) && p.data[p.i] == end {
			p.i++
			return nil
		}
		for {
			if c == '{' {
				p.space()
				if p.i >= len(p.data) || p.data[p.i] != '"' {
					return errSyntax
				}
				if err := p.skipString(); err != nil {
					return err
				}
				p.space()
				if p.i >= len(p.data) || p.data[p.i] != ':' {
					return errSyntax
				}
				p.i++
			}
			if err := p.skip(depth + 1); err != nil {
				return err
			}
			if done, err := p.after(end); done || err != nil {
				return err
			}
		}
	case c == '"':
		return p.skipString()
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		start := p.i
		ok, exp := p.number()
		if !ok {
			return errSyntax
		}
		// Only an exponent or over 300 digits can pass float64's range.
		if exp || p.i-start > 300 {
			p.i = start
			_, err := p.float()
			return err
		}
		return nil
	}
	return errSyntax
}

// after reads what follows an item of an object or array: a comma (more
// items), or its closer (done).
func (p *parser) after(closer byte) (done bool, err error) {
	p.space()
	if p.i < len(p.data) {
		switch p.data[p.i] {
		case ',':
			p.i++
			return false, nil
		case closer:
			p.i++
			return true, nil
		}
	}
	return false, errSyntax
}

func (p *parser) skipString() error {
	raw, plain, err := p.stringBytes()
	if err == nil && !plain {
		_, err = unescape(raw)
	}
	return err
}

// number reads a number as JSON spells it,
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, and says whether it has
// an exponent.
func (p *parser) number() (ok, exp bool) {
	digits := func() int {
		n := 0
		for p.i < len(p.data) && p.data[p.i] >= '0' && p.data[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.data[p.i] == '-' {
		p.i++
	}
	if p.i < len(p.data) && p.data[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return false, false
	}
	if p.i < len(p.data) && p.data[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return false, false
		}
	}
	if p.i < len(p.data) && (p.data[p.i] == 'e' || p.data[p.i] == 'E') {
		p.i++
		if p.i < len(p.data) && (p.data[p.i] == '+' || p.data[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return false, true
		}
		return true, true
	}
	return true, false
}

func (p *parser) literal(word string) error {
	if len(p.data)-p.i < len(word) || string(p.data[p.i:p.i+len(word)]) != word {
		return errSyntax
	}
	p.i += len(word)
	return nil
}

// key reads an object key, one string per distinct key.
func (p *parser) key() (string, error) {
	raw, plain, err := p.stringBytes()
	if err != nil {
		return "", err
	}
	if !plain {
		return unescape(raw)
	}
	if k, ok := p.keys[string(raw)]; ok {
		return k, nil
	}
	k := string(raw)
	if len(p.keys) < keysMax {
		p.keys[k] = k
	}
	return k, nil
}

// stringBytes reads a quoted string at p.i and returns its content, and
// whether it has no escape (its bytes are the string).
func (p *parser) stringBytes() ([]byte, bool, error) {
	data, i := p.data, p.i+1 // past the opening quote
	start := i
	plain, ascii := true, true
	for i < len(data) {
		c := data[i]
		if !special[c] {
			i++
			continue
		}
		switch {
		case c == '"':
			p.i = i + 1
			raw := data[start:i]
			if plain && !ascii && !utf8.Valid(raw) {
				plain = false // unescape replaces invalid UTF-8
			}
			return raw, plain, nil
		case c == '\\':
			plain = false
			i += 2
		case c < 0x20:
			return nil, false, errSyntax
		default:
			ascii = false
			i++
		}
	}
	return nil, false, errSyntax
}

// special marks the bytes a string's scan stops at: the quote, the
// backslash, control characters, and those past ASCII.
var special = func() (t [256]bool) {
	for c := range t {
		t[c] = c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf
	}
	return t
}()

// unescape decodes a string's content that has escapes or invalid UTF-8.
func unescape(raw []byte) (string, error) {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			r, size := utf8.DecodeRune(raw[i:])
			out = utf8.AppendRune(out, r) // invalid bytes become U+FFFD
			i += size
			continue
		}
		if i+1 >= len(raw) {
			return "", errSyntax
		}
		switch raw[i+1] {
		case '"', '\\', '/':
			out = append(out, raw[i+1])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(raw, i+2)
			if !ok {
				return "", errSyntax
			}
			i += 6
			if utf16.IsSurrogate(r) {
				if r2, ok := hex4(raw, i+2); ok && i+1 < len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
						out = utf8.AppendRune(out, pair)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
			continue
		default:
			return "", errSyntax
		}
		i += 2
	}
	return string(out), nil
}

func hex4(raw []byte, at int) (rune, bool) {
	if at+4 > len(raw) {
		return 0, false
	}
	var r rune
	for _, c := range raw[at : at+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
