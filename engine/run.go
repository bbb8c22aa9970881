package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"stencil/flow"
	"stencil/schema"
)

// Limits bound one run (docs/engine.md).
type Limits struct {
	Steps   int           // block executions (a LOOP's every turn counts)
	Time    time.Duration // wall time
	Records int           // records one FETCH, UPDATE or SIMPLE_UPDATE reads
	Answer  int           // bytes of the answer
	// Memory bounds the bytes of values a run makes (strings, arrays,
	// objects, records read and decoded), counted as they are made, not
	// as they are let go: 0 is no bound.
	Memory int64
	// Shared, when set, is memory every run of the service draws its
	// Memory from: a run that finds it spent ends with ErrBusy.
	Shared *Budget
}

// DefaultLimits are the limits of docs/engine.md, and 64 MiB of memory.
var DefaultLimits = Limits{Steps: 100_000, Time: 5 * time.Second, Records: 10_000, Answer: 4 << 20, Memory: 64 << 20}

// ErrBusy ends a run the service has no room for now: the memory runs
// share is spent, or no database connection came in time. It is the
// platform's, not the route's: the caller answers 503 and may try again.
var ErrBusy = errors.New("the service is busy")

// ErrTooLarge is what an Env returns for a read larger than the run's
// Memory: the run faults at its memory limit.
var ErrTooLarge = errors.New("the read passes the run's memory limit")

// Budget is memory that runs share, in bytes.
type Budget struct {
	size  int64
	free  atomic.Int64
	step  int64        // Watch's step; 0 when nobody watches
	level atomic.Int64 // the steps held when the watcher was last told
	watch func()
}

// NewBudget is a budget of n bytes.
func NewBudget(n int64) *Budget {
	b := &Budget{size: n}
	b.free.Store(n)
	return b
}

// Watch has fn called whenever the whole steps that runs hold change in
// number (fn reads Held): what less than one step holds, the chunks of
// ordinary runs, is never told. Set it before any run uses the budget.
func (b *Budget) Watch(step int64, fn func()) {
	b.step, b.watch = step, fn
}

// Free is what is left of the budget now.
func (b *Budget) Free() int64 { return b.free.Load() }

// Held is what runs hold of the budget now.
func (b *Budget) Held() int64 { return b.size - b.free.Load() }

func (b *Budget) take(n int64) bool {
	if b.free.Add(-n) < 0 {
		b.free.Add(n)
		return false
	}
	b.moved()
	return true
}

func (b *Budget) give(n int64) {
	b.free.Add(n)
	b.moved()
}

func (b *Budget) moved() {
	if b.step == 0 {
		return
	}
	level := b.Held() / b.step
	if b.level.Swap(level) != level {
		b.watch()
	}
}

// memoryChunk is how much of a shared Budget a run takes at a time.
const memoryChunk = 256 << 10

// maxRecord is the largest record data a CREATE or UPDATE writes, as the
// collections API allows.
const maxRecord = 64 << 10

// Result is how a run ended.
type Result struct {
	Status int      // the answer's HTTP status
	Header []Header // a RETURN's headers
	Body   []byte   // the answer, JSON; nil for a 204 or 304
	Ended  string   // RETURN, FAIL, END (the flow ran out) or FAULT
	Fault  *Fault   // the route's fault, when Ended is FAULT
	Steps  int      // block executions
	Wrote  bool     // whether the run wrote to collections: commit on RETURN or END
	// Derived lists, in a traced run ended by RETURN, the answer's keys
	// whose values came from a vault value (read, or computed from one):
	// what a trace's reader is not shown.
	Derived []string
	// Read lists the vault values the run read, and the text it sent
	// upstream made from them: what is kept of the request (the run log's
	// query string and body) is masked where it holds one.
	Read *Secrets
}

// Commit says whether the run's writes are to be kept: it ended normally.
func (r Result) Commit() bool { return r.Ended == "RETURN" || r.Ended == "END" }

// Fault is a fault of the route itself: a block that cannot do what it
// says with what it has. Its text never holds a vault value or internals.
type Fault struct {
	Block  int
	Type   string
	Reason string
	// Status is the answer's status when it is not 500, and RetryAfter
	// the seconds to wait before trying again (0: none said).
	Status     int
	RetryAfter int
}

func (f *Fault) Error() string {
	if f.Block < 0 {
		return f.Reason
	}
	return fmt.Sprintf("flow.blocks[%d] (%s): %s", f.Block, f.Type, f.Reason)
}

// signal is how a stretch of blocks ended.
type signal uint8

const (
	sigNext signal = iota
	sigBreak
	sigContinue
	sigEnd
)

// runner is one run of a plan.
type runner struct {
	ctx      context.Context
	plan     *Plan
	env      Env
	limits   Limits
	vars     []any
	lazy     []bool // which vars hold arrays with records still JSON
	dec      *Decoder
	broken   error // a record that would not decode: the platform's error
	steps    int
	result   Result
	trace    Trace
	names    []string    // slot → variable name, for the trace
	held     bool        // whether the step's conditions held, for the trace
	told     bool        // whether the trace has been told where the run ended
	secrets  Secrets     // the vault values read: never in a fault's text
	derived  []bool      // traced runs: slot → its value came from a vault value
	late     atomic.Bool // the run's time is up
	stopped  error       // why work without an error of its own stopped
	mem      int64       // bytes of values made and held
	reserved int64       // bytes taken from limits.Shared
	// fresh is, by slot, the bytes charged for the variable's value that
	// nothing else may hold yet: when the variable is set again they are
	// given back. A block that may keep the value (an OBJECT, a FILTER of
	// it) makes its charge for good.
	fresh   []int64
	stepMem int64 // bytes charged by the step under way
	emails  int   // messages queued
	putSlot int   // the slot the step under way set, or -1
	// calls counts, by step, the requests an HTTP block sent (Call.Seq).
	calls []int
	// masks are text sent upstream made from a vault value, not yet told
	// to the trace; callTrace is the request of the step under way.
	masks     []string
	callTrace *CallTrace
	// read is, in a traced run, how many items the last FILTER read from
	// its source (its event's Read).
	read int
}

