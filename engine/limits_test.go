package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// bigString is a block making s a string of n bytes: "x" doubled.
func bigString(name string, doublings int) []string {
	blocks := []string{assign(name, str("x")), loop("d", num("0"), num(fmt.Sprint(doublings)), num("1")),
		at(1, `{"type":"ASSIGNMENT","depth":0,"local_name":"`+name+`","conditions":[],"operations":[`+op(ref(name), "ADDITION", ref(name))+`]}`)}
	return blocks
}

// TestMemoryLimit: a run that keeps making large values faults at its
// memory limit instead of taking the service's memory (one anonymous
// request held 1.94 GB): a 2 MiB string, then a LOOP making a new 2 MiB
// string each turn, each kept alive in an object chain.
func TestMemoryLimit(t *testing.T) {
	blocks := append(bigString("s", 21), // 2 MiB
		assign("chain", lit("OTHER", "{}")),
		loop("i", num("0"), num("1000"), num("1")),
		at(1, `{"type":"ASSIGNMENT","depth":0,"local_name":"t","conditions":[],"operations":[`+op(ref("s"), "ADDITION", ref("i"))+`]}`),
		at(1, `{"type":"OBJECT","depth":0,"local_name":"chain","pairs":`+pairs("next", ref("chain"), "text", ref("t"))+`}`),
		returns("n", num("1")))
	res, err := Run(context.Background(), compile(t, blocks...), nil, books(), DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if res.Fault == nil || res.Fault.Error() != "flow.blocks[5] (ASSIGNMENT): the run passed its memory limit of 64 MiB" {
		t.Fatalf("%s %v", res.Ended, res.Fault)
	}
	if res.Steps > 200 {
		t.Fatalf("ran %d blocks before its fault: about 30 turns of 2 MiB reach 64 MiB", res.Steps)
	}

	// A read larger than the run's memory faults at the limit too.
	env := newMemEnv()
	row := `{"text":"` + strings.Repeat("y", 60_000) + `"}`
	for range 200 {
		env.add("big", row)
	}
	small := DefaultLimits
	small.Memory = 4 << 20
	res, err = Run(context.Background(), compile(t, fetch("rows", "big"), returns("n", num("1"))), nil, env, small)
	if err != nil {
		t.Fatal(err)
	}
	if res.Fault == nil || res.Fault.Error() != "flow.blocks[0] (FETCH): the run passed its memory limit of 4 MiB" {
		t.Fatalf("a large FETCH: %s %v", res.Ended, res.Fault)
	}
}

// TestSharedMemory: runs draw their memory from the service's budget and
// give it back when they end; a run that finds it spent ends with ErrBusy,
// the platform's error (503), not the route's fault.
func TestSharedMemory(t *testing.T) {
	budget := NewBudget(16 << 20)
	limits := DefaultLimits
	limits.Shared = budget
	plan := compile(t, append(bigString("s", 22), returns("n", num("1")))...) // 4 MiB, and its halves
	res, err := Run(context.Background(), plan, nil, books(), limits)
	if err != nil || res.Status != 200 {
		t.Fatalf("alone: %v %v", res, err)
	}
	if budget.Free() != 16<<20 {
		t.Fatalf("the run kept %d bytes of the budget", 16<<20-budget.Free())
	}
	if !budget.take(12 << 20) {
		t.Fatal("take")
	}
	_, err = Run(context.Background(), plan, nil, books(), limits)
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("with the budget spent: %v", err)
	}
	if budget.Free() != 4<<20 {
		t.Fatalf("the busy run kept %d bytes", 4<<20-budget.Free())
	}
}

