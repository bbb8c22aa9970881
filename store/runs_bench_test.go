package store_test

import (
	"context"
	"testing"
	"time"

	"stencil/store"
	"stencil/store/storetest"
)

// BenchmarkLogRuns writes the run log as the service does under load:
// batches of 1,000 runs, a third of them with a caller, without and with
// counting them for route analytics. It reports the time per run.
func BenchmarkLogRuns(b *testing.B) {
	ctx := context.Background()
	pool := storetest.Pool(b)
	st := store.New(pool)
	var uid int64
	if err := pool.QueryRow(ctx, `INSERT INTO users (username, email, password_hash, role) VALUES ('uuu', 'u@example.com', 'x', 'ADMIN') RETURNING id;`).Scan(&uid); err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO projects (id, name, api_path) VALUES ('shop', 'Shop', '/shop')`); err != nil {
		b.Fatal(err)
	}
	batch := make([]store.Run, 1000)
	for i := range batch {
		batch[i] = store.Run{At: time.Now(), ProjectID: "shop", RouteID: "books", Method: "GET", Path: "/x/shop/books?genre=sf", Status: 200, Ended: "RETURN", Duration: time.Millisecond}
		if i%3 == 0 {
			batch[i].UserID, batch[i].Username = &uid, "uuu"
		}
	}
	for _, count := range []bool{false, true} {
		name := "uncounted"
		if count {
			name = "counted" // route analytics' rollups too
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if err := logRuns(ctx, st, batch, count); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(batch)), "ns/run")
		})
	}
}
