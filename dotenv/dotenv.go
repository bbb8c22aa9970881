// Package dotenv reads and writes .env files, the form a vault is
// imported from and exported to (docs/vaults.md). It knows nothing of
// vaults or HTTP.
package dotenv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Parse reads a .env file as github.com/hashicorp/go-envparse reads one
// (docs/vaults.md): one KEY=value a line, blank lines and lines starting
// with # skipped, an optional "export ", # starting a comment outside
// quotes, single quotes taken literally, double quotes with JSON escapes,
// no $NAME expansion; a key given twice takes its last value. It is its
// own reader because that one scans lines of at most 64 KiB, and a vault
// value may be 65,536 bytes before any quoting: any line length is read
// here (TestParseEnvAsEnvparse holds the two to the same answers). A line
// it cannot read is an *LineError naming the line in its own words.
func Parse(text string) (map[string]string, error) {
	env := map[string]string{}
	n := 0
	for rest := text; rest != ""; {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		n++
		key, value, err := parseLine(strings.TrimSuffix(line, "\r"))
		if err != "" {
			return nil, &LineError{Line: n, Reason: err}
		}
		if key != "" {
			env[key] = value
		}
	}
	return env, nil
}

// LineError is a line of a .env file that cannot be read, and why.
type LineError struct {
	Line   int
	Reason string
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d %s", e.Line, e.Reason) }

// parseLine reads one line: its key and value, "" for a blank or
// comment line, or the reason it cannot be read.
func parseLine(line string) (key, value, problem string) {
	line = strings.TrimSpace(line)
	if line == "" || line[0] == '#' {
		return "", "", ""
	}
	key, value, ok := strings.Cut(line, "=")
	if !ok {
		return "", "", "is not KEY=value: it has no ="
	}
	key, value = strings.TrimSpace(key), strings.TrimSpace(value)
	if len(key) > len("export ") {
		key = strings.TrimPrefix(key, "export ")
	}
	if key == "" {
		return "", "", "has no key before its ="
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		letter := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '_'
		if i == 0 && !letter {
			return "", "", "has a key that does not start with a letter or _"
		}
		if i > 0 && !letter && !(c >= '0' && c <= '9') && c != '.' && c != '/' {
			return "", "", "has a key with a character other than letters, digits, _ . and /"
		}
	}
	value, problem = envValue(value)
	return key, value, problem
}

// envValue unquotes a value: unquoted text up to a # (trailing white space
// before it dropped), '…' as written, "…" with JSON escapes; parts may
// follow one another ("a"'b'c reads abc). Control characters are refused
// everywhere.
func envValue(v string) (string, string) {
	const (
		plain = iota
		double
		single
	)
	var out strings.Builder
	out.Grow(len(v))
	significant := 0 // the length of out up to its last character that is not white space
	mode := plain
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < 0x20 {
			return "", "has a control character in its value (write it as an escape in double quotes)"
		}
		switch {
		case c >= utf8.RuneSelf:
			out.WriteByte(c)
			significant = out.Len()
		case mode == single:
			if c == '\'' {
				mode = plain
				continue
			}
			out.WriteByte(c)
			significant = out.Len()
		case mode == double:
			switch c {
			case '"':
				mode = plain
				continue
			case '\\':
				r, width, problem := envEscape(v[i+1:])
				if problem != "" {
					return "", problem
				}
				out.WriteRune(r)
				i += width
			default:
				out.WriteByte(c)
			}
			significant = out.Len()
		default:
			switch c {
			case '"':
				mode = double
			case '\'':
				mode = single
			case '#':
				return out.String()[:significant], ""
			case ' ', '\t':
				out.WriteByte(c)
			default:
				out.WriteByte(c)
				significant = out.Len()
			}
		}
	}
	switch mode {
	case double:
		return "", "has a \" that is not closed"
	case single:
		return "", "has a ' that is not closed"
	}
	return out.String(), ""
}

// envEscape reads the escape after a backslash in double quotes: the rune
// and how many bytes it took.
func envEscape(s string) (rune, int, string) {
	if s == "" {
		return 0, 0, "ends inside an escape (\\)"
	}
	switch s[0] {
	case '"', '\\', '/':
		return rune(s[0]), 1, ""
	case 'b':
		return '\b', 1, ""
	case 'f':
		return '\f', 1, ""
	case 'r':
		return '\r', 1, ""
	case 'n':
		return '\n', 1, ""
	case 't':
		return '\t', 1, ""
	case 'u':
		r, ok := hex4(s[1:])
		if !ok {
			return 0, 0, "has a \\u escape without four hexadecimal digits"
		}
		if !utf16.IsSurrogate(r) {
			return r, 5, ""
		}
		if len(s) < 11 || s[5] != '\\' || s[6] != 'u' {
			return 0, 0, "has half of a \\u surrogate pair"
		}
		r2, ok := hex4(s[7:])
		if !ok {
			return 0, 0, "has a \\u escape without four hexadecimal digits"
		}
		return utf16.DecodeRune(r, r2), 11, ""
	}
	if s[0] >= utf8.RuneSelf {
		return 0, 0, "has an escape of a character that takes none (\\ before a non-ASCII character)"
	}
	return 0, 0, fmt.Sprintf("has an escape \\%c that JSON does not know", s[0])
}

// hex4 reads four hexadecimal digits at the start of s.
func hex4(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for i := range 4 {
		d := s[i]
		switch {
		case d >= '0' && d <= '9':
			d -= '0'
		case d >= 'a' && d <= 'f':
			d -= 'a' - 10
		case d >= 'A' && d <= 'F':
			d -= 'A' - 10
		default:
			return 0, false
		}
		r = r*16 + rune(d)
	}
	return r, true
}

// Format writes values as a .env file, sorted by key: a value without a
// single quote or a control character in single quotes (literal for every
// common parser, $ and # included), any other as a JSON string in double
// quotes.
func Format(values map[string]string) string {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		v := values[k]
		b.WriteString(k)
		b.WriteByte('=')
		if !strings.ContainsRune(v, '\'') && !strings.ContainsFunc(v, unicode.IsControl) {
			b.WriteString("'" + v + "'\n")
			continue
		}
		var quoted bytes.Buffer
		enc := json.NewEncoder(&quoted)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(v) // a string always encodes; Encode ends it with a line break
		b.Write(quoted.Bytes())
	}
	return b.String()
}
