package runs

import (
	"strings"
	"testing"

	"stencil/engine"
)

// TestTracePreview: a preview is at most 200 characters, cut with "…",
// and a vault value is masked before the cut, so that no part of it shows
// even where the cut would fall inside it.
func TestTracePreview(t *testing.T) {
	tr := &tracer{}
	tr.hide("sk-live-secret-value")
	if got, full := tr.preview(map[string]any{"a": 1.0}); got != `{"a":1}` || full != "" {
		t.Errorf("short value: %s (whole: %q)", got, full)
	}
	// A cut preview comes with the whole value, for the row to open.
	long := strings.Repeat("é", 300)
	got, full := tr.preview(long)
	if n := len([]rune(got)); n != previewMax || !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, `"éé`) || full != `"`+long+`"` {
		t.Errorf("long value: %d characters: %q (whole: %d bytes)", n, got, len(full))
	}
	// The secret begins at character 190 of the JSON text: unmasked, the
	// cut at 200 would show its first 9 characters.
	straddling := strings.Repeat("x", 189) + "sk-live-secret-value" + strings.Repeat("y", 50)
	got, full = tr.preview(straddling)
	if strings.Contains(got, "sk-live") || !strings.Contains(got, "••••••") || len([]rune(got)) != previewMax || strings.Contains(full, "sk-live") {
		t.Errorf("a secret at the cut: %q (whole %q)", got, full)
	}
}

// TestTraceCut: a trace keeps its first 2,000 rows and says it was cut,
// even when the run's ending comes after them.
func TestTraceCut(t *testing.T) {
	tr := &tracer{rows: []TraceRow{}}
	for i := range traceMaxRows + 10 {
		tr.event(engine.Event{Block: i, Type: "ASSIGNMENT", Held: true})
	}
	tr.event(engine.Event{Block: traceMaxRows + 10, Type: "RETURN", Held: true, Outcome: "RETURN"})
	if len(tr.rows) != traceMaxRows || !tr.cut || tr.rows[len(tr.rows)-1].Block != traceMaxRows-1 {
		t.Fatalf("%d rows, cut %v", len(tr.rows), tr.cut)
	}
	short := &tracer{rows: []TraceRow{}}
	short.event(engine.Event{Block: 0, Type: "RETURN", Held: true, Outcome: "RETURN"})
	if len(short.rows) != 1 || short.cut {
		t.Fatalf("a short trace: %d rows, cut %v", len(short.rows), short.cut)
	}
}
