package flow

import (
	"encoding/json"
	"os"
	"testing"
)

// bigTemplate is a template of n blocks, cycling through the fixture's 16
// types, with placeholders in every text field.
func bigTemplate(b *testing.B, n int) ([]byte, Template) {
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
	return doc, tmpl
}

// BenchmarkApply5000 substitutes a 5,000-block template whose stored size
// is known, as the apply endpoint does; compare with
// BenchmarkJSONRoundTrip5000, a plain decode and encode of the same document.
func BenchmarkApply5000(b *testing.B) {
	doc, tmpl := bigTemplate(b, 5000)
	// A value as long as its placeholder: the 5,000-block document is near
	// the 1 MiB a result may have, and must stay under it.
	values := map[string]string{"v": "col"}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, p := ApplySized(tmpl, "shop", values, len(doc)); len(p) > 0 {
			b.Fatal(p)
		}
	}
}

// BenchmarkJSONRoundTrip5000 decodes and encodes the 5,000-block document
// with encoding/json into plain values: the yardstick for Apply.
func BenchmarkJSONRoundTrip5000(b *testing.B) {
	doc, _ := bigTemplate(b, 5000)
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

// BenchmarkDecodeApplyEncode5000 is the whole apply request's work on the
// document: the stored document read (plain typed decoding: it was
// validated when saved), substitution, encode.
func BenchmarkDecodeApplyEncode5000(b *testing.B) {
	doc, _ := bigTemplate(b, 5000)
	values := map[string]string{"v": "col"}
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		var tmpl Template
		if err := json.Unmarshal(doc, &tmpl); err != nil {
			b.Fatal(err)
		}
		r, _ := ApplySized(tmpl, "shop", values, len(doc))
		if _, err := json.Marshal(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStrictDecode5000 is the strict decoder, which checks documents
// from clients once, when they are saved.
func BenchmarkStrictDecode5000(b *testing.B) {
	doc, _ := bigTemplate(b, 5000)
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, p := DecodeTemplate(doc, ""); len(p) > 0 {
			b.Fatal(p)
		}
	}
}
