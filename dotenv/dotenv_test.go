package dotenv

import (
	"errors"
	"maps"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hashicorp/go-envparse"
)

// TestParseEnvAsEnvparse holds Parse to the answers of the reader whose
// grammar it follows, github.com/hashicorp/go-envparse, on lines that one
// reads (under 64 KiB): written cases, then 20,000 random files of the
// characters that matter. Both read a file, or both refuse it at the same
// line. One difference is meant: before a comment that one cuts the last
// byte of a non-ASCII character (leaving text that is not UTF-8); Parse
// keeps the character.
func TestParseEnvAsEnvparse(t *testing.T) {
	files := []string{
		"A=1", "A=1\nB=2\r\n", "export A=1", "export =1", "exportA=1", "export  A=1", "A", "=1", "1A=1", "a.b/c_D=x",
		"A-B=1", "A=1 # comment", "A=1# comment", "A='x # y' # z", `A="x\ny"`, `A="\u00e9\ud83d\ude00"`, `A="\ud83d"`,
		`A="\ud83dx"`, `A="\u00g0"`, `A="\q"`, `A="x`, `A='x`, `A="x\`, "A=x\ty", "A=\"x\ty\"", "A='a'b\"c\"", "# A=1\n\n  B = 2  ",
		"A=1\nA=2", "A=é", "A=\"é\"", "A=\"\\é\"", "A=$HOME", "A=\"$HOME\"", "A= 'x' ", "A=a b  c", "  ", "\n\n\nA", "A=\x00",
		"\u00a0A=1\u00a0", "A=\"\\/\\b\\f\\r\\t\"",
	}
	alphabet := []string{"A", "b", "_", "1", ".", "/", "=", "#", " ", "\t", "'", `"`, `\`, "u", "0", "d8", "3d", "n", "é", "\r", "\n", "export ", "\x01"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var b strings.Builder
		for range 1 + r.IntN(24) {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		files = append(files, b.String())
	}
	for _, f := range files {
		want, wantErr := envparse.Parse(strings.NewReader(f))
		got, gotErr := Parse(f)
		if wantErr != nil || gotErr != nil {
			var pe *envparse.ParseError
			var le *LineError
			if !errors.As(wantErr, &pe) || !errors.As(gotErr, &le) || pe.Line != le.Line {
				t.Errorf("%q: envparse says %v, Parse %v", f, wantErr, gotErr)
			}
			continue
		}
		if !maps.Equal(want, got) && !cutCharacter(want) {
			t.Errorf("%q: envparse reads %q, Parse %q", f, want, got)
		}
	}
}

// cutCharacter says whether envparse's reading holds text that is not
// UTF-8: the difference TestParseEnvAsEnvparse allows.
func cutCharacter(env map[string]string) bool {
	for _, v := range env {
		if !utf8.ValidString(v) {
			return true
		}
	}
	return false
}

// TestParseEnvLongLines: lines past 64 KiB read, and a line that cannot
// be read is named by its number, in the service's words.
func TestParseEnvLongLines(t *testing.T) {
	long := strings.Repeat("\\n\\u0001é", 30000) // 270,000 bytes of escapes
	env, err := Parse("A=1\nBIG=\"" + long + "\"\nC='" + strings.Repeat("x", 70000) + "'\n")
	if err != nil || len(env) != 3 || env["BIG"] != strings.Repeat("\n\x01é", 30000) || len(env["C"]) != 70000 {
		t.Fatalf("long lines: %d keys, %v", len(env), err)
	}
	_, err = Parse("A=1\n\n# note\nBIG=" + strings.Repeat("x", 70000) + "\nno equals sign\n")
	if err == nil || err.Error() != "line 5 is not KEY=value: it has no =" {
		t.Fatalf("a bad line after a long one: %v", err)
	}
}
