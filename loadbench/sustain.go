package main

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"stencil/store"
)

// The run log under sustained load (docs/performance.md): a route of one
// RETURN loaded at full speed for a long while, then what analytics
// counted, what the run log kept and dropped and how large it grew; and
// retention's cost, the sweep timed with a past day's partition of each
// size in rows.

// sustainResult is one sustained load of /x and what the service made of
// it.
type sustainResult struct {
	took     time.Duration
	rps      float64
	served   int   // answers wrk counted, every status
	counted  int64 // runs in the route's analytics
	kept     int64 // rows the run log kept
	standFor int64 // the runs those rows stand for (their sample rates added)
	dropped  int   // runs the service said it dropped
	logBytes int64 // the run log's size on disk after the load
	after    int64 // and after the sweep dropped the load's day
}

// sustainConns are the connections of the sustained load: as many as the
// fixed loads use, the rate this machine serves /x at its fastest.
const sustainConns = 64

// sustain makes project "sustain" with GET /x/sustain/ok (one RETURN),
// loads it for d, waits for the run log's writer to catch up and reads
// the figures; then it drops the load's day as the sweep would once it is
// past retention, and reads the log's size again.
func (b *bench) sustain(ctx context.Context, pool *pgxpool.Pool, d time.Duration) (sustainResult, error) {
	var s sustainResult
	if _, err := b.must(201, "POST", "/project/create", b.jwt, `{"id":"sustain","name":"sustain","api_path":"/sustain","x_rate_limit":0}`); err != nil {
		return s, err
	}
	route := `{"project_id":"sustain","route":{"route_id":"ok","route_path":"/ok","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[
		{"type":"RETURN","depth":0,"pairs":[{"id":"ok","data":{"ref_var":false,"rtype":"BOOLEAN","data":"true"}}],"conditions":[]}]}}}`
	if _, err := b.must(201, "POST", "/route/create", b.jwt, route); err != nil {
		return s, err
	}
	fmt.Printf("sustain: GET /x/sustain/ok at %d connections for %v…\n", sustainConns, d)
	logsFrom := b.logs.Len()
	conns, duration := b.conns, b.duration
	b.conns, b.duration = sustainConns, d
	start := time.Now()
	r, err := b.wrk("GET /x/… (one RETURN), sustained", "/x/sustain/ok", "Accept: application/json")
	b.conns, b.duration = conns, duration
	if err != nil {
		return s, err
	}
	s.took, s.rps, s.served = time.Since(start), r.rps, r.done+r.errors
	// The writer adds its tally once a second and its queue behind it:
	// wait until both stand still.
	read := func() (counted, kept, standFor int64, err error) {
		err = pool.QueryRow(ctx, `SELECT
			(SELECT coalesce(sum(n2xx + n3xx + n4xx + n5xx + limited + busy), 0) FROM route_stats WHERE project_id = 'sustain' AND route_id = 'ok' AND resolution = 'm'),
			(SELECT count(*) FROM route_runs WHERE project_id = 'sustain'),
			(SELECT coalesce(sum(sample_rate), 0) FROM route_runs WHERE project_id = 'sustain')`).Scan(&counted, &kept, &standFor)
		return counted, kept, standFor, err
	}
	for still := 0; still < 3; time.Sleep(time.Second) {
		c, k, f, err := read()
		if err != nil {
			return s, err
		}
		if c == s.counted && k == s.kept {
			still++
		} else {
			still = 0
		}
		s.counted, s.kept, s.standFor = c, k, f
	}
	s.dropped = droppedRuns(b.logs.String()[logsFrom:])
	if s.logBytes, err = runLogBytes(ctx, pool); err != nil {
		return s, err
	}
	// Once the day is past retention the sweep drops its partition whole:
	// the same statements, run as of the day after next.
	if err := store.New(pool).SweepRunLogAsOf(ctx, store.Truncate(time.Now(), store.Day).AddDate(0, 0, 1).Add(store.RunsKept)); err != nil {
		return s, err
	}
	if s.after, err = runLogBytes(ctx, pool); err != nil {
		return s, err
	}
	fmt.Printf("  %s\n", s)
	return s, nil
}

// droppedRuns adds up the runs the service's warnings say it dropped.
func droppedRuns(logs string) int {
	n := 0
	for _, m := range regexp.MustCompile(`msg="run log: runs dropped[^"]*" runs=(\d+)`).FindAllStringSubmatch(logs, -1) {
		v, _ := strconv.Atoi(m[1])
		n += v
	}
	return n
}

// runLogBytes is the run log's size on disk, every partition with its
// indexes.
func runLogBytes(ctx context.Context, pool *pgxpool.Pool) (n int64, err error) {
	err = pool.QueryRow(ctx, `SELECT coalesce(sum(pg_total_relation_size(inhrelid)), 0)::bigint FROM pg_inherits WHERE inhparent = 'route_runs'::regclass`).Scan(&n)
	return n, err
}