// Run runs plan with the request's variables (params, body fields, path
// parameters and auth, by name) against env. A fault of the route is a
// Result with Ended FAULT and status 500; an error is the platform's (the
// database failed): the caller answers "internal error" and rolls back.
func Run(ctx context.Context, plan *Plan, vars map[string]any, env Env, limits Limits) (Result, error) {
	return RunTraced(ctx, plan, vars, env, limits, nil)
}

// RunTraced is Run telling trace, when not nil, of each block it executes,
// in order, as it executes them.
func RunTraced(ctx context.Context, plan *Plan, vars map[string]any, env Env, limits Limits, trace Trace) (Result, error) {
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > limits.Time {
		// A runtime that bounds its runs (package runs) has set a
		// deadline within the limit already: a second timer would cost
		// every run and change nothing.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, limits.Time)
		defer cancel()
	}
	r := &runner{ctx: ctx, plan: plan, env: env, limits: limits, vars: make([]any, len(plan.slots)), lazy: make([]bool, len(plan.slots)), trace: trace}
	if limits.Memory > 0 {
		r.fresh = make([]int64, len(plan.slots))
	}
	// Work that visits many items reads this flag rather than the clock;
	// a quick plan has none, and its blocks read the context.
	if !plan.quick {
		stop := context.AfterFunc(ctx, func() { r.late.Store(true) })
		defer stop()
	}
	defer r.releaseDecoder()
	defer r.releaseMemory()
	if plan.Calls {
		r.calls = make([]int, len(plan.steps))
	}
	if trace != nil || plan.Calls && plan.HasVault {
		// What a vault value reaches is tracked for the trace, and for
		// masking what an HTTP block sends made from one.
		r.derived = make([]bool, len(plan.slots))
	}
	if trace != nil {
		r.names = make([]string, len(plan.slots))
		for name, slot := range plan.slots {
			r.names[slot] = name
		}
	}
	for name, v := range vars {
		if s, ok := plan.slots[name]; ok {
			r.vars[s] = v
		}
	}
	var err error
	if plan.broken != "" {
		err = &Fault{Block: -1, Reason: "the route does not compile: " + plan.broken}
	} else {
		_, err = r.exec(0, len(plan.steps))
	}
	if r.broken != nil && err == nil {
		err = r.broken
	}
	if err == nil && r.result.Body != nil {
		err = r.charge(nil, len(r.result.Body))
	}
	r.result.Steps, r.result.Read = r.steps, &r.secrets
	var fault *Fault
	switch {
	case errors.As(err, &fault):
		status := 500
		if fault.Status != 0 {
			status = fault.Status
		}
		r.result.Ended, r.result.Fault, r.result.Status = "FAULT", fault, status
		r.result.Body = errorBody(status, "Error: "+fault.Error())
		return r.result, nil
	case err != nil:
		return r.result, err
	case r.result.Ended == "":
		r.result.Ended, r.result.Status = "END", 200
		r.result.Body = []byte(`{"status":200,"message":"OK"}`)
	}
	return r.result, nil
}

// errorBody is the envelope of an answer without data.
func errorBody(status int, message string) []byte {
	buf := fmt.Appendf(nil, `{"status":%d,"message":`, status)
	buf, _ = appendJSON(buf, message, maxString)
	return append(buf, '}')
}

// fault is the route's fault at step s. Faults name types and sizes, never
// values; a vault value the run read is masked in its text all the same.
func (r *runner) fault(s *step, format string, args ...any) error {
	return &Fault{Block: s.block, Type: s.typ, Reason: r.masked(fmt.Sprintf(format, args...))}
}

// taint notes, in a traced run, whether the variable step s set came from
// a vault value: read by VAULT, or computed from anything that was
// (conditions included, so a comparison with a secret is one too).
func (r *runner) taint(s *step) {
	if s.out < 0 {
		return
	}
	if s.kind == kHTTP {
		// An upstream's answer is shown with what the run sent made from
		// a vault value masked in it, not hidden whole.
		r.derived[s.out] = false
		return
	}
	from := s.kind == kVault
	for _, slot := range s.reads {
		from = from || r.derived[slot]
	}
	r.derived[s.out] = from
}

// tick counts one block execution and checks the step and time limits.
func (r *runner) tick(s *step) error {
	r.steps++
	if r.steps > r.limits.Steps {
		return r.fault(s, "the run passed its limit of %d block executions", r.limits.Steps)
	}
	if r.late.Load() || r.plan.quick && r.ctx.Err() != nil {
		return r.timeout(s)
	}
	return nil
}

func (r *runner) timeout(s *step) error {
	if s == nil {
		return &Fault{Block: -1, Reason: fmt.Sprintf("the run passed its time limit of %s", r.limits.Time)}
	}
	return r.fault(s, "the run passed its time limit of %s", r.limits.Time)
}

