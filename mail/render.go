// Package mail renders and delivers the outbox's messages (docs/mail.md): a
// project's email templates filled from an EMAIL block's pairs, sent over
// SMTP by a worker in every instance. It never decides what is sent: routes
// and the handlers queue messages in the outbox (package store), and the
// worker only takes what is due.
package mail

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/mail"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// placeholder is {key} in a template: a pair's id.
var placeholder = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_.-]{0,99})\}`)

// Placeholders returns the keys the texts name, each once, in order.
func Placeholders(texts ...string) []string {
	var keys []string
	for _, t := range texts {
		for _, m := range placeholder.FindAllStringSubmatch(t, -1) {
			if !slices.Contains(keys, m[1]) {
				keys = append(keys, m[1])
			}
		}
	}
	return keys
}

// Message is a rendered message.
type Message struct {
	Subject, Text, HTML string
}

// Render fills the subject and bodies with pairs: a string as it is, a
// number or boolean as JSON writes it, null as nothing, an object or array
// as its JSON; HTML-escaped in the HTML body. A placeholder without a pair
// stays as it is.
func Render(subject, text, htmlBody string, pairs map[string]any) Message {
	fill := func(s string, escape bool) string {
		return placeholder.ReplaceAllStringFunc(s, func(m string) string {
			v, ok := pairs[m[1:len(m)-1]]
			if !ok {
				return m
			}
			out := valueText(v)
			if escape {
				out = html.EscapeString(out)
			}
			return out
		})
	}
	return Message{Subject: fill(subject, false), Text: fill(text, false), HTML: fill(htmlBody, true)}
}

func valueText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// ErrHeaderBreak refuses a header value holding a line break: it would
// start headers of its own.
var ErrHeaderBreak = errors.New("holds a line break, which would start a header of its own")

// CheckHeader refuses a header value with CR or LF.
func CheckHeader(v string) error {
	if strings.ContainsAny(v, "\r\n") {
		return ErrHeaderBreak
	}
	return nil
}

// CheckAddress refuses what is not one plain address (user@host, no name,
// no line break).
func CheckAddress(s string) error {
	if err := CheckHeader(s); err != nil {
		return err
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s || !strings.Contains(s, "@") {
		return errors.New("is not an email address")
	}
	return nil
}

// longWord is the longest word a header keeps as it is: the mail library
// folds header lines only between words, and a line may hold at most 998
// characters (RFC 5322), so a subject with a longer word is sent encoded.
const longWord = 60

// FoldableSubject returns subject as it may be written in a header: as it
// is when each of its words is short, else as RFC 2047 encoded-words of at
// most 60 characters each, separated by spaces, between which the header
// folds. A reader decodes them to the same text (white space between
// encoded-words is not part of the text).
func FoldableSubject(subject string) string {
	long := false
	for _, w := range strings.Fields(subject) {
		long = long || len(w) > longWord
	}
	if !long {
		return subject
	}
	var b strings.Builder
	for rest := subject; rest != ""; {
		// 33 bytes of text are 44 of base64: 56 with "=?UTF-8?B?" and "?=".
		n := min(len(rest), 33)
		for n < len(rest) && n > 0 && !utf8.RuneStart(rest[n]) {
			n--
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("=?UTF-8?B?" + base64.StdEncoding.EncodeToString([]byte(rest[:n])) + "?=")
		rest = rest[n:]
	}
	return b.String()
}
