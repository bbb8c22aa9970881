package main

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/jackc/pgx/v5"
)

// Route analytics' rows (docs/routes.md): /x with and without counting
// runs, and /route/stats over 90 days of a large project.

// seedStats gives project "big" 1,000 routes' rollups over 90 days, by
// hour and by day, and the project's own: 2,160 hour rows a route of
// about 4.6 runs each, the equivalent of 10 million runs, seeded directly.
func (b *bench) seedStats(ctx context.Context, conn *pgx.Conn) error {
	for _, sql := range []string{
		`INSERT INTO route_stats (project_id, resolution, route_id, at, method, n2xx, n5xx, latency)
			SELECT 'big', 'h', 'route_' || lpad(r::text, 4, '0'), date_trunc('hour', now()) - h * interval '1 hour', 'GET',
				4 + (h + r) % 2, ((h * 7 + r) % 50 = 0)::int, ARRAY[40 + r % 20, 2, 1, 1 + h % 3]::bigint[]
			FROM generate_series(1, 1000) AS r, generate_series(0, 2159) AS h`,
		`INSERT INTO route_stats (project_id, resolution, route_id, at, method, n2xx, n5xx, latency)
			SELECT 'big', 'd', route_id, date_trunc('day', at), method, sum(n2xx), sum(n5xx),
				ARRAY[min(latency[1]), sum(latency[2]), sum(latency[3]), sum(latency[4])]::bigint[]
			FROM route_stats WHERE project_id = 'big' AND resolution = 'h' GROUP BY route_id, date_trunc('day', at), method`,
		`INSERT INTO route_stats (project_id, resolution, route_id, at, method, n2xx, n5xx, latency)
			SELECT 'big', resolution, '', at, '', sum(n2xx), sum(n5xx), ARRAY[40, sum(latency[2]), sum(latency[3]), sum(latency[4])]::bigint[]
			FROM route_stats WHERE project_id = 'big' GROUP BY resolution, at`,
		"VACUUM ANALYZE route_stats",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			return err
		}
	}
	var runs int64
	if err := conn.QueryRow(ctx, `SELECT sum(n2xx + n5xx) FROM route_stats WHERE project_id = 'big' AND resolution = 'h' AND route_id <> ''`).Scan(&runs); err != nil {
		return err
	}
	fmt.Printf("  route_stats of project big: %d runs over 1,000 routes and 90 days\n", runs)
	return nil
}

// statsQuery is /route/stats over the last 90 days by hour of project big.
func statsQuery() string {
	to := time.Now().UTC().Truncate(time.Hour).Add(time.Hour)
	return "/route/stats?project_id=big&step=hour&from=" + url.QueryEscape(to.Add(-90*24*time.Hour).Format(time.RFC3339)) + "&to=" + url.QueryEscape(to.Format(time.RFC3339))
}

// restartWith restarts the service with ROUTE_STATS set to stats.
func (b *bench) restartWith(ctx context.Context, stats string) error {
	if b.routeStats == stats {
		return nil
	}
	b.stopService()
	b.routeStats = stats
	return b.startService(ctx)
}