// charge counts n bytes of values made by step s (nil: by the run) against
// the run's memory limit, taking them from the shared budget as needed.
func (r *runner) charge(s *step, n int) error {
	r.mem += int64(n)
	r.stepMem += int64(n)
	if r.mem <= r.reserved {
		return nil
	}
	return r.reserve(s)
}

// chargeValue charges a value a step made: a string, array or object
// (numbers, truths and null are counted with the variable that holds
// them, or the container that does).
func (r *runner) chargeValue(s *step, v any) error {
	switch v.(type) {
	case string, []any, map[string]any:
		return r.charge(s, size(v))
	}
	return nil
}

// reserve takes memory for what the run holds past what it reserved.
func (r *runner) reserve(s *step) error {
	switch {
	case r.limits.Memory <= 0:
		r.reserved = math.MaxInt64
		return nil
	case r.mem > r.limits.Memory:
		return r.memoryFault(s)
	case r.limits.Shared == nil:
		r.reserved = r.limits.Memory
		return nil
	}
	need := (r.mem - r.reserved + memoryChunk - 1) / memoryChunk * memoryChunk
	if !r.limits.Shared.take(need) {
		return ErrBusy
	}
	r.reserved += need
	return nil
}

func (r *runner) memoryFault(s *step) error {
	f := &Fault{Block: -1, Reason: fmt.Sprintf("the run passed its memory limit of %d MiB", r.limits.Memory>>20)}
	if s != nil {
		f.Block, f.Type = s.block, s.typ
	}
	return f
}

// releaseMemory gives back what the run took from the shared budget.
func (r *runner) releaseMemory() {
	if r.limits.Shared != nil && r.reserved > 0 {
		r.limits.Shared.give(r.reserved)
		r.reserved = 0
	}
}

// stop notes why work that cannot return an error (decoding records while
// reading a variable, say) had to end: the step's own error, once it is
// over.
func (r *runner) stop(err error) {
	if r.stopped == nil {
		r.stopped = err
	}
}

// envError turns an Env's error into the route's fault where the route is
// to blame, and leaves the platform's errors as they are.
func (r *runner) envError(s *step, err error) error {
	var broken *schema.Violation
	switch {
	case errors.As(err, &broken):
		// A record that breaks its collection's fields: the route's
		// data, answered 422 (409 for a unique value taken).
		f := r.fault(s, "%s", broken.Error()).(*Fault)
		f.Status = 422
		if broken.Conflict {
			f.Status = 409
		}
		return f
	case errors.Is(err, ErrNoCollection):
		return r.fault(s, "collection %s does not exist", s.coll)
	case errors.Is(err, ErrNoVaultKey):
		return r.fault(s, "vault key %s does not exist", s.name)
	case errors.Is(err, ErrMailBacklog):
		f := r.fault(s, "the project's outbox is full: too many messages wait to be sent; try again later").(*Fault)
		f.Status, f.RetryAfter = 503, MailBacklogRetry
		return f
	case errors.Is(err, ErrJobBacklog):
		f := r.fault(s, "the project has as many jobs waiting as it may: try again later").(*Fault)
		f.Status, f.RetryAfter = 429, JobBacklogRetry
		return f
	case errors.Is(err, ErrBusy):
		return ErrBusy
	case errors.Is(err, ErrTooLarge):
		return r.memoryFault(s)
	case r.ctx.Err() != nil:
		return r.timeout(s)
	}
	return err
}

// exec runs the steps from..to, which are one level of one body.
func (r *runner) exec(from, to int) (signal, error) {
	for i := from; i < to; {
		s := &r.plan.steps[i]
		if err := r.tick(s); err != nil {
			r.tell(s, sigEnd, err, 0)
			return sigEnd, err
		}
		if s.kind == kLoop {
			sig, err := r.loop(s, i)
			if err != nil || sig == sigEnd {
				r.tell(s, sig, err, 0)
				return sigEnd, err
			}
			i = s.end
			continue
		}
		r.held = true
		if r.fresh != nil {
			for _, slot := range s.keeps {
				r.fresh[slot] = 0
			}
			r.stepMem, r.putSlot = 0, -1
		}
		sig, err := r.step(s)
		if r.fresh != nil && s.out >= 0 && r.putSlot == s.out {
			// The variable's old value goes, unless something kept it.
			r.mem -= r.fresh[s.out]
			r.fresh[s.out] = r.stepMem
		}
		if err == nil && r.stopped != nil {
			sig, err = sigEnd, r.stopped
			if f, ok := err.(*Fault); ok && f.Block < 0 {
				f.Block, f.Type = s.block, s.typ
			}
		}
		if r.derived != nil {
			r.taint(s)
		}
		r.tell(s, sig, err, 0)
		if err != nil || sig != sigNext {
			return sig, err
		}
		i++
	}
	return sigNext, nil
}

func (r *runner) loop(s *step, i int) (signal, error) {
	from, err := r.number(s, "min", s.a)
	if err != nil {
		return sigEnd, err
	}
	to, err := r.number(s, "max", s.b)
	if err != nil {
		return sigEnd, err
	}
	by := 1.0
	if s.c != nil && r.value(*s.c) != nil {
		if by, err = r.number(s, "step", s.c); err != nil {
			return sigEnd, err
		}
	}
	if by == 0 {
		return sigEnd, r.fault(s, "step is 0: the loop would never end")
	}
	if (by > 0 && from >= to) || (by < 0 && from <= to) {
		// No turn: the trace still shows the loop, its conditions unmet.
		r.held = false
		r.tell(s, sigNext, nil, 0)
	}
	for n, turn := from, 0; (by > 0 && n < to) || (by < 0 && n > to); n, turn = n+by, turn+1 {
		if turn > 0 {
			if err := r.tick(s); err != nil {
				return sigEnd, err
			}
		}
		r.put(s.out, n)
		r.held = true
		if r.derived != nil {
			r.taint(s)
		}
		r.tell(s, sigNext, nil, turn+1)
		sig, err := r.exec(i+1, s.end)
		if err != nil || sig == sigEnd {
			return sigEnd, err
		}
		if sig == sigBreak {
			break
		}
	}
	return sigNext, nil
}

