package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"stencil/store"
)

// Cost as the data grows (docs/performance.md): each hot path loaded at
// three sizes of its data, 1×, 10× and 100×, the data seeded in SQL
// between them, and the retention sweep of the largest run log and event
// log with /x under load meanwhile. The table goes to the terminal and,
// with the charts, into the document.

// scaleConns are the connections of every scale load.
const scaleConns = 16

// dataset is data of one kind at three sizes, and the loads that read it.
type dataset struct {
	name  string // the chart's file name
	unit  string // what a size counts
	sizes [3]int
	// grow adds rows so that there are `to` of them where there were `from`.
	grow func(ctx context.Context, conn *pgx.Conn, from, to int) error
	// restart: the service reads the data at start (its route table).
	restart bool
	loads   []scaleLoad
	// tables are the dataset's big tables: at the largest size, no
	// statement the loads run may read one sequentially.
	tables []string
	// plans is what PostgreSQL's plans of the loads' statements showed at
	// the largest size (explainLargest).
	plans planCheck
}

// scaleLoad is one request loaded at each size of its dataset.
type scaleLoad struct {
	name   string
	method string // "" is GET
	path   func(size int) string
	body   string
	// grows says the path's cost is documented to grow with the data (a
	// deep offset), so it is shown but not held to the goal.
	grows bool
}

// point is a load's figures at one size, and the service's peak RSS over
// that load.
type point struct {
	size int
	r    result
	rss  float64
}

// series is one load's points, in size order.
type series struct {
	set    *dataset
	load   scaleLoad
	points []point
}

// scaleGoal is how much a path's p99 may grow from the smallest size to the
// largest.
const scaleGoal = 2.0

