package engine

import (
	"fmt"
	"slices"
	"strings"

	"stencil/flow"
)

// opcode is a condition, operation or filter type.
type opcode uint8

const (
	opEqual opcode = iota
	opNotEqual
	opGreater
	opLess
	opGreaterEqual
	opLessEqual
	opIncludes
	opAdd
	opSub
	opMul
	opDiv
	opMod
	opNone
)

var opcodes = map[string]opcode{
	"EQUAL_TO": opEqual, "NOT_EQUAL_TO": opNotEqual, "GREATER_THAN": opGreater, "LESS_THAN": opLess,
	"GREATER_THAN_OR_EQUAL_TO": opGreaterEqual, "LESS_THAN_OR_EQUAL_TO": opLessEqual, "INCLUDES": opIncludes,
	"ADDITION": opAdd, "SUBTRACTION": opSub, "MULTIPLICATION": opMul, "DIVISION": opDiv, "MODULO": opMod, "NONE": opNone,
}

func (op opcode) String() string {
	for name, o := range opcodes {
		if o == op {
			return name
		}
	}
	return "?"
}

func (op opcode) comparison() bool { return op <= opIncludes }

// kind is a block type.
type kind uint8

const (
	kFetch kind = iota
	kAssignment
	kTemplate
	kCondition
	kLoop
	kFilter
	kProperty
	kFunction
	kObject
	kUpdate
	kSimpleUpdate
	kCreate
	kReturn
	kVault
	kEmail
	kDelete
	kHTTP
	kEnqueue
)

var kinds = map[string]kind{
	"FETCH": kFetch, "ASSIGNMENT": kAssignment, "TEMPLATE": kTemplate, "CONDITION": kCondition, "LOOP": kLoop,
	"FILTER": kFilter, "PROPERTY": kProperty, "FUNCTION": kFunction, "OBJECT": kObject, "UPDATE": kUpdate,
	"SIMPLE_UPDATE": kSimpleUpdate, "CREATE": kCreate, "RETURN": kReturn, "VAULT": kVault, "EMAIL": kEmail, "DELETE": kDelete,
	"HTTP": kHTTP, "ENQUEUE": kEnqueue,
}

// operand is a literal converted once, or a variable's slot and the dot
// path into it.
type operand struct {
	ref  bool
	slot int
	path []string
	lit  any
}

// test is a condition, an operation or a filter: left (absent for a
// filter) op right, negated by not, joined to the test before it by OR
// (else AND).
type test struct {
	left, right operand
	op          opcode
	not, or     bool
}

type pair struct {
	id string
	v  operand
}

type target struct {
	path  []string
	tests []test // UPDATE: conditions on the field, which they read as item
	value operand
}

// step is a compiled block.
type step struct {
	kind     kind
	block    int    // its index in flow.blocks
	typ      string // its type, for faults
	depth    int
	end      int // LOOP: the step after its body
	out      int // the slot of local_name, or -1
	tests    []test
	ops      []test
	filters  []test
	operands []operand // TEMPLATE data, FUNCTION params, EMAIL recipients
	pairs    []pair    // OBJECT, RETURN and EMAIL pairs, FETCH match, HTTP query
	headers  []pair    // RETURN and HTTP headers
	status   int       // RETURN: the answer's status
	parts    []string  // TEMPLATE text around its {} slots
	a, b, c  *operand  // LOOP min, max, step; PROPERTY data; UPDATE set, add; HTTP url, body, timeout_ms
	filter   *test     // UPDATE filter
	targets  []target
	coll     string
	path     []string // ref_property, GET_PROPERTY's path
	src      int      // FILTER source slot; CREATE ref_object slot
	srcPath  []string // FILTER: the path into the source variable
	name     string   // FUNCTION, PROPERTY apply, CONDITION action, VAULT key, EMAIL template, HTTP method
	index    int      // GET_INDEX
	fail     flow.Fail
	save     bool
	reads    []int // the slots the block reads, for tracing what a vault value reaches
	keeps    []int // the slots whose values the block's result may hold (see runner.fresh)
	size     int   // OBJECT: the bytes of the object it makes (see size)
	desc     bool  // FETCH: sort descending by path
	url      bool  // TEMPLATE: its text is an HTTP block's url (see runner.template)
}

