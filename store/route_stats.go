package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/jackc/pgx/v5"

	"stencil/stats"
)

// Route analytics (docs/routes.md): the runs of each flush of the run log
// are counted into per-minute, per-hour and per-day rows of route_stats,
// in the same transaction.

// Resolutions of route_stats, and how long each is kept.
const (
	Minute = 'm'
	Hour   = 'h'
	Day    = 'd'
)

// StatsKept is how long rows of each resolution are kept.
var StatsKept = map[byte]time.Duration{Minute: 48 * time.Hour, Hour: 90 * 24 * time.Hour, Day: 90 * 24 * time.Hour}

// RouteStat is one row of route_stats: a route's runs (RouteID "": all
// the project's routes) in the bucket of its resolution that begins At.
type RouteStat struct {
	ProjectID, RouteID, Method string
	Resolution                 byte
	At                         time.Time
	Counts                     Counts
	Latency                    stats.Histogram
}

// Counts are requests by class.
type Counts struct {
	N2xx, N3xx, N4xx, N5xx, Limited, Busy int64
}

// Requests is how many requests c counts.
func (c Counts) Requests() int64 { return c.N2xx + c.N3xx + c.N4xx + c.N5xx + c.Limited + c.Busy }

// Add adds o to c.
func (c *Counts) Add(o Counts) {
	c.N2xx, c.N3xx, c.N4xx, c.N5xx, c.Limited, c.Busy = c.N2xx+o.N2xx, c.N3xx+o.N3xx, c.N4xx+o.N4xx, c.N5xx+o.N5xx, c.Limited+o.Limited, c.Busy+o.Busy
}

// count counts one answer of class.
func (c *Counts) count(class string) {
	switch class {
	case stats.Class2xx:
		c.N2xx++
	case stats.Class3xx:
		c.N3xx++
	case stats.Class4xx:
		c.N4xx++
	case stats.Class5xx:
		c.N5xx++
	case stats.ClassLimited:
		c.Limited++
	case stats.ClassBusy:
		c.Busy++
	}
}

// Ceil is the start of the first bucket of resolution res at or after t.
func Ceil(t time.Time, res byte) time.Time {
	if c := Truncate(t, res); c.Before(t) {
		return Next(c, res)
	}
	return t.UTC()
}

// Next is the start of the bucket after the one beginning at t.
func Next(t time.Time, res byte) time.Time {
	switch res {
	case Hour:
		return t.Add(time.Hour)
	case Day:
		return t.AddDate(0, 0, 1)
	}
	return t.Add(time.Minute)
}

// Steps is how many buckets of resolution res [from, to) holds.
func Steps(from, to time.Time, res byte) int {
	switch res {
	case Hour:
		return int(to.Sub(from) / time.Hour)
	case Day:
		return int(to.Sub(from) / (24 * time.Hour))
	}
	return int(to.Sub(from) / time.Minute)
}

// Truncate is the start of t's bucket of resolution res, in UTC.
func Truncate(t time.Time, res byte) time.Time {
	t = t.UTC()
	switch res {
	case Hour:
		return t.Truncate(time.Hour)
	case Day:
		return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	}
	return t.Truncate(time.Minute)
}

// UnmatchedRoute is the route_id analytics count a project's unmatched
// requests under: to its API path, answered 404 because no route matched.
// No route's id can be it; they are not in the project's own rows.
const UnmatchedRoute = "*"

type statKey struct {
	project, route, method string
	res                    byte
	at                     time.Time
}

// Tally is runs counted for route analytics and not yet written: each
// run once, into its route's minute (see CountTally). The runtime counts
// every run into one as it answers, so that analytics are exact whatever
// the run log keeps (docs/routes.md). Dry runs of the playground are not
// traffic and are not counted; a refusal by the rate limit is counted
// without a latency. The zero Tally is empty and ready.
type Tally struct {
	minutes map[statKey]*RouteStat
}

// Count counts r, unless that takes a route minute more than maxRows:
// then it counts nothing and says so.
func (t *Tally) Count(r Run, maxRows int) bool {
	if r.DryRun {
		return true
	}
	if t.minutes == nil {
		t.minutes = map[statKey]*RouteStat{}
	}
	k := statKey{r.ProjectID, r.RouteID, r.Method, Minute, Truncate(r.At, Minute)}
	row := t.minutes[k]
	if row == nil {
		if len(t.minutes) >= maxRows {
			return false
		}
		row = &RouteStat{ProjectID: k.project, RouteID: k.route, Method: k.method, Resolution: Minute, At: k.at}
		t.minutes[k] = row
	}
	class := stats.Class(r.Status, r.Ended)
	row.Counts.count(class)
	if class != stats.ClassLimited {
		row.Latency.AddBucket(stats.Bucket(r.Duration), 1)
	}
	return true
}