// scale seeds and loads every dataset (or only the one named), sweeps,
// prints the table and, when doc is set, writes the table and the charts
// into it.
func (b *bench) scale(ctx context.Context, factor float64, doc, only string, so sustainOptions) error {
	// A deep offset of the largest log takes seconds; it is measured,
	// not dropped at wrk's 2 s.
	b.conns, b.wrkTimeout = scaleConns, 15*time.Second
	if err := b.account(); err != nil {
		return err
	}
	pool, err := pgxpool.New(ctx, b.appURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	conn, err := pgx.Connect(ctx, b.appURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	sets, err := b.scaleSetup(ctx, factor)
	if err != nil {
		return err
	}
	switch only {
	case "":
	case "sustain":
		sets = nil
	default:
		i := slices.IndexFunc(sets, func(d *dataset) bool { return d.name == only })
		if i < 0 {
			return fmt.Errorf("-scale-only: no dataset %q", only)
		}
		sets = sets[i : i+1]
	}
	var all []*series
	for _, d := range sets {
		var mine []*series
		for _, l := range d.loads {
			s := &series{set: d, load: l}
			mine, all = append(mine, s), append(all, s)
		}
		from := 0
		for _, size := range d.sizes {
			start := time.Now()
			if err := d.grow(ctx, conn, from, size); err != nil {
				return fmt.Errorf("%s: seeding %d %s: %w", d.name, size, d.unit, err)
			}
			if _, err := conn.Exec(ctx, "VACUUM ANALYZE"); err != nil {
				return err
			}
			from = size
			fmt.Printf("%s: %d %s, seeded in %v\n", d.name, size, d.unit, time.Since(start).Round(time.Second))
			if d.restart {
				b.stopService()
				if err := b.startService(ctx); err != nil {
					return err
				}
			}
			// The first request reads the route table of a service
			// started anew; then its memory settles.
			if _, _, err := b.call("GET", d.loads[0].path(size), b.pat, ""); err != nil {
				return err
			}
			var points []point
			for _, l := range d.loads {
				fmt.Printf("  resident memory before the load: %.0f MiB\n", b.settleRSS())
				if err := b.resetPeakRSS(); err != nil {
					return err
				}
				method := l.method
				if method == "" {
					method = "GET"
				}
				// One request first: a load whose answers are errors says why.
				if status, raw, err := b.call(method, l.path(size), b.pat, l.body); err != nil || status/100 != 2 {
					return fmt.Errorf("%s %s: %d %v %.300s", method, l.path(size), status, err, raw)
				}
				r, err := b.wrkBody(l.name, method, l.path(size), l.body, "Accept: application/json", "Authorization: Bearer "+b.pat)
				if err != nil {
					return err
				}
				rss := b.peakRSS()
				fmt.Printf("  %-44s %9.0f/s  p50 %8.2f ms  p99 %8.2f ms  errors %d  peak RSS %.0f MiB\n", l.name, r.rps, r.p50, r.p99, r.errors, rss)
				points = append(points, point{size: size, r: r, rss: rss})
			}
			for i := range points {
				mine[i].points = append(mine[i].points, points[i])
			}
		}
		if d.plans, err = b.explainLargest(ctx, d); err != nil {
			return err
		}
		fmt.Printf("  %s\n", d.plans)
	}
	var sw *sweepResult
	if only == "" {
		r, err := b.sweepUnderLoad(ctx, pool, sets)
		if err != nil {
			return err
		}
		sw = &r
	}
	var last string
	if only == "" || only == "sustain" {
		// Retention first: it takes the legacy partition away, which the
		// sweep under load above still fills.
		rs, err := b.retention(ctx, pool, so.retention)
		if err != nil {
			return err
		}
		s, err := b.sustain(ctx, pool, so.load)
		if err != nil {
			return err
		}
		last = s.String() + "\n" + retentionLine(rs)
	}
	table := scaleTable(all, sw, last)
	fmt.Println()
	fmt.Print(table.text)
	if doc == "" {
		return nil
	}
	return writeScaleDoc(doc, all, table.markdown)
}

// scaleSetup makes the projects, the collection, the routes and the vault
// entries the datasets copy, through the API, and returns the datasets,
// their sizes multiplied by factor (1 for the documented run).
func (b *bench) scaleSetup(ctx context.Context, factor float64) ([]*dataset, error) {
	n := func(size int) int { return max(10, int(math.Round(float64(size)*factor))) }
	sizes := func(small int) [3]int { return [3]int{n(small), n(small * 10), n(small * 100)} }
	for _, p := range []string{"scale", "other"} {
		if _, err := b.must(201, "POST", "/project/create", b.jwt, fmt.Sprintf(`{"id":%q,"name":%q,"api_path":"/%s","x_rate_limit":0}`, p, p, p)); err != nil {
			return nil, err
		}
	}
	operand := func(ref bool, rtype, data string) string {
		return fmt.Sprintf(`{"ref_var":%t,"rtype":%q,"data":%q}`, ref, rtype, data)
	}
	fetch := func(id, path, status string) string {
		return `{"project_id":"scale","route":{"route_id":"` + id + `","route_path":"` + path + `","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[
		{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"tickets","match":[{"id":"status","data":` + operand(false, "STRING", status) + `}],"sort":{"property":"_id","descending":true},"limit":` + operand(false, "INTEGER", "20") + `},
		{"type":"RETURN","depth":0,"pairs":[{"id":"items","data":` + operand(true, "ARRAY", "rows") + `}],"conditions":[]}]}}}`
	}
	// r0 is the route every route of the routes dataset copies.
	r0 := `{"route_id":"r0","route_path":"/r0/items/:id","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[
		{"type":"RETURN","depth":0,"pairs":[{"id":"ok","data":` + operand(false, "STRING", "yes") + `}],"conditions":[]}]}}`
	for _, call := range [][2]string{
		{"/route/create", `{"project_id":"scale","route":` + r0 + `}`},
		{"/collection/create", `{"project_id":"scale","id":"tickets","name":"Tickets"}`},
		{"/route/create", fetch("open_tickets", "/tickets/open", "open")},
		{"/route/create", fetch("rare_tickets", "/tickets/rare", "rare")},
		{"/route/template/create", strings.Replace(templateDoc("t0", 15), `{"name"`, `{"project_id":"scale","name"`, 1)},
	} {
		if _, err := b.must(201, "POST", call[0], b.jwt, call[1]); err != nil {
			return nil, err
		}
	}
	// Ten entries the vault filter finds, sealed by the service; the
	// dataset's others are seeded around them and never opened.
	for i := range 10 {
		if _, err := b.must(201, "POST", "/vault/create", b.jwt, fmt.Sprintf(`{"project_id":"scale","key":"PAYMENT_%02d_KEY","value":"secret-%d"}`, i, i)); err != nil {
			return nil, err
		}
	}
	exec := func(ctx context.Context, conn *pgx.Conn, sql string, args ...any) error {
		_, err := conn.Exec(ctx, sql, args...)
		return err
	}
	runsTop := sizes(100_000)[2]
	eventsTop := sizes(100_000)[2]
	projectsAt := map[int]int{}
	routeSizes := [3]int{n(10), n(1_000), n(10_000)} // from a handful to what a big project holds
	for i, p := range [3]int{10, 100, 1000} {
		projectsAt[routeSizes[i]] = max(1, int(math.Round(float64(p)*min(1, factor*10))))
	}
	save := strings.Replace(strings.Replace(r0, `"r0"`, `"r1"`, 1), "/r0/", "/r1/", 1)
	return []*dataset{
		{
			tables: []string{"routes", "route_versions"},
			name:   "routes", unit: "routes in the project", sizes: routeSizes, restart: true,
			// Routes copied from r0 in SQL (each with its version 1), and
			// the service's other projects, of 10 routes each.
			grow: func(ctx context.Context, conn *pgx.Conn, from, to int) error {
				if err := exec(ctx, conn, `INSERT INTO projects (id, name, api_path, x_rate_limit)
					SELECT 'proj_' || i, 'Project ' || i, '/proj_' || i, 0 FROM generate_series(1, $1) AS i ON CONFLICT DO NOTHING`, projectsAt[to]); err != nil {
					return err
				}
				copyRoutes := func(project string, from, to int) error {
					return exec(ctx, conn, `INSERT INTO routes (project_id, route_id, method, route_path, document, created_by)
						SELECT $1, 'r' || i, method, '/r' || i || '/items/:id',
							document || jsonb_build_object('route_id', 'r' || i, 'route_path', '/r' || i || '/items/:id'), created_by
						FROM routes, generate_series($2::int, $3::int) AS i WHERE project_id = 'scale' AND route_id = 'r0'
						ON CONFLICT DO NOTHING`, project, from, to)
				}
				if err := copyRoutes("scale", max(1, from), to-1); err != nil {
					return err
				}
				for p := 1; p <= projectsAt[to]; p++ {
					if err := copyRoutes(fmt.Sprintf("proj_%d", p), 0, 9); err != nil {
						return err
					}
				}
				return exec(ctx, conn, `INSERT INTO route_versions (project_id, route_id, version, document, created_by, created_at)
					SELECT project_id, route_id, version, document, created_by, updated_at FROM routes
					ON CONFLICT DO NOTHING`)
			},
			loads: []scaleLoad{
				{name: "GET /x/… (route match)", path: func(size int) string { return fmt.Sprintf("/x/scale/r%d/items/7", size/2) }},
				{name: "PATCH /route/update (one route saved)", method: "PATCH", path: func(int) string { return "/route/update" },
					body: strings.Join(strings.Fields(`{"project_id":"scale","route_id":"r1","route":`+save+`}`), " ")},
			},
		},
		{
			tables: []string{"records"},
			name:   "records", unit: "records in the collection", sizes: sizes(10_000),
			// One record in 25 is open, one in 5,000 rare; the newest are
			// read first.
			grow: func(ctx context.Context, conn *pgx.Conn, from, to int) error {
				return exec(ctx, conn, `INSERT INTO records (project_id, collection_id, data)
					SELECT 'scale', 'tickets', jsonb_build_object('n', i, 'status', CASE WHEN i % 5000 = 0 THEN 'rare' WHEN i % 25 = 0 THEN 'open' ELSE 'closed' END)
					FROM generate_series($1::int + 1, $2::int) AS i`, from, to)
			},
			loads: []scaleLoad{
				{name: "FETCH match, limit 20: common (1 in 25)", path: func(int) string { return "/x/scale/tickets/open" }},
				{name: "FETCH match, limit 20: rare (1 in 5,000)", path: func(int) string { return "/x/scale/tickets/rare" }},
				{name: "GET /collection/fetch (record counts)", path: func(int) string { return "/collection/fetch?project_id=scale" }},
				{name: "GET /data/fetch: first 50", path: func(int) string { return "/data/fetch?project_id=scale&collection_id=tickets&limit=50" }},
				{name: "GET /data/fetch: first 50 of where status open", path: func(int) string {
					return "/data/fetch?project_id=scale&collection_id=tickets&limit=50&where=%7B%22status%22%3A%22open%22%7D"
				}},
				{name: "GET /web/data/collection (its reads, as JSON)", path: func(int) string { return "/web/data/collection?project_id=scale&id=tickets" }},
			},
		},
		{
			tables: []string{"route_runs"},
			name:   "runs", unit: "runs in the log", sizes: sizes(100_000),
			// The project's runs, then, newest of all, another project's:
			// a tenth of the log. One run in 100 is a 500, one in 10 a
			// 404; a hundred routes. All inside the log's retention.
			grow: func(ctx context.Context, conn *pgx.Conn, from, to int) error {
				return exec(ctx, conn, `INSERT INTO route_runs (at, project_id, route_id, method, path, status, ended, duration_us)
					SELECT now() - ($3::int - i) * ($4::float8 / $3::int) * interval '1 second',
						CASE WHEN i > $1::int + ($2::int - $1::int) * 9 / 10 THEN 'other' ELSE 'scale' END,
						'r' || (i % 100), 'GET', '/r' || (i % 100),
						CASE WHEN i % 100 = 0 THEN 500 WHEN i % 10 = 0 THEN 404 ELSE 200 END, 'RETURN', 900
					FROM generate_series($1::int + 1, $2::int) AS i`, from, to, runsTop, (store.RunsKept - 24*time.Hour).Seconds())
			},
			loads: []scaleLoad{
				{name: "GET /route/runs: newest 50", path: func(int) string { return "/route/runs?project_id=scale&limit=50" }},
				{name: "GET /route/runs: newest 50 of a route", path: func(int) string { return "/route/runs?project_id=scale&route_id=r7&limit=50" }},
				{name: "GET /route/runs: newest 50 of status=5xx", path: func(int) string { return "/route/runs?project_id=scale&status=5xx&limit=50" }},
				{name: "GET /route/runs: newest 50 of status=500", path: func(int) string { return "/route/runs?project_id=scale&status=500&limit=50" }},
				{name: "GET /route/runs: newest 50 of status=404", path: func(int) string { return "/route/runs?project_id=scale&status=404&limit=50" }},
				{name: "GET /route/runs: offset at 80 % of the log", grows: true,
					path: func(size int) string {
						return fmt.Sprintf("/route/runs?project_id=scale&limit=50&offset=%d", size*8/10*9/10)
					}},
			},
		},
		{
			tables: []string{"events"},
			name:   "events", unit: "events in the log", sizes: sizes(100_000),
			// As the runs: the project's, then another's, newest; one in
			// 100 is a route_delete.
			grow: func(ctx context.Context, conn *pgx.Conn, from, to int) error {
				return exec(ctx, conn, `INSERT INTO events (at, uid, username, type, project_id, object, summary)
					SELECT now() - ($3::int - i) * ($4::float8 / $3::int) * interval '1 second', $5, 'root',
						CASE WHEN i % 100 = 0 THEN 'route_delete' ELSE 'route_update' END,
						CASE WHEN i > $1::int + ($2::int - $1::int) * 9 / 10 THEN 'other' ELSE 'scale' END,
						'r' || (i % 100), 'GET /r' || (i % 100) || ' changed, version ' || i
					FROM generate_series($1::int + 1, $2::int) AS i`, from, to, eventsTop, (store.EventsKept - 24*time.Hour).Seconds(), b.uid)
			},
			loads: []scaleLoad{
				{name: "GET /event/fetch: newest 50 of a project", path: func(int) string { return "/event/fetch?project_id=scale&limit=50" }},
				{name: "GET /event/fetch: of one type (1 in 100)", path: func(int) string { return "/event/fetch?project_id=scale&type=route_delete&limit=50" }},
				{name: "GET /event/fetch: of one user in the project", path: func(int) string {
					return fmt.Sprintf("/event/fetch?project_id=scale&uid=%d&limit=50", b.uid)
				}},
			},
		},
		{
			tables: []string{"route_templates", "template_versions"},
			name:   "templates", unit: "templates in the project", sizes: sizes(100),
			grow: func(ctx context.Context, conn *pgx.Conn, from, to int) error {
				if err := exec(ctx, conn, `INSERT INTO route_templates (name, description, project_id, method, document, created_by)
					SELECT 't' || i, description, project_id, method, document, created_by
					FROM route_templates, generate_series($1::int + 1, $2::int - 1) AS i WHERE project_id = 'scale' AND name = 't0'`, from, to); err != nil {
					return err
				}
				return exec(ctx, conn, `INSERT INTO template_versions (template_id, version, name, description, method, document, created_by, created_at)
					SELECT id, version, name, description, method, document, created_by, updated_at FROM route_templates
					ON CONFLICT DO NOTHING`)
			},
			loads: []scaleLoad{
				{name: "GET /route/template/fetch: first 50", path: func(int) string { return "/route/template/fetch?project_id=scale&limit=50" }},
			},
		},
		{
			tables: []string{"vault_entries"},
			name:   "vault", unit: "vault entries", sizes: sizes(1_000),
			grow: func(ctx context.Context, conn *pgx.Conn, from, to int) error {
				return exec(ctx, conn, `INSERT INTO vault_entries (project_id, key, key_id, sealed)
					SELECT 'scale', 'SERVICE_' || upper(md5(i::text)) || '_' || i, 'bench', '\x00'::bytea
					FROM generate_series($1::int + 1, $2::int - 10) AS i`, max(0, from-10), to)
			},
			loads: []scaleLoad{
				{name: "GET /vault/fetch: filter matching 10", path: func(int) string { return "/vault/fetch?project_id=scale&filter=PAYMENT&limit=50" }},
				// The first page in key order: the ten real entries
				// (PAYMENT_…, before the seeded SERVICE_…, which hold no
				// value that opens).
				{name: "GET /vault/fetch: first 10, no filter", path: func(int) string { return "/vault/fetch?project_id=scale&limit=10" }},
			},
		},
	}, nil
}

// planCheck is the plans auto_explain logged for a dataset's loads at its
// largest size: how many statements, and those that read one of its big
// tables sequentially.
type planCheck struct {
	statements int
	seqScans   []string // "table: query"
}

func (p planCheck) String() string {
	if len(p.seqScans) == 0 {
		return fmt.Sprintf("plans of %d statements at the largest size: no sequential scan of a big table", p.statements)
	}
	return fmt.Sprintf("plans of %d statements at the largest size: sequential scans: %s", p.statements, strings.Join(p.seqScans, "; "))
}

// explainLargest has PostgreSQL's auto_explain log the plan of every
// statement the service runs while each of d's loads is sent ten times,
// one at a time, on a restarted service (so that its connections load the
// module; prepared statements then run as the store runs them, custom and
// generic), and reads the cluster's log for sequential scans of d's
// tables. The service is restarted again without it.
func (b *bench) explainLargest(ctx context.Context, d *dataset) (planCheck, error) {
	var pc planCheck
	size := d.sizes[2]
	super, err := pgx.Connect(ctx, b.cluster.URL("postgres"))
	if err != nil {
		return pc, err
	}
	defer super.Close(ctx)
	// Its settings are known to a session that loaded it.
	if _, err := super.Exec(ctx, "LOAD 'auto_explain'"); err != nil {
		return pc, err
	}
	set := func(on bool) error {
		stmts := []string{"ALTER SYSTEM RESET session_preload_libraries", "ALTER SYSTEM RESET auto_explain.log_min_duration",
			"ALTER SYSTEM RESET auto_explain.log_nested_statements"}
		if on {
			stmts = []string{"ALTER SYSTEM SET session_preload_libraries = 'auto_explain'", "ALTER SYSTEM SET auto_explain.log_min_duration = 0",
				"ALTER SYSTEM SET auto_explain.log_nested_statements = on"}
		}
		for _, sql := range append(stmts, "SELECT pg_reload_conf()") {
			if _, err := super.Exec(ctx, sql); err != nil {
				return err
			}
		}
		b.stopService()
		return b.startService(ctx)
	}
	if err := set(true); err != nil {
		return pc, err
	}
	// One request of each load first, left out: the service started anew
	// reads its whole route table at its first request, a read of every
	// route by design, once a start.
	call := func(l scaleLoad) error {
		method := l.method
		if method == "" {
			method = "GET"
		}
		if status, raw, err := b.call(method, l.path(size), b.pat, l.body); err != nil || status/100 != 2 {
			return fmt.Errorf("%s %s: %d %v %.300s", method, l.path(size), status, err, raw)
		}
		return nil
	}
	for _, l := range d.loads {
		if err := call(l); err != nil {
			return pc, err
		}
	}
	logPath := filepath.Join(b.work, "pg", "server.log")
	before, err := os.Stat(logPath)
	if err != nil {
		return pc, err
	}
	for _, l := range d.loads {
		for range 10 {
			if err := call(l); err != nil {
				return pc, err
			}
		}
	}
	time.Sleep(200 * time.Millisecond) // the log's last lines
	if err := set(false); err != nil {
		return pc, err
	}
	raw, err := os.ReadFile(logPath)
	if err != nil {
		return pc, err
	}
	query := ""
	seen := map[string]bool{}
	for _, line := range strings.Split(string(raw[before.Size():]), "\n") {
		if _, q, ok := strings.Cut(line, "Query Text: "); ok {
			pc.statements++
			query = q
		}
		_, scanned, ok := strings.Cut(line, "Seq Scan on ")
		if !ok {
			continue
		}
		table, _, _ := strings.Cut(scanned, " ")
		if slices.Contains(d.tables, table) && !seen[table+query] {
			seen[table+query] = true
			pc.seqScans = append(pc.seqScans, fmt.Sprintf("%s: %.160s", table, query))
		}
	}
	return pc, nil
}

// sweepResult is the retention sweep of the largest logs under load.
type sweepResult struct {
	runs, events int64   // rows it removed
	took         float64 // seconds
	loads        int     // loads of /x during the sweep, and as many after it
	before       result  // /x after the sweep (the worst p99 of its loads)
	during       result  // /x while the sweep ran (the worst p99 of its loads)
	lockWaits    int     // the most backends seen waiting on a lock at once
}

// sweepUnderLoad adds a tenth of each log's largest size past its
// retention, loads /x while the service's own sweep (store.Sweep) removes
// them, watching for backends that wait on a lock, then as many times
// again with no sweep.
func (b *bench) sweepUnderLoad(ctx context.Context, pool *pgxpool.Pool, sets []*dataset) (sweepResult, error) {
	var sw sweepResult
	var runs, events int
	for _, d := range sets {
		switch d.name {
		case "runs":
			runs = d.sizes[2] / 10
		case "events":
			events = d.sizes[2] / 10
		}
	}
	fmt.Printf("sweep: %d expired runs and %d expired events among the largest logs…\n", runs, events)
	for _, q := range []struct {
		sql string
		n   int
	}{
		{`INSERT INTO route_runs (at, project_id, route_id, method, path, status, ended, duration_us)
			SELECT now() - ($2::float8 + i) * interval '1 second', 'other', 'r' || (i % 100), 'GET', '/r', 200, 'RETURN', 900 FROM generate_series(1, $1::int) AS i`, runs},
		{`INSERT INTO events (at, type, project_id, object, summary)
			SELECT now() - ($2::float8 + i) * interval '1 second', 'route_update', 'other', 'r', 'expired' FROM generate_series(1, $1::int) AS i`, events},
	} {
		kept := store.RunsKept
		if strings.Contains(q.sql, "events") {
			kept = store.EventsKept
		}
		if _, err := pool.Exec(ctx, q.sql, q.n, (kept + time.Hour).Seconds()); err != nil {
			return sw, err
		}
	}
	if _, err := pool.Exec(ctx, "VACUUM ANALYZE route_runs, events"); err != nil {
		return sw, err
	}
	x := func() (result, error) {
		return b.wrk("GET /x/… (route match)", "/x/scale/r5/items/7", "Accept: application/json")
	}
	// The rows past retention: the runs /x logs meanwhile are not.
	expired := func() (runs, events int64, err error) {
		err = pool.QueryRow(ctx, "SELECT (SELECT count(*) FROM route_runs WHERE at < now() - $1::float8 * interval '1 second'), (SELECT count(*) FROM events WHERE at < now() - $2::float8 * interval '1 second')",
			store.RunsKept.Seconds(), store.EventsKept.Seconds()).Scan(&runs, &events)
		return runs, events, err
	}
	runsBefore, eventsBefore, err := expired()
	if err != nil {
		return sw, err
	}
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- store.New(pool).Sweep(ctx, store.EventsKept) }()
	var watch sync.WaitGroup
	stop := make(chan struct{})
	watch.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			var waiting int
			if pool.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'").Scan(&waiting) == nil {
				sw.lockWaits = max(sw.lockWaits, waiting)
			}
		}
	})
	// The loads during the sweep, then as many with no sweep: the worst
	// p99 of each, so that the two are taken alike.
	var sweepErr error
	loads := 0
	for finished := false; !finished; loads++ {
		r, err := x()
		if err != nil {
			return sw, err
		}
		if r.p99 > sw.during.p99 {
			sw.during = r
		}
		select {
		case sweepErr = <-done:
			finished = true
		default:
		}
	}
	sw.took = time.Since(start).Seconds()
	close(stop)
	watch.Wait()
	if sweepErr != nil {
		return sw, sweepErr
	}
	for range loads {
		r, err := x()
		if err != nil {
			return sw, err
		}
		if r.p99 > sw.before.p99 {
			sw.before = r
		}
	}
	sw.loads = loads
	runsAfter, eventsAfter, err := expired()
	if err != nil {
		return sw, err
	}
	sw.runs, sw.events = runsBefore-runsAfter, eventsBefore-eventsAfter
	fmt.Printf("  the sweep removed %d runs and %d events in %.1f s; /x p99 at worst of %d loads %.2f ms during it, %.2f ms after it; at most %d backends waited on a lock\n",
		sw.runs, sw.events, sw.took, loads, sw.during.p99, sw.before.p99, sw.lockWaits)
	return sw, nil
}

