// Package engine runs routes (docs/engine.md): Compile turns a route into a Plan
// once, and Run runs a plan for one request against an Env, the small
// interface through which a run reads and writes collections, reads the
// vault and queues email. The engine itself does no I/O, so it is tested
// with an in-memory Env and with the PostgreSQL one alike.
package engine

import (
	"context"
	"errors"
	"time"
)

// Record is a record of a collection: its id and its data, a JSON object
// (as PostgreSQL writes jsonb). The engine decodes it when a block needs
// it, and only the parts the block needs: a FETCH of many records that a
// FILTER narrows reads one property of each.
type Record struct {
	ID   int64
	Data []byte
}

// Write is new data, JSON, for the record id.
type Write struct {
	ID   int64
	Data []byte
}

// Email is a message an EMAIL block queues.
type Email struct {
	Template   string
	Recipients []string
	Pairs      map[string]any
}

// Env is what a run reads and writes, bound to one run: its project, its
// route and caller, and the run's transaction (writes are committed or
// rolled back by the caller of Run, as Result says).
type Env interface {
	// Select returns the records of collection that q asks for.
	Select(ctx context.Context, collection string, q Query) ([]Record, error)
	// Insert adds a record to collection and returns its id.
	Insert(ctx context.Context, collection string, data []byte) (int64, error)
	// Update replaces the data of records of collection.
	Update(ctx context.Context, collection string, records []Write) error
	// Delete deletes records of collection by id.
	Delete(ctx context.Context, collection string, ids []int64) error
	// Vault returns the value of a vault entry of the project, having
	// logged the read in its own committed write.
	Vault(ctx context.Context, key string) (string, error)
	// Queue puts an email in the project's outbox.
	Queue(ctx context.Context, m Email) error
	// Call sends an HTTP block's request and reads its answer, of at most
	// MaxAnswerBytes, within c.Timeout. A request that gets no answer is a
	// *CallError.
	Call(ctx context.Context, c Call) (Reply, error)
	// Enqueue writes a job in the run's transaction and returns its id:
	// no job exists unless the run commits.
	Enqueue(ctx context.Context, j Job) (int64, error)
}

// Job is a later run of a route of the project that an ENQUEUE block asks
// for (docs/jobs.md): its query and body as the run's request would carry
// them, its delay and how many times it is tried at most.
type Job struct {
	Route       string
	Query       string // encoded, without "?"
	Body        []byte // a JSON value; nil: none
	Delay       time.Duration
	MaxAttempts int
}

// Call is the request of an HTTP block (docs/engine.md).
type Call struct {
	Method  string
	URL     string   // http or https, its query built
	Header  []Header // names as the route wrote them, in its order
	Body    []byte   // nil: none
	Timeout time.Duration
	// Block and Seq name the request within its run: the block's index
	// and how many requests the block sent before in this run. The same
	// run begun again sends the same Block and Seq, which an Env turns
	// into the request's Idempotency-Key.
	Block, Seq int
}

// Reply is an upstream's answer to a Call.
type Reply struct {
	Status int
	Header map[string]string // lower-case names; repeated values joined by ", "
	Body   []byte
	JSON   bool // the answer says its body is JSON
}

// CallError is a Call that got no answer: the connection failed, or was
// refused by the egress guard (Status 502), or the time ran out (504).
// Reason names the host, never the URL's path or query.
type CallError struct {
	Status int
	Reason string
}

func (e *CallError) Error() string { return e.Reason }

// MaxAnswerBytes is the largest answer an HTTP block reads.
const MaxAnswerBytes = 1 << 20

// Bounds of an HTTP block's timeout_ms, and its default.
const (
	MinCallTimeout     = 100 * time.Millisecond
	MaxCallTimeout     = 10 * time.Second
	DefaultCallTimeout = 5 * time.Second
)

// Query is a read of records: those whose data contains Match (JSON
// containment; nil: all) and, with ByID, whose id is ID (a record's _id is
// not in its data), ordered by the property at the dot path Sort (records
// without it last, then by id; nil, or _id: by id), at most Limit, and
// with Lock locked for the run's writes.
type Query struct {
	Match      map[string]any
	ByID       bool
	ID         int64
	Sort       []string
	Descending bool
	Limit      int
	Lock       bool
}

// Errors an Env returns for what the route asks wrongly; the run ends in a
// fault that names them. Any other error of an Env is the platform's.
var (
	ErrNoCollection = errors.New("no such collection")
	ErrNoVaultKey   = errors.New("no such vault key")
	// ErrMailBacklog: the project has as many messages waiting as it may
	// (docs/mail.md); the run faults with 503 and Retry-After.
	ErrMailBacklog = errors.New("the project's outbox is full")
	// ErrJobBacklog: the project has as many jobs not yet finished as it
	// may (docs/jobs.md); the run faults with 429.
	ErrJobBacklog = errors.New("the project has too many jobs waiting")
)

// Bounds of the mail one run queues (docs/mail.md): recipients of one
// message, messages of one run.
const (
	MaxRecipients = 50
	MaxMessages   = 100
)

// MailBacklogRetry is the Retry-After, in seconds, of a run that found its
// project's outbox full: about what the worker needs to send a few
// hundred of its messages at the default rate.
const MailBacklogRetry = 60

// Header is one header of an HTTP block's request or of a RETURN's answer.
type Header struct{ Name, Value string }
