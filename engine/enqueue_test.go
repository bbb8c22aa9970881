package engine

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// enqueueBlock writes an ENQUEUE block; extra is more of its fields, JSON.
func enqueueBlock(name, route string, extra string) string {
	if extra != "" {
		extra = "," + extra
	}
	return fmt.Sprintf(`{"type":"ENQUEUE","depth":0,"route_id":%q,"query":[],"body":null,"delay_ms":null,"max_attempts":5,"conditions":[],"local_name":%q%s}`,
		route, name, extra)
}

func TestEnqueueBlock(t *testing.T) {
	env := books()
	blocks := []string{
		assign("tags", lit("ARRAY", `["a b","c&d"]`)),
		enqueueBlock("job", "remind", `"query":`+pairs("tag", ref("tags"), "skip", lit("OTHER", "null"))+
			`,"body":`+lit("OTHER", `{"user":7}`)+`,"delay_ms":`+num("3600000")+`,"max_attempts":3`),
		returns("job", ref("job")),
	}
	plan := compile(t, blocks...)
	if plan.Writes || plan.Calls {
		t.Fatalf("writes %v calls %v: a job is written beside the run, as a message is", plan.Writes, plan.Calls)
	}
	res, err := Run(context.Background(), plan, nil, env, DefaultLimits)
	if err != nil || res.Status != 200 || string(res.Body) != `{"job":1}` || !res.Wrote {
		t.Fatalf("%v %d %s wrote %v", err, res.Status, res.Body, res.Wrote)
	}
	want := Job{Route: "remind", Query: "tag=a+b&tag=c%26d", Body: []byte(`{"user":7}`), Delay: time.Hour, MaxAttempts: 3}
	if got := env.jobs[0]; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("job %+v, want %+v", got, want)
	}

	// No max_attempts: five; conditions that do not hold enqueue nothing.
	env = books()
	block := strings.Replace(enqueueBlock("", "remind", ""), `,"max_attempts":5`, "", 1)
	res, _ = Run(context.Background(), compile(t, block, strings.Replace(enqueueBlock("", "other", ""), `"conditions":[]`, `"conditions":[`+cond(num("1"), "EQUAL_TO", num("2"), "")+`]`, 1),
		returns("ok", num("1"))), nil, env, DefaultLimits)
	if res.Status != 200 || len(env.jobs) != 1 || env.jobs[0].MaxAttempts != 5 || env.jobs[0].Body != nil {
		t.Fatalf("%d %s jobs %+v", res.Status, res.Body, env.jobs)
	}
}

func TestEnqueueBlockFaults(t *testing.T) {
	for name, tc := range map[string]struct {
		blocks  []string
		backlog bool
		status  int
		message string
	}{
		"backlog": {blocks: []string{enqueueBlock("j", "r", "")}, backlog: true, status: 429,
			message: "the project has as many jobs waiting as it may: try again later"},
		"delay out of bounds": {blocks: []string{assign("d", num("-1")), enqueueBlock("j", "r", `"delay_ms":`+ref("d"))}, status: 500,
			message: "delay_ms is a number, not a whole number of milliseconds from 0 to 30 days"},
		"delay not a number": {blocks: []string{assign("d", str("soon")), enqueueBlock("j", "r", `"delay_ms":`+ref("d"))}, status: 500,
			message: "delay_ms is a string of 4 characters, not a whole number of milliseconds from 0 to 30 days"},
		"a long query": {blocks: []string{assign("q", str(strings.Repeat("x", 9000))), enqueueBlock("j", "r", `"query":`+pairs("q", ref("q")))}, status: 500,
			message: "the query would pass 8 KiB"},
		"a large body": {blocks: []string{assign("q", str(strings.Repeat("x", 70000))), enqueueBlock("j", "r", `"body":`+ref("q"))}, status: 500,
			message: "the body would pass 64 KiB"},
		"a secret in the body": {blocks: []string{`{"type":"VAULT","depth":0,"local_name":"k","key":"API_KEY"}`,
			enqueueBlock("j", "r", `"body":`+ref("k"))}, status: 500,
			message: "the job's query or body holds a value read from the vault: a job keeps them until it runs, so its route reads its secrets itself"},
		"a secret in the query": {blocks: []string{`{"type":"VAULT","depth":0,"local_name":"k","key":"API_KEY"}`,
			enqueueBlock("j", "r", `"query":`+pairs("key", ref("k")))}, status: 500,
			message: "the job's query or body holds a value read from the vault: a job keeps them until it runs, so its route reads its secrets itself"},
	} {
		t.Run(name, func(t *testing.T) {
			env := books()
			env.vault["API_KEY"] = "sk_live_abc123"
			env.backlog = tc.backlog
			res, err := Run(context.Background(), compile(t, append(tc.blocks, returns("j", ref("j")))...), nil, env, DefaultLimits)
			if err != nil {
				t.Fatal(err)
			}
			block := len(tc.blocks) - 1
			want := fmt.Sprintf(`{"status":%d,"message":"Error: flow.blocks[%d] (ENQUEUE): %s"}`, tc.status, block, tc.message)
			if res.Status != tc.status || string(res.Body) != want || res.Ended != "FAULT" || len(env.jobs) != 0 {
				t.Fatalf("%d %s\nwant %s\njobs %v", res.Status, res.Body, want, env.jobs)
			}
			if tc.backlog && (res.Fault == nil || res.Fault.RetryAfter != JobBacklogRetry) {
				t.Fatalf("fault %+v", res.Fault)
			}
		})
	}
	for name, tc := range map[string]struct{ block, path, msg string }{
		"delay over 30 days": {enqueueBlock("j", "r", `"delay_ms":`+num("2592000001")), "flow.blocks[0].delay_ms.data", "must be a whole number of milliseconds"},
		"delay fractional":   {enqueueBlock("j", "r", `"delay_ms":`+num("1.5")), "flow.blocks[0].delay_ms.data", "must be a whole number of milliseconds"},
	} {
		t.Run(name, func(t *testing.T) {
			_, p := Compile(route(t, "POST", tc.block), nil)
			if !strings.HasPrefix(p[tc.path], tc.msg) {
				t.Fatalf("problems %v, want %q at %s", p, tc.msg, tc.path)
			}
		})
	}
}
