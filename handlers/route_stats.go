package handlers

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/gofiber/fiber/v2"

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

// maxPoints bounds the points of a series: 90 days by hour, or 48 hours
// by minute, fit.
const maxPoints = 5000

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
}

type statsRoute struct {
	RouteID   string   `json:"route_id"`
	Requests  int64    `json:"requests"`
	ErrorRate float64  `json:"error_rate"`
	P99       *float64 `json:"p99_ms"`
}

type statsDTO struct {
	From   time.Time    `json:"from"`
	To     time.Time    `json:"to"`
	Step   string       `json:"step"`
	Series []statsPoint `json:"series"`
	Totals statsNumbers `json:"totals"`
	Routes []statsRoute `json:"routes,omitempty"`
}

// ms is a quantile of h in milliseconds, or nil when h counts nothing.
func ms(h stats.Histogram, q float64) *float64 {
	if h.Total() == 0 {
		return nil
	}
	v := math.Round(float64(h.Quantile(q).Microseconds())) / 1000
	return &v
}

func numbers(c store.Counts, h stats.Histogram) statsNumbers {
	return statsNumbers{Requests: c.Requests(), Errors4xx: c.N4xx, Errors5xx: c.N5xx + c.Busy, Limited: c.Limited, Busy: c.Busy,
		P50: ms(h, 0.5), P95: ms(h, 0.95), P99: ms(h, 0.99)}
}

// statsRange reads a query's range and step: from and to RFC 3339, cut
// to whole steps (to rounded up, so the step under way is in), by
// default the last 24 hours by minute.
func statsRange(q statsQuery, now time.Time) (from, to time.Time, step string, err error) {
	step = cmp.Or(q.Step, "minute")
	res := map[string]byte{"minute": store.Minute, "hour": store.Hour, "day": store.Day}[step]
	bad := map[string]string{}
	to = now
	if q.To != "" {
		if to, err = time.Parse(time.RFC3339, q.To); err != nil {
			bad["to"] = "must be a time in RFC 3339, like 2026-11-27T10:00:00Z"
		}
	}
	to = store.Ceil(to, res)
	from = to.Add(-24 * time.Hour)
	if q.From != "" {
		if from, err = time.Parse(time.RFC3339, q.From); err != nil {
			bad["from"] = "must be a time in RFC 3339, like 2026-11-26T10:00:00Z"
		}
	}
	from = store.Truncate(from, res)
	switch {
	case len(bad) > 0:
	case !from.Before(to):
		bad["from"] = "must be before to"
	case store.Steps(from, to, res) > maxPoints:
		bad["step"] = fmt.Sprintf("gives %d points from %s to %s: at most %d; choose a larger step or a shorter range",
			store.Steps(from, to, res), from.Format(time.RFC3339), to.Format(time.RFC3339), maxPoints)
	}
	if len(bad) > 0 {
		return from, to, step, &ValidationError{Fields: bad}
	}
	return from, to, step, nil
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
	from, to, step, err := statsRange(q, time.Now())
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
	res := map[string]byte{"minute": store.Minute, "hour": store.Hour, "day": store.Day}[step]
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
	byRoute, err := h.store.StatsByRoute(c.UserContext(), project, from, to)
	if err != nil {
		return statsDTO{}, err
	}
	out.Routes = make([]statsRoute, len(byRoute))
	for i, r := range byRoute {
		n := r.Counts.Requests()
		out.Routes[i] = statsRoute{RouteID: r.RouteID, Requests: n, P99: ms(r.Latency, 0.99)}
		if n > 0 {
			out.Routes[i].ErrorRate = math.Round(float64(r.Counts.N5xx+r.Counts.Busy)/float64(n)*10000) / 10000
		}
	}
	slices.SortFunc(out.Routes, func(a, b statsRoute) int {
		return cmp.Or(cmp.Compare(b.Requests, a.Requests), cmp.Compare(a.RouteID, b.RouteID))
	})
	return out, nil
}
