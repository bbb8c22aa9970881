package engine

import "errors"

// Event is one block executed, as a Trace sees it.
type Event struct {
	Block int    // its index in flow.blocks
	Type  string // its type
	Depth int
	// Turn is, for a LOOP, the turn that begins (from 1); 0 when the loop
	// runs no turn at all. Other blocks: 0.
	Turn  int
	Name  string // the variable the block set, "" when it set none
	Value any    // that variable's value, records decoded
	// Secret says Value is a vault value: never to be shown.
	Secret bool
	// Derived says Value was computed from a vault value (its LENGTH, a
	// comparison with it, text made with it): not to be shown either.
	Derived bool
	// Held says whether the block's conditions held (true for blocks
	// without conditions): a TEMPLATE, CONDITION, UPDATE, CREATE, RETURN or
	// EMAIL whose conditions did not hold did nothing.
	Held bool
	// Outcome is where the run or its loop's turn went from here: RETURN,
	// FAIL or FAULT when the run ended at this block, BREAK or CONTINUE
	// when the block left its turn; "" otherwise.
	Outcome string
	Message string // FAIL's answer message, or the fault's reason
	// Call is an HTTP block's request, and Masks the text it sent made
	// from a vault value, to be masked from here on like vault values.
	Call  *CallTrace
	Masks []string
	// Read is, for a FILTER, the items its source held (its Value holds
	// those kept); -1 for other blocks.
	Read int
}

// Trace is told of each block a run executes, in order (RunTraced).
type Trace func(Event)

// tell gives the trace, when there is one, the event of step s, which
// ended with sig and err; turn is a LOOP's turn beginning. Small enough to
// be inlined: an untraced run pays one comparison a block.
func (r *runner) tell(s *step, sig signal, err error, turn int) {
	if r.trace != nil {
		r.event(s, sig, err, turn)
	}
}

// event makes and gives the trace its event. A run's end is told once, by
// the innermost block that ended it.
func (r *runner) event(s *step, sig signal, err error, turn int) {
	if r.told {
		return
	}
	ev := Event{Block: s.block, Type: s.typ, Depth: s.depth, Turn: turn, Held: r.held, Call: r.callTrace, Masks: r.masks, Read: -1}
	if s.kind == kFilter {
		ev.Read = r.read
	}
	r.callTrace, r.masks = nil, nil
	var fault *Fault
	switch {
	case errors.As(err, &fault):
		ev.Outcome, ev.Message, ev.Held = "FAULT", fault.Reason, true
		if fault.Block != s.block {
			return // told by the block that faulted, or by no block
		}
	case err != nil:
		return // the platform's error: no block to blame
	case sig == sigBreak:
		ev.Outcome = "BREAK"
	case sig == sigContinue:
		ev.Outcome = "CONTINUE"
	case sig == sigEnd:
		ev.Outcome = r.result.Ended
		if ev.Outcome == "FAIL" {
			ev.Message = "Error: " + s.fail.Message
		}
	}
	switch ev.Outcome {
	case "":
		// An ASSIGNMENT whose conditions fail sets null; the others set
		// nothing then.
		if s.out >= 0 && (ev.Held || s.kind == kAssignment) {
			ev.Name, ev.Value = r.names[s.out], r.get(s.out)
			ev.Secret = s.kind == kVault
			ev.Derived = !ev.Secret && r.derived[s.out]
		}
	case "RETURN", "FAIL", "FAULT":
		r.told = true
	}
	r.trace(ev)
}
