package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"
)

// Values are JSON values as encoding/json decodes them into an any: nil,
// bool, float64, string, []any and map[string]any. The engine never changes
// a value in place; a block that changes one makes a new one, so values are
// shared freely between variables, literals and runs.

// maxSafeInteger is the largest integer a JSON number (a float64) holds
// exactly; INTEGER inputs beyond it are refused.
const maxSafeInteger = 1<<53 - 1

// maxString is the largest string a block may make (ADDITION, TEMPLATE):
// the answer limit, so that a loop that doubles a string stops early.
const maxString = 4 << 20

// maxItems is the most items an ADDITION of arrays or an UPDATE's add may
// make.
const maxItems = 100_000

// ConvertText converts text (a query parameter or a literal operand's data)
// to a value of bdtype.
func ConvertText(text, bdtype string) (any, error) {
	switch bdtype {
	case "STRING":
		return text, nil
	case "INTEGER":
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil || n > maxSafeInteger || n < -maxSafeInteger {
			return nil, errors.New("must be an integer (at most 2^53 − 1 either side of 0)")
		}
		return float64(n), nil
	case "FLOAT":
		f, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, errors.New("must be a finite number")
		}
		return f, nil
	case "BOOLEAN":
		switch text {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, errors.New("must be true or false")
	case "ARRAY", "OTHER":
		var v any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			return nil, errors.New("must be JSON")
		}
		return ConvertJSON(v, bdtype)
	}
	return nil, fmt.Errorf("has an unknown type %q", bdtype)
}

// ConvertJSON checks that v (decoded from a JSON body) is of bdtype.
func ConvertJSON(v any, bdtype string) (any, error) {
	ok := false
	switch bdtype {
	case "STRING":
		_, ok = v.(string)
	case "INTEGER":
		f, isNumber := v.(float64)
		ok = isNumber && f == math.Trunc(f) && math.Abs(f) <= maxSafeInteger
		if !ok {
			return nil, errors.New("must be an integer (at most 2^53 − 1 either side of 0)")
		}
	case "FLOAT":
		_, ok = v.(float64)
	case "BOOLEAN":
		_, ok = v.(bool)
	case "ARRAY":
		_, ok = v.([]any)
	case "OTHER":
		ok = true
	}
	if !ok {
		return nil, fmt.Errorf("must be %s, not %s", article(bdtype), typeName(v))
	}
	return v, nil
}

func article(bdtype string) string {
	switch bdtype {
	case "STRING":
		return "a string"
	case "FLOAT":
		return "a number"
	case "BOOLEAN":
		return "true or false"
	case "ARRAY":
		return "an array"
	}
	return "a JSON value"
}

// typeName names v's JSON type for messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// storedSize is what a record read takes beside its JSON: its place in
// the variable's array and its own bookkeeping.
const storedSize = 64

// size is about the bytes a value made by a block takes: a string's text,
// an array's or an object's places (what they hold is counted where it was
// made, and shared values are counted once).
func size(v any) int {
	switch x := v.(type) {
	case string:
		return 16 + len(x)
	case []any:
		return 24 + 16*len(x)
	case map[string]any:
		n := 48
		for k := range x {
			n += 48 + len(k)
		}
		return n
	}
	return 16
}

// describe names v for a fault without quoting it: its type, and the size
// of a string, array or object. A value may be a secret, or derived from
// one, and a fault's text is shown to callers and kept in the run log.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("a string of %d characters", utf8.RuneCountInString(x))
	case []any:
		return fmt.Sprintf("an array of %d items", len(x))
	case map[string]any:
		return fmt.Sprintf("an object of %d properties", len(x))
	}
	return typeName(v)
}

// splitPath splits a dot path ("rows.0.id") into its segments; "" is none.
func splitPath(path string) []string {
	if path == "" {
		return nil
	}
	return strings.Split(path, ".")
}

// lookup follows path into v: an object's property, or an array's item by
// its index from 0. Whatever is missing on the way is null.
func lookup(v any, path []string) any {
	for _, seg := range path {
		switch t := v.(type) {
		case map[string]any:
			v = t[seg]
		case []any:
			i, ok := index(seg)
			if !ok || i >= len(t) {
				return nil
			}
			v = t[i]
		default:
			return nil
		}
	}
	return v
}

// index reads a path segment as an array index.
func index(seg string) (int, bool) {
	if seg == "" || len(seg) > 9 {
		return 0, false
	}
	n := 0
	for _, r := range seg {
		if r < '0' || r > '9' {
			return 0, false
		}
		n = n*10 + int(r-'0')
	}
	return n, true
}

// withPath returns v with the value at path replaced by x: objects on the
// way are copied (missing ones made), arrays copied with the item replaced.
// An array index beyond the end, or a step into a scalar, is an error.
func withPath(v any, path []string, x any) (any, error) {
	if len(path) == 0 {
		return x, nil
	}
	seg := path[0]
	switch t := v.(type) {
	case nil:
		inner, err := withPath(nil, path[1:], x)
		return map[string]any{seg: inner}, err
	case map[string]any:
		inner, err := withPath(t[seg], path[1:], x)
		if err != nil {
			return nil, err
		}
		out := make(map[string]any, len(t)+1)
		for k, item := range t {
			out[k] = item
		}
		out[seg] = inner
		return out, nil
	case []any:
		i, ok := index(seg)
		if !ok || i >= len(t) {
			return nil, fmt.Errorf("%q is not an index of an array of %d items", seg, len(t))
		}
		inner, err := withPath(t[i], path[1:], x)
		if err != nil {
			return nil, err
		}
		out := append([]any(nil), t...)
		out[i] = inner
		return out, nil
	}
	return nil, fmt.Errorf("cannot set %q inside %s", seg, typeName(v))
}

