package engine

import (
	"context"
	"testing"
)

// BenchmarkPureCompute runs a flow of 1,000 blocks: a LOOP of ten turns
// whose body is 333 rounds of ASSIGNMENT, CONDITION and OBJECT, under the
// limits the service runs routes with (64 MiB a run, drawn from a shared
// budget). It reports the time per executed block (goal: at most 1 µs) and
// the blocks a run executes. Its "unbounded" half runs the same without a
// memory limit, which skips the accounting: the two give its cost per
// block (goal: at most 10 %).
func BenchmarkPureCompute(b *testing.B) {
	blocks := []string{loop("i", num("0"), num("10"), num("1"))}
	for range 333 {
		blocks = append(blocks,
			at(1, `{"type":"ASSIGNMENT","depth":0,"local_name":"sum","conditions":[],"operations":[`+op(ref("sum"), "ADDITION", ref("i"))+`]}`),
			at(1, `{"type":"CONDITION","depth":0,"conditions":[`+cond(ref("sum"), "LESS_THAN", num("0"), "")+`],"action":"FAIL","fail":{"status":500,"message":"negative"}}`),
			at(1, `{"type":"OBJECT","depth":0,"local_name":"o","pairs":`+pairs("i", ref("i"), "sum", ref("sum"))+`}`))
	}
	plan := compile(b, blocks...)
	served := DefaultLimits
	served.Shared = NewBudget(256 << 20)
	unbounded := DefaultLimits
	unbounded.Memory = 0
	for _, bench := range []struct {
		name   string
		limits Limits
	}{{"served", served}, {"unbounded", unbounded}} {
		b.Run(bench.name, func(b *testing.B) {
			env := newMemEnv()
			ctx := context.Background()
			vars := map[string]any{"sum": 0.0}
			res, err := Run(ctx, plan, vars, env, bench.limits)
			if err != nil || res.Ended != "END" || len(blocks) != 1000 {
				b.Fatalf("%s %s %v", res.Ended, res.Body, err)
			}
			steps := res.Steps
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := Run(ctx, plan, vars, env, bench.limits); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(steps), "ns/block")
			b.ReportMetric(float64(steps), "blocks/run")
		})
	}
}
