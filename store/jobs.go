package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// Jobs (docs/jobs.md) are kept by River (github.com/riverqueue/river) in
// its table river_job, which its own migrations make: Migrate applies
// them before the project's, on the same connection under the same lock,
// so the project's migrations may index the table. A job of a route
// carries its project and route in its args; these functions read and
// count a project's jobs for the API and the pages, and mark the jobs
// whose run committed its writes.

// migrateJobs applies River's pending migrations, each in a transaction
// of its own (one adds a value to a type that the next statements use),
// on a pool of their own. Most starts find none pending: they learn it
// on conn, without opening the pool.
func migrateJobs(ctx context.Context, conn *pgx.Conn, databaseURL string) error {
	cfg := &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)}
	if check, err := rivermigrate.New(riverpgxv5.New(nil), cfg); err == nil {
		tx, err := conn.Begin(ctx)
		if err != nil {
			return err
		}
		have, err := check.ExistingVersionsTx(ctx, tx)
		_ = tx.Rollback(ctx)
		if err == nil && len(have) == len(check.AllVersions()) {
			return nil
		}
	}
	pool, err := pgxpool.New(ctx, databaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	m, err := rivermigrate.New(riverpgxv5.New(pool), cfg)
	if err != nil {
		return err
	}
	_, err = m.Migrate(ctx, rivermigrate.DirectionUp, nil)
	return err
}

// Pool is the pool the store's statements go to, for the job runner
// (River keeps its own statements).
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// Conn is the transaction as pgx has it, for River's inserts of jobs in
// it. In a BeginRuns transaction, what River sends goes in the current
// run's savepoint, after what the runs held back.
func (t *Tx) Conn() pgx.Tx {
	if t.runs != nil {
		return t.runs
	}
	return t.tx
}

// JobKind is the kind of River's jobs that run a route.
const JobKind = "route"

// JobArgs are what a job that runs a route keeps: the route, and the
// query and body of its run.
type JobArgs struct {
	Project string          `json:"project"`
	Route   string          `json:"route"`
	Query   string          `json:"query,omitempty"`
	Body    json.RawMessage `json:"body,omitempty"`
}

// Kind is River's name of the job's kind.
func (JobArgs) Kind() string { return JobKind }

// Job states as the API names them (docs/jobs.md); River's available and
// pending read as scheduled.
const (
	JobScheduled = "scheduled"
	JobRunning   = "running"
	JobRetryable = "retryable"
	JobCompleted = "completed"
	JobDiscarded = "discarded"
	JobCancelled = "cancelled"
)

// JobStates lists the states, in the order the pages show them.
var JobStates = []string{JobScheduled, JobRunning, JobRetryable, JobDiscarded, JobCancelled, JobCompleted}

// riverStates are River's states of each of the API's.
var riverStates = map[string][]string{
	JobScheduled: {"available", "scheduled", "pending"}, JobRunning: {"running"}, JobRetryable: {"retryable"},
	JobCompleted: {"completed"}, JobDiscarded: {"discarded"}, JobCancelled: {"cancelled"},
}

// Job is a job of a route, as the API shows it.
type Job struct {
	ID          int64      `json:"id"`
	RouteID     string     `json:"route_id"`
	State       string     `json:"state"`
	Attempts    int        `json:"attempts"`
	MaxAttempts int        `json:"max_attempts"`
	RunAt       time.Time  `json:"run_at"`
	LastError   *string    `json:"last_error"`
	CreatedAt   time.Time  `json:"created_at"`
	FinishedAt  *time.Time `json:"finished_at"`
}

// JobQuery selects a project's jobs: of one route when Route is set, in
// one state when State is, newest first.
type JobQuery struct {
	Project, Route, State string
	Offset, Limit         int
}

// JobCountCap is where the count of a project's jobs stops (amount_capped).
const JobCountCap = LogCountCap

const jobColumns = `id, args->>'route', state, attempt, max_attempts, scheduled_at,
	errors[array_length(errors, 1)]->>'error', created_at, finalized_at`

func scanJob(row pgx.CollectableRow) (Job, error) {
	var j Job
	err := row.Scan(&j.ID, &j.RouteID, &j.State, &j.Attempts, &j.MaxAttempts, &j.RunAt, &j.LastError, &j.CreatedAt, &j.FinishedAt)
	switch j.State {
	case "available", "pending":
		j.State = JobScheduled
	}
	return j, err
}

// jobsWhere is the condition of q and its arguments.
func jobsWhere(q JobQuery) (string, []any) {
	cond, args := " WHERE kind = 'route' AND args->>'project' = $1", []any{q.Project}
	if q.Route != "" {
		args = append(args, q.Route)
		cond += " AND args->>'route' = $" + strconv.Itoa(len(args))
	}
	if q.State != "" {
		args = append(args, riverStates[q.State])
		cond += " AND state = ANY($" + strconv.Itoa(len(args)) + "::river_job_state[])"
	}
	return cond, args
}

