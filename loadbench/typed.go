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

// Typed collections (docs/collections.md, #52): a FETCH matching an
// indexed field at 10,000 and at 1,000,000 records, the same filter as a
// list's first page with its capped count, a create into a
// collection with a unique field beside the same create without it, and
// a change of fields checked against 1,000,000 records while writes go on.

// typedSizes are the records of the two collections whose FETCH by an
// indexed field is compared.
var typedSizes = []struct {
	id string
	n  int
}{{"films_small", 10_000}, {"films_large", 1_000_000}}

// seedTyped makes the typed collections, their records (by SQL: one in 50
// of each "waiting") and the routes: GET /x/bench/films/<id> (the newest
// 20 waiting), POST /x/bench/join/unique and /join/plain (a record keyed
// by a fresh UUID, unique in one collection and not in the other).
func (b *bench) seedTyped(ctx context.Context, operand func(bool, string, string) string) error {
	for _, c := range typedSizes {
		body := fmt.Sprintf(`{"project_id":"bench","id":%q,"name":%q,"fields":[{"name":"status","type":"text","indexed":true},{"name":"n","type":"integer"}]}`, c.id, c.id)
		if _, err := b.must(201, "POST", "/collection/create", b.jwt, body); err != nil {
			return err
		}
		route := `{"project_id":"bench","route":{"route_id":"` + c.id + `","route_path":"/films/` + c.id + `","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[
		{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"` + c.id + `","match":[{"id":"status","data":` + operand(false, "STRING", "waiting") + `}],"sort":{"property":"_id","descending":true},"limit":` + operand(false, "INTEGER", "20") + `},
		{"type":"RETURN","depth":0,"pairs":[{"id":"items","data":` + operand(true, "ARRAY", "rows") + `}],"conditions":[]}]}}}`
		if _, err := b.must(201, "POST", "/route/create", b.jwt, route); err != nil {
			return err
		}
	}
	for _, kind := range []string{"unique", "plain"} {
		fields := `[{"name":"key","type":"text","unique":true}]`
		if kind == "plain" {
			fields = `[{"name":"key","type":"text"}]`
		}
		if _, err := b.must(201, "POST", "/collection/create", b.jwt, `{"project_id":"bench","id":"members_`+kind+`","name":"Members","fields":`+fields+`}`); err != nil {
			return err
		}
		route := `{"project_id":"bench","route":{"route_id":"join_` + kind + `","route_path":"/join/` + kind + `","method":"POST","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[
		{"type":"FUNCTION","depth":0,"local_name":"key","func":"V4","params":[]},
		{"type":"OBJECT","depth":0,"local_name":"o","pairs":[{"id":"key","data":` + operand(true, "STRING", "key") + `}]},
		{"type":"CREATE","depth":0,"ref_col":"members_` + kind + `","ref_object":"o","save":true,"conditions":[]},
		{"type":"RETURN","depth":0,"pairs":[{"id":"ok","data":` + operand(false, "BOOLEAN", "true") + `}],"conditions":[]}]}}}`
		if _, err := b.must(201, "POST", "/route/create", b.jwt, route); err != nil {
			return err
		}
	}
	var inserts []string
	for _, c := range typedSizes {
		inserts = append(inserts, fmt.Sprintf(`INSERT INTO records (project_id, collection_id, data)
			SELECT 'bench', %s, jsonb_build_object('status', CASE WHEN i %% 50 = 0 THEN 'waiting' ELSE 'done' END, 'n', i)
			FROM generate_series(1, %d) AS i`, "'"+c.id+"'", c.n))
	}
	return b.seedRecords(ctx, inserts...)
}

// seedRecords runs the statements that insert records by SQL, then
// vacuums and analyzes the records, as autovacuum would in time: the
// loads then read with the statistics of what they read.
func (b *bench) seedRecords(ctx context.Context, inserts ...string) error {
	conn, err := pgx.Connect(ctx, b.appURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, sql := range inserts {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return err
		}
	}
	_, err = conn.Exec(ctx, "VACUUM ANALYZE records")
	return err
}

// typedLoads measures the typed collections' rows.
func (b *bench) typedLoads(ctx context.Context, add func(result, *result, string, bool)) error {
	large, small, err := alternate(b.rounds, func() (result, error) {
		return b.wrk("GET /x/… (FETCH by an indexed field, 1,000,000)", "/x/bench/films/films_large", "Accept: application/json")
	}, func() (result, error) {
		return b.wrk("the same at 10,000 records", "/x/bench/films/films_small", "Accept: application/json")
	})
	if err != nil {
		return err
	}
	add(large, small, "p99 ≤ 1.2× its", large.p99 <= 1.2*small.p99 && large.errors == 0)

	// A list's first page filtered by the indexed field, with its capped
	// count: as the FETCH, the same cost at either size.
	list := func(id string) string {
		return "/data/fetch?project_id=bench&collection_id=" + id + "&limit=50&where=%7B%22status%22%3A%22waiting%22%7D"
	}
	largeList, smallList, err := alternate(b.rounds, func() (result, error) {
		return b.wrk("GET /data/fetch (where an indexed field, 1,000,000)", list("films_large"), "Accept: application/json", "Authorization: Bearer "+b.jwt)
	}, func() (result, error) {
		return b.wrk("the same at 10,000 records", list("films_small"), "Accept: application/json", "Authorization: Bearer "+b.jwt)
	})
	if err != nil {
		return err
	}
	add(largeList, smallList, "p99 ≤ 2× its", largeList.p99 <= 2*smallList.p99 && largeList.errors == 0)

	conns := b.conns
	defer func() { b.conns = conns }()
	b.conns = 32
	unique, plain, err := alternate(b.rounds, func() (result, error) {
		return b.wrkMethod("POST /x/… (CREATE, a unique field, 32 conns)", "POST", "/x/bench/join/unique", "Accept: application/json")
	}, func() (result, error) {
		return b.wrkMethod("the same create, the field not unique", "POST", "/x/bench/join/plain", "Accept: application/json")
	})
	if err != nil {
		return err
	}
	add(unique, plain, "≥ 0.8", unique.rps >= 0.8*plain.rps && unique.errors == 0)
	b.conns = conns

	check, err := b.fieldCheck()
	if err != nil {
		return err
	}
	add(check, nil, "(seconds; a write's longest wait)", true)

	imported, copied, err := b.importBeside(ctx)
	if err != nil {
		return err
	}
	add(imported, &copied, "(the ratio, reported)", imported.errors == 0)
	return nil
}