// scaleTables are the figures as the terminal and the document show them.
type scaleTables struct{ text, markdown string }

// scaleTable writes a row per path: req/s, p50, p99 and peak RSS at each
// size, and how much its p99 grew from the smallest to the largest.
func scaleTable(all []*series, sw *sweepResult, sustained string) scaleTables {
	var text strings.Builder
	w := tabwriter.NewWriter(&text, 0, 0, 2, ' ', 0)
	var md strings.Builder
	fmt.Fprintln(w, "path\tsize\treq/s\tp50 ms\tp99 ms\tpeak RSS MiB\tp99 growth\tgoal\t")
	md.WriteString("| path | size | req/s | p50 ms | p99 ms | peak RSS MiB | p99 growth (goal ≤ 2×) |\n|---|--:|--:|--:|--:|--:|---|\n")
	for _, s := range all {
		last := s.points[len(s.points)-1].r
		growth := last.p99 / math.Max(s.points[0].r.p99, 0.001)
		verdict := "ok"
		switch {
		case s.load.grows:
			verdict = "grows by design"
		case growth > scaleGoal || last.rps == 0:
			verdict = "MISSED"
		}
		for i, p := range s.points {
			name, g, v := "", "", ""
			if i == 0 {
				name = s.load.name
			}
			if i == len(s.points)-1 {
				g, v = fmt.Sprintf("%.2f×", growth), verdict
				if last.rps == 0 {
					g = "no answer"
				}
			}
			errs := ""
			if p.r.errors > 0 {
				errs = fmt.Sprintf(" (%d errors)", p.r.errors)
			}
			fmt.Fprintf(w, "%s\t%s %s\t%.0f%s\t%.2f\t%.2f\t%.0f\t%s\t%s\t\n", name, count(p.size), s.set.unit, p.r.rps, errs, p.r.p50, p.r.p99, p.rss, g, v)
			cell := g
			if v != "" {
				cell += " " + v
			}
			fmt.Fprintf(&md, "| %s | %s %s | %.0f%s | %.2f | %.2f | %.0f | %s |\n", name, count(p.size), s.set.unit, p.r.rps, errs, p.r.p50, p.r.p99, p.rss, cell)
		}
	}
	w.Flush()
	var plans strings.Builder
	var last *dataset
	for _, s := range all {
		if s.set != last {
			last = s.set
			verdict := "ok"
			if len(last.plans.seqScans) > 0 {
				verdict = "MISSED"
			}
			fmt.Fprintf(&plans, "- %s (%s %s): %s — %s\n", last.name, count(last.sizes[2]), last.unit, last.plans, verdict)
		}
	}
	sweep := ""
	if sw != nil {
		sweep = sw.String()
	}
	markdown := md.String() + "\nEach statement the loads ran at the largest size, as PostgreSQL's auto_explain logged its plan:\n\n" + plans.String() + "\n" + strings.TrimSpace(sweep) + ".\n"
	for _, line := range strings.Split(strings.TrimSpace(sustained), "\n") {
		if line != "" {
			markdown += "\n" + strings.ToUpper(line[:1]) + line[1:] + ".\n"
		}
	}
	return scaleTables{text: text.String() + "\n" + plans.String() + "\n" + sweep + sustained, markdown: markdown}
}

