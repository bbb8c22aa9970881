package store

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ReadVaultSQL reads vault entries and logs each read, in one statement:
// the i-th elements of $1 (projects) and $2 (keys) name an entry, those of
// $3–$7 its reader (user id, name, token, channel, route). Each entry found
// comes back with its position in the arrays (from 1); a key not found has
// no row and no log row. A data-modifying CTE runs to completion whether or
// not the outer query reads it, and when a log row cannot be written the
// statement fails whole: no entry comes back without its log row. Exported
// for the load harness, which runs exactly this SQL as its anchor.
var ReadVaultSQL = `WITH q AS (
		SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::text[], $7::text[])
			WITH ORDINALITY AS q (project_id, key, user_id, username, token_id, channel, route_id, n)
	), e AS (
		SELECT q.n, q.user_id, q.username, q.token_id, q.channel, q.route_id, ` + vaultColumnsOf("v") + `
		FROM q JOIN vault_entries v ON v.project_id = q.project_id AND v.key = q.key
	), logged AS (
		INSERT INTO vault_access_log (user_id, username, token_id, project_id, key, action, channel, route_id)
		SELECT user_id, username, token_id, project_id, key, 'read', channel, route_id FROM e ORDER BY n
	)
	SELECT n, ` + vaultColumns + ` FROM e`

func vaultColumnsOf(alias string) string {
	cols := strings.Split(vaultColumns, ", ")
	for i, c := range cols {
		cols[i] = alias + "." + c
	}
	return strings.Join(cols, ", ")
}

// Vault reads that overlap in time share one statement: a read's log row is
// an insert committed before its value leaves, and committing one per read
// makes every concurrent read lock the same user and project rows for its
// foreign keys and wait for its own WAL flush. Reads are queued; up to
// readWorkers statements run at once, each taking every read queued when it
// starts (at most readBatch). A read that finds a worker idle runs alone and
// at once, so grouping adds no wait; it forms only while statements are
// already running. Workers end when the queue is empty, so a Store owns no
// goroutine while it is idle.
const (
	readWorkers = 4
	readBatch   = 256
	// readTimeout bounds a group's statement, which serves many requests
	// and so runs under none of their contexts.
	readTimeout = 10 * time.Second
)

// pendingRead is one queued read and, once done is closed, its outcome.
type pendingRead struct {
	ctx     context.Context
	project string
	key     string
	ev      VaultAccess
	entry   VaultEntry
	err     error
	done    chan struct{}
}

// readGroup queues the reads of one pool.
type readGroup struct {
	queue      chan *pendingRead
	mu         sync.Mutex
	workers    int
	statements atomic.Int64
}

func newReadGroup() *readGroup {
	return &readGroup{queue: make(chan *pendingRead, 4*readBatch)}
}

// VaultReadStatements is how many statements the store's grouped vault
// reads have run (of a pool's Store; 0 in a transaction's): reads per
// statement tell how much the grouping saves.
func (s *Store) VaultReadStatements() int64 {
	if s.reads == nil {
		return 0
	}
	return s.reads.statements.Load()
}

// read queues one read, makes sure a worker will take it, and waits for
// its outcome or for ctx to end. A read whose context ended before its
// statement started is neither read nor logged; one that ends while the
// statement runs may be logged without its value being used, which errs on
// the audit's side.
func (g *readGroup) read(ctx context.Context, db DB, project, key string, ev VaultAccess) (VaultEntry, error) {
	r := &pendingRead{ctx: ctx, project: project, key: key, ev: ev, done: make(chan struct{})}
	select {
	case g.queue <- r:
	case <-ctx.Done():
		return VaultEntry{}, ctx.Err()
	}
	g.mu.Lock()
	if g.workers < readWorkers {
		g.workers++
		go g.work(db)
	}
	g.mu.Unlock()
	select {
	case <-r.done:
		return r.entry, r.err
	case <-ctx.Done():
		return VaultEntry{}, ctx.Err()
	}
}

// work runs statements while reads are queued. It checks for an empty
// queue under the lock that read takes after queuing, so a read is never
// left without a worker.
func (g *readGroup) work(db DB) {
	batch := make([]*pendingRead, 0, readBatch)
	for {
		var first *pendingRead
		select {
		case first = <-g.queue:
		default:
			g.mu.Lock()
			if len(g.queue) == 0 {
				g.workers--
				g.mu.Unlock()
				return
			}
			g.mu.Unlock()
			continue
		}
		batch = append(batch[:0], first)
	drain:
		for len(batch) < readBatch {
			select {
			case r := <-g.queue:
				batch = append(batch, r)
			default:
				break drain
			}
		}
		g.run(db, batch)
	}
}

// run reads and logs the batch's live reads in one statement and hands
// each its outcome.
func (g *readGroup) run(db DB, batch []*pendingRead) {
	live := batch[:0:0]
	for _, r := range batch {
		if err := r.ctx.Err(); err != nil {
			r.err = err
			close(r.done)
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	g.statements.Add(1)
	found, err := readEntries(ctx, db, live)
	for i, r := range live {
		switch {
		case err != nil:
			r.err = err
		case found[i] == nil:
			r.err = ErrNotFound
		default:
			r.entry = *found[i]
		}
		close(r.done)
	}
}

// readEntries runs ReadVaultSQL for reads and returns what each found (nil
// for a key not found), in their order.
func readEntries(ctx context.Context, db DB, reads []*pendingRead) ([]*VaultEntry, error) {
	n := len(reads)
	projects, keys, users, names := make([]string, n), make([]string, n), make([]*int64, n), make([]string, n)
	tokens, channels, routes := make([]*int64, n), make([]string, n), make([]*string, n)
	for i, r := range reads {
		projects[i], keys[i] = r.project, r.key
		users[i], names[i], tokens[i], channels[i], routes[i] = r.ev.UserID, r.ev.Username, r.ev.TokenID, r.ev.Channel, r.ev.RouteID
	}
	rows, err := db.Query(ctx, ReadVaultSQL, projects, keys, users, names, tokens, channels, routes)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	found := make([]*VaultEntry, n)
	for rows.Next() {
		var at int64
		e := new(VaultEntry)
		if err := rows.Scan(append([]any{&at}, e.columns()...)...); err != nil {
			return nil, translate(err)
		}
		found[at-1] = e
	}
	return found, translate(rows.Err())
}
