package jsoncheck

import (
	"encoding/json"
	"testing"
)

func TestCleanString(t *testing.T) {
	for raw, want := range map[string]bool{
		`"plain"`:               true,
		`"\ud83d\ude00"`:        true,  // a pair: one character
		`"\uD83D\uDE00 and on"`: true,  // upper-case hex
		`"\\ud800"`:             true,  // an escaped backslash, then text
		`"\u00e9\n\""`:          true,  // other escapes
		`"\ud800"`:              false, // a lone high surrogate
		`"\ud800x"`:             false,
		`"\ud800\n"`:            false, // followed by another escape
		`"\ud800\u0041"`:        false, // followed by a plain character escape
		`"\ud800\ud800"`:        false, // two highs
		`"\udc00"`:              false, // a lone low surrogate
		`"\u0000"`:              false, // NUL
		`"\u12"`:                false, // cut short
	} {
		var s string
		_ = json.Unmarshal([]byte(raw), &s)
		if got := cleanString([]byte(raw), s); got != want {
			t.Errorf("cleanString(%s) = %v, want %v", raw, got, want)
		}
	}
}
