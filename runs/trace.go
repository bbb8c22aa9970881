package runs

import (
	"fmt"
	"strings"
	"time"

	"stencil/engine"
)

// The trace of a run (docs/routes.md).
const (
	previewMax   = 200      // characters of a value's preview
	valueMax     = 64 << 10 // bytes of a value's whole text, when its preview is cut
	turnsShown   = 3        // turns of a LOOP shown block by block; the rest are counted
	traceMaxRows = 2000     // rows of a trace; a longer one is cut, and says so
)

// TraceRow is one block executed, or the turns of a LOOP left out.
type TraceRow struct {
	Block    int    `json:"block"`
	Type     string `json:"type"`
	Depth    int    `json:"depth"`
	Turn     int    `json:"turn,omitempty"`
	Variable string `json:"variable,omitempty"`
	Preview  string `json:"preview,omitempty"`
	Held     bool   `json:"held"`
	Outcome  string `json:"outcome,omitempty"`
	Message  string `json:"message,omitempty"`
	// Value is the whole value when Preview was cut (up to 64 KiB).
	Value string `json:"value,omitempty"`
	// Count is the items of a list the block set ("3 rows"), and Of, for
	// a FILTER, the items its source held ("5 rows → 3 kept").
	Count *int `json:"count,omitempty"`
	Of    *int `json:"of,omitempty"`
	// TookMS is the time from the row before (the run's start for the
	// first) to this block's end.
	TookMS float64 `json:"took_ms"`
	// A LOOP's turns after the third, summarized: how many, and how many
	// block executions they held.
	MoreTurns  int `json:"more_turns,omitempty"`
	MoreBlocks int `json:"more_blocks,omitempty"`
	// Call is an HTTP block's request: what it sent and what came back.
	Call *CallRow `json:"call,omitempty"`
}

// CallRow is an HTTP block's request in a trace: its URL with vault
// values masked, the answer's status (0: none came), the time it took
// and the bytes of the answer's body.
type CallRow struct {
	Method string  `json:"method"`
	URL    string  `json:"url"`
	Status int     `json:"status"`
	TookMS float64 `json:"took_ms"`
	Bytes  int     `json:"bytes"`
}

// N is the row's block as people count it, from 1.
func (r TraceRow) N() int { return r.Block + 1 }

// tracer turns a run's events into trace rows: values previewed with vault
// values masked, a LOOP's turns after the third counted rather than listed
// (the block that ended the run is always listed).
type tracer struct {
	rows    []TraceRow
	secrets engine.Secrets // vault values the run read, in every spelling
	loops   []openLoop
	cut     bool
	last    time.Time // when the event before ended: a row's time runs from it
}

// openLoop is a LOOP whose turns are under way.
type openLoop struct {
	block, depth, turn int
	moreTurns          int
	moreBlocks         int
}

// turns tells whether ev is the beginning of one of l's turns.
func (l openLoop) turns(ev engine.Event) bool {
	return ev.Type == "LOOP" && ev.Turn > 0 && ev.Block == l.block && ev.Depth == l.depth
}

func (t *tracer) event(ev engine.Event) {
	// Loops this event is not inside of are over.
	for len(t.loops) > 0 {
		top := t.loops[len(t.loops)-1]
		if ev.Depth > top.depth || top.turns(ev) {
			break
		}
		t.close()
	}
	if s, ok := ev.Value.(string); ok && ev.Secret {
		t.hide(s)
	}
	for _, s := range ev.Masks {
		t.hide(s)
	}
	if ev.Type == "LOOP" && ev.Turn > 0 {
		if n := len(t.loops); n > 0 && t.loops[n-1].turns(ev) {
			t.loops[n-1].turn = ev.Turn
		} else {
			t.loops = append(t.loops, openLoop{block: ev.Block, depth: ev.Depth, turn: ev.Turn})
		}
	}
	// The outermost loop in a turn past the third hides this event.
	hidden := -1
	for i, l := range t.loops {
		if l.turn > turnsShown {
			hidden = i
			break
		}
	}
	ending := ev.Outcome == "RETURN" || ev.Outcome == "FAIL" || ev.Outcome == "FAULT"
	if hidden >= 0 && !ending {
		l := &t.loops[hidden]
		if l.turns(ev) {
			l.moreTurns++
		} else {
			l.moreBlocks++
		}
		return
	}
	if ending {
		t.flush()
	}
	// A FAIL's message reads as the route's author wrote it, without the
	// answer's "Error: ".
	now := time.Now()
	row := TraceRow{Block: ev.Block, Type: ev.Type, Depth: ev.Depth, Turn: ev.Turn, Held: ev.Held, Outcome: ev.Outcome,
		Message: strings.TrimPrefix(t.maskText(ev.Message), "Error: "), TookMS: float64(now.Sub(t.last).Microseconds()) / 1000}
	t.last = now
	if c := ev.Call; c != nil {
		row.Call = &CallRow{Method: c.Method, URL: t.secrets.MaskURL(c.URL), Status: c.Status, TookMS: float64(c.Took.Microseconds()) / 1000, Bytes: c.Bytes}
	}
	if ev.Name != "" {
		row.Variable = ev.Name
		switch {
		case ev.Secret:
			row.Preview = engine.Mask
		case ev.Derived:
			row.Preview = engine.Mask + " (from a vault value)"
		default:
			row.Preview, row.Value = t.preview(ev.Value)
			if list, ok := ev.Value.([]any); ok {
				n := len(list)
				row.Count = &n
			}
		}
		if ev.Read >= 0 && row.Count != nil {
			of := ev.Read
			row.Of = &of
		}
	}
	t.add(row)
}