func (r *runner) number(s *step, name string, o *operand) (float64, error) {
	v := r.value(*o)
	n, ok := v.(float64)
	if !ok {
		return 0, r.fault(s, "%s is %s, not a number", name, typeName(v))
	}
	return n, nil
}

func (r *runner) value(o operand) any {
	if !o.ref {
		return o.lit
	}
	return lookup(r.get(o.slot), o.path)
}

// get reads a variable, decoding the records it holds first.
func (r *runner) get(slot int) any {
	if r.lazy[slot] {
		items := r.vars[slot].([]any)
		for i, item := range items {
			if rec, ok := item.(*stored); ok {
				if r.late.Load() {
					r.stop(r.timeout(nil))
					break
				}
				items[i] = r.decode(rec)
			}
		}
		r.lazy[slot] = false
	}
	return r.vars[slot]
}

// put sets a variable.
func (r *runner) put(slot int, v any) {
	r.vars[slot], r.lazy[slot], r.putSlot = v, false, slot
}

// putStored sets a variable to an array that may hold records still JSON.
func (r *runner) putStored(slot int, items []any) {
	r.vars[slot], r.lazy[slot], r.putSlot = items, true, slot
}

// stored is a record as FETCH read it, its data still JSON. A FILTER reads
// one property of it; the rest is decoded when a block uses the record as
// a whole (a FETCH often answers with one page of what it read).
type stored struct {
	Record
	data map[string]any // decoded, with _id
}

func (r *runner) decode(rec *stored) map[string]any {
	if rec.data == nil {
		// A decoded record takes about twice its JSON. It belongs to the
		// variable that read it, not to the step that decodes it: never
		// given back with the step's variable.
		if err := r.charge(nil, 2*len(rec.Data)); err != nil {
			r.stop(err)
		}
		r.stepMem -= int64(2 * len(rec.Data))
		m, err := r.decoder().Object(rec.Data)
		if err != nil {
			r.broken = fmt.Errorf("record %d: %w", rec.ID, err)
			m = map[string]any{}
		}
		m["_id"] = float64(rec.ID)
		rec.data = m
	}
	return rec.data
}

// decoder is the run's, taken when it first reads a record.
func (r *runner) decoder() *Decoder {
	if r.dec == nil {
		r.dec = decoders.Get().(*Decoder)
	}
	return r.dec
}

// decoders are decoders of runs that ended, their tables emptied: a run
// that reads records would otherwise grow three maps afresh.
var decoders = sync.Pool{New: func() any { return NewDecoder() }}

// releaseDecoder empties the run's decoder and gives it back. The values
// it made stay with whoever holds them; only its tables forget them.
func (r *runner) releaseDecoder() {
	if r.dec != nil {
		clear(r.dec.keys)
		clear(r.dec.strs)
		clear(r.dec.nums)
		decoders.Put(r.dec)
		r.dec = nil
	}
}

// field is the value at path of a record (lookup of its decoded data).
func (r *runner) field(rec *stored, path []string) any {
	if rec.data != nil || len(path) == 0 {
		return lookup(r.decode(rec), path)
	}
	if path[0] == "_id" {
		return lookup(float64(rec.ID), path[1:])
	}
	v, err := r.decoder().Field(rec.Data, path[0])
	if err != nil {
		r.broken = fmt.Errorf("record %d: %w", rec.ID, err)
	}
	return lookup(v, path[1:])
}

// holds reads tests left to right, each joined to the one before by that
// one's next (docs/engine.md); an empty list holds.
func (r *runner) holds(tests []test) bool {
	ok := true
	for i := range tests {
		t := &tests[i]
		v := compare(t.op, r.value(t.left), r.value(t.right), &r.late) != t.not
		if i > 0 && t.or {
			ok = ok || v
		} else {
			ok = ok && v
		}
	}
	return ok
}

// when is holds for a block's own conditions, remembered for the trace.
func (r *runner) when(tests []test) bool {
	r.held = r.holds(tests)
	return r.held
}

// passes is holds for a filter, whose left side is the item's value.
func (r *runner) passes(filters []test, item any) bool {
	ok := true
	for i := range filters {
		t := &filters[i]
		v := compare(t.op, item, r.value(t.right), &r.late) != t.not
		if i > 0 && t.or {
			ok = ok || v
		} else {
			ok = ok && v
		}
	}
	return ok
}