// keepSlots lists the slots whose values step s may hold on to in what it
// makes: every slot it reads, but for what it only compares, counts or
// copies into text (conditions, filters' operands, a LOOP's bounds, a
// TEMPLATE's data, LENGTH, operations that give a number or a truth, and
// what an HTTP block sends).
func keepSlots(s *step) []int {
	var out []int
	add := func(o *operand) {
		if o != nil && o.ref {
			out = append(out, o.slot)
		}
	}
	if s.kind != kTemplate {
		for i := range s.operands {
			add(&s.operands[i])
		}
	}
	for i := range s.ops {
		if op := s.ops[i].op; op == opAdd || op == opNone {
			add(&s.ops[i].left)
			add(&s.ops[i].right)
		}
	}
	if s.kind == kHTTP {
		return out
	}
	for i := range s.pairs {
		add(&s.pairs[i].v)
	}
	if s.kind != kLoop && !(s.kind == kProperty && s.name == "LENGTH") {
		add(s.a)
		add(s.b)
	}
	if s.kind == kFilter || s.kind == kCreate {
		out = append(out, s.src)
	}
	return out
}

// readSlots lists the slots step s reads: its operands', and its source's.
func readSlots(s *step) []int {
	var out []int
	add := func(o *operand) {
		if o != nil && o.ref {
			out = append(out, o.slot)
		}
	}
	tests := func(ts []test) {
		for i := range ts {
			add(&ts[i].left)
			add(&ts[i].right)
		}
	}
	tests(s.tests)
	tests(s.ops)
	tests(s.filters)
	for i := range s.operands {
		add(&s.operands[i])
	}
	for i := range s.pairs {
		add(&s.pairs[i].v)
	}
	for i := range s.headers {
		add(&s.headers[i].v)
	}
	for i := range s.targets {
		add(&s.targets[i].value)
		tests(s.targets[i].tests)
	}
	add(s.a)
	add(s.b)
	add(s.c)
	if s.filter != nil {
		add(&s.filter.right)
	}
	if s.kind == kFilter || s.kind == kCreate {
		out = append(out, s.src)
	}
	return out
}

// Plan is a route compiled for running: variables resolved to slots,
// literals converted, LOOP bodies found, paths split.
type Plan struct {
	Route    flow.Route
	steps    []step
	slots    map[string]int
	inputs   []input // params, body fields, path parameters and auth, in slots
	itemSlot int     // the slot UPDATE's target conditions read as item
	HasVault bool
	// Writes says whether the flow holds a block that writes records
	// (CREATE, UPDATE, SIMPLE_UPDATE): such a run is one SERIALIZABLE
	// transaction from its first block (docs/engine.md).
	Writes bool
	// Calls says whether the flow holds an HTTP block: such a run never
	// joins a batch, which would hold the batch's transaction while it
	// waits for an upstream (docs/engine.md).
	Calls bool
	// Enqueues says whether the flow holds an ENQUEUE block.
	Enqueues bool
	Version  int64 // the version of the stored route it was made from
	// Warnings are what Compile finds doubtful but runs all the same:
	// variables used before any block sets them. Collections are the
	// collections the flow names, with where, for the caller to check.
	Warnings    []flow.Warning
	Collections []CollectionUse
	broken      string // why the route does not compile, for a plan that only faults
	// quick: every block does work bounded by its inputs and no loop
	// repeats one (RETURN, ASSIGNMENT, CONDITION, TEMPLATE, OBJECT); such
	// a run checks its time between blocks only.
	quick bool
}

// Broken is the plan of a route that does not compile (saved before a
// check it now fails): every run of it ends in a fault naming problems.
func Broken(r flow.Route, problems string) *Plan {
	return &Plan{Route: r, slots: map[string]int{}, broken: problems}
}