// Minutes gives each route minute t counts to each.
func (t *Tally) Minutes(each func(RouteStat)) {
	for _, m := range t.minutes {
		each(*m)
	}
}

// Merge adds what o counts to t.
func (t *Tally) Merge(o Tally) {
	for k, m := range o.minutes {
		if t.minutes == nil {
			t.minutes = map[statKey]*RouteStat{}
		}
		row := t.minutes[k]
		if row == nil {
			t.minutes[k] = m
			continue
		}
		row.Counts.Add(m.Counts)
		row.Latency.Merge(m.Latency)
	}
}

// Rows is how many route minutes t counts (what it holds in memory).
func (t *Tally) Rows() int { return len(t.minutes) }

// Runs is how many runs t counts.
func (t *Tally) Runs() int64 {
	var n int64
	for _, m := range t.minutes {
		n += m.Counts.Requests()
	}
	return n
}

// rows are t's minutes as rows of route_stats: per route and for the
// project as a whole, at each resolution (the minutes added into hours,
// days and the project's rows).
func (t *Tally) rows() []RouteStat {
	rows := map[statKey]*RouteStat{}
	for k, m := range t.minutes {
		for _, res := range []byte{Minute, Hour, Day} {
			at := Truncate(k.at, res)
			keys := []statKey{{k.project, k.route, k.method, res, at}, {k.project, "", "", res, at}}
			if k.route == UnmatchedRoute {
				keys = keys[:1]
			}
			for _, key := range keys {
				row := rows[key]
				if row == nil {
					row = &RouteStat{ProjectID: key.project, RouteID: key.route, Method: key.method, Resolution: res, At: at}
					rows[key] = row
				}
				row.Counts.Add(m.Counts)
				row.Latency.Merge(m.Latency)
			}
		}
	}
	out := make([]RouteStat, 0, len(rows))
	for _, row := range rows {
		out = append(out, *row)
	}
	return out
}

// CountTally adds what t counts to route_stats, in one transaction. The
// projects it names are locked as a foreign key would lock them, once
// each; the counts of a project already gone are left out.
func (s *Store) CountTally(ctx context.Context, t Tally) (err error) {
	defer wrap(&err, "count runs")
	if len(t.minutes) == 0 {
		return nil
	}
	projects := map[string]bool{}
	for k := range t.minutes {
		projects[k.project] = false
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockKeys(ctx, tx, "SELECT id FROM projects WHERE id = ANY($1) FOR KEY SHARE", projects); err != nil {
			return err
		}
		rows := slices.DeleteFunc(t.rows(), func(r RouteStat) bool { return !projects[r.ProjectID] })
		return writeStats(ctx, tx, rows)
	})
}

// writeStats adds rows to route_stats in tx.
func writeStats(ctx context.Context, tx pgx.Tx, rows []RouteStat) error {
	if len(rows) == 0 {
		return nil
	}
	n := len(rows)
	projects, routes, methods, res, at := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]time.Time, n)
	c2, c3, c4, c5, lim, busy := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	latency := make([]string, n)
	for i, r := range rows {
		projects[i], routes[i], methods[i], res[i], at[i] = r.ProjectID, r.RouteID, r.Method, string(r.Resolution), r.At
		c2[i], c3[i], c4[i], c5[i], lim[i], busy[i] = r.Counts.N2xx, r.Counts.N3xx, r.Counts.N4xx, r.Counts.N5xx, r.Counts.Limited, r.Counts.Busy
		latency[i] = arrayText(r.Latency.Encode())
	}
	_, err := tx.Exec(ctx, countRunsSQL, projects, res, routes, at, methods, c2, c3, c4, c5, lim, busy, latency)
	return err
}

// countRunsSQL adds rows to route_stats, or to the rows already there.
const countRunsSQL = `INSERT INTO route_stats AS s (project_id, resolution, route_id, at, method, n2xx, n3xx, n4xx, n5xx, limited, busy, latency)
	SELECT p, r::"char", rt, a, m, c2, c3, c4, c5, l, b, h::bigint[]
	FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::bigint[], $7::bigint[], $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::text[])
		AS t(p, r, rt, a, m, c2, c3, c4, c5, l, b, h)
	ORDER BY p, r, rt, a, m
	ON CONFLICT (project_id, resolution, route_id, at, method) DO UPDATE SET
		n2xx = s.n2xx + EXCLUDED.n2xx, n3xx = s.n3xx + EXCLUDED.n3xx, n4xx = s.n4xx + EXCLUDED.n4xx, n5xx = s.n5xx + EXCLUDED.n5xx,
		limited = s.limited + EXCLUDED.limited, busy = s.busy + EXCLUDED.busy, latency = latency_add(s.latency, EXCLUDED.latency)`