// importBeside imports 100,000 rows of CSV through POST /data/import into
// a typed collection, then COPYs the same records into another by
// itself; each result's rate is rows a second.
func (b *bench) importBeside(ctx context.Context) (result, result, error) {
	for _, id := range []string{"imported", "copied"} {
		if _, err := b.must(201, "POST", "/collection/create", b.jwt, `{"project_id":"bench","id":"`+id+`","name":"`+id+`",`+
			`"fields":[{"name":"title","type":"text","required":true},{"name":"year","type":"integer"},{"name":"genre","type":"select","values":["sf","crime","drama"]}]}`); err != nil {
			return result{}, result{}, err
		}
	}
	const rows = 100_000
	var csvText strings.Builder
	csvText.WriteString("title,year,genre\n")
	docs := make([][]any, rows)
	for i := range rows {
		genre := [...]string{"sf", "crime", "drama"}[i%3]
		fmt.Fprintf(&csvText, "Book %d,%d,%s\n", i, 1900+i%120, genre)
		docs[i] = []any{"bench", "copied", fmt.Sprintf(`{"title":"Book %d","year":%d,"genre":%q}`, i, 1900+i%120, genre)}
	}
	req, _ := http.NewRequest("POST", b.base+"/data/import?project_id=bench&collection_id=imported", strings.NewReader(csvText.String()))
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Content-Type", "text/csv")
	req.Header.Set("Authorization", "Bearer "+b.jwt)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return result{}, result{}, err
	}
	resp.Body.Close()
	took := time.Since(start)
	imported := result{name: fmt.Sprintf("CSV import, %d rows (rows/s)", rows), rps: rows / took.Seconds(), p50: float64(took.Milliseconds())}
	if resp.StatusCode != http.StatusCreated {
		imported.errors = 1
	}
	conn, err := pgx.Connect(ctx, b.appURL)
	if err != nil {
		return result{}, result{}, err
	}
	defer conn.Close(ctx)
	start = time.Now()
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"records"}, []string{"project_id", "collection_id", "data"}, pgx.CopyFromRows(docs)); err != nil {
		return result{}, result{}, err
	}
	took = time.Since(start)
	fmt.Printf("  CSV import of %d rows: %.0f ms; COPY of the same records: %.0f ms\n", rows, imported.p50, float64(took.Milliseconds()))
	return imported, result{name: "COPY of the same records", rps: rows / took.Seconds(), p50: float64(took.Milliseconds())}, nil
}

// fieldCheck makes n of films_large required, checked against its
// 1,000,000 records, while a writer adds a record to it every 5 ms; the
// result holds the check's time (as p50, in ms) and the longest a write
// took meanwhile (as p99).
func (b *bench) fieldCheck() (result, error) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var longest time.Duration
	writes, failed := 0, 0
	wg.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			start := time.Now()
			status, _, err := b.call("POST", "/data/create", b.jwt, fmt.Sprintf(`{"project_id":"bench","collection_id":"films_large","data":{"status":"done","n":%d}}`, 2_000_000+i))
			if took := time.Since(start); took > longest {
				longest = took
			}
			writes++
			if err != nil || status != http.StatusCreated {
				failed++
			}
		}
	})
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	status, body, err := b.call("PATCH", "/collection/update", b.jwt,
		`{"project_id":"bench","id":"films_large","fields":[{"name":"status","type":"text","indexed":true},{"name":"n","type":"integer","required":true}]}`)
	took := time.Since(start)
	time.Sleep(200 * time.Millisecond)
	close(stop)
	wg.Wait()
	if err != nil {
		return result{}, err
	}
	if status != http.StatusOK {
		return result{}, fmt.Errorf("the field check: %d %s", status, strings.TrimSpace(string(body)))
	}
	fmt.Printf("  field check of 1,000,000 records: %.1f s; %d writes meanwhile, %d failed, the longest %.0f ms\n",
		took.Seconds(), writes, failed, float64(longest.Microseconds())/1000)
	return result{name: "field check, 1,000,000 records (p50: its ms; p99: a write's longest)", p50: float64(took.Milliseconds()),
		p99: float64(longest.Microseconds()) / 1000, errors: failed}, nil
}