// CollectionUse is a collection a block names, and the path that names it.
type CollectionUse struct {
	Name, Path string
}

// input is a variable a request fills before the flow runs.
type input struct {
	name string
	slot int
}

// Slot returns the slot of variable name, and whether the plan has it.
func (p *Plan) Slot(name string) (int, bool) {
	s, ok := p.slots[name]
	return s, ok
}

// compiler holds the state of one Compile.
type compiler struct {
	plan     *Plan
	problems flow.Problems
	set      map[string]bool // variables some block before sets, or the request
	warned   map[string]bool
}

// use notes a reference to variable name at path, warning once per name
// when no block before sets it.
func (c *compiler) use(name, path string) {
	if !c.set[name] && !c.warned[name] {
		c.warned[name] = true
		c.plan.Warnings = append(c.plan.Warnings, flow.Warn(path, name+" is used before any block sets it"))
	}
}

func (c *compiler) slot(name string) int {
	if s, ok := c.plan.slots[name]; ok {
		return s
	}
	s := len(c.plan.slots)
	c.plan.slots[name] = s
	return s
}

func (c *compiler) problem(path, msg string) {
	if _, seen := c.problems[path]; !seen {
		c.problems[path] = msg
	}
}

// Compile compiles route r, whose structure is valid (flow.ValidateRoute).
// pathParams are the names its path binds (":id" binds id). What can be
// known wrong before a run is refused here, by path: a literal that does
// not convert to its rtype, BREAK or CONTINUE outside a LOOP, a GET_INDEX
// that is not an index.
func Compile(r flow.Route, pathParams []string) (*Plan, flow.Problems) {
	c := &compiler{plan: &Plan{Route: r, slots: map[string]int{}}, problems: flow.Problems{}, set: map[string]bool{}, warned: map[string]bool{}}
	for _, prm := range r.Params.Pairs {
		c.plan.inputs = append(c.plan.inputs, input{prm.ID, c.slot(prm.ID)})
		c.set[prm.ID] = true
	}
	for _, prm := range r.Body {
		c.plan.inputs = append(c.plan.inputs, input{prm.ID, c.slot(prm.ID)})
		c.set[prm.ID] = true
	}
	for _, name := range pathParams {
		c.plan.inputs = append(c.plan.inputs, input{name, c.slot(name)})
		c.set[name] = true
	}
	c.slot("auth")
	c.set["auth"] = r.AuthJWT.Active
	c.plan.itemSlot = c.slot("item")
	blocks := r.Flow.Blocks
	c.plan.steps = make([]step, len(blocks))
	var loops []int // open LOOP steps
	for i := range blocks {
		b := &blocks[i]
		for len(loops) > 0 && b.Depth <= blocks[loops[len(loops)-1]].Depth {
			c.plan.steps[loops[len(loops)-1]].end = i
			loops = loops[:len(loops)-1]
		}
		c.plan.steps[i] = c.block(b, i, len(loops) > 0)
		c.plan.steps[i].reads = readSlots(&c.plan.steps[i])
		c.plan.steps[i].keeps = keepSlots(&c.plan.steps[i])
		if b.Type == "OBJECT" {
			o := map[string]any{}
			for _, p := range c.plan.steps[i].pairs {
				o[p.id] = nil
			}
			c.plan.steps[i].size = size(o)
		}
		if b.LocalName != "" {
			c.set[b.LocalName] = true
		}
		if b.Type == "LOOP" {
			loops = append(loops, i)
		}
	}
	for _, l := range loops {
		c.plan.steps[l].end = len(blocks)
	}
	if w, ok := deadAfterReturn(blocks); ok {
		c.plan.Warnings = append(c.plan.Warnings, w)
	}
	c.plan.quick = !slices.ContainsFunc(c.plan.steps, func(s step) bool {
		switch s.kind {
		case kReturn, kAssignment, kCondition, kTemplate, kObject:
			return false
		}
		return true
	})
	if len(c.problems) > 0 {
		return nil, c.problems
	}
	return c.plan, nil
}