func (r *runner) step(s *step) (signal, error) {
	switch s.kind {
	case kFetch:
		q, err := r.fetchQuery(s)
		if err != nil {
			return sigEnd, err
		}
		recs, err := r.sel(s, q)
		if err != nil {
			return sigEnd, err
		}
		bytes := 0
		for _, rec := range recs {
			bytes += len(rec.Data) + storedSize
		}
		if err := r.charge(s, bytes); err != nil {
			return sigEnd, err
		}
		items := make([]any, len(recs))
		held := make([]stored, len(recs))
		for i, rec := range recs {
			held[i].Record = rec
			items[i] = &held[i]
		}
		r.putStored(s.out, items)
	case kAssignment:
		var v any
		if r.when(s.tests) {
			var err error
			if v, err = r.operations(s); err != nil {
				return sigEnd, err
			}
			if err := r.chargeValue(s, v); err != nil {
				return sigEnd, err
			}
		}
		r.put(s.out, v)
	case kTemplate:
		if r.when(s.tests) {
			v, err := r.template(s)
			if err != nil {
				return sigEnd, err
			}
			if err := r.charge(s, size(v)); err != nil {
				return sigEnd, err
			}
			r.put(s.out, v)
		}
	case kCondition:
		if !r.when(s.tests) {
			return sigNext, nil
		}
		switch s.name {
		case "BREAK":
			return sigBreak, nil
		case "CONTINUE":
			return sigContinue, nil
		}
		if !flow.FailStatus(s.fail.Status) {
			// Saved before the rule: refused at save now.
			return sigEnd, r.fault(s, "fail.status %d is not an error status (400 to 599): change it to answer", s.fail.Status)
		}
		r.result.Ended, r.result.Status = "FAIL", s.fail.Status
		r.result.Body = errorBody(s.fail.Status, "Error: "+s.fail.Message)
		return sigEnd, nil
	case kFilter:
		lazy := r.lazy[s.src] && s.srcPath == nil
		var src any
		if lazy {
			src = r.vars[s.src]
		} else {
			src = lookup(r.get(s.src), s.srcPath)
		}
		items, ok := src.([]any)
		if !ok {
			return sigEnd, r.fault(s, "source is %s, not an array", typeName(src))
		}
		if err := r.charge(s, 16*len(items)); err != nil {
			return sigEnd, err
		}
		if r.trace != nil {
			r.read = len(items)
		}
		out := make([]any, 0, len(items))
		for i, item := range items {
			if i&63 == 63 && r.late.Load() {
				return sigEnd, r.timeout(s)
			}
			var v any
			if rec, ok := item.(*stored); ok {
				v = r.field(rec, s.path)
			} else {
				v = lookup(item, s.path)
			}
			if r.passes(s.filters, v) {
				out = append(out, item)
			}
		}
		if lazy {
			r.putStored(s.out, out)
		} else {
			r.put(s.out, out)
		}
	case kProperty:
		v, err := r.property(s)
		if err != nil {
			return sigEnd, err
		}
		r.put(s.out, v)
	case kFunction:
		v, lazy, err := r.function(s)
		if err != nil {
			return sigEnd, err
		}
		if lazy {
			r.putStored(s.out, v.([]any))
		} else {
			r.put(s.out, v)
		}
	case kObject:
		o := r.object(s.pairs)
		if err := r.charge(s, s.size); err != nil {
			return sigEnd, err
		}
		r.put(s.out, o)
	case kUpdate, kSimpleUpdate:
		if s.kind == kUpdate && !r.when(s.tests) {
			return sigNext, nil
		}
		return sigNext, r.update(s)
	case kCreate:
		if r.when(s.tests) {
			return sigNext, r.create(s)
		}
	case kReturn:
		if !r.when(s.tests) {
			return sigNext, nil
		}
		body, err := r.answer(s.pairs)
		if err != nil {
			return sigEnd, r.fault(s, "%s", err)
		}
		headers, err := r.answerHeaders(s)
		if err != nil {
			return sigEnd, err
		}
		if noBody(s.status) {
			body = nil
		}
		r.result.Ended, r.result.Status, r.result.Body, r.result.Header = "RETURN", s.status, body, headers
		if r.trace != nil {
			for _, p := range s.pairs {
				if p.v.ref && r.derived[p.v.slot] {
					r.result.Derived = append(r.result.Derived, p.id)
				}
			}
		}
		return sigEnd, nil
	case kVault:
		v, err := r.env.Vault(r.ctx, s.name)
		if err != nil {
			return sigEnd, r.envError(s, err)
		}
		if err := r.charge(s, size(v)); err != nil {
			return sigEnd, err
		}
		r.secrets.Add(v)
		r.put(s.out, v)
	case kEmail:
		if r.when(s.tests) {
			return sigNext, r.email(s)
		}
	case kEnqueue:
		if !r.when(s.tests) {
			return sigNext, nil
		}
		id, err := r.enqueue(s)
		if err != nil {
			return sigEnd, err
		}
		r.result.Wrote = true
		if s.out >= 0 {
			r.put(s.out, float64(id))
		}
	case kHTTP:
		if !r.when(s.tests) {
			return sigNext, nil
		}
		v, err := r.call(s)
		if err != nil {
			return sigEnd, err
		}
		r.put(s.out, v)
	case kDelete:
		n := 0
		if r.when(s.tests) {
			var err error
			if n, err = r.remove(s); err != nil {
				return sigEnd, err
			}
		}
		if s.out >= 0 {
			r.put(s.out, float64(n))
		}
	}
	return sigNext, nil
}

// operations gives an ASSIGNMENT's value: one operation's value, or the
// truth of several, each true or false, joined by their next.
func (r *runner) operations(s *step) (any, error) {
	if len(s.ops) == 0 {
		return nil, nil
	}
	if len(s.ops) == 1 {
		return r.operation(s, 0)
	}
	ok := true
	for i := range s.ops {
		v, err := r.operation(s, i)
		if err != nil {
			return nil, err
		}
		b, isBool := v.(bool)
		if !isBool {
			return nil, r.fault(s, "operations[%d] gives %s: operations joined by AND or OR must each give true or false", i, typeName(v))
		}
		if i > 0 && s.ops[i].or {
			ok = ok || b
		} else {
			ok = ok && b
		}
	}
	return ok, nil
}

