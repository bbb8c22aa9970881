package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"stencil/store"
	"stencil/store/storetest"
)

// TestCallersShareAStatement holds the users table locked so that every
// worker's statement waits, queues 120 callers of different users and
// projects behind them, and releases: the queued callers run in one or a
// few statements, and each gets its own user, its own project and its own
// membership; an unknown user gets ErrNotFound.
func TestCallersShareAStatement(t *testing.T) {
	t.Parallel()
	ctx, pool, st := groupedStore(t)
	ids := make([]int64, 6)
	for i := range ids {
		if err := pool.QueryRow(ctx, `INSERT INTO users (username, email, password_hash, role) VALUES ($1, $1 || '@example.com', 'x', 'AUTHOR') RETURNING id`,
			fmt.Sprint("user", i)).Scan(&ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	// Even users are members of shop, users divisible by three of blog.
	if _, err := pool.Exec(ctx, `INSERT INTO projects (id, name, api_path) VALUES ('shop', 'Shop', '/shop'), ('blog', 'Blog', '/blog')`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO project_members (project_id, user_id, role) VALUES ('shop', $1, 'ADMIN'), ('shop', $2, 'ADMIN'), ('shop', $3, 'ADMIN'), ('blog', $1, 'ADMIN'), ('blog', $4, 'ADMIN')`,
		ids[0], ids[2], ids[4], ids[3]); err != nil {
		t.Fatal(err)
	}
	release := holdLock(t, ctx, pool, "LOCK TABLE users IN ACCESS EXCLUSIVE MODE")
	type outcome struct {
		q      store.CallerQuery
		caller store.Caller
		err    error
	}
	var wg sync.WaitGroup
	ask := func(o *outcome) {
		wg.Go(func() { o.caller, o.err = st.Caller(ctx, o.q) })
	}
	blockers := make([]outcome, groupWorkers)
	busyWorkers(t, ctx, pool, groupWorkers, func(i int) {
		blockers[i].q = store.CallerQuery{UserID: ids[0], ProjectID: "shop"}
		ask(&blockers[i])
	})
	queued := make([]outcome, 120)
	for i := range queued {
		q := store.CallerQuery{UserID: ids[i%len(ids)], ProjectID: []string{"shop", "blog", "", "nope"}[i%4]}
		if i%29 == 0 {
			q.UserID = 1 << 40
		}
		queued[i].q = q
		ask(&queued[i])
	}
	until(t, "every caller queued", func() bool { return st.QueuedCallersForTest() == len(queued) })
	release()
	wg.Wait()

	if n := st.CallerStatementsForTest(); n > 2 {
		t.Errorf("%d statements for 121 callers, want the queued 120 in one", n)
	}
	for i, o := range append(blockers, queued...) {
		if o.q.UserID == 1<<40 {
			if !errors.Is(o.err, store.ErrNotFound) {
				t.Errorf("caller %d, an unknown user: %v", i, o.err)
			}
			continue
		}
		n := 0
		for n < len(ids) && ids[n] != o.q.UserID {
			n++
		}
		member := o.q.ProjectID == "shop" && n%2 == 0 || o.q.ProjectID == "blog" && n%3 == 0
		switch {
		case o.err != nil || o.caller.User.ID != o.q.UserID || o.caller.User.Username != fmt.Sprint("user", n):
			t.Errorf("caller %d (%+v) = user %d %q (%v)", i, o.q, o.caller.User.ID, o.caller.User.Username, o.err)
		case o.q.ProjectID == "" || o.q.ProjectID == "nope":
			if o.caller.Project != nil {
				t.Errorf("caller %d (%+v) has project %q", i, o.q, o.caller.Project.ID)
			}
		case o.caller.Project == nil || o.caller.Project.ID != o.q.ProjectID || o.caller.Project.IsMember != member:
			t.Errorf("caller %d (%+v) = project %+v, want member %v", i, o.q, o.caller.Project, member)
		}
	}
}

// TestTokenCallersTogether: callers by personal access token that overlap
// get their own token's user and id; a revoked or expired token finds no
// one; every valid token's last use is written, however many of its
// requests shared a statement.
func TestTokenCallersTogether(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := storetest.Pool(t)
	st := store.New(pool)
	hash := func(i int) []byte { h := make([]byte, 32); h[0] = byte(i + 1); return h }
	users, tokens := make([]int64, 4), make([]int64, 4)
	for i := range users {
		if err := pool.QueryRow(ctx, `INSERT INTO users (username, email, password_hash, role) VALUES ($1, $1 || '@example.com', 'x', 'AUTHOR') RETURNING id`,
			fmt.Sprint("user", i)).Scan(&users[i]); err != nil {
			t.Fatal(err)
		}
		// Token 2 is revoked, token 3 expired.
		if err := pool.QueryRow(ctx, `INSERT INTO personal_access_tokens (user_id, name, token_hash, hint, valid_from, valid_to, revoked_at)
			VALUES ($1, 't', $2, 'h', now() - interval '2 days', CASE WHEN $3 = 3 THEN now() - interval '1 day' END, CASE WHEN $3 = 2 THEN now() END) RETURNING id`,
			users[i], hash(i), i).Scan(&tokens[i]); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 200 {
		wg.Go(func() {
			n := i % 4
			c, err := st.Caller(ctx, store.CallerQuery{PATHash: hash(n)})
			switch {
			case n >= 2 && !errors.Is(err, store.ErrNotFound):
				errs <- fmt.Errorf("token %d (not valid): %+v, %v", n, c.User, err)
			case n < 2 && (err != nil || c.User.ID != users[n] || c.TokenID == nil || *c.TokenID != tokens[n]):
				errs <- fmt.Errorf("token %d: user %d token %v (%v)", n, c.User.ID, c.TokenID, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var used string
	if err := pool.QueryRow(ctx, `SELECT string_agg((last_used_at IS NOT NULL)::text, ',' ORDER BY id) FROM personal_access_tokens`).Scan(&used); err != nil {
		t.Fatal(err)
	}
	if used != "true,true,false,false" {
		t.Fatalf("last use written: %s", used)
	}
}
