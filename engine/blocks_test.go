package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"stencil/flow"
)

// blockCase runs blocks against an env holding a collection "books" and a
// vault, and checks the answer: its status and body, or (when body starts
// with "~") that the body matches that regular expression.
type blockCase struct {
	name   string
	blocks []string
	vars   map[string]any
	status int
	body   string
	after  func(t *testing.T, env *memEnv)
}

func books() *memEnv {
	env := newMemEnv()
	env.add("books",
		`{"title":"Dune","year":1965,"tags":["sf","classic"],"stock":{"shelf":"A3","count":4}}`,
		`{"title":"Emma","year":1815,"tags":["classic"],"stock":{"shelf":"B1","count":0}}`,
		`{"title":"Solaris","year":1961,"tags":["sf"],"stock":{"shelf":"A3","count":2}}`)
	env.add("empty")
	env.vault["API_KEY"] = "sk-secret-1"
	return env
}

func runCases(t *testing.T, cases []blockCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env := books()
			res, err := Run(context.Background(), compile(t, c.blocks...), c.vars, env, DefaultLimits)
			if err != nil {
				t.Fatalf("platform error: %v", err)
			}
			status := c.status
			if status == 0 {
				status = 200
			}
			if res.Status != status {
				t.Errorf("status %d, want %d (%s)", res.Status, status, res.Body)
			}
			if rx, ok := strings.CutPrefix(c.body, "~"); ok {
				if !regexp.MustCompile(rx).Match(res.Body) {
					t.Errorf("body %s does not match %s", res.Body, rx)
				}
			} else if string(res.Body) != c.body {
				t.Errorf("body\n  %s\nwant\n  %s", res.Body, c.body)
			}
			if c.after != nil {
				c.after(t, env)
			}
		})
	}
}

func TestValuesAndConditions(t *testing.T) {
	runCases(t, []blockCase{
		{name: "literals of every type", blocks: []string{returns("i", lit("INTEGER", "-42"), "f", lit("FLOAT", "2.5"), "s", str("x"),
			"b", lit("BOOLEAN", "true"), "a", lit("ARRAY", `[1,"two",null]`), "o", lit("OTHER", `{"k":[true]}`), "n", lit("OTHER", "null"))},
			body: `{"i":-42,"f":2.5,"s":"x","b":true,"a":[1,"two",null],"o":{"k":[true]},"n":null}`},
		{name: "a variable never set is null, and so is a missing path", blocks: []string{
			assign("o", lit("OTHER", `{"a":{"b":[10,20]}}`)),
			returns("u", ref("nothing"), "deep", ref("o.a.b.1"), "missing", ref("o.a.x.y"), "beyond", ref("o.a.b.9"), "into_scalar", ref("o.a.b.0.z"))},
			body: `{"u":null,"deep":20,"missing":null,"beyond":null,"into_scalar":null}`},
		{name: "a repeated pair keeps its last value in its place", blocks: []string{returns("a", num("1"), "b", num("2"), "a", num("3"))},
			body: `{"b":2,"a":3}`},
		{name: "no RETURN answers OK", blocks: []string{assign("x", num("1"))}, body: `{"status":200,"message":"OK"}`},
		{name: "an empty flow answers OK", body: `{"status":200,"message":"OK"}`},
	})
}

// check returns a flow that answers {"r": <whether the conditions hold>}.
func check(conds ...string) []string {
	return []string{
		`{"type":"CONDITION","depth":0,"conditions":` + list(conds...) + `,"action":"FAIL","fail":{"status":409,"message":"held"}}`,
		returns("r", lit("BOOLEAN", "false")),
	}
}

func TestComparisons(t *testing.T) {
	held, not := `{"status":409,"message":"Error: held"}`, `{"r":false}`
	cases := []struct {
		name  string
		conds []string
		holds bool
	}{
		{"numbers numerically", []string{cond(num("10"), "GREATER_THAN", num("9"), "")}, true},
		{"strings by code point", []string{cond(str("10"), "GREATER_THAN", str("9"), "")}, false},
		{"a number is not equal to its text", []string{cond(num("1"), "EQUAL_TO", str("1"), "")}, false},
		{"an integer equals the same float", []string{cond(lit("INTEGER", "2"), "EQUAL_TO", lit("FLOAT", "2.0"), "")}, true},
		{"deep equality of objects, whatever the key order", []string{cond(lit("OTHER", `{"a":1,"b":[1,{"c":2}]}`), "EQUAL_TO", lit("OTHER", `{"b":[1,{"c":2}],"a":1}`), "")}, true},
		{"arrays in order", []string{cond(lit("ARRAY", `[1,2]`), "EQUAL_TO", lit("ARRAY", `[2,1]`), "")}, false},
		{"null equals null (a missing variable)", []string{cond(ref("missing"), "EQUAL_TO", lit("OTHER", "null"), "")}, true},
		{"no order between a number and null", []string{cond(ref("missing"), "LESS_THAN", num("1"), "")}, false},
		{"not of no order holds", []string{notCond(ref("missing"), "GREATER_THAN_OR_EQUAL_TO", num("1"))}, true},
		{"less or equal", []string{cond(num("3"), "LESS_THAN_OR_EQUAL_TO", num("3"), "")}, true},
		{"not equal", []string{cond(str("a"), "NOT_EQUAL_TO", str("b"), "")}, true},
		{"INCLUDES an array item", []string{cond(lit("ARRAY", `["sf",{"a":1}]`), "INCLUDES", lit("OTHER", `{"a":1}`), "")}, true},
		{"INCLUDES a substring", []string{cond(str("science fiction"), "INCLUDES", str("fic"), "")}, true},
		{"INCLUDES an object key", []string{cond(lit("OTHER", `{"shelf":"A3"}`), "INCLUDES", str("shelf"), "")}, true},
		{"INCLUDES in a number does not hold", []string{cond(num("12"), "INCLUDES", num("1"), "")}, false},
		{"not negates", []string{notCond(num("1"), "EQUAL_TO", num("1"))}, false},
		{"an empty list holds", nil, true},
		{"AND of true and false", []string{cond(num("1"), "EQUAL_TO", num("1"), "AND"), cond(num("1"), "EQUAL_TO", num("2"), "")}, false},
		{"NONE joins as AND", []string{cond(num("1"), "EQUAL_TO", num("1"), "NONE"), cond(num("1"), "EQUAL_TO", num("2"), "")}, false},
		{"OR of false and true", []string{cond(num("1"), "EQUAL_TO", num("2"), "OR"), cond(num("1"), "EQUAL_TO", num("1"), "")}, true},
		// Left to right, no precedence: (true OR false) AND false.
		{"left to right", []string{cond(num("1"), "EQUAL_TO", num("1"), "OR"), cond(num("1"), "EQUAL_TO", num("2"), "AND"), cond(num("1"), "EQUAL_TO", num("2"), "")}, false},
		// (false AND x) OR true.
		{"left to right, OR last", []string{cond(num("1"), "EQUAL_TO", num("2"), "AND"), cond(num("1"), "EQUAL_TO", num("1"), "OR"), cond(num("1"), "EQUAL_TO", num("1"), "")}, true},
	}
	var bc []blockCase
	for _, c := range cases {
		want := blockCase{name: c.name, blocks: check(c.conds...), body: not}
		if c.holds {
			want.status, want.body = 409, held
		}
		bc = append(bc, want)
	}
	runCases(t, bc)
}

