package handlers

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/gofiber/fiber/v2"

	"stencil/authoring"
	"stencil/stats"
	"stencil/store"
)

// Route analytics (docs/routes.md): GET /route/stats reads the rollups the
// run log's writer keeps.

type statsQuery struct {
	ProjectID string `query:"project_id" json:"project_id" validate:"required"`
	RouteID   string `query:"route_id" json:"route_id"`
	From      string `query:"from" json:"from"`
	To        string `query:"to" json:"to"`
	Step      string `query:"step" json:"step" validate:"omitempty,oneof=minute hour day"`
}

// statsNumbers are a point's or a range's figures.
type statsNumbers struct {
	Requests  int64 `json:"requests"`
	Errors4xx int64 `json:"errors_4xx"`
	// Errors5xx counts the answers of 500 to 599, refusals for want of
	// room (BUSY, 503) among them: Busy says how many.
	Errors5xx int64    `json:"errors_5xx"`
	Limited   int64    `json:"limited"`
	Busy      int64    `json:"busy"`
	P50       *float64 `json:"p50_ms"`
	P95       *float64 `json:"p95_ms"`
	P99       *float64 `json:"p99_ms"`
}

type statsPoint struct {
	At time.Time `json:"at"`
	statsNumbers
	// Unmatched counts, for a project's figures, its requests no route
	// matched (404): in none of the numbers above.
	Unmatched *int64 `json:"unmatched,omitempty"`
}

type statsRoute struct {
	RouteID string `json:"route_id"`
	// ErrorRate is ErrorRate5xx, kept for clients that read it.
	ErrorRate    float64  `json:"error_rate"`
	ErrorRate4xx float64  `json:"error_rate_4xx"`
	ErrorRate5xx float64  `json:"error_rate_5xx"`
	Requests     int64    `json:"requests"`
	P99          *float64 `json:"p99_ms"`
}

type statsDTO struct {
	From   time.Time    `json:"from"`
	To     time.Time    `json:"to"`
	Step   string       `json:"step"`
	Series []statsPoint `json:"series"`
	Totals statsNumbers `json:"totals"`
	Routes []statsRoute `json:"routes,omitempty"`
	// Unmatched is the range's requests no route matched (a project's
	// figures only).
	Unmatched *int64 `json:"unmatched,omitempty"`
}

// UnmatchedCount is Unmatched for the page: 0 when not counted.
func (d statsDTO) UnmatchedCount() int64 {
	if d.Unmatched == nil {
		return 0
	}
	return *d.Unmatched
}

// rate is n of all, rounded to 4 places (0 of none).
func rate(n, all int64) float64 {
	if all == 0 {
		return 0
	}
	return math.Round(float64(n)/float64(all)*10000) / 10000
}

func numbers(c store.Counts, h stats.Histogram) statsNumbers {
	return statsNumbers{Requests: c.Requests(), Errors4xx: c.N4xx, Errors5xx: c.N5xx + c.Busy, Limited: c.Limited, Busy: c.Busy,
		P50: h.Millis(0.5), P95: h.Millis(0.95), P99: h.Millis(0.99)}
}

// routeStats answers GET /route/stats: a project's (or one route's)
// requests by status class and latency percentiles over a range, by step,
// with the range's totals and, for the whole project, its routes by
// requests.
func (h *Handlers) routeStats(c *fiber.Ctx) error {
	var q statsQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	p, err := h.member(c, q.ProjectID)
	if err != nil {
		return err
	}
	from, to, step, err := authoring.StatsRange(q.From, q.To, q.Step, time.Now())
	if err != nil {
		return err
	}
	data, err := h.statsOf(c, p.ID, q.RouteID, from, to, step)
	if err != nil {
		return err
	}
	return h.respond(c, Reply{Data: data})
}

