package engine

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// errTooLarge: the encoding passed its limit.
var errTooLarge = errors.New("too large")

// errNUL: a string holds a NUL character, which a record cannot store.
var errNUL = errors.New("holds a NUL character")

// encoder writes values as JSON with a size limit, so that a value shared
// many times over (an object holding itself twice, each level doubling)
// stops at the limit instead of filling memory. Object keys are sorted.
type encoder struct {
	buf     []byte
	limit   int
	noNUL   bool
	secrets *Secrets // written as Mask wherever a string holds them
}

// Mask stands for a vault value in what a trace shows.
const Mask = "••••••"

// AppendMasked appends v as JSON to buf as a run writes its answer, every
// spelling of secrets replaced by Mask in every string (keys too); over
// limit bytes it stops with an error, buf holding what it wrote.
func AppendMasked(buf []byte, v any, limit int, secrets *Secrets) ([]byte, error) {
	e := encoder{buf: buf, limit: len(buf) + limit, secrets: secrets}
	err := e.value(v)
	return e.buf, err
}

// appendJSON appends v as JSON to buf; over limit bytes it stops with
// errTooLarge.
func appendJSON(buf []byte, v any, limit int) ([]byte, error) {
	e := encoder{buf: buf, limit: len(buf) + limit}
	err := e.value(v)
	return e.buf, err
}

func (e *encoder) value(v any) error {
	if len(e.buf) > e.limit {
		return errTooLarge
	}
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case bool:
		e.buf = strconv.AppendBool(e.buf, x)
	case float64:
		e.buf = appendNumber(e.buf, x)
	case string:
		return e.string(x)
	case []any:
		e.buf = append(e.buf, '[')
		for i, item := range x {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.value(item); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		e.buf = append(e.buf, '{')
		for i, k := range keys {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.string(k); err != nil {
				return err
			}
			e.buf = append(e.buf, ':')
			if err := e.value(x[k]); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, '}')
	default:
		return errors.New("not a JSON value")
	}
	if len(e.buf) > e.limit {
		return errTooLarge
	}
	return nil
}

// appendNumber writes f as encoding/json does: plain digits from 1e-6 to
// 1e21, an exponent beyond.
func appendNumber(buf []byte, f float64) []byte {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.AppendInt(buf, int64(f), 10)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(buf)
	buf = strconv.AppendFloat(buf, f, format, -1, 64)
	if format == 'e' {
		// e-07 → e-7, as encoding/json writes it.
		n := len(buf) - start
		if n >= 4 && buf[len(buf)-4] == 'e' && buf[len(buf)-3] == '-' && buf[len(buf)-2] == '0' {
			buf[len(buf)-2] = buf[len(buf)-1]
			buf = buf[:len(buf)-1]
		}
	}
	return buf
}

const hexDigits = "0123456789abcdef"

// string writes s quoted: control characters, quote and backslash
// escaped, U+2028 and U+2029 escaped (JavaScript reads them as line ends),
// invalid UTF-8 as U+FFFD.
func (e *encoder) string(s string) error {
	s = e.secrets.Mask(s)
	if len(e.buf)+len(s) > e.limit {
		return errTooLarge
	}
	e.buf = append(e.buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			if c == 0 && e.noNUL {
				return errNUL
			}
			e.buf = append(e.buf, s[start:i]...)
			switch c {
			case '"', '\\':
				e.buf = append(e.buf, '\\', c)
			case '\n':
				e.buf = append(e.buf, '\\', 'n')
			case '\r':
				e.buf = append(e.buf, '\\', 'r')
			case '\t':
				e.buf = append(e.buf, '\\', 't')
			default:
				e.buf = append(e.buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			e.buf = append(e.buf, s[start:i]...)
			e.buf = append(e.buf, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			e.buf = append(e.buf, s[start:i]...)
			e.buf = append(e.buf, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	e.buf = append(e.buf, s[start:]...)
	e.buf = append(e.buf, '"')
	return nil
}