// TestTimeLimitInsideBlocks: the time limit ends a run inside a block
// that iterates, not only between blocks: a LOOP of FILTERs over 10,000
// items (13–22 s before) and a comparison of large arrays.
func TestTimeLimitInsideBlocks(t *testing.T) {
	items := make([]string, 10_000)
	for i := range items {
		items[i] = fmt.Sprintf(`{"n":%d,"tags":["a","b","c"]}`, i)
	}
	env := newMemEnv()
	env.add("many", items...)
	limits := DefaultLimits
	limits.Time, limits.Memory = 200*time.Millisecond, 0
	cases := map[string][]string{
		"LOOP of FILTER": {fetch("rows", "many"), loop("i", num("0"), num("100000"), num("1")),
			at(1, filterBlock("rows", "tags", filt("INCLUDES", str("z"), "NONE")))},
		"a comparison of large arrays": {fetch("rows", "many"), assign("copy", ref("rows")),
			at(0, `{"type":"ASSIGNMENT","depth":0,"local_name":"big","conditions":[],"operations":[`+op(ref("rows"), "ADDITION", ref("copy"))+`]}`),
			loop("i", num("0"), num("100000"), num("1")),
			at(1, `{"type":"ASSIGNMENT","depth":0,"local_name":"same","conditions":[],"operations":[`+op(ref("big"), "INCLUDES", lit("OTHER", `{"n":-1}`))+`]}`)},
	}
	for name, blocks := range cases {
		t.Run(name, func(t *testing.T) {
			start := time.Now()
			res, err := Run(context.Background(), compile(t, blocks...), nil, env, limits)
			took := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if res.Fault == nil || !strings.Contains(res.Fault.Reason, "time limit of 200ms") {
				t.Fatalf("%s %v", res.Ended, res.Fault)
			}
			// Not a timing assertion of speed: a run cut at its limit ends
			// within a block's item of it, which even a loaded machine does
			// in far less than the 13 s the LOOP took before.
			if took > 5*time.Second {
				t.Fatalf("the run took %s past its limit of 200ms", took)
			}
		})
	}
}

// TestMemoryGivenBack: a value nothing kept is given back when its
// variable is set again, so a long LOOP that makes and drops large values
// runs; once kept (in an OBJECT, or as a FILTER's source), it stays
// counted.
func TestMemoryGivenBack(t *testing.T) {
	blocks := append(bigString("s", 20), // 1 MiB
		loop("i", num("0"), num("500"), num("1")),
		at(1, `{"type":"ASSIGNMENT","depth":0,"local_name":"t","conditions":[],"operations":[`+op(ref("s"), "ADDITION", ref("i"))+`]}`),
		at(1, `{"type":"PROPERTY","depth":0,"local_name":"n","data":`+ref("t")+`,"apply":"LENGTH","additional":""}`),
		returns("n", ref("n")))
	// The memory limit is what is tested, not the time: 500 MiB made under
	// -race on a loaded 2-core CI once passed the default 5 s.
	limits := DefaultLimits
	limits.Time = time.Minute
	res, err := Run(context.Background(), compile(t, blocks...), nil, books(), limits)
	if err != nil || res.Status != 200 || string(res.Body) != `{"n":1048579}` {
		t.Fatalf("500 MiB made, 1 MiB held: %s %s %v %v", res.Ended, res.Body, res.Fault, err)
	}
	kept := append(bigString("s", 20),
		assign("all", lit("ARRAY", "[]")),
		loop("i", num("0"), num("500"), num("1")),
		at(1, `{"type":"ASSIGNMENT","depth":0,"local_name":"t","conditions":[],"operations":[`+op(ref("s"), "ADDITION", ref("i"))+`]}`),
		at(1, `{"type":"OBJECT","depth":0,"local_name":"o","pairs":`+pairs("t", ref("t"), "all", ref("o"))+`}`))
	res, err = Run(context.Background(), compile(t, kept...), nil, books(), limits)
	if err != nil || res.Fault == nil || !strings.Contains(res.Fault.Reason, "memory limit of 64 MiB") {
		t.Fatalf("kept: %s %v %v", res.Ended, res.Fault, err)
	}
}

// TestBudgetWatchCountsWholeSteps: what ordinary runs hold (sixteen runs
// of one chunk each) never reaches the watcher, so the service's soft
// memory limit stays where it was under a load of small runs; the watcher
// hears of each whole step held, and of its going again.
func TestBudgetWatchCountsWholeSteps(t *testing.T) {
	const step = 32 << 20
	b := NewBudget(1 << 30)
	var told []int64
	b.Watch(step, func() { told = append(told, b.Held()/step) })
	for range 16 {
		if !b.take(memoryChunk) {
			t.Fatal("the budget refused a chunk")
		}
	}
	for range 16 {
		b.give(memoryChunk)
	}
	if len(told) != 0 {
		t.Fatalf("sixteen runs of one chunk moved the watcher %d times: %v", len(told), told)
	}
	b.take(step + memoryChunk)
	b.take(step)
	b.give(step)
	b.give(step + memoryChunk)
	if want := []int64{1, 2, 1, 0}; fmt.Sprint(told) != fmt.Sprint(want) {
		t.Fatalf("the watcher heard of steps %v, want %v", told, want)
	}
}