// deadAfterReturn warns of the blocks that never run because a RETURN
// without conditions answers before them (docs/engine.md): at the top
// level every later block; inside a LOOP the rest of its body.
func deadAfterReturn(blocks []flow.Block) (flow.Warning, bool) {
	for i, b := range blocks {
		if b.Type != "RETURN" || len(b.Conditions) > 0 {
			continue
		}
		end := i + 1 // the blocks after it at its depth or deeper: the rest of its body
		for end < len(blocks) && blocks[end].Depth >= b.Depth {
			end++
		}
		if end == i+1 {
			continue
		}
		msg := fmt.Sprintf("never runs: Block %d (RETURN) answers first", i+1)
		switch n := end - i - 2; {
		case n == 1:
			msg += ", and neither does the one after it"
		case n > 1:
			msg += fmt.Sprintf(", and neither do the %d after it", n)
		}
		return flow.WarnBlock(fmt.Sprintf("flow.blocks[%d]", i+1), blocks[i+1].Type, msg), true
	}
	return flow.Warning{}, false
}

func (c *compiler) block(b *flow.Block, i int, inLoop bool) step {
	at := fmt.Sprintf("flow.blocks[%d]", i)
	s := step{kind: kinds[b.Type], block: i, typ: b.Type, depth: b.Depth, out: -1, coll: b.RefCol, save: b.Save}
	if b.LocalName != "" {
		s.out = c.slot(b.LocalName)
	}
	if b.RefCol != "" {
		c.plan.Collections = append(c.plan.Collections, CollectionUse{b.RefCol, at + ".ref_col"})
	}
	s.tests = c.tests(b.Conditions, at+".conditions")
	switch s.kind {
	case kAssignment:
		for j, op := range b.Operations {
			p := fmt.Sprintf("%s.operations[%d]", at, j)
			s.ops = append(s.ops, test{left: c.operand(op.Left, p+".left"), right: c.operand(op.Right, p+".right"),
				op: opcodes[op.OperationType], not: op.Not, or: j > 0 && b.Operations[j-1].Next == "OR"})
		}
	case kTemplate:
		s.parts = strings.Split(b.TemplateString, "{}")
		s.operands = c.operands(b.TemplateData, at+".data")
	case kCondition:
		s.name = b.Action
		if (b.Action == "BREAK" || b.Action == "CONTINUE") && !inLoop {
			c.problem(at+".action", b.Action+" must be inside a LOOP")
		}
		s.fail = flow.Fail{Status: 400, Message: "condition failed"}
		if b.Fail != nil {
			s.fail = *b.Fail
		}
	case kLoop:
		s.a, s.b, s.c = c.operandPtr(b.Min, at+".min"), c.operandPtr(b.Max, at+".max"), c.operandPtr(b.Step, at+".step")
	case kFilter:
		head, rest, _ := strings.Cut(b.Source, ".")
		c.use(head, at+".source")
		s.src, s.srcPath, s.path = c.slot(head), splitPath(rest), splitPath(b.RefProperty)
		s.filters = c.filters(b.Filters, at+".filters")
	case kProperty:
		s.a = c.operandPtr(b.PropertyData, at+".data")
		s.name = b.Apply
		switch b.Apply {
		case "GET_INDEX":
			n, ok := index(b.Additional)
			if !ok {
				c.problem(at+".additional", "must be an index (0, 1, 2 …) for GET_INDEX")
			}
			s.index = n
		case "GET_PROPERTY":
			s.path = splitPath(b.Additional)
		}
	case kFunction:
		s.name = b.Func
		s.operands = c.operands(b.Params, at+".params")
	case kObject:
		s.pairs = c.pairs(b.Pairs, at+".pairs")
	case kReturn:
		s.pairs = c.pairs(b.Pairs, at+".pairs")
		s.headers = c.pairs(b.Headers, at+".headers")
		// A route saved before a rule of answer headers keeps none it now
		// breaks (docs/security.md): they are dropped once, here.
		s.headers = slices.DeleteFunc(s.headers, func(p pair) bool { return flow.ReservedAnswerHeader(p.id) })
		s.status = b.Status
		if s.status == 0 {
			s.status = 200
		}
	case kHTTP:
		c.call(&s, b, at)
	case kEnqueue:
		c.enqueue(&s, b, at)
	case kEmail:
		s.pairs = c.pairs(b.Pairs, at+".pairs")
		s.operands = c.operands(b.Recipients, at+".recipients")
		s.name = b.EmailTemplate
	case kUpdate:
		s.path = splitPath(b.RefProperty)
		s.a, s.b = c.operandPtr(b.Set, at+".set"), c.operandPtr(b.Add, at+".add")
		if b.Filter != nil {
			f := c.filter(*b.Filter, at+".filter")
			s.filter = &f
		}
		// A target's conditions read the field's value as item.
		outside := c.set["item"]
		c.set["item"] = true
		for j, t := range b.UpdateTargets {
			s.targets = append(s.targets, target{path: splitPath(t.Field), tests: c.tests(t.Conditions, fmt.Sprintf("%s.targets[%d].conditions", at, j))})
		}
		c.set["item"] = outside
	case kSimpleUpdate:
		s.path = splitPath(b.RefProperty)
		s.a = c.operandPtr(b.Set, at+".set")
		for j, t := range b.SimpleTargets {
			s.targets = append(s.targets, target{path: splitPath(t.Field), value: c.operand(t.Value, fmt.Sprintf("%s.targets[%d].value", at, j))})
		}
	case kCreate:
		c.use(b.RefObject, at+".ref_object")
		s.src = c.slot(b.RefObject)
	case kVault:
		s.name = b.Key
		c.plan.HasVault = true
	case kFetch:
		s.pairs = c.pairs(b.Match, at+".match")
		for j, p := range b.Match {
			for _, seg := range splitPath(p.ID) {
				if _, isIndex := index(seg); isIndex || seg == "" {
					c.problem(fmt.Sprintf("%s.match[%d].id", at, j), "must be property names joined by dots, without an array index")
					break
				}
			}
		}
		if b.Sort != nil {
			s.path, s.desc = splitPath(b.Sort.Property), b.Sort.Descending
		}
		s.a = c.operandPtr(b.Limit, at+".limit")
		if s.a != nil && !s.a.ref {
			if n, ok := s.a.lit.(float64); !ok || n != float64(int(n)) || n < 1 || n > 10_000 {
				c.problem(at+".limit.data", "must be a whole number from 1 to 10000")
			}
		}
	case kDelete:
		for j, t := range b.SimpleTargets {
			s.targets = append(s.targets, target{path: splitPath(t.Field), value: c.operand(t.Value, fmt.Sprintf("%s.targets[%d].value", at, j))})
		}
	}
	// Blocks that do the same on every request whatever it holds.
	switch {
	case b.Type == "CONDITION" && len(b.Conditions) == 0:
		c.plan.Warnings = append(c.plan.Warnings, flow.WarnBlock(at+".conditions", "CONDITION", "has no conditions: it does "+b.Action+" on every request"))
	case b.Type == "ASSIGNMENT" && len(b.Operations) == 0:
		c.plan.Warnings = append(c.plan.Warnings, flow.WarnBlock(at+".operations", "ASSIGNMENT", "has no operations: "+b.LocalName+" is always null"))
	}
	switch s.kind {
	case kCreate, kUpdate, kSimpleUpdate, kDelete:
		c.plan.Writes = true
		if !b.Save {
			c.plan.Warnings = append(c.plan.Warnings, flow.WarnBlock(at+".save", b.Type, "has save: false: it writes nothing"))
		}
	}
	return s
}