func TestAssignment(t *testing.T) {
	a := func(ops ...string) string {
		return `{"type":"ASSIGNMENT","depth":0,"local_name":"x","conditions":[],"operations":` + list(ops...) + `}`
	}
	fault := func(reason string) string {
		return `~^\{"status":500,"message":"Error: flow.blocks\[0\] \(ASSIGNMENT\): ` + reason
	}
	runCases(t, []blockCase{
		{name: "addition", blocks: []string{a(op(num("2"), "ADDITION", num("3"))), returns("x", ref("x"))}, body: `{"x":5}`},
		{name: "subtraction, multiplication", blocks: []string{a(op(num("2"), "SUBTRACTION", num("3"))), assign("y", ref("x")),
			a(op(ref("y"), "MULTIPLICATION", num("1.5"))), returns("x", ref("x"))}, body: `{"x":-1.5}`},
		{name: "division is exact", blocks: []string{a(op(lit("INTEGER", "7"), "DIVISION", lit("INTEGER", "2"))), returns("x", ref("x"))}, body: `{"x":3.5}`},
		{name: "modulo", blocks: []string{a(op(num("7"), "MODULO", num("3"))), returns("x", ref("x"))}, body: `{"x":1}`},
		{name: "text joins with a number", blocks: []string{a(op(str("n="), "ADDITION", num("4"))), returns("x", ref("x"))}, body: `{"x":"n=4"}`},
		{name: "arrays join", blocks: []string{a(op(lit("ARRAY", "[1]"), "ADDITION", lit("ARRAY", "[2,3]"))), returns("x", ref("x"))}, body: `{"x":[1,2,3]}`},
		{name: "a comparison gives a boolean", blocks: []string{a(op(num("2"), "LESS_THAN", num("3"))), returns("x", ref("x"))}, body: `{"x":true}`},
		{name: "NONE gives the left value", blocks: []string{a(op(lit("OTHER", `{"a":1}`), "NONE", num("9"))), returns("x", ref("x"))}, body: `{"x":{"a":1}}`},
		{name: "several operations are joined as truths", blocks: []string{
			a(strings.Replace(op(num("1"), "EQUAL_TO", num("2")), `"next":"NONE"`, `"next":"OR"`, 1), op(num("1"), "EQUAL_TO", num("1"))), returns("x", ref("x"))}, body: `{"x":true}`},
		{name: "no operations is null", blocks: []string{a(), returns("x", ref("x"))}, body: `{"x":null}`},
		{name: "conditions that do not hold give null", blocks: []string{assign("x", num("1")),
			`{"type":"ASSIGNMENT","depth":0,"local_name":"x","conditions":[` + cond(num("1"), "EQUAL_TO", num("2"), "") + `],"operations":[` + op(num("5"), "NONE", num("0")) + `]}`,
			returns("x", ref("x"))}, body: `{"x":null}`},
		{name: "division by zero", blocks: []string{a(op(num("1"), "DIVISION", num("0")))}, status: 500, body: fault(`operations\[0\]: division by zero"\}$`)},
		{name: "modulo by zero", blocks: []string{a(op(num("1"), "MODULO", num("0")))}, status: 500, body: fault(`operations\[0\]: division by zero`)},
		{name: "subtracting a string", blocks: []string{a(op(num("1"), "SUBTRACTION", str("a")))}, status: 500, body: fault(`operations\[0\]: SUBTRACTION needs two numbers, not a number and a string`)},
		{name: "adding null to a number", blocks: []string{a(op(ref("nothing"), "ADDITION", num("1")))}, status: 500, body: fault(`operations\[0\]: ADDITION needs two numbers, not null and a number`)},
		{name: "a number beyond range", blocks: []string{a(op(num("1e308"), "MULTIPLICATION", num("10")))}, status: 500, body: fault(`operations\[0\]: MULTIPLICATION gives a number beyond`)},
		{name: "joined operations that are not truths", blocks: []string{a(strings.Replace(op(num("1"), "ADDITION", num("2")), `"next":"NONE"`, `"next":"AND"`, 1), op(num("1"), "EQUAL_TO", num("1")))},
			status: 500, body: fault(`operations\[0\] gives a number: operations joined by AND or OR`)},
	})
}

func TestTemplateBlock(t *testing.T) {
	tpl := func(s string, conds string, data ...string) string {
		return fmt.Sprintf(`{"type":"TEMPLATE","depth":0,"local_name":"x","templatestring":%q,"data":%s,"conditions":[%s]}`, s, list(data...), conds)
	}
	runCases(t, []blockCase{
		{name: "slots filled in order", blocks: []string{tpl("{} wrote {} in {}", "", str("Herbert"), str("Dune"), num("1965")), returns("x", ref("x"))},
			body: `{"x":"Herbert wrote Dune in 1965"}`},
		{name: "objects as JSON, null as nothing, missing data as nothing", blocks: []string{tpl("[{}|{}|{}]", "", lit("OTHER", `{"a":[1]}`), ref("none")), returns("x", ref("x"))},
			body: `{"x":"[{\"a\":[1]}||]"}`},
		{name: "extra data is ignored", blocks: []string{tpl("only {}", "", str("one"), str("two")), returns("x", ref("x"))}, body: `{"x":"only one"}`},
		{name: "conditions that do not hold leave the variable", blocks: []string{assign("x", str("before")),
			tpl("after", cond(num("1"), "EQUAL_TO", num("2"), "")), returns("x", ref("x"))}, body: `{"x":"before"}`},
	})
}

func TestConditionBlock(t *testing.T) {
	c := func(conds, action, fail string) string {
		return fmt.Sprintf(`{"type":"CONDITION","depth":0,"conditions":[%s],"action":%q,"fail":%s}`, conds, action, fail)
	}
	runCases(t, []blockCase{
		{name: "FAIL answers its status and message", blocks: []string{c(cond(ref("n"), "EQUAL_TO", num("0"), ""), "FAIL", `{"status":404,"message":"no \"book\" here"}`), returns("x", num("1"))},
			vars: map[string]any{"n": 0.0}, status: 404, body: `{"status":404,"message":"Error: no \"book\" here"}`},
		{name: "a FAIL that does not hold goes on", blocks: []string{c(cond(ref("n"), "EQUAL_TO", num("0"), ""), "FAIL", `{"status":404,"message":"no"}`), returns("x", num("1"))},
			vars: map[string]any{"n": 1.0}, body: `{"x":1}`},
		{name: "FAIL without fail answers 400", blocks: []string{c("", "FAIL", "null")}, status: 400, body: `{"status":400,"message":"Error: condition failed"}`},
	})
}

func loop(name, min, max, step string) string {
	return fmt.Sprintf(`{"type":"LOOP","depth":0,"local_name":%q,"min":%s,"max":%s,"step":%s}`, name, min, max, step)
}