// arrayText is v as a PostgreSQL array literal.
func arrayText(v []int64) string {
	buf := []byte{'{'}
	for i, n := range v {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = strconv.AppendInt(buf, n, 10)
	}
	return string(append(buf, '}'))
}

// sweepStats deletes rows of route_stats past what each resolution keeps.
func (s *Store) sweepStats(ctx context.Context) error {
	for res, kept := range StatsKept {
		if _, err := s.db.Exec(ctx, `DELETE FROM route_stats WHERE resolution = $1 AND at < $2`, string(res), time.Now().Add(-kept)); err != nil {
			return err
		}
	}
	return nil
}

// span is a time range of one resolution.
type span struct {
	res      byte
	from, to time.Time
}

// spans cover [from, to) with the fewest rows: whole days by day rows,
// the hours at their edges by hour rows, the minutes at theirs by minute
// rows (from and to are whole minutes).
func spans(from, to time.Time) []span {
	var out []span
	add := func(res byte, f, t time.Time) {
		if f.Before(t) {
			out = append(out, span{res, f, t})
		}
	}
	dayFrom, dayTo := Ceil(from, Day), Truncate(to, Day)
	if !dayFrom.Before(dayTo) {
		dayFrom, dayTo = to, to // no whole day: hours and minutes only
	}
	hourFrom, hourTo := Ceil(from, Hour), Truncate(to, Hour)
	if !hourFrom.Before(hourTo) {
		add(Minute, from, to)
		return out
	}
	add(Minute, from, hourFrom)
	if dayFrom.Before(dayTo) {
		add(Hour, hourFrom, dayFrom)
		add(Day, dayFrom, dayTo)
		add(Hour, dayTo, hourTo)
	} else {
		add(Hour, hourFrom, hourTo)
	}
	add(Minute, hourTo, to)
	return out
}

// StatsSeries returns the rows of route (RouteID "": the project's as a
// whole) of resolution res in [from, to), by At, methods together.
func (s *Store) StatsSeries(ctx context.Context, project, route string, res byte, from, to time.Time) (_ []RouteStat, err error) {
	defer wrap(&err, "route stats", project, route)
	rows, err := s.db.Query(ctx, `SELECT at, sum(n2xx), sum(n3xx), sum(n4xx), sum(n5xx), sum(limited), sum(busy), array_agg(latency)
		FROM route_stats WHERE project_id = $1 AND resolution = $2 AND route_id = $3 AND at >= $4 AND at < $5
		GROUP BY at ORDER BY at`, project, string(res), route, from, to)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (RouteStat, error) {
		st := RouteStat{ProjectID: project, RouteID: route, Resolution: res}
		var hists [][]int64
		err := r.Scan(&st.At, &st.Counts.N2xx, &st.Counts.N3xx, &st.Counts.N4xx, &st.Counts.N5xx, &st.Counts.Limited, &st.Counts.Busy, &hists)
		for _, h := range hists {
			st.Latency.Merge(stats.Decode(h))
		}
		return st, err
	})
}

// WholeDays is the shortest range whose routes StatsByRoute counts by
// whole days, its first day whole: a long range then reads a row a route
// a day, and the days before today come from memory.
const WholeDays = 48 * time.Hour

// StatsByRoute returns, for each route of project with runs in [from,
// to) (whole minutes), its counts and latency over the range; over
// WholeDays or more, over the whole days the range touches.
func (s *Store) StatsByRoute(ctx context.Context, project string, from, to time.Time) (_ []RouteStat, err error) {
	defer wrap(&err, "route stats by route", project)
	parts := spans(from, to)
	var closed []RouteStat
	if to.Sub(from) >= WholeDays {
		// The days that ended more than a flush ago no longer change:
		// they are read once, then kept a while.
		first, end := Truncate(from, Day), Ceil(to, Day)
		cut := Truncate(time.Now().Add(-statsSettle), Day) // today, once yesterday has settled
		if end.Before(cut) {
			cut = end
		}
		parts = []span{{Day, cut, end}}
		if first.Before(cut) {
			key := statsKey{project, first, cut}
			if kept, ok := s.closedDays.Get(key); ok {
				closed = kept
			} else {
				if closed, err = s.statsByRoute(ctx, project, []span{{Day, first, cut}}); err != nil {
					return nil, err
				}
				s.closedDays.Add(key, closed)
			}
		}
	}
	open, err := s.statsByRoute(ctx, project, parts)
	if err != nil {
		return nil, err
	}
	return mergeRoutes(closed, open), nil
}