// call compiles an HTTP block, refusing what cannot work whatever the
// request: a literal URL that is not http or https, a literal timeout out
// of bounds, a body on a GET or HEAD.
func (c *compiler) call(s *step, b *flow.Block, at string) {
	c.plan.Calls = true
	s.name = b.CallMethod
	s.a, s.b, s.c = c.operandPtr(b.URL, at+".url"), c.operandPtr(b.CallBody, at+".body"), c.operandPtr(b.Timeout, at+".timeout_ms")
	s.pairs = c.pairs(b.Query, at+".query")
	s.headers = c.pairs(b.Headers, at+".headers")
	if s.a != nil && s.a.ref && len(s.a.path) == 0 {
		// The TEMPLATEs that make this url insert text as URL parts.
		for i := range c.plan.steps[:s.block] {
			if t := &c.plan.steps[i]; t.kind == kTemplate && t.out == s.a.slot {
				t.url = true
			}
		}
	}
	if s.a != nil && !s.a.ref {
		if u, ok := s.a.lit.(string); !ok || callURL(u) != nil {
			c.problem(at+".url.data", "must be an http or https URL, like https://api.example.com/charge")
		}
	}
	if s.c != nil && !s.c.ref {
		if ms, ok := s.c.lit.(float64); !ok || ms != float64(int(ms)) || ms < float64(MinCallTimeout.Milliseconds()) || ms > float64(MaxCallTimeout.Milliseconds()) {
			c.problem(at+".timeout_ms.data", "must be a whole number of milliseconds from 100 to 10000")
		}
	}
	if s.b != nil && (b.CallMethod == "GET" || b.CallMethod == "HEAD") {
		c.problem(at+".body", "must be null: a "+b.CallMethod+" request sends no body")
	}
}