func TestLoopBlock(t *testing.T) {
	sum := at(1, `{"type":"ASSIGNMENT","depth":0,"local_name":"sum","conditions":[],"operations":[`+op(ref("sum"), "ADDITION", ref("i"))+`]}`)
	breakIf := func(depth int, conds string, action string) string {
		return at(depth, fmt.Sprintf(`{"type":"CONDITION","depth":0,"conditions":[%s],"action":%q,"fail":null}`, conds, action))
	}
	runCases(t, []blockCase{
		{name: "counts from min while below max", blocks: []string{assign("sum", num("0")), loop("i", num("0"), num("5"), num("1")), sum, returns("sum", ref("sum"), "i", ref("i"))},
			body: `{"sum":10,"i":4}`},
		{name: "by step", blocks: []string{assign("sum", num("0")), loop("i", num("1"), num("10"), num("3")), sum, returns("sum", ref("sum"))}, body: `{"sum":12}`},
		{name: "a null step is 1", blocks: []string{assign("sum", num("0")), loop("i", num("0"), num("3"), lit("OTHER", "null")), sum, returns("sum", ref("sum"))}, body: `{"sum":3}`},
		{name: "a negative step counts down while above max", blocks: []string{assign("sum", num("0")), loop("i", num("3"), num("0"), num("-1")), sum, returns("sum", ref("sum"))}, body: `{"sum":6}`},
		{name: "min not below max runs no turn", blocks: []string{assign("sum", num("0")), loop("i", num("5"), num("5"), num("1")), sum, returns("sum", ref("sum"), "i", ref("i"))}, body: `{"sum":0,"i":null}`},
		{name: "BREAK leaves the innermost loop", blocks: []string{assign("sum", num("0")), loop("i", num("0"), num("10"), num("1")),
			breakIf(1, cond(ref("i"), "EQUAL_TO", num("4"), ""), "BREAK"), sum, returns("sum", ref("sum"))}, body: `{"sum":6}`},
		{name: "CONTINUE skips the rest of the turn", blocks: []string{assign("sum", num("0")), loop("i", num("0"), num("6"), num("1")),
			breakIf(1, cond(ref("i"), "LESS_THAN", num("3"), ""), "CONTINUE"), sum, returns("sum", ref("sum"))}, body: `{"sum":12}`},
		{name: "nested loops: BREAK ends only the inner one", blocks: []string{assign("sum", num("0")),
			loop("i", num("0"), num("3"), num("1")),
			at(1, loop("j", num("0"), num("100"), num("1"))),
			breakIf(2, cond(ref("j"), "EQUAL_TO", num("2"), ""), "BREAK"),
			at(2, `{"type":"ASSIGNMENT","depth":0,"local_name":"sum","conditions":[],"operations":[`+op(ref("sum"), "ADDITION", num("1"))+`]}`),
			returns("sum", ref("sum"))}, body: `{"sum":6}`},
		{name: "RETURN inside a loop ends the run", blocks: []string{loop("i", num("0"), num("10"), num("1")),
			at(1, `{"type":"RETURN","depth":0,"pairs":`+pairs("i", ref("i"))+`,"conditions":[`+cond(ref("i"), "EQUAL_TO", num("7"), "")+`]}`),
			returns("i", str("never"))}, body: `{"i":7}`},
		{name: "step 0 is a fault", blocks: []string{loop("i", num("0"), num("1"), num("0"))}, status: 500,
			body: `{"status":500,"message":"Error: flow.blocks[0] (LOOP): step is 0: the loop would never end"}`},
		{name: "a max that is not a number", blocks: []string{loop("i", num("0"), str("10"), num("1"))}, status: 500,
			body: `{"status":500,"message":"Error: flow.blocks[0] (LOOP): max is a string, not a number"}`},
	})
}

func filterBlock(source, property string, filters ...string) string {
	return fmt.Sprintf(`{"type":"FILTER","depth":0,"local_name":"out","source":%q,"ref_property":%q,"filters":%s}`, source, property, list(filters...))
}

func fetch(name, col string) string {
	return fmt.Sprintf(`{"type":"FETCH","depth":0,"local_name":%q,"ref_col":%q}`, name, col)
}

func TestFetchAndFilter(t *testing.T) {
	titles := `{"type":"ASSIGNMENT","depth":0,"local_name":"n","conditions":[],"operations":[` + op(ref("out"), "NONE", num("0")) + `]}`
	runCases(t, []blockCase{
		{name: "FETCH gives records in id order with _id", blocks: []string{fetch("rows", "books"), returns("first", ref("rows.0"), "n", ref("rows.2.title"))},
			body: `{"first":{"_id":1,"stock":{"count":4,"shelf":"A3"},"tags":["sf","classic"],"title":"Dune","year":1965},"n":"Solaris"}`},
		{name: "FETCH of an empty collection", blocks: []string{fetch("rows", "empty"), returns("rows", ref("rows"))}, body: `{"rows":[]}`},
		{name: "FETCH of an unknown collection", blocks: []string{fetch("rows", "nope")}, status: 500,
			body: `{"status":500,"message":"Error: flow.blocks[0] (FETCH): collection nope does not exist"}`},
		{name: "FILTER by a nested property", blocks: []string{fetch("rows", "books"), filterBlock("rows", "stock.shelf", filt("EQUAL_TO", str("A3"), "")), returns("out", ref("out.1._id"))},
			body: `{"out":3}`},
		{name: "FILTER with INCLUDES on an array property", blocks: []string{fetch("rows", "books"), filterBlock("rows", "tags", filt("INCLUDES", str("classic"), "")), titles, returns("n", ref("n.1.title"))},
			body: `{"n":"Emma"}`},
		{name: "FILTER with AND and OR", blocks: []string{fetch("rows", "books"),
			filterBlock("rows", "year", filt("LESS_THAN", num("1900"), "OR"), filt("GREATER_THAN", num("1964"), "")), returns("n", ref("out.0.title"), "m", ref("out.1.title"))},
			body: `{"n":"Dune","m":"Emma"}`},
		// FETCH keeps records as read until a block needs more than a
		// FILTER's property or a PAGINATE's page: the answers are those
		// of records decoded at once.
		{name: "FILTER by _id, PAGINATE the kept, and the read records whole", blocks: []string{fetch("rows", "books"),
			filterBlock("rows", "_id", filt("GREATER_THAN", num("1"), "")),
			`{"type":"FUNCTION","depth":0,"local_name":"page","func":"PAGINATE","params":[` + ref("out") + `,` + num("1") + `,` + num("1") + `]}`,
			returns("page", ref("page"), "kept", ref("out.0.title"), "all", ref("rows.2.stock"))},
			body: `{"page":[{"_id":3,"stock":{"count":2,"shelf":"A3"},"tags":["sf"],"title":"Solaris","year":1961}],"kept":"Emma","all":{"count":2,"shelf":"A3"}}`},
		{name: "FILTER by an array index and a missing path of records", blocks: []string{fetch("rows", "books"),
			filterBlock("rows", "tags.0", filt("EQUAL_TO", str("sf"), "")), `{"type":"FILTER","depth":0,"local_name":"none","source":"out","ref_property":"stock.count.deeper","filters":[` + filt("NOT_EQUAL_TO", `{"ref_var":false,"rtype":"OTHER","data":"null"}`, "") + `]}`,
			returns("ids", ref("out"), "none", ref("none"))},
			body: `{"ids":[{"_id":1,"stock":{"count":4,"shelf":"A3"},"tags":["sf","classic"],"title":"Dune","year":1965},{"_id":3,"stock":{"count":2,"shelf":"A3"},"tags":["sf"],"title":"Solaris","year":1961}],"none":[]}`},
		{name: "FILTER of records by the whole record", blocks: []string{fetch("rows", "books"),
			filterBlock("rows", "", filt("EQUAL_TO", `{"ref_var":false,"rtype":"OTHER","data":"null"}`, "")), returns("out", ref("out"))},
			body: `{"out":[]}`},
		{name: "FILTER of items themselves (empty ref_property)", blocks: []string{assign("xs", lit("ARRAY", `[1,5,null,"7",9]`)), filterBlock("xs", "", filt("GREATER_THAN", num("4"), "")), returns("out", ref("out"))},
			body: `{"out":[5,9]}`},
		{name: "FILTER with not", blocks: []string{assign("xs", lit("ARRAY", `[1,2,3]`)),
			filterBlock("xs", "", `{"right":`+num("2")+`,"operation_type":"EQUAL_TO","not":true,"next":"NONE"}`), returns("out", ref("out"))}, body: `{"out":[1,3]}`},
		{name: "FILTER of an empty array", blocks: []string{assign("xs", lit("ARRAY", `[]`)), filterBlock("xs", "", filt("EQUAL_TO", num("1"), "")), returns("out", ref("out"))}, body: `{"out":[]}`},
		{name: "FILTER without filters keeps all", blocks: []string{assign("xs", lit("ARRAY", `[1,2]`)), filterBlock("xs", ""), returns("out", ref("out"))}, body: `{"out":[1,2]}`},
		{name: "FILTER of a source path", blocks: []string{assign("o", lit("OTHER", `{"list":[{"a":1},{"a":2}]}`)), filterBlock("o.list", "a", filt("EQUAL_TO", num("2"), "")), returns("out", ref("out"))},
			body: `{"out":[{"a":2}]}`},
		{name: "FILTER over a non-array", blocks: []string{assign("xs", str("abc")), filterBlock("xs", "", filt("EQUAL_TO", num("1"), ""))}, status: 500,
			body: `{"status":500,"message":"Error: flow.blocks[1] (FILTER): source is a string, not an array"}`},
		{name: "FILTER over null", blocks: []string{filterBlock("never", "", filt("EQUAL_TO", num("1"), ""))}, status: 500,
			body: `{"status":500,"message":"Error: flow.blocks[0] (FILTER): source is null, not an array"}`},
	})
}

