package flow

import "testing"

// Every block type and every operator has its words, so the editor and the
// outline never fall back to an enum's spelling for them.
func TestEveryBlockTypeAndOperatorHasWords(t *testing.T) {
	for _, b := range BlockTypes {
		if info, ok := Blocks[b]; !ok || info.Glyph == "" || info.About == "" {
			t.Errorf("block type %s has no glyph or description", b)
		}
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