// String is the sweep's line of the table, with its verdict.
func (sw sweepResult) String() string {
	ratio := sw.during.p99 / math.Max(sw.before.p99, 0.001)
	verdict := "ok"
	if ratio > 1.5 || sw.lockWaits > 0 || sw.during.errors > 0 {
		verdict = "MISSED"
	}
	return fmt.Sprintf("retention sweep of %s runs and %s events (%.1f s): /x p99 at worst of %d loads %.2f ms with no sweep, %.2f ms during it (%.2f×, goal ≤ 1.5×); most backends waiting on a lock at once: %d (goal 0) — %s\n",
		count(int(sw.runs)), count(int(sw.events)), sw.took, sw.loads, sw.before.p99, sw.during.p99, ratio, sw.lockWaits, verdict)
}

// count writes n with thousands separated by commas.
func count(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Markers of the part of docs/performance.md the harness writes.
const (
	scaleBegin = "<!-- scale: begin (written by go run ./loadbench -scale) -->"
	scaleEnd   = "<!-- scale: end -->"
)

// writeScaleDoc writes the table and a chart per dataset (p99 against size,
// both axes logarithmic) between the document's markers; the charts are
// SVG files in docs/scale/.
func writeScaleDoc(doc string, all []*series, table string) error {
	raw, err := os.ReadFile(doc)
	if err != nil {
		return err
	}
	text := string(raw)
	i, j := strings.Index(text, scaleBegin), strings.Index(text, scaleEnd)
	if i < 0 || j < i {
		return fmt.Errorf("%s has no %q … %q", doc, scaleBegin, scaleEnd)
	}
	dir := filepath.Join(filepath.Dir(doc), "scale")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var charts strings.Builder
	var sets []*dataset
	for _, s := range all {
		if len(sets) == 0 || sets[len(sets)-1] != s.set {
			sets = append(sets, s.set)
		}
	}
	for _, d := range sets {
		var mine []*series
		for _, s := range all {
			if s.set == d {
				mine = append(mine, s)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, d.name+".svg"), []byte(chart(d, mine)), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(&charts, "![p99 against %s](scale/%s.svg)\n", d.unit, d.name)
	}
	stamp := fmt.Sprintf("Measured %s on %d cores by `make bench-scale` (wrk, %d connections, each load 1 s warm, then measured).\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"), runtime.NumCPU(), scaleConns)
	body := scaleBegin + "\n" + stamp + table + "\n" + charts.String() + scaleEnd
	return os.WriteFile(doc, []byte(text[:i]+body+text[j+len(scaleEnd):]), 0o644)
}

// chart draws one dataset's loads: p99 (ms) against size, both axes
// logarithmic, a line and a label per load.
func chart(d *dataset, loads []*series) string {
	const width, height, left, right, top, bottom = 720, 360, 64, 300, 24, 48
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range loads {
		for _, p := range s.points {
			if p.r.rps > 0 {
				lo, hi = math.Min(lo, p.r.p99), math.Max(hi, p.r.p99)
			}
		}
	}
	// Whole decades around the figures.
	lo, hi = math.Pow(10, math.Floor(math.Log10(math.Max(lo, 0.01)))), math.Pow(10, math.Ceil(math.Log10(math.Max(hi, 0.02))))
	if hi <= lo {
		hi = lo * 10
	}
	xmin, xmax := math.Log10(float64(d.sizes[0])), math.Log10(float64(d.sizes[2]))
	px := func(size int) float64 {
		return left + (math.Log10(float64(size))-xmin)/math.Max(xmax-xmin, 1e-9)*(width-left-right)
	}
	py := func(ms float64) float64 {
		return top + (math.Log10(hi)-math.Log10(math.Max(ms, lo)))/(math.Log10(hi)-math.Log10(lo))*(height-top-bottom)
	}
	var svg strings.Builder
	fmt.Fprintf(&svg, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&svg, `<rect width="%d" height="%d" fill="#fff"/>`+"\n", width, height)
	for v := lo; v <= hi*1.0001; v *= 10 {
		y := py(v)
		fmt.Fprintf(&svg, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#e2e8f0"/><text x="%d" y="%.1f" text-anchor="end" fill="#475569">%s ms</text>`+"\n",
			left, width-right, y, y, left-6, y+4, strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), "."))
	}
	for _, size := range d.sizes {
		x := px(size)
		fmt.Fprintf(&svg, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#e2e8f0"/><text x="%.1f" y="%d" text-anchor="middle" fill="#475569">%s</text>`+"\n",
			x, x, top, height-bottom, x, height-bottom+16, count(size))
	}
	fmt.Fprintf(&svg, `<text x="%d" y="%d" text-anchor="middle" fill="#0f172a">%s (log scale); p99 in ms (log scale)</text>`+"\n", (width-right+left)/2, height-10, d.unit)
	colors := []string{"#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c"}
	legend := top // the next legend entry's top
	for i, s := range loads {
		c := colors[i%len(colors)]
		var pts []string
		label := xmlEscape(s.load.name)
		for _, p := range s.points {
			if p.r.rps == 0 {
				// A second line: the legend's column is narrow.
				label += fmt.Sprintf(`<tspan x="%d" dy="15">(no answer at %s)</tspan>`, width-right+34, count(p.size))
				legend += 15
				continue
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(p.size), py(p.r.p99)))
			fmt.Fprintf(&svg, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(p.size), py(p.r.p99), c)
		}
		fmt.Fprintf(&svg, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), c)
		y := legend - strings.Count(label, "<tspan")*15
		fmt.Fprintf(&svg, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d" fill="#0f172a">%s</text>`+"\n",
			width-right+16, y, c, width-right+34, y+10, label)
		legend += 20
	}
	svg.WriteString("</svg>\n")
	return svg.String()
}

var xmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

func xmlEscape(s string) string { return xmlEscaper.Replace(s) }