func (r *runner) operation(s *step, i int) (any, error) {
	t := &s.ops[i]
	left, right := r.value(t.left), r.value(t.right)
	var v any
	switch {
	case t.op.comparison():
		v = compare(t.op, left, right, &r.late)
	case t.op == opNone:
		v = left
	default:
		var err error
		if v, err = arithmetic(t.op, left, right); err != nil {
			return nil, r.fault(s, "operations[%d]: %s", i, err)
		}
	}
	if t.not {
		b, ok := v.(bool)
		if !ok {
			return nil, r.fault(s, "operations[%d]: not applies to true or false, not %s", i, typeName(v))
		}
		v = !b
	}
	return v, nil
}

func (r *runner) template(s *step) (any, error) {
	out := make([]byte, 0, 64)
	for i, part := range s.parts {
		if i > 0 && i-1 < len(s.operands) {
			t := text(r.value(s.operands[i-1]))
			switch {
			case !s.url:
				out = append(out, t...)
			case !urlHasHost(out):
				out = append(out, t...) // the URL's beginning: checked whole when sent
			case !afterHost(out) && !hostText(t):
				return nil, r.fault(s, "text inserted into the host of url is not a host name")
			case !afterHost(out):
				out = append(out, t...)
			default:
				out = appendSegment(out, t)
			}
		}
		out = append(out, part...)
		if len(out) > maxString {
			return nil, r.fault(s, "the text would pass 4 MiB")
		}
	}
	return string(out), nil
}

func (r *runner) property(s *step) (any, error) {
	v := r.value(*s.a)
	switch s.name {
	case "GET_PROPERTY":
		return lookup(v, s.path), nil
	case "LENGTH":
		switch x := v.(type) {
		case nil:
			return 0.0, nil
		case []any:
			return float64(len(x)), nil
		case string:
			return float64(utf8.RuneCountInString(x)), nil
		case map[string]any:
			return float64(len(x)), nil
		}
		return nil, r.fault(s, "LENGTH of %s", typeName(v))
	}
	if v == nil {
		return nil, nil
	}
	items, ok := v.([]any)
	if !ok {
		return nil, r.fault(s, "%s of %s: data must be an array", s.name, typeName(v))
	}
	i := s.index
	switch s.name {
	case "GET_FIRST":
		i = 0
	case "GET_LAST":
		i = len(items) - 1
	}
	if i < 0 || i >= len(items) {
		return nil, nil
	}
	return items[i], nil
}

func (r *runner) function(s *step) (v any, lazy bool, err error) {
	switch s.name {
	case "V4":
		return uuid.NewString(), false, nil
	case "GENERATE_TIMESTAMP":
		return time.Now().UTC().Format(time.RFC3339), false, nil
	}
	// PAGINATE(array, limit = 10, page = 0)
	arg := func(i int) any {
		if i < len(s.operands) {
			return r.value(s.operands[i])
		}
		return nil
	}
	first := any(nil)
	if len(s.operands) > 0 && s.operands[0].ref && s.operands[0].path == nil && r.lazy[s.operands[0].slot] {
		first, lazy = r.vars[s.operands[0].slot], true // a page of records read, still JSON
	} else {
		first = arg(0)
	}
	items, ok := first.([]any)
	if !ok {
		return nil, false, r.fault(s, "PAGINATE of %s: params[0] must be an array", typeName(first))
	}
	limit, page := 10, 0
	for i, dst := range []*int{&limit, &page} {
		v := arg(i + 1)
		if v == nil {
			continue
		}
		n, ok := v.(float64)
		if !ok || n != float64(int(n)) || n < float64(1-i) || n > 1e9 {
			least := [...]string{"1", "0"}[i]
			if ok {
				return nil, false, r.fault(s, "PAGINATE: params[%d] must be a whole number from %s to 1000000000", i+1, least)
			}
			return nil, false, r.fault(s, "PAGINATE: params[%d] must be a whole number from %s, not %s", i+1, least, describe(v))
		}
		*dst = int(n)
	}
	start := min(page*limit, len(items))
	end := min(start+limit, len(items))
	return items[start:end:end], lazy, nil
}

func (r *runner) object(pairs []pair) map[string]any {
	out := make(map[string]any, len(pairs))
	for _, p := range pairs {
		out[p.id] = r.value(p.v)
	}
	return out
}

// answer writes RETURN's pairs as a JSON object in their order (a repeated
// id keeps its last value), within the answer limit.
func (r *runner) answer(pairs []pair) ([]byte, error) {
	e := encoder{buf: make([]byte, 0, 256), limit: r.limits.Answer}
	e.buf = append(e.buf, '{')
	first := true
	for i, p := range pairs {
		later := false
		for _, q := range pairs[i+1:] {
			later = later || q.id == p.id
		}
		if later {
			continue
		}
		if !first {
			e.buf = append(e.buf, ',')
		}
		first = false
		if err := e.string(p.id); err != nil {
			return nil, errors.New("the answer passes its limit of 4 MiB")
		}
		e.buf = append(e.buf, ':')
		if err := e.value(r.value(p.v)); err != nil {
			return nil, errors.New("the answer passes its limit of 4 MiB")
		}
	}
	return append(e.buf, '}'), nil
}