func TestPropertyFunctionObject(t *testing.T) {
	prop := func(data, apply, additional string) string {
		return fmt.Sprintf(`{"type":"PROPERTY","depth":0,"local_name":"p","data":%s,"apply":%q,"additional":%q}`, data, apply, additional)
	}
	fn := func(name string, params ...string) string {
		return fmt.Sprintf(`{"type":"FUNCTION","depth":0,"local_name":"f","func":%q,"params":%s}`, name, list(params...))
	}
	arr := lit("ARRAY", `[10,20,30]`)
	runCases(t, []blockCase{
		{name: "LENGTH of an array, a string (characters), an object, null", blocks: []string{
			prop(arr, "LENGTH", ""), assign("a", ref("p")), prop(str("héllo"), "LENGTH", ""), assign("b", ref("p")),
			prop(lit("OTHER", `{"x":1,"y":2}`), "LENGTH", ""), assign("c", ref("p")), prop(ref("none"), "LENGTH", ""),
			returns("a", ref("a"), "b", ref("b"), "c", ref("c"), "d", ref("p"))}, body: `{"a":3,"b":5,"c":2,"d":0}`},
		{name: "LENGTH of a number", blocks: []string{prop(num("5"), "LENGTH", "")}, status: 500,
			body: `{"status":500,"message":"Error: flow.blocks[0] (PROPERTY): LENGTH of a number"}`},
		{name: "GET_FIRST, GET_LAST", blocks: []string{prop(arr, "GET_FIRST", ""), assign("a", ref("p")), prop(arr, "GET_LAST", ""), returns("a", ref("a"), "b", ref("p"))},
			body: `{"a":10,"b":30}`},
		{name: "GET_FIRST of an empty array and of null", blocks: []string{prop(lit("ARRAY", "[]"), "GET_FIRST", ""), assign("a", ref("p")), prop(ref("none"), "GET_LAST", ""),
			returns("a", ref("a"), "b", ref("p"))}, body: `{"a":null,"b":null}`},
		{name: "GET_INDEX in and beyond range", blocks: []string{prop(arr, "GET_INDEX", "1"), assign("a", ref("p")), prop(arr, "GET_INDEX", "3"), returns("a", ref("a"), "b", ref("p"))},
			body: `{"a":20,"b":null}`},
		{name: "GET_PROPERTY by a dot path", blocks: []string{prop(lit("OTHER", `{"a":{"b":[1,{"c":"deep"}]}}`), "GET_PROPERTY", "a.b.1.c"), returns("p", ref("p"))}, body: `{"p":"deep"}`},
		{name: "GET_FIRST of a string", blocks: []string{prop(str("abc"), "GET_FIRST", "")}, status: 500,
			body: `{"status":500,"message":"Error: flow.blocks[0] (PROPERTY): GET_FIRST of a string: data must be an array"}`},
		{name: "V4", blocks: []string{fn("V4"), returns("f", ref("f"))}, body: `~^\{"f":"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"\}$`},
		{name: "GENERATE_TIMESTAMP", blocks: []string{fn("GENERATE_TIMESTAMP"), returns("f", ref("f"))}, body: `~^\{"f":"20\d\d-\d\d-\d\dT\d\d:\d\d:\d\dZ"\}$`},
		{name: "PAGINATE with defaults", blocks: []string{fn("PAGINATE", lit("ARRAY", "[0,1,2,3,4,5,6,7,8,9,10,11]")), returns("f", ref("f"))}, body: `{"f":[0,1,2,3,4,5,6,7,8,9]}`},
		{name: "PAGINATE a page", blocks: []string{fn("PAGINATE", lit("ARRAY", "[0,1,2,3,4,5,6]"), num("3"), num("2")), returns("f", ref("f"))}, body: `{"f":[6]}`},
		{name: "PAGINATE beyond the end", blocks: []string{fn("PAGINATE", lit("ARRAY", "[0,1]"), num("3"), num("5")), returns("f", ref("f"))}, body: `{"f":[]}`},
		{name: "PAGINATE with null limit and page", blocks: []string{fn("PAGINATE", lit("ARRAY", "[0,1]"), ref("none"), ref("none")), returns("f", ref("f"))}, body: `{"f":[0,1]}`},
		{name: "PAGINATE with limit 0", blocks: []string{fn("PAGINATE", lit("ARRAY", "[0,1]"), num("0"))}, status: 500,
			body: `{"status":500,"message":"Error: flow.blocks[0] (FUNCTION): PAGINATE: params[1] must be a whole number from 1 to 1000000000"}`},
		{name: "PAGINATE with a string limit names its size, not its text", blocks: []string{fn("PAGINATE", lit("ARRAY", "[0,1]"), str("s3cr3t"))}, status: 500,
			body: `{"status":500,"message":"Error: flow.blocks[0] (FUNCTION): PAGINATE: params[1] must be a whole number from 1, not a string of 6 characters"}`},
		{name: "PAGINATE of null", blocks: []string{fn("PAGINATE", ref("none"))}, status: 500,
			body: `{"status":500,"message":"Error: flow.blocks[0] (FUNCTION): PAGINATE of null: params[0] must be an array"}`},
		{name: "OBJECT of pairs", blocks: []string{`{"type":"OBJECT","depth":0,"local_name":"o","pairs":` + pairs("title", str("Dune"), "n", num("1"), "none", ref("none")) + `}`,
			returns("o", ref("o"), "t", ref("o.title"))}, body: `{"o":{"n":1,"none":null,"title":"Dune"},"t":"Dune"}`},
		{name: "an empty OBJECT", blocks: []string{`{"type":"OBJECT","depth":0,"local_name":"o","pairs":[]}`, returns("o", ref("o"))}, body: `{"o":{}}`},
	})
}