// equal is deep equality of JSON values.
func equal(a, b any) bool {
	var e equality
	return e.equal(a, b)
}

// late is a run's flag that its time is up, read by work that visits many
// items so that a comparison of large values ends with its run (nil: none).
type late = *atomic.Bool

// equality compares values that may share parts: an OBJECT block may hold
// one variable twice, and a LOOP of such blocks makes a value whose tree
// is exponentially larger than the memory it takes. Each pair of arrays or
// objects is compared once (a pair met again compared equal: an unequal
// one ends the comparison), so the work follows the memory.
type equality struct {
	seen map[[3]uintptr]bool
	late late // when set, the comparison gives up (its answer unused)
}

// again says whether the containers a and b were met before, and notes
// them.
func (e *equality) again(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Pointer() == vb.Pointer() {
		return true // the same array or object (of the same length)
	}
	key := [3]uintptr{va.Pointer(), vb.Pointer(), uintptr(va.Len())}
	if e.seen == nil {
		e.seen = map[[3]uintptr]bool{}
	}
	if e.seen[key] {
		return true
	}
	e.seen[key] = true
	return false
}

func (e *equality) equal(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		if len(x) == 0 || e.again(a, b) {
			return true
		}
		for i := range x {
			if e.late != nil && e.late.Load() || !e.equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		if len(x) == 0 || e.again(a, b) {
			return true
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || e.late != nil && e.late.Load() || !e.equal(xv, yv) {
				return false
			}
		}
		return true
	}
	return false
}

// compare applies a comparison (docs/engine.md): numbers numerically, strings
// by code point; an order between values that are not both numbers or both
// strings does not hold.
func compare(op opcode, a, b any, stop late) bool {
	switch op {
	case opEqual:
		e := equality{late: stop}
		return e.equal(a, b)
	case opNotEqual:
		e := equality{late: stop}
		return !e.equal(a, b)
	case opIncludes:
		return includes(a, b, stop)
	}
	var c int
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		if !ok {
			return false
		}
		switch {
		case x < y:
			c = -1
		case x > y:
			c = 1
		}
	case string:
		y, ok := b.(string)
		if !ok {
			return false
		}
		c = strings.Compare(x, y)
	default:
		return false
	}
	switch op {
	case opGreater:
		return c > 0
	case opLess:
		return c < 0
	case opGreaterEqual:
		return c >= 0
	case opLessEqual:
		return c <= 0
	}
	return false
}

// includes: an array holds an item equal to b, a string holds the string
// b, an object has the key b.
func includes(a, b any, stop late) bool {
	switch x := a.(type) {
	case []any:
		for _, item := range x {
			if stop != nil && stop.Load() {
				return false
			}
			e := equality{late: stop}
			if e.equal(item, b) {
				return true
			}
		}
	case string:
		y, ok := b.(string)
		return ok && strings.Contains(x, y)
	case map[string]any:
		y, ok := b.(string)
		if ok {
			_, has := x[y]
			return has
		}
	}
	return false
}

// arithmetic applies ADDITION … MODULO. ADDITION adds numbers, joins
// arrays, and joins text when either side is a string (the other in its
// text form); the others take numbers only.
func arithmetic(op opcode, a, b any) (any, error) {
	if op == opAdd {
		if s, ok := a.(string); ok {
			return joinText(s, text(b))
		}
		if s, ok := b.(string); ok {
			return joinText(text(a), s)
		}
		if x, ok := a.([]any); ok {
			if y, ok := b.([]any); ok {
				if len(x)+len(y) > maxItems {
					return nil, fmt.Errorf("an array would pass %d items", maxItems)
				}
				return append(append(make([]any, 0, len(x)+len(y)), x...), y...), nil
			}
		}
	}
	x, okx := a.(float64)
	y, oky := b.(float64)
	if !okx || !oky {
		return nil, fmt.Errorf("%s needs two numbers, not %s and %s", op, typeName(a), typeName(b))
	}
	var r float64
	switch op {
	case opAdd:
		r = x + y
	case opSub:
		r = x - y
	case opMul:
		r = x * y
	case opDiv, opMod:
		if y == 0 {
			return nil, errors.New("division by zero")
		}
		if op == opDiv {
			r = x / y
		} else {
			r = math.Mod(x, y)
		}
	}
	if math.IsInf(r, 0) || math.IsNaN(r) {
		return nil, fmt.Errorf("%s gives a number beyond the range of JSON numbers", op)
	}
	return r, nil
}

func joinText(a, b string) (any, error) {
	if len(a)+len(b) > maxString {
		return nil, errors.New("a string would pass 4 MiB")
	}
	return a + b, nil
}

// text is v as text: a string as it is, null as nothing, anything else
// as JSON.
func text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	}
	out, err := appendJSON(nil, v, maxString)
	if err != nil {
		return ""
	}
	return string(out)
}