// Jobs lists the jobs q selects, and how many there are (at most
// JobCountCap: capped says the count stopped there).
func (s *Store) Jobs(ctx context.Context, q JobQuery) (_ []Job, amount int, capped bool, err error) {
	defer wrap(&err, "jobs", q.Project)
	cond, args := jobsWhere(q)
	if err := s.db.QueryRow(ctx, fmt.Sprintf("SELECT count(*) FROM (SELECT 1 FROM river_job%s LIMIT %d) AS capped", cond, JobCountCap+1), args...).Scan(&amount); err != nil {
		return nil, 0, false, err
	}
	if amount > JobCountCap {
		amount, capped = JobCountCap, true
	}
	rows, err := s.db.Query(ctx, fmt.Sprintf("SELECT %s FROM river_job%s ORDER BY id DESC OFFSET %d LIMIT %d", jobColumns, cond, q.Offset, q.Limit), args...)
	if err != nil {
		return nil, 0, false, err
	}
	jobs, err := pgx.CollectRows(rows, scanJob)
	return jobs, amount, capped, err
}

// Job is job id of project (ErrNotFound when it is none of the
// project's).
func (s *Store) Job(ctx context.Context, project string, id int64) (_ Job, err error) {
	defer wrap(&err, "job", project, strconv.FormatInt(id, 10))
	rows, err := s.db.Query(ctx, "SELECT "+jobColumns+" FROM river_job WHERE id = $1 AND kind = 'route' AND args->>'project' = $2", id, project)
	if err != nil {
		return Job{}, err
	}
	j, err := pgx.CollectExactlyOneRow(rows, scanJob)
	if errors.Is(err, pgx.ErrNoRows) {
		return Job{}, ErrNotFound
	}
	return j, err
}

// WaitingJobs counts the jobs of project not yet finished, up to limit.
func (s *Store) WaitingJobs(ctx context.Context, project string, limit int) (n int, err error) {
	defer wrap(&err, "waiting jobs", project)
	err = s.db.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM river_job
		WHERE kind = 'route' AND args->>'project' = $1 AND finalized_at IS NULL LIMIT $2) AS waiting`, project, limit).Scan(&n)
	return n, err
}

// MarkJobDone notes, in the transaction of a job's run, that the run
// committed its writes: a later attempt of the job (its instance stopped
// before River heard it had ended) finds it and writes nothing again.
func (t *Tx) MarkJobDone(ctx context.Context, job int64) (err error) {
	defer wrap(&err, "mark job done", strconv.FormatInt(job, 10))
	_, err = t.db.Exec(ctx, "INSERT INTO job_writes (job_id) VALUES ($1) ON CONFLICT DO NOTHING", job)
	return err
}

// jobWritesKept is how long a job's mark is kept: longer than River keeps
// a finished job (JobsKept).
const jobWritesKept = JobsKept + 24*time.Hour

// JobsKept is how long River keeps a finished job (completed, cancelled
// or discarded) before its cleaner deletes it.
const JobsKept = 7 * 24 * time.Hour

// JobDone says whether a run of job committed its writes.
func (s *Store) JobDone(ctx context.Context, job int64) (done bool, err error) {
	defer wrap(&err, "job done", strconv.FormatInt(job, 10))
	err = s.db.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM job_writes WHERE job_id = $1)", job).Scan(&done)
	return done, err
}

// ChangeJob does change to job id of project (River's cancel or retry, on
// the transaction given) with its event, job_<verb>, in one transaction,
// and returns the job as it then stands. change is given the job as it
// was, and may refuse it.
func (s *Store) ChangeJob(ctx context.Context, project string, id int64, verb string, change func(ctx context.Context, tx pgx.Tx, was Job) error) (j Job, err error) {
	defer wrap(&err, verb+" job", project, strconv.FormatInt(id, 10))
	err = s.change(ctx, func(tx *Store) (Event, error) {
		was, err := tx.Job(ctx, project, id)
		if err != nil {
			return Event{}, err
		}
		j = was
		if err := change(ctx, tx.db.(pgx.Tx), was); err != nil {
			return Event{}, err
		}
		if j, err = tx.Job(ctx, project, id); err != nil {
			return Event{}, err
		}
		what := map[string]string{"cancel": "cancelled", "retry": "due now"}[verb]
		return Event{Type: "job_" + verb, ProjectID: in(project), Object: j.RouteID + "/" + strconv.FormatInt(id, 10),
			Summary: fmt.Sprintf("job %d of route %s %s", id, j.RouteID, what)}, nil
	})
	return j, err
}