func TestWrites(t *testing.T) {
	create := func(obj string, save bool) string {
		return fmt.Sprintf(`{"type":"CREATE","depth":0,"ref_col":"books","ref_object":%q,"save":%t,"conditions":[]}`, obj, save)
	}
	obj := `{"type":"OBJECT","depth":0,"local_name":"o","pairs":` + pairs("title", str("Kim"), "year", num("1901")) + `}`
	update := func(prop, targets, set, add, filter string, save bool) string {
		return fmt.Sprintf(`{"type":"UPDATE","depth":0,"ref_col":"books","ref_property":%q,"save":%t,"targets":%s,"set":%s,"add":%s,"filter":%s,"conditions":[]}`,
			prop, save, targets, set, add, filter)
	}
	simple := func(prop, targets, set string) string {
		return fmt.Sprintf(`{"type":"SIMPLE_UPDATE","depth":0,"ref_col":"books","ref_property":%q,"save":true,"targets":%s,"set":%s}`, prop, targets, set)
	}
	titleIs := func(title string) string {
		return `[{"field":"title","conditions":[` + cond(ref("item"), "EQUAL_TO", str(title), "") + `]}]`
	}
	dump := func(want string) func(*testing.T, *memEnv) {
		return func(t *testing.T, env *memEnv) {
			t.Helper()
			if got := env.dump("books"); got != want {
				t.Errorf("books:\n  %s\nwant\n  %s", got, want)
			}
		}
	}
	const (
		dune    = `1:{"stock":{"count":4,"shelf":"A3"},"tags":["sf","classic"],"title":"Dune","year":1965}`
		emma    = `2:{"stock":{"count":0,"shelf":"B1"},"tags":["classic"],"title":"Emma","year":1815}`
		solaris = `3:{"stock":{"count":2,"shelf":"A3"},"tags":["sf"],"title":"Solaris","year":1961}`
	)
	runCases(t, []blockCase{
		{name: "CREATE writes the object and gives it its _id", blocks: []string{obj, create("o", true), returns("o", ref("o"))},
			body: `{"o":{"_id":4,"title":"Kim","year":1901}}`, after: dump(dune + " " + emma + " " + solaris + ` 4:{"title":"Kim","year":1901}`)},
		{name: "CREATE without save writes nothing", blocks: []string{obj, create("o", false), returns("o", ref("o"))},
			body: `{"o":{"title":"Kim","year":1901}}`, after: dump(dune + " " + emma + " " + solaris)},
		{name: "CREATE of a fetched record drops its _id", blocks: []string{fetch("rows", "books"), `{"type":"PROPERTY","depth":0,"local_name":"r","data":` + ref("rows") + `,"apply":"GET_FIRST","additional":""}`,
			create("r", true), returns("id", ref("r._id"))}, body: `{"id":4}`,
			after: dump(dune + " " + emma + " " + solaris + " " + strings.Replace(dune, "1:", "4:", 1))},
		{name: "CREATE of a non-object", blocks: []string{assign("o", str("x")), create("o", true)}, status: 500,
			body: `{"status":500,"message":"Error: flow.blocks[1] (CREATE): ref_object is a string, not an object"}`},
		{name: "CREATE of a record over 64 KiB", blocks: []string{assign("o", lit("OTHER", `{"big":"`+strings.Repeat("x", 70<<10)+`"}`)), create("o", true)}, status: 500,
			body: `{"status":500,"message":"Error: flow.blocks[1] (CREATE): a record would pass 64 KiB"}`},
		{name: "CREATE of a string with NUL", blocks: []string{assign("o", lit("OTHER", `{"a":"x\u0000y"}`)), create("o", true)}, status: 500,
			body: `{"status":500,"message":"Error: flow.blocks[1] (CREATE): a record cannot hold a NUL character"}`},
		{name: "UPDATE sets a nested property of the records a target selects", blocks: []string{
			update("stock.count", titleIs("Emma"), num("9"), "null", "null", true)}, body: `{"status":200,"message":"OK"}`,
			after: dump(dune + " " + strings.Replace(emma, `"count":0`, `"count":9`, 1) + " " + solaris)},
		{name: "UPDATE without targets changes every record", blocks: []string{update("seen", "[]", lit("BOOLEAN", "true"), "null", "null", true)},
			body: `{"status":200,"message":"OK"}`, after: dump(strings.Replace(dune, `"stock"`, `"seen":true,"stock"`, 1) + " " +
				strings.Replace(emma, `"stock"`, `"seen":true,"stock"`, 1) + " " + strings.Replace(solaris, `"stock"`, `"seen":true,"stock"`, 1))},
		{name: "UPDATE adds to an array", blocks: []string{update("tags", titleIs("Solaris"), "null", str("polish"), "null", true)},
			after: dump(dune + " " + emma + " " + strings.Replace(solaris, `["sf"]`, `["sf","polish"]`, 1)), body: `{"status":200,"message":"OK"}`},
		{name: "UPDATE adds to a missing property", blocks: []string{update("notes", titleIs("Emma"), "null", str("first"), "null", true)},
			after: dump(dune + " " + strings.Replace(emma, `{"stock"`, `{"notes":["first"],"stock"`, 1) + " " + solaris), body: `{"status":200,"message":"OK"}`},
		{name: "UPDATE removes the items that pass its filter", blocks: []string{update("tags", "[]", "null", "null", filt("EQUAL_TO", str("classic"), ""), true)},
			after: dump(strings.Replace(dune, `["sf","classic"]`, `["sf"]`, 1) + " " + strings.Replace(emma, `["classic"]`, `[]`, 1) + " " + solaris), body: `{"status":200,"message":"OK"}`},
		{name: "UPDATE without save writes nothing", blocks: []string{update("title", "[]", str("x"), "null", "null", false)},
			after: dump(dune + " " + emma + " " + solaris), body: `{"status":200,"message":"OK"}`},
		{name: "UPDATE adding to a string", blocks: []string{update("title", "[]", "null", str("x"), "null", true)}, status: 500,
			body: `{"status":500,"message":"Error: flow.blocks[0] (UPDATE): add needs an array at \"title\", not a string"}`, after: dump(dune + " " + emma + " " + solaris)},
		{name: "UPDATE with nothing to do", blocks: []string{update("title", "[]", "null", "null", "null", true)}, status: 500,
			body: `{"status":500,"message":"Error: flow.blocks[0] (UPDATE): set, add or filter is required"}`},
		{name: "UPDATE of an unknown collection", blocks: []string{strings.Replace(update("x", "[]", num("1"), "null", "null", true), `"books"`, `"nope"`, 1)}, status: 500,
			body: `{"status":500,"message":"Error: flow.blocks[0] (UPDATE): collection nope does not exist"}`},
		{name: "SIMPLE_UPDATE sets where every target equals", blocks: []string{simple("stock.count", `[{"field":"stock.shelf","value":`+str("A3")+`},{"field":"year","value":`+num("1961")+`}]`, num("0"))},
			after: dump(dune + " " + emma + " " + strings.Replace(solaris, `"count":2`, `"count":0`, 1)), body: `{"status":200,"message":"OK"}`},
		{name: "SIMPLE_UPDATE compares arrays whole", blocks: []string{simple("title", `[{"field":"tags","value":`+lit("ARRAY", `["sf"]`)+`}]`, str("Solaris!"))},
			after: dump(dune + " " + emma + " " + strings.Replace(solaris, `"Solaris"`, `"Solaris!"`, 1)), body: `{"status":200,"message":"OK"}`},
		{name: "SIMPLE_UPDATE replaces a whole record", blocks: []string{simple("", `[{"field":"title","value":`+str("Emma")+`}]`, lit("OTHER", `{"title":"Emma","gone":true}`))},
			after: dump(dune + ` 2:{"gone":true,"title":"Emma"} ` + solaris), body: `{"status":200,"message":"OK"}`},
		{name: "SIMPLE_UPDATE of a whole record with a non-object", blocks: []string{simple("", `[]`, num("1"))}, status: 500,
			body: `{"status":500,"message":"Error: flow.blocks[0] (SIMPLE_UPDATE): a whole record must be set to an object, not a number"}`},
	})
}

