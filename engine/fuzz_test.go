package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"stencil/flow"
)

// flowGen writes a flow from fuzz bytes: each byte picks the next choice,
// and the bytes running out pick the first of each.
type flowGen struct {
	data []byte
	i    int
}

func (g *flowGen) pick(n int) int {
	if g.i >= len(g.data) {
		return 0
	}
	g.i++
	return int(g.data[g.i-1]) % n
}

func (g *flowGen) of(choices ...string) string { return choices[g.pick(len(choices))] }

var fuzzNames = []string{"a", "b", "rows", "i", "item", "auth", "q"}

func (g *flowGen) name() string { return fuzzNames[g.pick(len(fuzzNames))] }

func (g *flowGen) operand() string {
	if g.pick(2) == 0 {
		name := g.name()
		return ref(name + g.of("", "", ".0", ".title", ".stock.count", ".1.tags"))
	}
	return g.of(num("0"), num("1"), num("-2.5"), num("1e300"), num("9007199254740993"), str("x"), str(""),
		lit("ARRAY", "[1,2,3]"), lit("ARRAY", "[]"), lit("OTHER", `{"k":[1,{"n":null}]}`), lit("BOOLEAN", "true"), lit("OTHER", "null"),
		lit("INTEGER", "3"), lit("STRING", "{}"))
}

func (g *flowGen) comparison() string {
	return g.of("EQUAL_TO", "NOT_EQUAL_TO", "GREATER_THAN", "LESS_THAN", "GREATER_THAN_OR_EQUAL_TO", "LESS_THAN_OR_EQUAL_TO", "INCLUDES")
}

func (g *flowGen) conditions() string {
	var out []string
	for range g.pick(3) {
		out = append(out, fmt.Sprintf(`{"left":%s,"right":%s,"condition_type":%q,"not":%v,"next":%q}`,
			g.operand(), g.operand(), g.comparison(), g.pick(2) == 1, g.of("NONE", "AND", "OR")))
	}
	return list(out...)
}

// block writes one block at depth.
func (g *flowGen) block(depth int) string {
	var b string
	switch g.pick(15) {
	case 0:
		b = fetch(g.name(), g.of("books", "empty", "nope"))
	case 1:
		var ops []string
		for range 1 + g.pick(3) {
			ops = append(ops, fmt.Sprintf(`{"left":%s,"right":%s,"operation_type":%q,"not":false,"next":%q}`, g.operand(), g.operand(),
				g.of("ADDITION", "SUBTRACTION", "MULTIPLICATION", "DIVISION", "MODULO", "NONE", "EQUAL_TO", "INCLUDES", "LESS_THAN"), g.of("NONE", "AND", "OR")))
		}
		b = fmt.Sprintf(`{"type":"ASSIGNMENT","depth":0,"local_name":%q,"conditions":%s,"operations":%s}`, g.name(), g.conditions(), list(ops...))
	case 2:
		b = fmt.Sprintf(`{"type":"TEMPLATE","depth":0,"local_name":%q,"conditions":[],"templatestring":%q,"data":%s}`, g.name(), g.of("{} and {}", "{}", "none"), list(g.operand(), g.operand()))
	case 3:
		b = fmt.Sprintf(`{"type":"CONDITION","depth":0,"conditions":%s,"action":%q,"fail":null}`, g.conditions(), g.of("FAIL", "BREAK", "CONTINUE"))
	case 4:
		b = fmt.Sprintf(`{"type":"LOOP","depth":0,"local_name":%q,"min":%s,"max":%s,"step":%s}`, g.name(), g.operand(), g.of(num("3"), num("1e9"), g.operand()), g.of(num("1"), num("-1"), g.operand()))
	case 5:
		b = fmt.Sprintf(`{"type":"FILTER","depth":0,"local_name":%q,"source":%q,"ref_property":%q,"filters":[{"right":%s,"operation_type":%q,"not":false,"next":"NONE"}]}`,
			g.name(), g.name(), g.of("", "title", "stock.count", "_id", "tags.0"), g.operand(), g.comparison())
	case 6:
		b = fmt.Sprintf(`{"type":"PROPERTY","depth":0,"local_name":%q,"data":%s,"apply":%q,"additional":%q}`, g.name(), g.operand(),
			g.of("LENGTH", "GET_INDEX", "GET_PROPERTY", "GET_FIRST", "GET_LAST"), g.of("0", "1", "title", "stock.count"))
	case 7:
		b = fmt.Sprintf(`{"type":"FUNCTION","depth":0,"local_name":%q,"func":%q,"params":%s}`, g.name(), g.of("PAGINATE", "V4", "GENERATE_TIMESTAMP"), list(g.operand(), g.operand()))
	case 8:
		b = fmt.Sprintf(`{"type":"OBJECT","depth":0,"local_name":%q,"pairs":%s}`, g.name(), pairs(g.name(), g.operand(), g.name(), g.operand()))
	case 9:
		b = fmt.Sprintf(`{"type":"UPDATE","depth":0,"ref_col":%q,"ref_property":%q,"save":%v,"set":%s,"add":null,"filter":null,"conditions":[],"targets":[{"field":"stock.count","conditions":[{"left":%s,"right":%s,"condition_type":"GREATER_THAN","not":false,"next":"NONE"}]}]}`,
			g.of("books", "nope"), g.of("stock.count", "title", ""), g.pick(2) == 1, g.operand(), ref("item"), g.operand())
	case 10:
		b = fmt.Sprintf(`{"type":"SIMPLE_UPDATE","depth":0,"ref_col":%q,"ref_property":%q,"save":%v,"set":%s,"targets":[{"field":"title","value":%s}]}`,
			g.of("books", "empty"), g.of("year", "stock"), g.pick(2) == 1, g.operand(), g.operand())
	case 11:
		b = fmt.Sprintf(`{"type":"CREATE","depth":0,"ref_col":%q,"ref_object":%q,"save":%v}`, g.of("books", "nope"), g.name(), g.pick(2) == 1)
	case 12:
		b = fmt.Sprintf(`{"type":"RETURN","depth":0,"pairs":%s,"conditions":%s}`, pairs(g.name(), g.operand()), g.conditions())
	case 13:
		b = fmt.Sprintf(`{"type":"VAULT","depth":0,"local_name":%q,"key":%q}`, g.name(), g.of("API_KEY", "MISSING"))
	default:
		b = fmt.Sprintf(`{"type":"EMAIL","depth":0,"template":"welcome","recipients":%s,"pairs":%s,"conditions":%s}`, list(g.operand()), pairs("x", g.operand()), g.conditions())
	}
	return at(depth, b)
}

