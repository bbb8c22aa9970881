package handlers

import (
	"context"
	"net/http/httptest"
	"runtime/debug"
	"testing"

	"stencil/store"
)

// BenchmarkVaultReadJWT answers GET /vault/fetch/one by JWT through the
// app, on PostgreSQL, 16 readers a core (32 on the 2-core machines of
// docs/performance.md): the caller's check, the read and its access-log
// row in one statement of a group commit (docs/vaults.md).
// Its CPU profile (-cpuprofile, focused on fiber's App.handler) is the
// handlers' share of make bench's "vault read, JWT" row, without wrk and
// the sockets (docs/performance.md). The collector runs as the service's
// does by default: only near a 96 MiB soft limit.
func BenchmarkVaultReadJWT(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(96 << 20))
	ta := newTestApp(b)
	ctx := context.Background()
	if err := ta.h.store.CreateProject(ctx, &store.Project{ID: "shop", Name: "Shop", APIPath: "/shop"}, ta.root.ID); err != nil {
		b.Fatal(err)
	}
	ta.putSecret(b, "shop", "SERVICE_TOKEN", "secret-value", ta.root)
	headers := as(ta.token(b, ta.root))
	b.ReportAllocs()
	b.SetParallelism(16) // 16 × GOMAXPROCS readers
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest("GET", "/vault/fetch/one?project_id=shop&key=SERVICE_TOKEN", nil)
			for k, v := range headers {
				req.Header.Set(k, v)
			}
			resp, err := ta.app.Test(req, -1)
			if err != nil {
				b.Error(err) // not Fatal: this is one of RunParallel's goroutines
				return
			}
			if resp.StatusCode != 200 {
				b.Error(resp.Status)
				return
			}
			resp.Body.Close()
		}
	})
}