func TestVaultAndEmail(t *testing.T) {
	email := func(recipients string, conds string) string {
		return fmt.Sprintf(`{"type":"EMAIL","depth":0,"template":"welcome","recipients":%s,"pairs":%s,"conditions":[%s]}`, recipients, pairs("name", str("Ada")), conds)
	}
	runCases(t, []blockCase{
		{name: "VAULT reads the value", blocks: []string{`{"type":"VAULT","depth":0,"local_name":"k","key":"API_KEY"}`, returns("k", ref("k"))},
			body: `{"k":"sk-secret-1"}`, after: func(t *testing.T, env *memEnv) {
				if len(env.reads) != 1 || env.reads[0] != "API_KEY" {
					t.Errorf("vault reads %v", env.reads)
				}
			}},
		{name: "VAULT of an unknown key", blocks: []string{`{"type":"VAULT","depth":0,"local_name":"k","key":"NOPE"}`}, status: 500,
			body: `{"status":500,"message":"Error: flow.blocks[0] (VAULT): vault key NOPE does not exist"}`},
		{name: "EMAIL queues a message", blocks: []string{assign("to", lit("ARRAY", `["b@example.com","c@example.com"]`)), email(list(str("a@example.com"), ref("to")), "")},
			body: `{"status":200,"message":"OK"}`, after: func(t *testing.T, env *memEnv) {
				if len(env.queued) != 1 || fmt.Sprint(env.queued[0]) != "{welcome [a@example.com b@example.com c@example.com] map[name:Ada]}" {
					t.Errorf("queued %v", env.queued)
				}
			}},
		{name: "EMAIL whose conditions do not hold", blocks: []string{email(list(str("a@example.com")), cond(num("1"), "EQUAL_TO", num("2"), ""))},
			body: `{"status":200,"message":"OK"}`, after: func(t *testing.T, env *memEnv) {
				if len(env.queued) != 0 {
					t.Errorf("queued %v", env.queued)
				}
			}},
		{name: "EMAIL to a number", blocks: []string{email(list(num("1")), "")}, status: 500,
			body: `{"status":500,"message":"Error: flow.blocks[0] (EMAIL): recipients[0] is a number, not an address"}`},
		{name: "EMAIL to nobody", blocks: []string{email("[]", "")}, status: 500,
			body: `{"status":500,"message":"Error: flow.blocks[0] (EMAIL): the message has no recipient"}`},
		{name: "EMAIL to 50", blocks: []string{assign("to", lit("ARRAY", `["a@x.io"`+strings.Repeat(`,"a@x.io"`, 49)+`]`)), email(list(ref("to")), "")},
			body: `{"status":200,"message":"OK"}`},
		{name: "EMAIL to 51", blocks: []string{assign("to", lit("ARRAY", `["a@x.io"`+strings.Repeat(`,"a@x.io"`, 50)+`]`)), email(list(ref("to")), "")}, status: 500,
			body: `{"status":500,"message":"Error: flow.blocks[1] (EMAIL): a message has at most 50 recipients, not 51"}`},
		{name: "100 messages in a run", blocks: []string{loop("i", num("0"), num("100"), num("1")), at(1, email(list(str("a@example.com")), ""))},
			body: `{"status":200,"message":"OK"}`, after: func(t *testing.T, env *memEnv) {
				if len(env.queued) != 100 {
					t.Errorf("queued %d", len(env.queued))
				}
			}},
		{name: "101 messages in a run", blocks: []string{loop("i", num("0"), num("3000"), num("1")), at(1, email(list(str("a@example.com")), ""))}, status: 500,
			body: `{"status":500,"message":"Error: flow.blocks[1] (EMAIL): a run queues at most 100 messages"}`},
	})
}

func TestLimits(t *testing.T) {
	small := Limits{Steps: 1000, Time: time.Second, Records: 2, Answer: 64}
	cases := []struct {
		name   string
		blocks []string
		want   string
	}{
		{"block executions", []string{loop("i", num("0"), num("1e9"), num("1"))}, "flow.blocks[0] (LOOP): the run passed its limit of 1000 block executions"},
		{"records per read", []string{fetch("rows", "books")}, "flow.blocks[0] (FETCH): collection books has more than 2 records, the limit of one read"},
		{"answer size", []string{returns("x", str(strings.Repeat("x", 100)))}, "flow.blocks[0] (RETURN): the answer passes its limit of 4 MiB"},
		{"a doubling string", []string{assign("s", str("xx")), loop("i", num("0"), num("100"), num("1")),
			at(1, `{"type":"ASSIGNMENT","depth":0,"local_name":"s","conditions":[],"operations":[`+op(ref("s"), "ADDITION", ref("s"))+`]}`)},
			"flow.blocks[2] (ASSIGNMENT): operations[0]: a string would pass 4 MiB"},
		{"an object holding itself, doubling", []string{assign("o", lit("OTHER", "{}")), loop("i", num("0"), num("200"), num("1")),
			at(1, `{"type":"OBJECT","depth":0,"local_name":"o","pairs":`+pairs("a", ref("o"), "b", ref("o"))+`}`), returns("o", ref("o"))},
			"flow.blocks[3] (RETURN): the answer passes its limit of 4 MiB"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			limits := small
			if strings.Contains(c.name, "doubling") {
				limits = DefaultLimits
			}
			res, err := Run(context.Background(), compile(t, c.blocks...), nil, books(), limits)
			if err != nil {
				t.Fatal(err)
			}
			if res.Ended != "FAULT" || res.Status != 500 || res.Fault.Error() != c.want {
				t.Fatalf("%s %d %v, want the fault %q", res.Ended, res.Status, res.Fault, c.want)
			}
			if res.Commit() {
				t.Fatal("a fault commits")
			}
		})
	}
	t.Run("time", func(t *testing.T) {
		limits := Limits{Steps: 1 << 30, Time: 50 * time.Millisecond, Records: 10, Answer: 1 << 20}
		res, err := Run(context.Background(), compile(t, loop("i", num("0"), num("1e12"), num("1"))), nil, books(), limits)
		if err != nil {
			t.Fatal(err)
		}
		if res.Fault == nil || !strings.Contains(res.Fault.Reason, "time limit of 50ms") {
			t.Fatalf("%s %v", res.Ended, res.Fault)
		}
	})
}

func TestCompileRefuses(t *testing.T) {
	cases := []struct {
		name  string
		block string
		path  string
		msg   string
	}{
		{"an INTEGER literal that is not one", assign("x", lit("INTEGER", "1.5")), "flow.blocks[0].operations[0].left.data", `"1.5" must be an integer`},
		{"a BOOLEAN literal", returns("x", lit("BOOLEAN", "yes")), "flow.blocks[0].pairs[0].data.data", `"yes" must be true or false`},
		{"an ARRAY literal that is an object", returns("x", lit("ARRAY", "{}")), "flow.blocks[0].pairs[0].data.data", `"{}" must be an array, not an object`},
		{"broken JSON", returns("x", lit("OTHER", "{")), "flow.blocks[0].pairs[0].data.data", `"{" must be JSON`},
		{"a FLOAT beyond range", returns("x", lit("FLOAT", "1e999")), "flow.blocks[0].pairs[0].data.data", "must be a finite number"},
		{"BREAK outside a LOOP", `{"type":"CONDITION","depth":0,"conditions":[],"action":"BREAK","fail":null}`, "flow.blocks[0].action", "BREAK must be inside a LOOP"},
		{"GET_INDEX of a name", `{"type":"PROPERTY","depth":0,"local_name":"p","data":` + ref("x") + `,"apply":"GET_INDEX","additional":"first"}`, "flow.blocks[0].additional", "must be an index"},
		{"an arithmetic filter", filterBlock("xs", "", filt("ADDITION", num("1"), "")), "flow.blocks[0].filters[0].operation_type", "must be a comparison"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, p := Compile(route(t, "POST", c.block), nil)
			if !strings.Contains(p[c.path], c.msg) {
				t.Fatalf("problems %v, want %s: %s", p, c.path, c.msg)
			}
		})
	}
}

func TestInputsAndPlatformErrors(t *testing.T) {
	plan := compile(t, returns("id", ref("id"), "q", ref("q.a"), "who", ref("auth.username")))
	res, err := Run(context.Background(), plan, map[string]any{"id": "42", "q": map[string]any{"a": 1.0}, "auth": map[string]any{"username": "ada"}, "unused": 1.0}, books(), DefaultLimits)
	if err != nil || string(res.Body) != `{"id":"42","q":1,"who":"ada"}` {
		t.Fatalf("%s %v", res.Body, err)
	}
	env := books()
	env.fail = fmt.Errorf("connection reset")
	if _, err := Run(context.Background(), compile(t, fetch("rows", "books")), nil, env, DefaultLimits); err == nil || err.Error() != "connection reset" {
		t.Fatalf("a platform error is not passed on: %v", err)
	}
}