// String is the sustained load's line of the table, with its verdict: every
// run counted, none dropped unsaid, the sample standing for every run.
func (s sustainResult) String() string {
	// wrk counts no answer of a request in flight when it stops: the
	// service may have served up to a connection's one more, twice (the
	// warm-up and the load). The kept rows' sample rates are an estimate.
	verdict := "ok"
	if s.counted < int64(s.served) || s.counted > int64(s.served+2*sustainConns) || s.dropped > 0 ||
		math.Abs(float64(s.standFor-s.counted)) > 0.01*float64(s.counted) {
		verdict = "MISSED"
	}
	return fmt.Sprintf("sustained /x load, %v at %d connections: %s runs served (%.0f/s), %s counted in analytics, %s kept in the run log standing for %s, %d dropped (goal: every run counted, none dropped, the kept rows standing for the runs within 1 %%); the run log %s after the load, %s once the sweep dropped its day — %s",
		s.took.Round(time.Second), sustainConns, count(s.served), s.rps, count(int(s.counted)), count(int(s.kept)), count(int(s.standFor)), s.dropped, mib(s.logBytes), mib(s.after), verdict)
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// retentionResult is the sweep timed with a past day of rows runs.
type retentionResult struct {
	rows  int
	fill  time.Duration // making the day (not the sweep's)
	sweep time.Duration
	// wait is the longest a read of the run log took while the sweep ran:
	// how long the log was not there for its pages.
	wait time.Duration
}

// retention times the sweep dropping a past day's partition of each size
// in rows. The legacy partition (the rows from before the partitioning)
// goes first, as it does on a service that has run past it, so that a
// day's partition can be made for a past day.
func (b *bench) retention(ctx context.Context, pool *pgxpool.Pool, sizes []int) ([]retentionResult, error) {
	// The legacy partition reaches past today (migration 049): today's
	// partition and those ahead are made at once, as the service would.
	if _, err := pool.Exec(ctx, `ALTER TABLE route_runs DETACH PARTITION route_runs_legacy; DROP TABLE route_runs_legacy`); err != nil {
		return nil, err
	}
	if err := store.New(pool).EnsurePartitions(ctx); err != nil {
		return nil, err
	}
	var out []retentionResult
	for i, rows := range sizes {
		day := store.Truncate(time.Now(), store.Day).Add(-store.RunsKept).AddDate(0, 0, -2-i)
		fmt.Printf("retention: a day of %d runs…\n", rows)
		start := time.Now()
		// The day is filled as a table of its own and then attached:
		// attaching builds its indexes once, from sorted rows, where rows
		// inserted one by one would update six indexes each. Its ids are
		// past any the log gives. It takes the day's name only as it is
		// attached (one transaction): until then the service's own sweep
		// would take it for a day detached and not dropped, and drop it
		// (docs/performance.md).
		fill := pgx.Identifier{"retention_fill"}.Sanitize()
		name := "route_runs_" + day.Format("20060102")
		if _, err := pool.Exec(ctx, "DROP TABLE IF EXISTS "+fill+"; CREATE TABLE "+fill+" (LIKE route_runs INCLUDING DEFAULTS INCLUDING CONSTRAINTS)"); err != nil {
			return nil, err
		}
		if _, err := pool.Exec(ctx, `INSERT INTO `+fill+` (id, at, project_id, route_id, method, path, status, ended, duration_us)
			SELECT $3::bigint + i, $1::timestamptz + (i % 86400) * interval '1 second', 'other', 'r' || (i % 100), 'GET', '/r', CASE WHEN i % 50 = 0 THEN 500 ELSE 200 END, 'RETURN', 900
			FROM generate_series(1, $2::bigint) AS i`, day, rows, int64(i+1)<<40); err != nil {
			return nil, err
		}
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, fmt.Sprintf("ALTER TABLE %s RENAME TO %s; ALTER TABLE route_runs ATTACH PARTITION %s FOR VALUES FROM ('%s') TO ('%s')",
				fill, pgx.Identifier{name}.Sanitize(), pgx.Identifier{name}.Sanitize(), day.Format(time.RFC3339), day.AddDate(0, 0, 1).Format(time.RFC3339)))
			return err
		})
		if err != nil {
			return nil, err
		}
		if err := b.settle(); err != nil {
			return nil, err
		}
		res := retentionResult{rows: rows, fill: time.Since(start)}
		stop := make(chan struct{})
		var reads sync.WaitGroup
		reads.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				t := time.Now()
				if _, err := pool.Exec(ctx, `SELECT id FROM route_runs WHERE project_id = 'sustain' ORDER BY id DESC LIMIT 1`); err == nil {
					res.wait = max(res.wait, time.Since(t))
				}
				time.Sleep(time.Millisecond)
			}
		})
		start = time.Now()
		err = store.New(pool).SweepRunLogAsOf(ctx, time.Now())
		res.sweep = time.Since(start)
		close(stop)
		reads.Wait()
		if err != nil {
			return nil, err
		}
		var left int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relname = $1`, name).Scan(&left); err != nil {
			return nil, err
		}
		if left != 0 {
			return nil, fmt.Errorf("retention: the sweep left the day of %d runs", rows)
		}
		fmt.Printf("  made in %v; the sweep dropped it in %v, a read of the log waiting at most %v meanwhile\n",
			res.fill.Round(time.Second), res.sweep.Round(time.Millisecond), res.wait.Round(time.Millisecond))
		out = append(out, res)
	}
	return out, nil
}

// retentionLine is retention's line of the table, with its verdict: a
// read of the run log waits no longer while the largest day is dropped
// than while the smallest is (2× and 20 ms of leeway: single reads on a
// shared machine). The sweep's own time is shown: the files of a day are
// given back to the file system in time that grows with their size.
func retentionLine(rs []retentionResult) string {
	if len(rs) == 0 {
		return ""
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000) }
	var parts []string
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("a day of %s runs dropped in %s, a read of the log waiting at most %s", count(r.rows), ms(r.sweep), ms(r.wait)))
	}
	verdict := "ok"
	if first, last := rs[0].wait, rs[len(rs)-1].wait; last > 2*first+20*time.Millisecond {
		verdict = "MISSED"
	}
	return "retention's cost: " + strings.Join(parts, "; ") + " (goal: the same wait at every size) — " + verdict + "\n"
}
