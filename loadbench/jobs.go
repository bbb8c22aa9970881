package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// The jobs load (docs/jobs.md): 10,000 jobs written by a route's ENQUEUE
// blocks and drained by the service's job runner, beside the jobs' route
// run directly at /x; and /x while 10,000 jobs drain, beside /x alone.

// jobsPerRound is how many jobs a round enqueues; jobsPerFill how many one
// request of the filling route writes (a LOOP of ENQUEUEs).
const (
	jobsPerRound = 10_000
	jobsPerFill  = 100
)

// seedJobs makes the jobs' route (job_work: a CREATE of one record) and
// the route that enqueues jobsPerFill of them, due after ?delay= ms.
func (b *bench) seedJobs() error {
	operand := func(ref bool, rtype, data string) string {
		return fmt.Sprintf(`{"ref_var":%t,"rtype":%q,"data":%q}`, ref, rtype, data)
	}
	for _, call := range [][2]string{
		{"/collection/create", `{"project_id":"bench","id":"job_done","name":"Jobs done"}`},
		{"/route/create", `{"project_id":"bench","route":{"route_id":"job_work","route_path":"/job/work","method":"POST","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[
		{"type":"OBJECT","depth":0,"local_name":"done","pairs":[{"id":"ok","data":` + operand(false, "BOOLEAN", "true") + `}]},
		{"type":"CREATE","depth":0,"ref_col":"job_done","ref_object":"done","save":true,"conditions":[]},
		{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}]}}}`},
		{"/route/create", `{"project_id":"bench","route":{"route_id":"job_fill","route_path":"/job/fill","method":"POST","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[{"id":"delay","bdtype":"INTEGER"}]},"body":[],"flow":{"blocks":[
		{"type":"LOOP","depth":0,"local_name":"i","min":` + operand(false, "INTEGER", "0") + `,"max":` + operand(false, "INTEGER", fmt.Sprint(jobsPerFill)) + `},
		{"type":"ENQUEUE","depth":1,"route_id":"job_work","query":[],"body":null,"delay_ms":` + operand(true, "OTHER", "delay") + `,"max_attempts":5,"conditions":[],"local_name":""},
		{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}]}}}`},
	} {
		if _, err := b.must(201, "POST", call[0], b.jwt, call[1]); err != nil {
			return err
		}
	}
	return nil
}

// fillJobs enqueues jobsPerRound jobs due in delay, through job_fill over
// 16 connections.
func (b *bench) fillJobs(delay time.Duration) error {
	next := make(chan struct{})
	var mu sync.Mutex
	var failed error
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 30 * time.Second}
	for range 16 {
		wg.Go(func() {
			for range next {
				req, _ := http.NewRequest("POST", fmt.Sprintf("%s/x/bench/job/fill?delay=%d", b.base, delay.Milliseconds()), nil)
				resp, err := client.Do(req)
				if err == nil {
					resp.Body.Close()
					if resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("job_fill answered %d", resp.StatusCode)
					}
				}
				if err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
				}
			}
		})
	}
	for range jobsPerRound / jobsPerFill {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	return failed
}

// drained waits until no job of job_work is unfinished, and gives the
// rate at which those made since began were run: completed jobs a second
// from the first attempt to the last completion.
func drained(ctx context.Context, db *pgx.Conn, since time.Time) (result, error) {
	r := result{name: "jobs: 10,000 enqueued by a route, drained (CREATE one record each)"}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		var left int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'route' AND finalized_at IS NULL`).Scan(&left); err != nil {
			return r, err
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("%d jobs still waiting after 5 minutes", left)
		}
		time.Sleep(100 * time.Millisecond)
	}
	var done, failed int
	var first, last time.Time
	if err := db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state = 'completed'), count(*) FILTER (WHERE state <> 'completed'),
		min(attempted_at), max(finalized_at) FROM river_job WHERE kind = 'route' AND created_at >= $1`, since).Scan(&done, &failed, &first, &last); err != nil {
		return r, err
	}
	r.errors = failed
	if done != jobsPerRound || failed > 0 {
		return r, fmt.Errorf("%d of %d jobs completed, %d not", done, jobsPerRound, failed)
	}
	r.rps = float64(done) / last.Sub(first).Seconds()
	// p50 and p99: from a job's last attempt to its completion.
	err := db.QueryRow(ctx, `SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms), percentile_cont(0.99) WITHIN GROUP (ORDER BY ms)
		FROM (SELECT extract(epoch FROM finalized_at - attempted_at) * 1000 AS ms FROM river_job WHERE kind = 'route' AND created_at >= $1) AS j`, since).Scan(&r.p50, &r.p99)
	return r, err
}

// jobLoads measures the job runner (see the file's comment).
func (b *bench) jobLoads(ctx context.Context, add func(result, *result, string, bool)) error {
	if err := b.seedJobs(); err != nil {
		return err
	}
	db, err := pgx.Connect(ctx, b.appURL)
	if err != nil {
		return err
	}
	defer db.Close(ctx)
	jobs, direct, err := alternate(b.rounds, func() (result, error) {
		since := time.Now()
		if err := b.fillJobs(0); err != nil {
			return result{}, err
		}
		return drained(ctx, db, since)
	}, func() (result, error) {
		return b.wrkMethod("the same route run at /x (POST, 64 conns)", "POST", "/x/bench/job/work", "Accept: application/json")
	})
	if err != nil {
		return err
	}
	add(jobs, direct, "≥ 0.5", jobs.rps >= 0.5*direct.rps && jobs.errors == 0)

	// /x while a backlog drains: 10,000 jobs due 3 s after they are
	// written, and wrk on a reading route from then on.
	busy, quiet, err := alternate(b.rounds, func() (result, error) {
		since := time.Now()
		if err := b.fillJobs(3 * time.Second); err != nil {
			return result{}, err
		}
		time.Sleep(time.Until(since.Add(3 * time.Second)))
		r, err := b.wrk("GET /x/… (FETCH 100) while 10,000 jobs drain", "/x/bench/books/sf", "Accept: application/json")
		if err != nil {
			return r, err
		}
		var left int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'route' AND created_at >= $1 AND finalized_at > now() - $2::interval`,
			since, fmt.Sprintf("%d milliseconds", b.duration.Milliseconds())).Scan(&left); err != nil {
			return r, err
		}
		if _, err := drained(ctx, db, since); err != nil {
			return r, err
		}
		r.name += fmt.Sprintf(" (%d of them during the load)", left)
		return r, nil
	}, func() (result, error) {
		return b.wrk("the same with no job waiting", "/x/bench/books/sf", "Accept: application/json")
	})
	if err != nil {
		return err
	}
	add(busy, quiet, "p99 ≤ 2× its", busy.p99 <= 2*quiet.p99 && busy.errors == 0)
	if strings.Contains(busy.name, "(0 of them") {
		return fmt.Errorf("no job drained during the load")
	}
	return nil
}