// FuzzRun runs random valid routes with random inputs: a run never
// panics, never takes more block executions than its limit, answers JSON
// within the answer limit, and a fault names a block of the flow.
func FuzzRun(f *testing.F) {
	f.Add([]byte{4, 1, 0, 0, 1, 1, 3, 0, 0, 0, 5, 12, 2, 2}, "q")
	f.Add([]byte{0, 2, 0, 5, 1, 3, 0, 1, 2, 4, 7, 6, 0, 12, 1}, `{"k":1}`)
	f.Add([]byte{4, 2, 3, 1, 1, 1, 3, 0, 2, 0, 1, 5, 1, 1, 1, 0, 0, 1, 9, 11}, "")
	limits := Limits{Steps: 2000, Time: 2 * time.Second, Records: 2, Answer: 64 << 10}
	f.Fuzz(func(t *testing.T, shape []byte, input string) {
		g := &flowGen{data: shape}
		var blocks []string
		depth := 0
		for range 1 + g.pick(12) {
			b := g.block(depth)
			blocks = append(blocks, b)
			if strings.Contains(b, `"type":"LOOP"`) {
				depth++
			} else if depth > 0 && g.pick(3) == 0 {
				depth--
			}
		}
		doc := fmt.Sprintf(`{"project_id":"shop","route_id":"r","route_path":"/r/:q","method":"POST",
			"auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],
			"flow":{"blocks":[%s]},"template":null}`, strings.Join(blocks, ","))
		r, p := flow.DecodeRoute([]byte(doc), "")
		if len(p) > 0 {
			return
		}
		r.Normalize()
		if len(flow.ValidateRoute(r, "")) > 0 {
			return
		}
		plan, p := Compile(r, []string{"q"})
		if len(p) > 0 {
			return
		}
		res, err := Run(context.Background(), plan, map[string]any{"q": input}, books(), limits)
		if err != nil {
			t.Fatalf("a platform error from an env that has none: %v\n%s", err, doc)
		}
		if res.Steps > limits.Steps+1 {
			t.Fatalf("%d block executions, beyond the limit of %d\n%s", res.Steps, limits.Steps, doc)
		}
		if len(res.Body) > limits.Answer+1024 || !json.Valid(res.Body) {
			t.Fatalf("an answer of %d bytes, valid JSON %v\n%s", len(res.Body), json.Valid(res.Body), doc)
		}
		if res.Ended == "FAULT" && (res.Fault.Block < 0 || res.Fault.Block >= len(r.Flow.Blocks) || res.Status != 500) {
			t.Fatalf("a fault %+v that names no block of the flow\n%s", res.Fault, doc)
		}
	})
}