// TestCompileWarns: a variable used before any block sets it is warned of
// once, at its first use; inputs, earlier blocks' variables, a LOOP's
// counter in its body and item in UPDATE's targets are set. The
// collections the flow names are listed for the caller to check.
func TestCompileWarns(t *testing.T) {
	plan := compile(t,
		returns("early", ref("later")),
		assign("later", num("1")),
		returns("fine", ref("later.x"), "again", ref("nowhere"), "twice", ref("nowhere")),
		`{"type":"LOOP","depth":0,"local_name":"i","min":`+num("0")+`,"max":`+num("2")+`,"step":`+num("1")+`}`,
		`{"type":"ASSIGNMENT","depth":1,"local_name":"sum","conditions":[],"operations":[`+op(ref("i"), "ADDITION", ref("sum"))+`]}`,
		fetch("rows", "books"),
		filterBlock("rows.list", "", filt("EQUAL_TO", ref("auth.uid"), "")),
		`{"type":"UPDATE","depth":0,"ref_col":"shelves","ref_property":"n","save":true,"set":`+ref("item")+`,"add":null,"filter":null,"conditions":[],"targets":[{"field":"n","conditions":[`+cond(ref("item"), "EQUAL_TO", num("1"), "")+`]}]}`,
		`{"type":"CREATE","depth":0,"ref_col":"books","ref_object":"draft","save":true}`,
	)
	want := []string{
		"later is used before any block sets it (flow.blocks[0].pairs[0].data.data)",
		"nowhere is used before any block sets it (flow.blocks[2].pairs[1].data.data)",
		"sum is used before any block sets it (flow.blocks[4].operations[0].right.data)",
		"auth is used before any block sets it (flow.blocks[6].filters[0].right.data)",
		"item is used before any block sets it (flow.blocks[7].set.data)",
		"draft is used before any block sets it (flow.blocks[8].ref_object)",
		// The first RETURN has no conditions: nothing after it runs.
		"flow.blocks[1] (ASSIGNMENT) never runs: Block 1 (RETURN) answers first, and neither do the 7 after it",
	}
	if strings.Join(flow.Lines(plan.Warnings), "\n") != strings.Join(want, "\n") {
		t.Fatalf("warnings:\n%s\nwant:\n%s", strings.Join(flow.Lines(plan.Warnings), "\n"), strings.Join(want, "\n"))
	}
	cols := fmt.Sprint(plan.Collections)
	if cols != "[{books flow.blocks[5].ref_col} {shelves flow.blocks[7].ref_col} {books flow.blocks[8].ref_col}]" {
		t.Fatalf("collections: %s", cols)
	}
}

// TestEqualityOfSharedValues: an OBJECT that holds one variable twice, in
// a LOOP, makes a value whose tree doubles each turn; comparing two such
// values takes as long as the memory they use, not the tree.
func TestEqualityOfSharedValues(t *testing.T) {
	doubling := func(name, leaf string) []string {
		return []string{
			assign(name, leaf),
			`{"type":"LOOP","depth":0,"local_name":"i","min":` + num("0") + `,"max":` + num("80") + `,"step":` + num("1") + `}`,
			at(1, `{"type":"OBJECT","depth":0,"local_name":"`+name+`","pairs":`+pairs("x", ref(name), "y", ref(name))+`}`),
		}
	}
	var blocks []string
	blocks = append(blocks, doubling("o", num("1"))...)
	blocks = append(blocks, doubling("same", num("1"))...)
	blocks = append(blocks, doubling("other", num("2"))...)
	blocks = append(blocks,
		`{"type":"ASSIGNMENT","depth":0,"local_name":"eq","conditions":[],"operations":[`+op(ref("o"), "EQUAL_TO", ref("same"))+`]}`,
		`{"type":"ASSIGNMENT","depth":0,"local_name":"ne","conditions":[],"operations":[`+op(ref("o"), "EQUAL_TO", ref("other"))+`]}`,
		`{"type":"ASSIGNMENT","depth":0,"local_name":"in","conditions":[],"operations":[`+op(lit("ARRAY", "[1]"), "ADDITION", lit("ARRAY", "[]"))+`]}`,
		returns("eq", ref("eq"), "ne", ref("ne")))
	res, err := Run(context.Background(), compile(t, blocks...), nil, books(), DefaultLimits)
	if err != nil || string(res.Body) != `{"eq":true,"ne":false}` {
		t.Fatalf("%s %v", res.Body, err)
	}
	// A pair of arrays met again, longer: the memory of the shorter pair
	// does not answer for it.
	a, b := []any{1.0, 2.0, 3.0}, []any{1.0, 2.0, 4.0}
	if equal([]any{a[:2], a}, []any{b[:2], b}) {
		t.Fatal("arrays compared by their start alone")
	}
}

// fetchWith is a FETCH of books into rows with match, sort and limit as
// JSON ("" leaves a field out).
func fetchWith(match, sort, limit string) string {
	b := `{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"books"`
	for name, v := range map[string]string{"match": match, "sort": sort, "limit": limit} {
		if v != "" {
			b += `,"` + name + `":` + v
		}
	}
	return b + "}"
}

func TestFetchMatchSortLimit(t *testing.T) {
	shelfA3 := `[{"id":"stock.shelf","data":` + str("A3") + `}]`
	runCases(t, []blockCase{
		{name: "match on a nested property", blocks: []string{fetchWith(shelfA3, "", ""), returns("n", ref("rows.1.title"), "two", ref("rows.2"))},
			body: `{"n":"Solaris","two":null}`},
		{name: "match on two pairs, one a variable", blocks: []string{assign("y", num("1961")),
			fetchWith(`[{"id":"stock.shelf","data":`+str("A3")+`},{"id":"year","data":`+ref("y")+`}]`, "", ""), returns("n", ref("rows.0.title"), "more", ref("rows.1"))},
			body: `{"n":"Solaris","more":null}`},
		{name: "match on an array value is containment", blocks: []string{fetchWith(`[{"id":"tags","data":`+lit("ARRAY", `["sf"]`)+`}]`, "", ""),
			returns("a", ref("rows.0.title"), "b", ref("rows.1.title"), "c", ref("rows.2"))}, body: `{"a":"Dune","b":"Solaris","c":null}`},
		{name: "sort descending", blocks: []string{fetchWith("", `{"property":"year","descending":true}`, ""), returns("a", ref("rows.0.title"), "c", ref("rows.2.title"))},
			body: `{"a":"Dune","c":"Emma"}`},
		{name: "sort ascending by a nested property, then by id", blocks: []string{fetchWith("", `{"property":"stock.shelf","descending":false}`, ""),
			returns("a", ref("rows.0._id"), "b", ref("rows.1._id"), "c", ref("rows.2._id"))}, body: `{"a":1,"b":3,"c":2}`},
		{name: "records without the property come last", blocks: []string{fetchWith("", `{"property":"missing","descending":true}`, `{"ref_var":false,"rtype":"INTEGER","data":"2"}`),
			returns("a", ref("rows.0._id"), "b", ref("rows.1._id"), "c", ref("rows.2"))}, body: `{"a":1,"b":2,"c":null}`},
		{name: "limit from a variable", blocks: []string{assign("n", num("2")), fetchWith("", "", ref("n")), returns("b", ref("rows.1._id"), "c", ref("rows.2"))},
			body: `{"b":2,"c":null}`},
		{name: "a null limit is none", blocks: []string{fetchWith("", "", ref("nothing")), returns("c", ref("rows.2._id"))}, body: `{"c":3}`},
		{name: "a limit of 0 from a variable", blocks: []string{assign("n", num("0")), fetchWith("", "", ref("n"))}, status: 500,
			body: `{"status":500,"message":"Error: flow.blocks[1] (FETCH): limit must be a whole number from 1 to 10000, not 0"}`},
		{name: "a fractional limit from a variable", blocks: []string{assign("n", num("2.5")), fetchWith("", "", ref("n"))}, status: 500,
			body: `{"status":500,"message":"Error: flow.blocks[1] (FETCH): limit must be a whole number from 1 to 10000, not 2.5"}`},
		{name: "a text limit from a variable", blocks: []string{assign("n", str("ten")), fetchWith("", "", ref("n"))}, status: 500,
			body: `{"status":500,"message":"Error: flow.blocks[1] (FETCH): limit must be a whole number from 1 to 10000, not a string of 3 characters"}`},
		{name: "every field null", blocks: []string{`{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"books","match":[],"sort":null,"limit":null}`, returns("c", ref("rows.2._id"))},
			body: `{"c":3}`},
	})
}