// statsSettle is how long after a bucket ends its rows may still change:
// the run log's writers flush every second.
const statsSettle = 5 * time.Minute

// statsKey names the routes' figures of a project over whole days.
type statsKey struct {
	project  string
	from, to time.Time
}

// closedDaysKept bounds the ranges of closed days kept, and closedDaysFor
// how long one is kept (a project deleted and made again under its id
// reads its own figures after that at the latest).
const (
	closedDaysKept = 64
	closedDaysFor  = 10 * time.Minute
)

func newClosedDays() *expirable.LRU[statsKey, []RouteStat] {
	return expirable.NewLRU[statsKey, []RouteStat](closedDaysKept, nil, closedDaysFor)
}

// mergeRoutes adds b's routes to a's, by route, into a new list.
func mergeRoutes(a, b []RouteStat) []RouteStat {
	byRoute := map[string]int{}
	var out []RouteStat
	for _, list := range [][]RouteStat{a, b} {
		for _, r := range list {
			i, ok := byRoute[r.RouteID]
			if !ok {
				i = len(out)
				byRoute[r.RouteID] = i
				out = append(out, RouteStat{ProjectID: r.ProjectID, RouteID: r.RouteID})
			}
			out[i].Counts.Add(r.Counts)
			out[i].Latency.Merge(r.Latency)
		}
	}
	return out
}

// statsByRoute reads the routes' rows of the spans, summed by route.
func (s *Store) statsByRoute(ctx context.Context, project string, parts []span) ([]RouteStat, error) {
	var where []string
	args := []any{project}
	for _, sp := range parts {
		if !sp.from.Before(sp.to) {
			continue
		}
		args = append(args, string(sp.res), sp.from, sp.to)
		n := len(args)
		where = append(where, fmt.Sprintf("(resolution = $%d AND at >= $%d AND at < $%d)", n-2, n-1, n))
	}
	if len(where) == 0 {
		return nil, nil
	}
	rows, err := s.db.Query(ctx, `SELECT route_id, n2xx, n3xx, n4xx, n5xx, limited, busy, latency
		FROM route_stats WHERE project_id = $1 AND route_id <> '' AND route_id <> '`+UnmatchedRoute+`' AND (`+strings.Join(where, " OR ")+`)`, args...)
	if err != nil {
		return nil, err
	}
	byRoute := map[string]*RouteStat{}
	var order []string
	var c Counts
	var h []int64
	var route string
	_, err = pgx.ForEachRow(rows, []any{&route, &c.N2xx, &c.N3xx, &c.N4xx, &c.N5xx, &c.Limited, &c.Busy, &h}, func() error {
		st := byRoute[route]
		if st == nil {
			st = &RouteStat{ProjectID: project, RouteID: route}
			byRoute[route] = st
			order = append(order, route)
		}
		st.Counts.Add(c)
		st.Latency.Merge(stats.Decode(h))
		return nil
	})
	out := make([]RouteStat, len(order))
	for i, r := range order {
		out[i] = *byRoute[r]
	}
	return out, err
}

// StatsHourly returns the hour rows of the routes given of project in
// [from, to) (whole hours), by route and hour, methods together.
func (s *Store) StatsHourly(ctx context.Context, project string, routes []string, from, to time.Time) (_ map[string][]RouteStat, err error) {
	defer wrap(&err, "hourly route stats", project)
	rows, err := s.db.Query(ctx, `SELECT route_id, at, sum(n2xx), sum(n3xx), sum(n4xx), sum(n5xx), sum(limited), sum(busy), array_agg(latency)
		FROM route_stats WHERE project_id = $1 AND resolution = 'h' AND route_id = ANY($2) AND at >= $3 AND at < $4
		GROUP BY route_id, at ORDER BY route_id, at`, project, routes, from, to)
	if err != nil {
		return nil, err
	}
	out := map[string][]RouteStat{}
	st := RouteStat{ProjectID: project, Resolution: Hour}
	var hists [][]int64
	_, err = pgx.ForEachRow(rows, []any{&st.RouteID, &st.At, &st.Counts.N2xx, &st.Counts.N3xx, &st.Counts.N4xx, &st.Counts.N5xx,
		&st.Counts.Limited, &st.Counts.Busy, &hists}, func() error {
		row := st
		row.Latency = stats.Histogram{}
		for _, h := range hists {
			row.Latency.Merge(stats.Decode(h))
		}
		out[st.RouteID] = append(out[st.RouteID], row)
		return nil
	})
	return out, err
}
