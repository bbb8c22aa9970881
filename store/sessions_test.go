package store_test

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// TestSessionFindsShareAStatement: finds queued while every worker waits
// run in at most a statement per worker, and each gets its own session;
// an expired or unknown token finds none.
func TestSessionFindsShareAStatement(t *testing.T) {
	t.Parallel()
	ctx, pool, st := groupedStore(t)
	sessions := st.Sessions()
	const kept = 10
	for i := range kept {
		expiry := time.Now().Add(time.Hour)
		if i == 7 {
			expiry = time.Now().Add(-time.Second)
		}
		if err := sessions.CommitCtx(ctx, fmt.Sprint("token", i), []byte(fmt.Sprint("data", i)), expiry); err != nil {
			t.Fatal(err)
		}
	}
	release := holdLock(t, ctx, pool, "LOCK TABLE sessions IN ACCESS EXCLUSIVE MODE")
	type outcome struct {
		token string
		data  []byte
		found bool
		err   error
	}
	var wg sync.WaitGroup
	find := func(o *outcome) {
		wg.Go(func() { o.data, o.found, o.err = sessions.FindCtx(ctx, o.token) })
	}
	blockers := make([]outcome, groupWorkers)
	busyWorkers(t, ctx, pool, groupWorkers, func(i int) {
		blockers[i].token = "token0"
		find(&blockers[i])
	})
	queued := make([]outcome, 60)
	for i := range queued {
		queued[i].token = fmt.Sprint("token", i%(kept+2)) // token10 and token11 were never made
		find(&queued[i])
	}
	until(t, "every find queued", func() bool { return st.QueuedSessionFindsForTest() == len(queued) })
	release()
	wg.Wait()

	if n := st.SessionStatementsForTest(); n > 2 {
		t.Errorf("%d statements for %d finds, want the queued %d in one", n, len(queued)+groupWorkers, len(queued))
	}
	for _, o := range append(blockers, queued...) {
		var i int
		fmt.Sscanf(o.token, "token%d", &i)
		want := i < kept && i != 7
		switch {
		case o.err != nil:
			t.Errorf("%s: %v", o.token, o.err)
		case o.found != want:
			t.Errorf("%s: found %v, want %v", o.token, o.found, want)
		case want && string(o.data) != fmt.Sprint("data", i):
			t.Errorf("%s: got the data %q", o.token, o.data)
		}
	}
}
