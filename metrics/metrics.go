// Package metrics holds the service's Prometheus metrics, on a registry
// of their own (docs/operations.md): requests by route pattern, sign-ins,
// vault reads, runs of routes at /x and the database pool. The HTTP layer,
// the vault and the run log count into them; it serves nothing itself but
// the registry's handler.
package metrics

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"stencil/stats"
	"stencil/store"
)

// Metrics are the service's Prometheus metrics, on a registry of their own,
// served at /metrics.
type Metrics struct {
	registry   *prometheus.Registry
	requests   *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	vaultReads *prometheus.CounterVec
	logins     *prometheus.CounterVec
	// Runs of routes at /x, by project and route (docs/routes.md).
	xRequests  *prometheus.CounterVec
	xLatency   *prometheus.HistogramVec
	xUnmatched *prometheus.CounterVec
}

// New makes the metrics of a service on st.
func New(st *store.Store) *Metrics {
	m := &Metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stencil_http_requests_total", Help: "HTTP requests answered, by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "stencil_http_request_duration_seconds", Help: "Time to answer HTTP requests, by route pattern and method.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 15},
		}, []string{"route", "method"}),
		vaultReads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stencil_vault_reads_total", Help: "Vault values returned (each one logged), by channel.",
		}, []string{"channel"}),
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stencil_logins_total", Help: "Sign-in attempts by outcome: success, failure, throttled, busy.",
		}, []string{"outcome"}),
		xRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stencil_x_requests_total", Help: "Requests to routes at /x, by project, route and class: 2xx, 3xx, 4xx, 5xx, LIMITED, BUSY.",
		}, []string{"project", "route", "class"}),
		xLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "stencil_x_request_duration_seconds", Help: "Time routes at /x took to answer, by project and route (refusals by the rate limit left out).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 15},
		}, []string{"project", "route"}),
		xUnmatched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stencil_x_unmatched_total", Help: "Requests to a project's API path at /x that no route matched (404), by project.",
		}, []string{"project"}),
	}
	readStatements := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "stencil_vault_read_statements_total",
		Help: "Statements that read and logged vault values; reads that overlap share one, so stencil_vault_reads_total over this is the reads per statement.",
	}, func() float64 { return float64(st.VaultReadStatements()) })
	m.registry.MustRegister(m.requests, m.latency, m.vaultReads, m.logins, m.xRequests, m.xLatency, m.xUnmatched, readStatements,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), poolCollector{st})
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// Request counts an HTTP request answered, by its route pattern.
func (m *Metrics) Request(route, method string, status int, seconds float64) {
	m.requests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.latency.WithLabelValues(route, method).Observe(seconds)
}

// Login counts a sign-in attempt by outcome: success, failure, throttled,
// busy.
func (m *Metrics) Login(outcome string) { m.logins.WithLabelValues(outcome).Inc() }

// poolCollector reports the connection pool: connections in use, idle and
// open, and how often and how long requests waited for one.
type poolCollector struct{ st *store.Store }

var (
	poolInUse   = prometheus.NewDesc("stencil_db_pool_in_use", "Connections in use.", nil, nil)
	poolIdle    = prometheus.NewDesc("stencil_db_pool_idle", "Idle connections.", nil, nil)
	poolOpen    = prometheus.NewDesc("stencil_db_pool_open", "Open connections.", nil, nil)
	poolMax     = prometheus.NewDesc("stencil_db_pool_max", "Largest number of connections.", nil, nil)
	poolWaits   = prometheus.NewDesc("stencil_db_pool_waits_total", "Acquisitions that had to wait for a connection.", nil, nil)
	poolWaitSec = prometheus.NewDesc("stencil_db_pool_wait_seconds_total", "Time spent waiting for a connection.", nil, nil)
)

func (p poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{poolInUse, poolIdle, poolOpen, poolMax, poolWaits, poolWaitSec} {
		ch <- d
	}
}

func (p poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := p.st.PoolStat()
	ch <- prometheus.MustNewConstMetric(poolInUse, prometheus.GaugeValue, float64(s.AcquiredConns()))
	ch <- prometheus.MustNewConstMetric(poolIdle, prometheus.GaugeValue, float64(s.IdleConns()))
	ch <- prometheus.MustNewConstMetric(poolOpen, prometheus.GaugeValue, float64(s.TotalConns()))
	ch <- prometheus.MustNewConstMetric(poolMax, prometheus.GaugeValue, float64(s.MaxConns()))
	ch <- prometheus.MustNewConstMetric(poolWaits, prometheus.CounterValue, float64(s.EmptyAcquireCount()))
	ch <- prometheus.MustNewConstMetric(poolWaitSec, prometheus.CounterValue, s.EmptyAcquireWaitTime().Seconds())
}

// VaultReads counts n vault values read on channel (vault.Config.Reads).
func (m *Metrics) VaultReads(channel string, n int) {
	m.vaultReads.WithLabelValues(channel).Add(float64(n))
}

// RunsCounted counts the runs at /x of a tally (off the requests' path;
// dry runs of the playground are not traffic and are not in it). A
// duration is observed as the middle of its bucket of the tally's
// histogram, within 5 % of what it was (package stats).
func (m *Metrics) RunsCounted(t store.Tally) {
	t.Minutes(func(s store.RouteStat) {
		if s.RouteID == store.UnmatchedRoute {
			m.xUnmatched.WithLabelValues(s.ProjectID).Add(float64(s.Counts.Requests()))
			return
		}
		for class, n := range map[string]int64{stats.Class2xx: s.Counts.N2xx, stats.Class3xx: s.Counts.N3xx, stats.Class4xx: s.Counts.N4xx,
			stats.Class5xx: s.Counts.N5xx, stats.ClassLimited: s.Counts.Limited, stats.ClassBusy: s.Counts.Busy} {
			if n > 0 {
				m.xRequests.WithLabelValues(s.ProjectID, s.RouteID, class).Add(float64(n))
			}
		}
		h := m.xLatency.WithLabelValues(s.ProjectID, s.RouteID)
		s.Latency.Each(func(d time.Duration, n int64) {
			for range n {
				h.Observe(d.Seconds())
			}
		})
	})
}

// Forget drops the series of a route that is gone (route "": of every
// route of a project that is gone), so that /metrics holds the routes
// that exist.
func (m *Metrics) Forget(project, route string) {
	labels := prometheus.Labels{"project": project}
	if route != "" {
		labels["route"] = route
	}
	m.xRequests.DeletePartialMatch(labels)
	m.xLatency.DeletePartialMatch(labels)
	if route == "" {
		m.xUnmatched.DeletePartialMatch(labels)
	}
}
