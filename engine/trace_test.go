package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// traced runs blocks against env and returns the trace, one line a block:
// "index TYPE depth [turn n] [name=value] [not held] [OUTCOME message]".
func traced(t *testing.T, env *memEnv, blocks ...string) (Result, []string) {
	t.Helper()
	var lines []string
	res, err := RunTraced(context.Background(), compile(t, blocks...), nil, env, DefaultLimits, func(ev Event) {
		line := fmt.Sprintf("%d %s %d", ev.Block, ev.Type, ev.Depth)
		if ev.Turn > 0 {
			line += fmt.Sprintf(" turn %d", ev.Turn)
		}
		if ev.Name != "" {
			v, _ := appendJSON(nil, ev.Value, 1<<20)
			if ev.Secret {
				v = []byte("SECRET")
			}
			line += " " + ev.Name + "=" + string(v)
		}
		if !ev.Held {
			line += " not held"
		}
		if ev.Outcome != "" {
			line += " " + strings.TrimSpace(ev.Outcome+" "+ev.Message)
		}
		lines = append(lines, line)
	})
	if err != nil {
		t.Fatalf("platform error: %v", err)
	}
	return res, lines
}

func sameLines(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("trace:\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// TestTraceOfEveryBlock: each of the fifteen block types tells the trace
// what it did, in order, and the trace changes nothing of the run.
func TestTraceOfEveryBlock(t *testing.T) {
	blocks := []string{
		fetch("rows", "books"),
		filterBlock("rows", "title", filt("EQUAL_TO", str("Dune"), "")),
		`{"type":"PROPERTY","depth":0,"local_name":"n","data":` + ref("rows") + `,"apply":"LENGTH","additional":""}`,
		`{"type":"FUNCTION","depth":0,"local_name":"page","func":"PAGINATE","params":[` + ref("rows") + `,` + num("1") + `,` + num("2") + `]}`,
		`{"type":"OBJECT","depth":0,"local_name":"o","pairs":` + pairs("title", str("Kim")) + `}`,
		`{"type":"TEMPLATE","depth":0,"local_name":"greeting","templatestring":"{} books","data":[` + ref("n") + `],"conditions":[]}`,
		`{"type":"TEMPLATE","depth":0,"local_name":"never","templatestring":"x","data":[],"conditions":[` + cond(num("1"), "EQUAL_TO", num("2"), "") + `]}`,
		`{"type":"ASSIGNMENT","depth":0,"local_name":"big","conditions":[` + cond(ref("n"), "GREATER_THAN", num("5"), "") + `],"operations":[` + op(num("1"), "NONE", num("0")) + `]}`,
		`{"type":"VAULT","depth":0,"local_name":"key","key":"API_KEY"}`,
		`{"type":"CREATE","depth":0,"ref_col":"books","ref_object":"o","save":true,"conditions":[]}`,
		`{"type":"UPDATE","depth":0,"ref_col":"books","ref_property":"seen","save":true,"targets":[],"set":` + lit("BOOLEAN", "true") + `,"add":null,"filter":null,"conditions":[]}`,
		`{"type":"SIMPLE_UPDATE","depth":0,"ref_col":"books","ref_property":"year","save":true,"targets":[{"field":"title","value":` + str("Kim") + `}],"set":` + num("1901") + `}`,
		`{"type":"EMAIL","depth":0,"template":"welcome","recipients":[` + str("a@example.com") + `],"pairs":[],"conditions":[]}`,
		loop("i", num("0"), num("2"), num("1")),
		at(1, `{"type":"CONDITION","depth":0,"conditions":[`+cond(ref("i"), "EQUAL_TO", num("0"), "")+`],"action":"CONTINUE","fail":null}`),
		at(1, `{"type":"CONDITION","depth":0,"conditions":[`+cond(ref("i"), "EQUAL_TO", num("1"), "")+`],"action":"BREAK","fail":null}`),
		returns("n", ref("n"), "key", ref("key")),
	}
	env := books()
	res, lines := traced(t, env, blocks...)
	if res.Ended != "RETURN" || string(res.Body) != `{"n":3,"key":"sk-secret-1"}` {
		t.Fatalf("run: %s %s", res.Ended, res.Body)
	}
	sameLines(t, lines, []string{
		`0 FETCH 0 rows=[{"_id":1,"stock":{"count":4,"shelf":"A3"},"tags":["sf","classic"],"title":"Dune","year":1965},{"_id":2,"stock":{"count":0,"shelf":"B1"},"tags":["classic"],"title":"Emma","year":1815},{"_id":3,"stock":{"count":2,"shelf":"A3"},"tags":["sf"],"title":"Solaris","year":1961}]`,
		`1 FILTER 0 out=[{"_id":1,"stock":{"count":4,"shelf":"A3"},"tags":["sf","classic"],"title":"Dune","year":1965}]`,
		`2 PROPERTY 0 n=3`,
		`3 FUNCTION 0 page=[{"_id":3,"stock":{"count":2,"shelf":"A3"},"tags":["sf"],"title":"Solaris","year":1961}]`,
		`4 OBJECT 0 o={"title":"Kim"}`,
		`5 TEMPLATE 0 greeting="3 books"`,
		`6 TEMPLATE 0 not held`,
		`7 ASSIGNMENT 0 big=null not held`,
		`8 VAULT 0 key=SECRET`,
		`9 CREATE 0`,
		`10 UPDATE 0`,
		`11 SIMPLE_UPDATE 0`,
		`12 EMAIL 0`,
		`13 LOOP 0 turn 1 i=0`,
		`14 CONDITION 1 CONTINUE`,
		`13 LOOP 0 turn 2 i=1`,
		`14 CONDITION 1 not held`,
		`15 CONDITION 1 BREAK`,
		`16 RETURN 0 RETURN`,
	})
}

// TestTraceOfEndings: a FAIL, a fault inside a loop and a loop of no turn
// each end the trace where they happened, once.
func TestTraceOfEndings(t *testing.T) {
	fail := `{"type":"CONDITION","depth":0,"conditions":[],"action":"FAIL","fail":{"status":409,"message":"taken"}}`
	_, lines := traced(t, books(), loop("i", num("0"), num("3"), num("1")), at(1, fail), returns("x", num("1")))
	sameLines(t, lines, []string{`0 LOOP 0 turn 1 i=0`, `1 CONDITION 1 FAIL Error: taken`})

	res, lines := traced(t, books(), assign("s", str("x")), loop("i", num("0"), num("3"), num("1")),
		at(1, `{"type":"FILTER","depth":0,"local_name":"out","source":"s","ref_property":"","filters":[]}`))
	if res.Ended != "FAULT" {
		t.Fatalf("ended %s", res.Ended)
	}
	sameLines(t, lines, []string{`0 ASSIGNMENT 0 s="x"`, `1 LOOP 0 turn 1 i=0`, `2 FILTER 1 FAULT source is a string, not an array`})

	_, lines = traced(t, books(), loop("i", num("0"), str("3"), num("1")))
	sameLines(t, lines, []string{`0 LOOP 0 FAULT max is a string, not a number`})

	_, lines = traced(t, books(), loop("i", num("3"), num("3"), num("1")), at(1, assign("x", num("1"))))
	sameLines(t, lines, []string{`0 LOOP 0 not held`})

	limits := DefaultLimits
	limits.Steps = 5
	var last Event
	res, err := RunTraced(context.Background(), compile(t, loop("i", num("0"), num("100"), num("1")), at(1, assign("x", ref("i")))), nil, books(), limits,
		func(ev Event) { last = ev })
	if err != nil || res.Ended != "FAULT" || last.Outcome != "FAULT" || last.Type != "ASSIGNMENT" || !strings.Contains(last.Message, "limit of 5 block executions") {
		t.Fatalf("step limit: %v %s, last event %+v", err, res.Ended, last)
	}
}
