package runs

import (
	"maps"
	"slices"
	"testing"
	"time"
)

// TestBatchesForgetQuietRoutes: a route whose runs collided is forgotten
// once its 2 s have passed with none of its runs waiting; one with a run
// waiting is kept.
func TestBatchesForgetQuietRoutes(t *testing.T) {
	tt := newBatches()
	tt.Collided("shop/a")
	tt.Collided("shop/b")
	tt.routes["shop/a"].until = time.Now().Add(-time.Second)
	tt.routes["shop/b"].until = time.Now().Add(-time.Second)
	tt.routes["shop/b"].queue = []*queuedRun{{}}
	tt.Collided("shop/c")
	if _, ok := tt.routes["shop/a"]; ok || len(tt.routes) != 2 {
		t.Fatalf("routes kept: %v", slices.Collect(maps.Keys(tt.routes)))
	}
	if queued, _ := tt.join("shop/a", &queuedRun{wake: make(chan struct{}, 1)}); queued {
		t.Fatal("a forgotten route's run was queued")
	}
}
