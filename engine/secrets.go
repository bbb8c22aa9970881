package engine

import (
	"encoding/base64"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// Secrets are the vault values a run read, and the texts it built from
// them and sent out, each in every spelling it takes on its way out
// (docs/security.md): as is, percent-encoded (a query's or a path's,
// either hex case, "+" or "%20" for a space), JSON-escaped, and base64
// (standard and URL alphabets, with or without padding, and the part of
// its encoding that any base64 text holding it at any offset shares).
// Mask replaces each with Mask. The zero value masks nothing.
type Secrets struct {
	values []string
	forms  []string          // every spelling, longest first
	rep    *strings.Replacer // of forms; nil until Mask needs it again
}

// minCore is the shortest part of a base64 encoding masked on its own: a
// shorter one would mask unrelated text.
const minCore = 8

// maxSpelled is the longest text whose spellings are masked too: a vault
// value is at most 64 KiB, but a body built from one and sent upstream
// may be 1 MiB, and is masked as it was sent.
const maxSpelled = 64 << 10

// Add adds v and its spellings.
func (s *Secrets) Add(v string) {
	if v == "" || slices.Contains(s.values, v) {
		return
	}
	s.values = append(s.values, v)
	forms := []string{v}
	if len(v) <= maxSpelled {
		forms = spellings(v)
	}
	for _, f := range forms {
		if f != "" && !slices.Contains(s.forms, f) {
			s.forms = append(s.forms, f)
		}
	}
	slices.SortStableFunc(s.forms, func(a, b string) int { return len(b) - len(a) })
	s.rep = nil
}

// Values are the values added, as they were.
func (s *Secrets) Values() []string {
	if s == nil {
		return nil
	}
	return s.values
}

// Mask is text with every spelling of every secret replaced by Mask.
func (s *Secrets) Mask(text string) string {
	if s == nil || len(s.forms) == 0 || text == "" {
		return text
	}
	if s.rep == nil {
		pairs := make([]string, 0, 2*len(s.forms))
		for _, f := range s.forms {
			pairs = append(pairs, f, Mask)
		}
		s.rep = strings.NewReplacer(pairs...)
	}
	return s.rep.Replace(text)
}

// Holds says whether text holds a secret in any spelling, or does once
// percent-decoded.
func (s *Secrets) Holds(text string) bool {
	if s == nil {
		return false
	}
	if s.Mask(text) != text {
		return true
	}
	decoded, err := url.QueryUnescape(text)
	return err == nil && decoded != text && s.Mask(decoded) != decoded
}

// MaskURL is an HTTP call's URL as a trace shows it: each path segment,
// query value or fragment that holds a secret replaced whole.
func (s *Secrets) MaskURL(raw string) string {
	if s == nil || len(s.forms) == 0 {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return s.Mask(raw)
	}
	segments := strings.Split(u.EscapedPath(), "/")
	for i, seg := range segments {
		if s.Holds(seg) {
			segments[i] = Mask
		}
	}
	out := u.Scheme + "://" + s.Mask(u.Host) + strings.Join(segments, "/")
	if u.RawQuery != "" || u.ForceQuery {
		pairs := strings.Split(u.RawQuery, "&")
		for i, p := range pairs {
			k, v, _ := strings.Cut(p, "=")
			switch {
			case s.Holds(k):
				pairs[i] = Mask
			case s.Holds(v):
				pairs[i] = k + "=" + Mask
			}
		}
		out += "?" + strings.Join(pairs, "&")
	}
	if f := u.EscapedFragment(); f != "" {
		if s.Holds(f) {
			f = Mask
		}
		out += "#" + f
	}
	return out
}

// spellings are v's forms on its way out.
func spellings(v string) []string {
	out := []string{v}
	// Percent-encoded: a query's (space as "+"), a path's, and every byte
	// but the unreserved ones (space as "%20"); each in either hex case.
	component := strings.ReplaceAll(url.QueryEscape(v), "+", "%20")
	for _, e := range []string{url.QueryEscape(v), url.PathEscape(v), component} {
		out = append(out, e, lowerHex(e))
	}
	// JSON-escaped, inside a string: as this engine and most encoders
	// write it, with <, > and & escaped, with "/" escaped, and ASCII only.
	plain, _ := appendJSON(nil, v, len(v)*6+2)
	html, _ := json.Marshal(v)
	for _, inner := range []string{string(plain[1 : len(plain)-1]), string(html[1 : len(html)-1])} {
		slash := strings.ReplaceAll(inner, "/", `\/`)
		out = append(out, inner, slash, asciiJSON(inner), asciiJSON(slash))
	}
	// base64, whole and as the part any encoding of a text holding v
	// shares wherever v starts in it.
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		out = append(out, enc.EncodeToString([]byte(v)))
	}
	for skip := range 3 {
		if skip >= len(v) {
			break
		}
		rest := v[skip:]
		whole := rest[:len(rest)/3*3]
		if core := base64.RawStdEncoding.EncodeToString([]byte(whole)); len(core) >= minCore {
			out = append(out, core, base64.RawURLEncoding.EncodeToString([]byte(whole)))
		}
	}
	return out
}

// lowerHex is percent-encoded text with its hex digits in lower case.
func lowerHex(e string) string {
	b := []byte(e)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			for j := i + 1; j <= i+2; j++ {
				if b[j] >= 'A' && b[j] <= 'F' {
					b[j] += 'a' - 'A'
				}
			}
			i += 2
		}
	}
	return string(b)
}

// asciiJSON is JSON string text with every character past ASCII written
// as \u escapes (surrogate pairs beyond the basic plane).
func asciiJSON(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		case r > 0xFFFF:
			r -= 0x10000
			writeU(&b, 0xD800+(r>>10))
			writeU(&b, 0xDC00+(r&0x3FF))
		default:
			writeU(&b, r)
		}
	}
	return b.String()
}

func writeU(b *strings.Builder, r rune) {
	b.WriteString(`\u`)
	for shift := 12; shift >= 0; shift -= 4 {
		b.WriteByte(hexDigits[(r>>shift)&0xf])
	}
}
