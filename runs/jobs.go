package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"stencil/engine"
	"stencil/store"
)

// Jobs (docs/jobs.md): an ENQUEUE block writes a job in its run's
// transaction with River (github.com/riverqueue/river); every instance's
// runner takes due jobs from the queue and runs each one's route through
// Serve, as a request to /x would be (the run log with trigger job,
// analytics, a background slot first). An answer of 5xx, a fault or an
// error of the platform is retried with exponential back-off until the
// job's attempts are spent; then the job is discarded with its last
// error. A job's HTTP blocks keep one Idempotency-Key across its
// attempts, and a run that committed its writes marks the job in the
// same transaction, so that an attempt after a stopped instance writes
// nothing again.

// jobQueue is River's queue of the routes' jobs.
const jobQueue = "routes"

// Job timing: a job's run is bounded by the engine's time and its wait
// for a background slot (JobTimeout covers both); a job an instance
// stopped running is taken back after JobRescue (JOB_RESCUE), by the
// rescuer River runs every 30 s.
const (
	JobTimeout = 15 * time.Second
	JobRescue  = time.Minute
	// maxBackoff bounds the wait before a job's next attempt.
	maxBackoff = 24 * time.Hour
	// jobFetchCooldown is the shortest time between two fetches of due
	// jobs by one instance.
	jobFetchCooldown = 5 * time.Millisecond
)

// newJobs makes the service's River client: it inserts jobs in runs'
// transactions at once, and works them once Jobs' Run starts it.
func newJobs(s *Service, workers int, rescue time.Duration, log *slog.Logger) (*river.Client[pgx.Tx], error) {
	w := river.NewWorkers()
	if err := river.AddWorkerSafely(w, &jobWorker{s: s}); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return river.NewClient(riverpgxv5.New(s.store.Pool()), &river.Config{
		Queues:      map[string]river.QueueConfig{jobQueue: {MaxWorkers: workers}},
		Workers:     w,
		RetryPolicy: backoff{},
		JobTimeout:  JobTimeout,
		// River fetches due jobs at most once a FetchCooldown (100 ms
		// unless set): at 32 workers that bounded the runner to 320 jobs
		// a second (docs/performance.md).
		FetchCooldown:               jobFetchCooldown,
		RescueStuckJobsAfter:        rescue,
		CompletedJobRetentionPeriod: store.JobsKept,
		CancelledJobRetentionPeriod: store.JobsKept,
		DiscardedJobRetentionPeriod: store.JobsKept,
		Logger:                      log.With("part", "jobs"),
	})
}

// backoff waits 1 s before a job's second attempt, 2 s before its third,
// 4 s … (at most maxBackoff), each drawn within ±10 % so that jobs that
// failed together do not all come back together.
type backoff struct{}

func (backoff) NextRetry(job *rivertype.JobRow) time.Time {
	failed := len(job.Errors) + 1 // this attempt's error is not among them yet
	wait := min(time.Second<<min(failed-1, 30), maxBackoff)
	jitter := time.Duration(rand.Int64N(int64(wait)/5+1)) - wait/10
	return time.Now().Add(wait + jitter)
}

// jobWorker runs the route of a job.
type jobWorker struct {
	river.WorkerDefaults[store.JobArgs]
	s *Service
}

func (w *jobWorker) Work(ctx context.Context, job *river.Job[store.JobArgs]) error {
	return w.s.runJob(ctx, job.ID, job.Attempt, job.Args)
}

// runJob runs attempt n of job id's route. A route that is gone, or that
// cannot run without a caller, ends the job as cancelled: no attempt would
// do better.
func (s *Service) runJob(ctx context.Context, id int64, n int, args store.JobArgs) error {
	if n > 1 {
		// Only an earlier attempt can have committed its writes.
		done, err := s.store.JobDone(ctx, id)
		if err != nil {
			return err
		}
		if done {
			return nil
		}
	}
	plan, err := s.Plan(ctx, args.Project, args.Route)
	if err != nil {
		return err
	}
	if plan == nil {
		return river.JobCancel(fmt.Errorf("route %s is not a route of project %s", args.Route, args.Project))
	}
	if r := plan.Route; len(engine.PathParams(r.RoutePath)) > 0 || r.AuthJWT.Active || r.AuthSignature.Checks() {
		return river.JobCancel(fmt.Errorf("route %s cannot run without a caller (path parameters, auth_jwt or auth_signature)", args.Route))
	}
	apiPath, err := s.table.apiPath(ctx, args.Project)
	if err != nil {
		return err
	}
	a, err := s.Serve(ctx, Request{Plan: plan, ProjectID: args.Project, Method: plan.Route.Method,
		Path: "/x" + strings.TrimSuffix(apiPath, "/") + plan.Route.RoutePath, Query: args.Query, Body: args.Body,
		Client: "job", Trigger: store.TriggerJob, job: id})
	if err != nil {
		return err
	}
	if a.Status >= 500 {
		var answer struct{ Message string }
		_ = json.Unmarshal(a.Body, &answer)
		return fmt.Errorf("the route answered %d: %s", a.Status, strings.TrimPrefix(answer.Message, "Error: "))
	}
	return nil
}