// sel reads records of the step's collection for FETCH, UPDATE,
// SIMPLE_UPDATE and DELETE, within the record limit: a query without a
// limit of its own that finds more is a fault.
func (r *runner) sel(s *step, q Query) ([]Record, error) {
	if q.Limit == 0 {
		q.Limit = r.limits.Records + 1
	}
	recs, err := r.env.Select(r.ctx, s.coll, q)
	if err != nil {
		return nil, r.envError(s, err)
	}
	if len(recs) > r.limits.Records {
		return nil, r.fault(s, "collection %s has more than %d records, the limit of one read", s.coll, r.limits.Records)
	}
	return recs, nil
}

// fetchQuery is what a FETCH reads: its match, sort and limit (docs/engine.md).
func (r *runner) fetchQuery(s *step) (Query, error) {
	q := Query{Sort: s.path, Descending: s.desc}
	for _, p := range s.pairs {
		q.where(splitPath(p.id), r.value(p.v))
	}
	if s.a != nil {
		v := r.value(*s.a)
		n, ok := v.(float64)
		if v != nil && (!ok || n != float64(int(n)) || n < 1 || n > float64(r.limits.Records)) {
			got := describe(v)
			if ok {
				got = strconv.FormatFloat(n, 'f', -1, 64) // "not 0", never "not a number"
			}
			return q, r.fault(s, "limit must be a whole number from 1 to %d, not %s", r.limits.Records, got)
		}
		q.Limit = int(n) // a null limit is none
	}
	return q, nil
}

// where adds to q that the property at path equals v: the record's id for
// _id, which its data never holds (an _id no record can have selects
// none), else a part of the containment object.
func (q *Query) where(path []string, v any) {
	if len(path) == 1 && path[0] == "_id" {
		id, ok := recordID(v)
		if !ok || (q.ByID && q.ID != id) {
			id = 0
		}
		q.ByID, q.ID = true, id
		return
	}
	if q.Match == nil {
		q.Match = map[string]any{}
	}
	nest(q.Match, path, v)
}

// recordID reads v as a record's id: a whole number from 1 to 2^53, or a
// string of such digits, as a path parameter brings it ("42"), since an id
// is always an integer.
func recordID(v any) (int64, bool) {
	switch v := v.(type) {
	case float64:
		if v == math.Trunc(v) && v >= 1 && v <= 1<<53 {
			return int64(v), true
		}
	case string:
		if len(v) == 0 || len(v) > 16 || strings.TrimLeft(v, "0123456789") != "" {
			return 0, false
		}
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 1 && n <= 1<<53 {
			return n, true
		}
	}
	return 0, false
}

// nest sets the value at path inside m, making the objects on the way: the
// containment object of a match.
func nest(m map[string]any, path []string, v any) {
	for _, seg := range path[:len(path)-1] {
		inner, ok := m[seg].(map[string]any)
		if !ok {
			inner = map[string]any{}
			m[seg] = inner
		}
		m = inner
	}
	m[path[len(path)-1]] = v
}

// remove runs DELETE: the records its targets select are deleted when
// save, and it gives how many were.
func (r *runner) remove(s *step) (int, error) {
	recs, err := r.sel(s, r.targeted(s, Query{Lock: s.save}))
	if err != nil {
		return 0, err
	}
	var ids []int64
	for _, rec := range recs {
		if r.late.Load() {
			return 0, r.timeout(s)
		}
		if err := r.charge(s, 2*len(rec.Data)+storedSize); err != nil {
			return 0, err
		}
		data, err := r.decoder().Object(rec.Data)
		if err != nil {
			return 0, fmt.Errorf("record %d: %w", rec.ID, err)
		}
		if r.selects(s, rec.ID, data) {
			ids = append(ids, rec.ID)
		}
	}
	if !s.save || len(ids) == 0 {
		return 0, nil
	}
	if err := r.env.Delete(r.ctx, s.coll, ids); err != nil {
		return 0, r.envError(s, err)
	}
	r.result.Wrote = true
	return len(ids), nil
}

// update runs UPDATE and SIMPLE_UPDATE: select the records, change the
// property, write them when save.
func (r *runner) update(s *step) error {
	q := Query{Lock: s.save}
	if s.kind == kSimpleUpdate {
		q = r.targeted(s, q)
	}
	recs, err := r.sel(s, q)
	if err != nil {
		return err
	}
	var changed []Write
	for _, rec := range recs {
		if r.late.Load() {
			return r.timeout(s)
		}
		// The record decoded, changed, and written again as JSON.
		if err := r.charge(s, 4*len(rec.Data)+storedSize); err != nil {
			return err
		}
		old, err := r.decoder().Object(rec.Data)
		if err != nil {
			return fmt.Errorf("record %d: %w", rec.ID, err)
		}
		if !r.selects(s, rec.ID, old) {
			continue
		}
		data, err := r.change(s, old)
		if err != nil {
			return err
		}
		text, err := r.recordJSON(s, data)
		if err != nil {
			return err
		}
		changed = append(changed, Write{ID: rec.ID, Data: text})
	}
	if !s.save || len(changed) == 0 {
		return nil
	}
	if err := r.env.Update(r.ctx, s.coll, changed); err != nil {
		return r.envError(s, err)
	}
	r.result.Wrote = true
	return nil
}

// targeted adds to q the part of SIMPLE_UPDATE's and DELETE's targets
// that the database can test with an index: targets whose field is a path
// of names and whose value is a string, number or boolean. selects still
// tests them all.
func (r *runner) targeted(s *step, q Query) Query {
	for _, t := range s.targets {
		v := r.value(t.value)
		switch v.(type) {
		case string, float64, bool:
		default:
			continue
		}
		named := len(t.path) > 0
		for _, seg := range t.path {
			if _, isIndex := index(seg); isIndex {
				named = false
			}
		}
		if named {
			q.where(t.path, v)
		}
	}
	return q
}

