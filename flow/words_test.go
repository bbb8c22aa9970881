package flow

import "testing"

// Every block type and every operator has its words, so the editor and the
// outline never fall back to an enum's spelling for them.
func TestEveryBlockTypeAndOperatorHasWords(t *testing.T) {
	glyphs := map[string]string{}
	for _, b := range BlockTypes {
		info, ok := Blocks[b]
		if !ok || info.Glyph == "" || info.About == "" {
			t.Errorf("block type %s has no glyph or description", b)
		}
		if other, taken := glyphs[info.Glyph]; taken {
			t.Errorf("block types %s and %s share the glyph %s", other, b, info.Glyph)
		}
		glyphs[info.Glyph] = b
	}
	for _, v := range append(append([]string{}, OperationTypes...), Nexts...) {
		if v == "NONE" {
			continue
		}
		if _, ok := Words[v]; !ok {
			t.Errorf("%s has no word", v)
		}
	}
}

// TestSummaryOfCalls: an HTTP block's line reads as its request, a
// RETURN's as its status and headers.
func TestSummaryOfCalls(t *testing.T) {
	call := Block{Type: "HTTP", LocalName: "res", CallMethod: "POST", URL: &Operand{RType: "STRING", Data: "https://api.example.com/charge"},
		Headers: []Pair{{ID: "Authorization", Data: Operand{RefVar: true, Data: "auth"}}}}
	if got := Summary(call); got != `POST https://api.example.com/charge → res · Headers: Authorization = auth` {
		t.Errorf("HTTP: %s", got)
	}
	call.URL = &Operand{RefVar: true, Data: "hook"}
	if got := Summary(call); got != `POST {hook} → res · Headers: Authorization = auth` {
		t.Errorf("HTTP to a variable: %s", got)
	}
	ret := Block{Type: "RETURN", Status: 201, Headers: []Pair{{ID: "Location", Data: Operand{RType: "STRING", Data: "/b/1"}}}}
	if got := Summary(ret); got != `Status: 201 · Headers: Location = "/b/1"` {
		t.Errorf("RETURN: %s", got)
	}
}