// jobKey is the base of the Idempotency-Keys of job id's HTTP blocks: the
// same at every attempt.
func jobKey(id int64) string { return "job-" + strconv.FormatInt(id, 10) }

// Jobs is the service's job runner; Run sets it going.
type Jobs struct {
	s   *Service
	log *slog.Logger
}

// Jobs makes the service's job runner.
func (s *Service) Jobs(log *slog.Logger) *Jobs { return &Jobs{s: s, log: log} }

// Run works jobs until ctx ends, then lets the runs under way finish
// (within JobTimeout) before it returns.
func (j *Jobs) Run(ctx context.Context) {
	if err := j.s.jobs.Start(ctx); err != nil {
		if j.log != nil {
			j.log.Error("jobs: start", "err", err)
		}
		return
	}
	<-ctx.Done()
	stop, cancel := context.WithTimeout(context.Background(), JobTimeout)
	defer cancel()
	if err := j.s.jobs.Stop(stop); err != nil && !errors.Is(err, context.DeadlineExceeded) && j.log != nil {
		j.log.Warn("jobs: stop", "err", err)
	}
}

// CancelJob cancels job id of project: a job not yet run never runs; a
// running one is told to stop. It returns the job as it stands.
func (s *Service) CancelJob(ctx context.Context, project string, id int64) (store.Job, error) {
	return s.store.ChangeJob(ctx, project, id, "cancel", func(ctx context.Context, tx pgx.Tx, _ store.Job) error {
		_, err := s.jobs.JobCancelTx(ctx, tx, id)
		return err
	})
}

// ErrJobNotRetried: a running or completed job is not retried.
var ErrJobNotRetried = errors.New("only a job that has not completed and is not running is retried")

// RetryJob makes job id of project due now: a scheduled, retryable,
// discarded or cancelled one (ErrJobNotRetried otherwise, with the job). A
// job whose attempts were spent gets one more.
func (s *Service) RetryJob(ctx context.Context, project string, id int64) (store.Job, error) {
	var refused store.Job
	j, err := s.store.ChangeJob(ctx, project, id, "retry", func(ctx context.Context, tx pgx.Tx, was store.Job) error {
		if was.State == store.JobRunning || was.State == store.JobCompleted {
			refused = was
			return ErrJobNotRetried
		}
		_, err := s.jobs.JobRetryTx(ctx, tx, id)
		return err
	})
	if errors.Is(err, ErrJobNotRetried) {
		return refused, err
	}
	return j, err
}

// backlogAge is how old the count of a project's waiting jobs that a run
// checks may be.
const backlogAge = time.Second

// backlog is a project's count of waiting jobs and when it was read.
type backlog struct {
	n  int
	at time.Time
}

// jobsFull says whether project holds JobBacklog jobs not yet
// finished, from a count at most backlogAge old. A run of a route that
// enqueues asks before its transaction begins (a count read in a
// SERIALIZABLE transaction would make every two runs that enqueue at once
// conflict), so runs at the same moment may together pass the bound by
// their number.
func (s *Service) jobsFull(ctx context.Context, project string) (bool, error) {
	if b, ok := s.backlogs.Load(project); ok && time.Since(b.(backlog).at) < backlogAge {
		return b.(backlog).n >= s.JobBacklog, nil
	}
	n, err := s.store.WaitingJobs(ctx, project, s.JobBacklog)
	if err != nil {
		return false, err
	}
	s.backlogs.Store(project, backlog{n: n, at: time.Now()})
	return n >= s.JobBacklog, nil
}

// Enqueue writes job j of the run's project in the run's transaction.
func (e *runEnv) Enqueue(ctx context.Context, j engine.Job) (int64, error) {
	ctx = e.on(ctx)
	if e.jobsFull {
		return 0, engine.ErrJobBacklog
	}
	if err := e.begin(ctx); err != nil {
		return 0, err
	}
	opts := &river.InsertOpts{Queue: jobQueue, MaxAttempts: j.MaxAttempts}
	if j.Delay > 0 {
		opts.ScheduledAt = time.Now().Add(j.Delay)
	}
	res, err := e.s.jobs.InsertTx(ctx, e.tx.Conn(), store.JobArgs{Project: e.project, Route: j.Route, Query: j.Query, Body: j.Body}, opts)
	if err != nil {
		return 0, err
	}
	return res.Job.ID, nil
}
