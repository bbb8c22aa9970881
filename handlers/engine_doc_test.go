package handlers

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestEngineDocumentRequests runs the requests of docs/engine.md against
// project shop (its books as runApp makes them), as an author: each
// answer has the status and holds every fragment the document shows.
func TestEngineDocumentRequests(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/engine.md")
	if err != nil {
		t.Fatal(err)
	}
	examples := regexp.MustCompile("(?s)```request\n(\\S+) (\\S+)\n(.*?)\n```\n```response\n(\\d+) (.*?)\n```").FindAllStringSubmatch(string(doc), -1)
	if len(examples) == 0 {
		t.Fatal("no request in the engine document")
	}
	for _, ex := range examples {
		t.Run(ex[1]+" "+ex[2], func(t *testing.T) {
			ta, h := runApp(t)
			status, body := ta.call(t, ex[1], ex[2], ex[3], h)
			if want := ex[4]; status != atoi(t, want) {
				t.Fatalf("status %d, the document says %s: %s", status, want, body)
			}
			for _, part := range regexp.MustCompile(`"[a-z_]+":(\{.*?\}\}\}|"[^"]*"|\S+?)( |$)`).FindAllStringSubmatch(ex[5], -1) {
				if frag := strings.TrimSpace(part[0]); !strings.Contains(body, frag) {
					t.Errorf("the answer lacks %s: %s", frag, body)
				}
			}
		})
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n := 0
	for _, r := range s {
		n = n*10 + int(r-'0')
	}
	return n
}