func (c *compiler) operand(o flow.Operand, path string) operand {
	if o.RefVar {
		head, rest, _ := strings.Cut(o.Data, ".")
		c.use(head, path+".data")
		return operand{ref: true, slot: c.slot(head), path: splitPath(rest)}
	}
	v, err := ConvertText(o.Data, o.RType)
	if err != nil {
		c.problem(path+".data", fmt.Sprintf("%q %s (rtype %s)", clip(o.Data), err, o.RType))
	}
	return operand{lit: v}
}

func (c *compiler) operandPtr(o *flow.Operand, path string) *operand {
	if o == nil {
		return nil
	}
	x := c.operand(*o, path)
	return &x
}

func (c *compiler) operands(list []flow.Operand, path string) []operand {
	out := make([]operand, len(list))
	for i, o := range list {
		out[i] = c.operand(o, fmt.Sprintf("%s[%d]", path, i))
	}
	return out
}

func (c *compiler) tests(list []flow.Condition, path string) []test {
	out := make([]test, len(list))
	for i, t := range list {
		p := fmt.Sprintf("%s[%d]", path, i)
		out[i] = test{left: c.operand(t.Left, p+".left"), right: c.operand(t.Right, p+".right"), op: opcodes[t.ConditionType],
			not: t.Not, or: i > 0 && list[i-1].Next == "OR"}
	}
	return out
}

func (c *compiler) filters(list []flow.Filter, path string) []test {
	out := make([]test, len(list))
	for i, f := range list {
		out[i] = c.filter(f, fmt.Sprintf("%s[%d]", path, i))
		out[i].or = i > 0 && list[i-1].Next == "OR"
	}
	return out
}

// filter compiles a filter: a comparison of each item with right.
func (c *compiler) filter(f flow.Filter, path string) test {
	if !opcodes[f.OperationType].comparison() {
		c.problem(path+".operation_type", "must be a comparison (EQUAL_TO … INCLUDES) in a filter")
	}
	return test{right: c.operand(f.Right, path+".right"), op: opcodes[f.OperationType], not: f.Not}
}

func (c *compiler) pairs(list []flow.Pair, path string) []pair {
	out := make([]pair, len(list))
	for i, p := range list {
		out[i] = pair{id: p.ID, v: c.operand(p.Data, fmt.Sprintf("%s[%d].data", path, i))}
	}
	return out
}

// clip shortens a literal quoted in a message.
func clip(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:37]) + "…"
	}
	return s
}