// statsOf reads the figures of project (route "": all its routes).
func (h *Handlers) statsOf(c *fiber.Ctx, project, route string, from, to time.Time, step string) (statsDTO, error) {
	res := authoring.StepResolutions[step]
	rows, err := h.store.StatsSeries(c.UserContext(), project, route, res, from, to)
	if err != nil {
		return statsDTO{}, err
	}
	out := statsDTO{From: from, To: to, Step: step, Series: []statsPoint{}}
	var total store.Counts
	var latency stats.Histogram
	i := 0
	for at := from; at.Before(to); at = store.Next(at, res) {
		point := statsPoint{At: at}
		if i < len(rows) && rows[i].At.Equal(at) {
			point.statsNumbers = numbers(rows[i].Counts, rows[i].Latency)
			total.Add(rows[i].Counts)
			latency.Merge(rows[i].Latency)
			i++
		}
		out.Series = append(out.Series, point)
	}
	out.Totals = numbers(total, latency)
	if route != "" {
		return out, nil
	}
	unmatched, err := h.store.StatsSeries(c.UserContext(), project, store.UnmatchedRoute, res, from, to)
	if err != nil {
		return statsDTO{}, err
	}
	var all int64
	j := 0
	for i := range out.Series {
		var n int64
		if j < len(unmatched) && unmatched[j].At.Equal(out.Series[i].At) {
			n = unmatched[j].Counts.Requests()
			j++
		}
		out.Series[i].Unmatched = &n
		all += n
	}
	out.Unmatched = &all
	byRoute, err := h.store.StatsByRoute(c.UserContext(), project, from, to)
	if err != nil {
		return statsDTO{}, err
	}
	out.Routes = make([]statsRoute, len(byRoute))
	for i, r := range byRoute {
		n := r.Counts.Requests()
		out.Routes[i] = statsRoute{RouteID: r.RouteID, Requests: n, P99: r.Latency.Millis(0.99),
			ErrorRate4xx: rate(r.Counts.N4xx, n), ErrorRate5xx: rate(r.Counts.N5xx+r.Counts.Busy, n)}
		out.Routes[i].ErrorRate = out.Routes[i].ErrorRate5xx
	}
	slices.SortFunc(out.Routes, func(a, b statsRoute) int {
		return cmp.Or(cmp.Compare(b.Requests, a.Requests), cmp.Compare(a.RouteID, b.RouteID))
	})
	return out, nil
}

// pageRange is a range the analytics page offers.
type pageRange struct {
	Key, Label, Step string
	Span             time.Duration
}

// statsRanges are the page's ranges, each with the step its charts and
// tables go by: at most 168 points.
var statsRanges = []pageRange{
	{"1h", "1 hour", "minute", time.Hour},
	{"24h", "24 hours", "hour", 24 * time.Hour},
	{"7d", "7 days", "hour", 7 * 24 * time.Hour},
	{"90d", "90 days", "day", 90 * 24 * time.Hour},
}

// statsRow is a row of the page's tables: a point, or a run of points
// with no request folded into one (From to To).
type statsRow struct {
	Point    statsPoint
	From, To time.Time
	Empty    bool
}

// Rows are the series as the page's tables show them: consecutive points
// without a request fold into one row, so that a quiet day does not push
// the routes table down by a screen of zeros.
func (d statsDTO) Rows() []statsRow {
	var rows []statsRow
	for _, p := range d.Series {
		if p.Requests > 0 {
			rows = append(rows, statsRow{Point: p})
			continue
		}
		if n := len(rows); n > 0 && rows[n-1].Empty {
			rows[n-1].To = p.At
			continue
		}
		rows = append(rows, statsRow{Point: p, From: p.At, To: p.At, Empty: true})
	}
	return rows
}

// Failing reports whether the route failed on most of its requests: the
// routes table marks it.
func (r statsRoute) Failing() bool { return r.Requests > 0 && r.ErrorRate5xx >= 0.5 }

// statsView is the analytics page of a project or of one of its routes.
type statsView struct {
	Base
	Project store.Project
	RouteID string
	Range   string
	Ranges  []pageRange
	Stats   statsDTO
	Sort    string // the routes table's order: requests, error_rate, error_rate_4xx or p99
}

type statsPageQuery struct {
	ProjectID string `query:"project_id" validate:"required"`
	RouteID   string `query:"route_id"`
	Range     string `query:"range" validate:"omitempty,oneof=1h 24h 7d 90d"`
	Sort      string `query:"sort" validate:"omitempty,oneof=requests error_rate error_rate_4xx p99"`
}

