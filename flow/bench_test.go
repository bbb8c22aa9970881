package flow

import (
	"encoding/json"
	"os"
	"testing"
)

// largeBlocks is how many blocks the large template has: as many of the
// fixture's, in turn, as keep its document under the 1 MiB a route made
// from it may have (ApplySized stops at that size).
const largeBlocks = 4800

// bigTemplate is a template of largeBlocks blocks, cycling through the
// fixture's types, with placeholders in every text field.
func bigTemplate(b *testing.B) ([]byte, Template) {
	n := largeBlocks
	raw, err := os.ReadFile("testdata/all_blocks.json")
	if err != nil {
		b.Fatal(err)
	}
	tmpl, p := DecodeTemplate(raw, "")
	if len(p) > 0 {
		b.Fatal(p)
	}
	blocks := make([]Block, 0, n)
	for len(blocks) < n {
		for _, blk := range tmpl.Flow.Blocks {
			if len(blocks) < n {
				blk.Depth = 0
				blocks = append(blocks, blk.clone())
			}
		}
	}
	tmpl.Flow.Blocks = blocks
	doc, err := json.Marshal(tmpl)
	if err != nil {
		b.Fatal(err)
	}
	if len(doc) > MaxRouteBytes {
		b.Fatalf("the large template is %d bytes, over the %d a route may have: fewer blocks", len(doc), MaxRouteBytes)
	}
	return doc, tmpl
}

// BenchmarkApplyLarge substitutes the large template, whose stored size
// is known, as the apply endpoint does; compare with
// BenchmarkJSONRoundTripLarge, a plain decode and encode of the same
// document.
func BenchmarkApplyLarge(b *testing.B) {
	doc, tmpl := bigTemplate(b)
	// A value as long as its placeholder: the document is near the 1 MiB
	// a result may have, and must stay under it.
	values := map[string]string{"v": "col"}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, p := ApplySized(tmpl, "shop", values, len(doc)); len(p) > 0 {
			b.Fatal(p)
		}
	}
}

// BenchmarkJSONRoundTripLarge decodes and encodes the large template's
// document with encoding/json into plain values: the yardstick for Apply.
func BenchmarkJSONRoundTripLarge(b *testing.B) {
	doc, _ := bigTemplate(b)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		var v any
		if err := json.Unmarshal(doc, &v); err != nil {
			b.Fatal(err)
		}
		if _, err := json.Marshal(v); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeApplyEncodeLarge is the whole apply request's work on the
// document: the stored document read (plain typed decoding: it was
// validated when saved), substitution, encode.
func BenchmarkDecodeApplyEncodeLarge(b *testing.B) {
	doc, _ := bigTemplate(b)
	values := map[string]string{"v": "col"}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		var tmpl Template
		if err := json.Unmarshal(doc, &tmpl); err != nil {
			b.Fatal(err)
		}
		r, p := ApplySized(tmpl, "shop", values, len(doc))
		if len(p) > 0 {
			b.Fatal(p)
		}
		if _, err := json.Marshal(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStrictDecodeLarge is the strict decoder, which checks documents
// from clients once, when they are saved.
func BenchmarkStrictDecodeLarge(b *testing.B) {
	doc, _ := bigTemplate(b)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, p := DecodeTemplate(doc, ""); len(p) > 0 {
			b.Fatal(p)
		}
	}
}