// hide masks s from here on, as a vault value: longest first, so that a
// text holding a secret is masked whole.
func (t *tracer) hide(s string) {
	t.secrets.Add(s)
}

// finish closes the open loops once the run has ended, and adds a row for
// a fault of the route itself (not of a block).
func (t *tracer) finish(res engine.Result) {
	t.flush()
	if res.Ended == "FAULT" && res.Fault != nil && res.Fault.Block < 0 {
		t.rows = append(t.rows, TraceRow{Block: -1, Type: "ROUTE", Held: true, Outcome: "FAULT", Message: t.maskText(res.Fault.Reason)})
	}
}

// restart forgets the rows of an attempt that failed to serialize: the
// trace shows the attempt that ended the run. The vault values read stay
// masked.
func (t *tracer) restart() {
	t.rows, t.loops, t.cut = t.rows[:0], nil, false
}

// close ends the innermost open loop, with a row for the turns it left out.
func (t *tracer) close() {
	l := t.loops[len(t.loops)-1]
	t.loops = t.loops[:len(t.loops)-1]
	if l.moreTurns > 0 {
		t.add(TraceRow{Block: l.block, Type: "LOOP", Depth: l.depth, Held: true, MoreTurns: l.moreTurns, MoreBlocks: l.moreBlocks})
	}
}

// flush closes every open loop.
func (t *tracer) flush() {
	for len(t.loops) > 0 {
		t.close()
	}
}

func (t *tracer) add(row TraceRow) {
	if len(t.rows) >= traceMaxRows {
		t.cut = true
		return
	}
	t.rows = append(t.rows, row)
}

// preview is v as JSON, vault values masked, cut to previewMax characters;
// when it was cut, full is the whole value (cut at valueMax bytes) for a
// reader who opens the row.
func (t *tracer) preview(v any) (preview, full string) {
	text, _ := engine.AppendMasked(nil, v, valueMax, &t.secrets)
	runes := []rune(string(text))
	if len(runes) <= previewMax {
		return string(runes), ""
	}
	return string(runes[:previewMax-1]) + "…", string(text)
}

// maskText is text with the vault values the run read masked.
func (t *tracer) maskText(text string) string { return t.secrets.Mask(text) }

// mask is a run's answer with the vault values it read masked, and the
// values of derived keys (computed from a vault value) too: decoded and
// written again when it holds any.
func (t *tracer) mask(body []byte, derived []string) []byte {
	if len(t.secrets.Values()) == 0 && len(derived) == 0 {
		return body
	}
	v, err := engine.NewDecoder().Object(body)
	if err != nil {
		return []byte(`"` + engine.Mask + `"`)
	}
	for _, key := range derived {
		v[key] = engine.Mask
	}
	out, err := engine.AppendMasked(nil, v, 2*len(body)+1024, &t.secrets)
	if err != nil {
		return []byte(`"` + engine.Mask + `"`)
	}
	return out
}

// Text is the call as one line: "POST https://api.example.com/charge →
// 201 · 12.3 ms · 45 B", or "→ no answer".
func (c CallRow) Text() string {
	answer := "no answer"
	if c.Status > 0 {
		answer = fmt.Sprintf("%d · %d B", c.Status, c.Bytes)
	}
	return fmt.Sprintf("%s %s → %s · %.1f ms", c.Method, c.URL, answer, c.TookMS)
}

// String is a row as one line, for logs and tests.
func (r TraceRow) String() string {
	line := fmt.Sprintf("%d %s %d", r.Block, r.Type, r.Depth)
	if r.Turn > 0 {
		line += fmt.Sprintf(" turn %d", r.Turn)
	}
	if r.Call != nil {
		line += " " + r.Call.Text()
	}
	if r.Variable != "" {
		line += " " + r.Variable + "=" + r.Preview
	}
	if r.MoreTurns > 0 {
		line += fmt.Sprintf(" +%d turns (%d blocks)", r.MoreTurns, r.MoreBlocks)
	}
	if !r.Held {
		line += " not held"
	}
	if r.Outcome != "" {
		line += " " + strings.TrimSpace(r.Outcome+" "+r.Message)
	}
	return line
}