func TestDeleteBlock(t *testing.T) {
	del := func(targets, conds string, save bool, local string) string {
		return fmt.Sprintf(`{"type":"DELETE","depth":0,"ref_col":"books","targets":%s,"conditions":%s,"save":%t,"local_name":%q}`, targets, conds, save, local)
	}
	onA3 := `[{"field":"stock.shelf","value":` + str("A3") + `}]`
	left := func(want string) func(*testing.T, *memEnv) {
		return func(t *testing.T, env *memEnv) {
			t.Helper()
			if got := env.dump("books"); !strings.Contains(got, want) || strings.Count(got, `"title"`) != strings.Count(want, "|")+1 {
				t.Errorf("books left: %s, want %s", got, want)
			}
		}
	}
	runCases(t, []blockCase{
		{name: "deletes what its targets select", blocks: []string{del(onA3, "[]", true, "n"), returns("n", ref("n"))}, body: `{"n":2}`, after: left("Emma")},
		{name: "every target must hold", blocks: []string{del(`[{"field":"stock.shelf","value":`+str("A3")+`},{"field":"year","value":`+lit("INTEGER", "1961")+`}]`, "[]", true, "n"),
			returns("n", ref("n"))}, body: `{"n":1}`},
		{name: "conditions that fail delete nothing", blocks: []string{del(onA3, "["+cond(num("1"), "EQUAL_TO", num("2"), "")+"]", true, "n"), returns("n", ref("n"))},
			body: `{"n":0}`},
		{name: "save false deletes nothing", blocks: []string{del(onA3, "[]", false, "n"), returns("n", ref("n"))}, body: `{"n":0}`},
		{name: "without a local name", blocks: []string{del(onA3, "[]", true, ""), returns("ok", lit("BOOLEAN", "true"))}, body: `{"ok":true}`},
		{name: "a collection that does not exist", blocks: []string{`{"type":"DELETE","depth":0,"ref_col":"nope","targets":` + onA3 + `,"conditions":[],"save":true,"local_name":""}`},
			status: 500, body: `{"status":500,"message":"Error: flow.blocks[0] (DELETE): collection nope does not exist"}`},
	})
	res, err := Run(context.Background(), compile(t, del(onA3, "[]", true, "n")), nil, books(), DefaultLimits)
	if err != nil || !res.Wrote {
		t.Fatalf("a DELETE that deleted did not say it wrote: %+v %v", res, err)
	}
}

func TestSaveFalseWarns(t *testing.T) {
	plan := compile(t, `{"type":"DELETE","depth":0,"ref_col":"books","targets":[{"field":"year","value":`+num("1")+`}],"conditions":[],"save":false,"local_name":""}`)
	if len(plan.Warnings) != 1 || plan.Warnings[0].String() != "flow.blocks[0] (DELETE) has save: false: it writes nothing" || !plan.Writes {
		t.Fatalf("warnings %q, writes %v", flow.Lines(plan.Warnings), plan.Writes)
	}
}

// TestBlocksThatAlwaysDoTheSameWarn: a CONDITION with no conditions acts
// on every request, an ASSIGNMENT with no operations is always null; a
// check of the editor says so before the route is saved.
func TestBlocksThatAlwaysDoTheSameWarn(t *testing.T) {
	for _, c := range []struct{ block, want string }{
		{`{"type":"CONDITION","depth":0,"conditions":[],"action":"FAIL","fail":null}`, "flow.blocks[0] (CONDITION) has no conditions: it does FAIL on every request"},
		{`{"type":"ASSIGNMENT","depth":0,"local_name":"x","conditions":[],"operations":[]}`, "flow.blocks[0] (ASSIGNMENT) has no operations: x is always null"},
	} {
		plan := compile(t, c.block)
		if len(plan.Warnings) != 1 || plan.Warnings[0].String() != c.want {
			t.Errorf("%s: warnings %q, want %q", c.block, flow.Lines(plan.Warnings), c.want)
		}
	}
	plan := compile(t, `{"type":"CONDITION","depth":0,"conditions":[`+cond(num("1"), "EQUAL_TO", num("2"), "")+`],"action":"FAIL","fail":null}`)
	if len(plan.Warnings) != 0 {
		t.Errorf("a CONDITION with a condition warns %q", flow.Lines(plan.Warnings))
	}
}

// TestDeadAfterReturn: a RETURN without conditions is warned of when
// blocks follow it that never run — every later block at the top level,
// the rest of its body inside a LOOP — and not when it has conditions.
func TestDeadAfterReturn(t *testing.T) {
	ret := `{"type":"RETURN","depth":%d,"pairs":[],"conditions":[]}`
	cond := `{"type":"RETURN","depth":0,"pairs":[],"conditions":[{"left":{"ref_var":false,"rtype":"INTEGER","data":"1"},"right":{"ref_var":false,"rtype":"INTEGER","data":"1"},"condition_type":"EQUAL_TO","not":false,"next":"NONE"}]}`
	obj := `{"type":"OBJECT","depth":%d,"local_name":"o%d","pairs":[]}`
	loop := `{"type":"LOOP","depth":0,"local_name":"i","min":{"ref_var":false,"rtype":"INTEGER","data":"0"},"max":{"ref_var":false,"rtype":"INTEGER","data":"2"},"step":{"ref_var":false,"rtype":"INTEGER","data":"1"}}`
	for _, c := range []struct {
		name   string
		blocks []string
		want   string
	}{
		{"the last block", []string{fmt.Sprintf(obj, 0, 1), fmt.Sprintf(ret, 0)}, ""},
		{"one after", []string{fmt.Sprintf(ret, 0), fmt.Sprintf(obj, 0, 1)}, "flow.blocks[1] (OBJECT) never runs: Block 1 (RETURN) answers first"},
		{"three after", []string{fmt.Sprintf(ret, 0), fmt.Sprintf(obj, 0, 1), fmt.Sprintf(obj, 0, 2), fmt.Sprintf(obj, 0, 3)},
			"flow.blocks[1] (OBJECT) never runs: Block 1 (RETURN) answers first, and neither do the 2 after it"},
		{"with conditions", []string{cond, fmt.Sprintf(obj, 0, 1)}, ""},
		{"the rest of a body", []string{loop, fmt.Sprintf(ret, 1), fmt.Sprintf(obj, 1, 1), fmt.Sprintf(obj, 0, 2)},
			"flow.blocks[2] (OBJECT) never runs: Block 2 (RETURN) answers first"},
		{"a body's last", []string{loop, fmt.Sprintf(obj, 1, 1), fmt.Sprintf(ret, 1), fmt.Sprintf(obj, 0, 2)}, ""},
	} {
		r := flow.Route{RouteID: "r", RoutePath: "/r", Method: "GET", Flow: flow.Flow{}}
		doc := `{"blocks":[` + strings.Join(c.blocks, ",") + `]}`
		if err := json.Unmarshal([]byte(doc), &r.Flow); err != nil {
			t.Fatal(err)
		}
		plan, p := Compile(r, nil)
		if len(p) > 0 {
			t.Fatalf("%s: %v", c.name, p)
		}
		got := ""
		for _, w := range plan.Warnings {
			if strings.Contains(w.Message, "never runs") {
				got = w.String()
			}
		}
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