// selects tests a record against the step's targets: every target must
// hold (none: every record). UPDATE's target conditions read the record's
// field as the variable item; SIMPLE_UPDATE's field must equal its value.
// A field _id is the record's id.
func (r *runner) selects(s *step, id int64, data map[string]any) bool {
	for _, t := range s.targets {
		var field any
		if len(t.path) > 0 && t.path[0] == "_id" {
			field = lookup(float64(id), t.path[1:])
		} else {
			field = lookup(data, t.path)
		}
		if s.kind != kUpdate {
			want := r.value(t.value)
			if len(t.path) == 1 && t.path[0] == "_id" {
				n, ok := recordID(want)
				if !ok || n != id {
					return false
				}
				continue
			}
			if !equal(field, want) {
				return false
			}
			continue
		}
		saved := r.vars[r.plan.itemSlot]
		r.vars[r.plan.itemSlot] = field
		ok := r.holds(t.tests)
		r.vars[r.plan.itemSlot] = saved
		if !ok {
			return false
		}
	}
	return true
}

// change applies UPDATE's set, add or filter (the first given) or
// SIMPLE_UPDATE's set to the property ref_property of data; an empty
// ref_property is the whole record.
func (r *runner) change(s *step, data map[string]any) (map[string]any, error) {
	cur := lookup(data, s.path)
	var v any
	switch {
	case s.a != nil:
		v = r.value(*s.a)
	case s.b != nil:
		switch x := cur.(type) {
		case nil:
			v = []any{r.value(*s.b)}
		case []any:
			if len(x) >= maxItems {
				return nil, r.fault(s, "the array would pass %d items", maxItems)
			}
			v = append(append(make([]any, 0, len(x)+1), x...), r.value(*s.b))
		default:
			return nil, r.fault(s, "add needs an array at %q, not %s", joinPath(s.path), typeName(cur))
		}
	case s.filter != nil:
		switch x := cur.(type) {
		case nil:
			v = nil
		case []any:
			kept := make([]any, 0, len(x))
			for _, item := range x {
				if !r.passes([]test{*s.filter}, item) {
					kept = append(kept, item)
				}
			}
			v = kept
		default:
			return nil, r.fault(s, "filter needs an array at %q, not %s", joinPath(s.path), typeName(cur))
		}
	default:
		return nil, r.fault(s, "set, add or filter is required")
	}
	if len(s.path) == 0 {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, r.fault(s, "a whole record must be set to an object, not %s", typeName(v))
		}
		return obj, nil
	}
	out, err := withPath(data, s.path, v)
	if err != nil {
		return nil, r.fault(s, "ref_property %q: %s", joinPath(s.path), err)
	}
	return out.(map[string]any), nil
}

func joinPath(path []string) string {
	out := ""
	for i, seg := range path {
		if i > 0 {
			out += "."
		}
		out += seg
	}
	return out
}

// recordJSON encodes record data as the collections API would store it:
// at most 64 KiB, no NUL character, no _id (the id is the record's own).
func (r *runner) recordJSON(s *step, data map[string]any) ([]byte, error) {
	if _, has := data["_id"]; has {
		data = maps.Clone(data)
		delete(data, "_id")
	}
	e := encoder{buf: make([]byte, 0, 256), limit: maxRecord, noNUL: true}
	switch err := e.value(data); {
	case errors.Is(err, errTooLarge):
		return nil, r.fault(s, "a record would pass 64 KiB")
	case errors.Is(err, errNUL):
		return nil, r.fault(s, "a record cannot hold a NUL character")
	case err != nil:
		return nil, err
	}
	return e.buf, nil
}

func (r *runner) create(s *step) error {
	v := r.get(s.src)
	obj, ok := v.(map[string]any)
	if !ok {
		return r.fault(s, "ref_object is %s, not an object", typeName(v))
	}
	data, err := r.recordJSON(s, obj)
	if err == nil {
		err = r.charge(s, len(data)+size(obj))
	}
	if err != nil || !s.save {
		return err
	}
	id, err := r.env.Insert(r.ctx, s.coll, data)
	if err != nil {
		return r.envError(s, err)
	}
	r.result.Wrote = true
	made := maps.Clone(obj)
	made["_id"] = float64(id)
	r.put(s.src, made)
	return nil
}

func (r *runner) email(s *step) error {
	m := Email{Template: s.name, Pairs: r.object(s.pairs)}
	for i, o := range s.operands {
		switch v := r.value(o).(type) {
		case string:
			m.Recipients = append(m.Recipients, v)
		case []any:
			for _, item := range v {
				to, ok := item.(string)
				if !ok {
					return r.fault(s, "recipients[%d] holds %s, not an address", i, typeName(item))
				}
				m.Recipients = append(m.Recipients, to)
			}
		default:
			return r.fault(s, "recipients[%d] is %s, not an address", i, typeName(v))
		}
	}
	if len(m.Recipients) == 0 {
		return r.fault(s, "the message has no recipient")
	}
	if len(m.Recipients) > MaxRecipients {
		return r.fault(s, "a message has at most %d recipients, not %d", MaxRecipients, len(m.Recipients))
	}
	if r.emails++; r.emails > MaxMessages {
		return r.fault(s, "a run queues at most %d messages", MaxMessages)
	}
	if _, err := appendJSON(nil, m.Pairs, maxRecord); err != nil {
		return r.fault(s, "the message's pairs pass 64 KiB")
	}
	if err := r.env.Queue(r.ctx, m); err != nil {
		return r.envError(s, err)
	}
	return nil
}