// statsPage renders /web/routes/stats: charts of requests by status class
// and of p50/p95/p99 over a range, each with its numbers as a table, and
// the project's routes by how they are doing.
func (h *Handlers) statsPage(c *fiber.Ctx) error {
	var q statsPageQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	p, err := h.member(c, q.ProjectID)
	if err != nil {
		return err
	}
	q.Range, q.Sort = cmp.Or(q.Range, "24h"), cmp.Or(q.Sort, "requests")
	i := slices.IndexFunc(statsRanges, func(r pageRange) bool { return r.Key == q.Range })
	rg := statsRanges[i]
	res := authoring.StepResolutions[rg.Step]
	to := store.Ceil(time.Now(), res)
	data, err := h.statsOf(c, p.ID, q.RouteID, to.Add(-rg.Span), to, rg.Step)
	if err != nil {
		return err
	}
	sortRoutes(data.Routes, q.Sort)
	view := statsView{Base: h.base(c, "Analytics · "+p.Name), Project: p, RouteID: q.RouteID, Range: q.Range, Stats: data,
		Sort: q.Sort, Ranges: statsRanges}
	return h.respond(c, Reply{Data: data, Page: "routes/stats", View: view})
}

// sortRoutes orders the routes table by requests (most first), 5xx or 4xx
// rate or p99 (highest first), then by id.
func sortRoutes(routes []statsRoute, by string) {
	p99 := func(r statsRoute) float64 {
		if r.P99 == nil {
			return -1
		}
		return *r.P99
	}
	slices.SortStableFunc(routes, func(a, b statsRoute) int {
		switch by {
		case "error_rate":
			return cmp.Or(cmp.Compare(b.ErrorRate5xx, a.ErrorRate5xx), cmp.Compare(a.RouteID, b.RouteID))
		case "error_rate_4xx":
			return cmp.Or(cmp.Compare(b.ErrorRate4xx, a.ErrorRate4xx), cmp.Compare(a.RouteID, b.RouteID))
		case "p99":
			return cmp.Or(cmp.Compare(p99(b), p99(a)), cmp.Compare(a.RouteID, b.RouteID))
		}
		return cmp.Or(cmp.Compare(b.Requests, a.Requests), cmp.Compare(a.RouteID, b.RouteID))
	})
}

// Show is a percentile for people: "12.3 ms", or "—" where nothing ran.
func (n statsNumbers) Show(p *float64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("%.1f ms", *p)
}

// Rate is the share of requests that answered 5xx, for people: "2.5 %".
func (n statsNumbers) Rate() string {
	if n.Requests == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f %%", 100*float64(n.Errors5xx)/float64(n.Requests))
}

// Success counts the answers of 2xx and 3xx.
func (n statsNumbers) Success() int64 { return n.Requests - n.Errors4xx - n.Errors5xx - n.Limited }

// Rate is the route's 5xx rate for people, Rate4xx its 4xx rate.
func (r statsRoute) Rate() string { return fmt.Sprintf("%.1f %%", 100*r.ErrorRate5xx) }

func (r statsRoute) Rate4xx() string { return fmt.Sprintf("%.1f %%", 100*r.ErrorRate4xx) }

// Show is the route's p99 for people.
func (r statsRoute) Show() string { return statsNumbers{}.Show(r.P99) }

// routeHealth is how a route did over the last 24 hours, for the routes
// list and the route's page: requests, 5xx rate, p99, and p99 by hour as
// a small line.
type routeHealth struct {
	Requests int64
	Rate     string
	P99      string
	Line     string // an SVG path of p99 by hour, 96 × 24; "" without data
	Range    string // the line's lowest and highest p99, for its label
}

// healthOf reads how the routes given of project did over the last 24
// hours, by route id.
func (h *Handlers) healthOf(c *fiber.Ctx, project string, routes []string) (map[string]routeHealth, error) {
	to := store.Ceil(time.Now(), store.Hour)
	from := to.Add(-24 * time.Hour)
	hourly, err := h.store.StatsHourly(c.UserContext(), project, routes, from, to)
	if err != nil {
		return nil, err
	}
	out := map[string]routeHealth{}
	for route, rows := range hourly {
		var total store.Counts
		var latency stats.Histogram
		p99 := make([]*float64, 24)
		for _, r := range rows {
			total.Add(r.Counts)
			latency.Merge(r.Latency)
			if i := int(r.At.Sub(from) / time.Hour); i >= 0 && i < 24 {
				p99[i] = r.Latency.Millis(0.99)
			}
		}
		n := numbers(total, latency)
		health := routeHealth{Requests: n.Requests, Rate: n.Rate(), P99: n.Show(n.P99)}
		health.Line, health.Range = stats.Sparkline(p99)
		out[route] = health
	}
	return out, nil
}
