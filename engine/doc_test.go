package engine

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestEngineDocument runs every example of docs/engine.md, a flow (one
// block a line) and the answer it gives, against the collection books.
func TestEngineDocument(t *testing.T) {
	doc, err := os.ReadFile("../docs/engine.md")
	if err != nil {
		t.Fatal(err)
	}
	examples := regexp.MustCompile("(?s)```flow\n(.*?)```\n```answer\n(.*?)\n```").FindAllStringSubmatch(string(doc), -1)
	if len(examples) < 15 {
		t.Fatalf("only %d examples in the engine document", len(examples))
	}
	for i, ex := range examples {
		blocks := strings.Split(strings.TrimSpace(ex[1]), "\n")
		t.Run(fmt.Sprintf("%d %s", i+1, blocks[0][:min(len(blocks[0]), 40)]), func(t *testing.T) {
			res, err := Run(context.Background(), compile(t, blocks...), nil, books(), DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprintf("%d %s", res.Status, res.Body); got != ex[2] {
				t.Fatalf("the document says\n%s\nthe engine answers\n%s", ex[2], got)
			}
		})
	}
}
