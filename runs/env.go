package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"stencil/engine"
	"stencil/flow"
	"stencil/mail"
	"stencil/store"
)

// runEnv is a run's Env on PostgreSQL. Its transaction begins with the
// first write (or locked read): a run that only reads holds none. The
// transaction is on the runs' own pool, within the project's share of it.
type runEnv struct {
	s       *Service
	project string
	route   string
	caller  *store.Caller
	tx      *store.Tx
	release func() // gives back the project's slot in txSlots
	// serializable: the run writes, and its transaction is SERIALIZABLE.
	serializable bool
	gated        bool // the run holds its project's slot in txSlots already
	// batch is, for a run of a batch, the batch's context: the run's
	// statements go on the batch's connection under it, not under the
	// run's, since a statement stopped by its context closes its
	// connection (pgx), and a run stopped midway (its time, or its share
	// of the batch's) must leave the batch's transaction whole.
	batch context.Context
	// key is the base of its HTTP blocks' Idempotency-Keys, and hosts the
	// project's egress list (see call.go).
	key   string
	hosts []string
	hop   int // the Stencil-Hop of the request to /x
	// jobsFull: the project holds as many waiting jobs as it may, and
	// an ENQUEUE faults (see Service.jobsFull).
	jobsFull bool
}

// on is the context a statement of the run goes under.
func (e *runEnv) on(ctx context.Context) context.Context {
	if e.batch != nil {
		return e.batch
	}
	return ctx
}

func (e *runEnv) db() *store.Store {
	if e.tx != nil {
		return e.tx.Store
	}
	return e.s.reads
}

// begin starts the run's transaction; a run that gets no connection
// within its time is ErrBusy (503), not a fault of its route.
func (e *runEnv) begin(ctx context.Context) error {
	if e.tx != nil {
		return nil
	}
	release := func() {}
	if !e.gated {
		var err error
		if release, err = e.s.txSlots.enter(ctx, e.project); err != nil {
			return err
		}
	}
	begin := e.s.tx.Begin
	if e.serializable {
		begin = e.s.tx.BeginSerializable
	}
	tx, err := begin(ctx)
	if err != nil {
		release()
		if ctx.Err() != nil {
			return engine.ErrBusy
		}
		return err
	}
	e.tx, e.release = tx, release
	return nil
}

func (e *runEnv) commit(ctx context.Context) error {
	if e.tx == nil {
		return nil
	}
	err := e.tx.Commit(ctx)
	e.end()
	return err
}

func (e *runEnv) rollback() {
	if e.tx != nil {
		_ = e.tx.Rollback(context.Background())
		e.end()
	}
}

func (e *runEnv) end() {
	e.tx = nil
	e.release()
	e.release = nil
}

func (e *runEnv) Select(ctx context.Context, collection string, q engine.Query) ([]engine.Record, error) {
	ctx = e.on(ctx)
	if q.Lock {
		if err := e.begin(ctx); err != nil {
			return nil, err
		}
	}
	rq := store.RecordQuery{ByID: q.ByID, ID: q.ID, Sort: q.Sort, Descending: q.Descending, Limit: q.Limit, Lock: q.Lock}
	if q.Match != nil {
		var err error
		if rq.Where, err = json.Marshal(q.Match); err != nil {
			return nil, err
		}
	}
	var out []engine.Record
	each := func(id int64, data []byte) {
		if out == nil {
			out = make([]engine.Record, 0, min(q.Limit, 128))
		}
		out = append(out, engine.Record{ID: id, Data: data})
	}
	var err error
	if !q.Lock && e.tx == nil {
		// Outside a transaction, the same read of overlapping runs is
		// shared (store.SharedRunRecords).
		err = e.s.reads.SharedRunRecords(ctx, e.project, collection, rq, each)
	} else {
		err = e.db().EachRunRecord(ctx, e.project, collection, rq, each)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, engine.ErrNoCollection
	case errors.Is(err, store.ErrTooLarge):
		return nil, engine.ErrTooLarge
	}
	return out, err
}

func (e *runEnv) Insert(ctx context.Context, collection string, data []byte) (int64, error) {
	ctx = e.on(ctx)
	if err := e.begin(ctx); err != nil {
		return 0, err
	}
	r := store.Record{ProjectID: e.project, CollectionID: collection, Data: data}
	err := e.tx.InsertRecord(ctx, &r)
	if errors.Is(err, store.ErrNotFound) {
		return 0, engine.ErrNoCollection
	}
	return r.ID, err
}

func (e *runEnv) Update(ctx context.Context, collection string, writes []engine.Write) error {
	ctx = e.on(ctx)
	if err := e.begin(ctx); err != nil {
		return err
	}
	recs := make([]store.Record, len(writes))
	for i, w := range writes {
		recs[i] = store.Record{ID: w.ID, Data: w.Data}
	}
	_, err := e.tx.UpdateRecords(ctx, e.project, collection, recs)
	return err
}

func (e *runEnv) Delete(ctx context.Context, collection string, ids []int64) error {
	ctx = e.on(ctx)
	if err := e.begin(ctx); err != nil {
		return err
	}
	return e.tx.DeleteRecords(ctx, e.project, collection, ids)
}

// Vault reads an entry of the route's project: the read is logged on the
// channel route, naming the route and the caller if known, in its own
// statement, committed before the value is used.
func (e *runEnv) Vault(ctx context.Context, key string) (string, error) {
	ev := store.VaultAccess{ProjectID: e.project, Key: key, Channel: "route", RouteID: &e.route}
	if e.caller != nil {
		ev.UserID, ev.Username, ev.TokenID = &e.caller.User.ID, e.caller.User.Username, e.caller.TokenID
	}
	_, value, err := e.s.vault.Read(ctx, e.project, key, ev)
	if errors.Is(err, store.ErrNotFound) {
		return "", engine.ErrNoVaultKey
	}
	return value, err
}

func (e *runEnv) Queue(ctx context.Context, m engine.Email) error {
	ctx = e.on(ctx)
	if err := e.begin(ctx); err != nil {
		return err
	}
	pairs, err := json.Marshal(m.Pairs)
	if err != nil {
		return err
	}
	project := e.project
	full, err := e.tx.MailBacklogFull(ctx, project, e.s.MailBacklog)
	if err != nil {
		return err
	}
	if full {
		return engine.ErrMailBacklog
	}
	msg := &store.Email{ProjectID: &project, RouteID: e.route, Template: m.Template, Recipients: m.Recipients, Pairs: pairs, Status: e.s.mailStatus()}
	// A recipient that is not an address fails the message now, held or
	// not, with the reason: no server would take it later.
	for i, to := range m.Recipients {
		if err := mail.CheckAddress(to); err != nil {
			msg.Status, msg.LastError = store.EmailFailed, fmt.Sprintf("recipient %d %q %s", i+1, flow.Printable(to), err)
			break
		}
	}
	return e.tx.QueueEmail(ctx, msg)
}
