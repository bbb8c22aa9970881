package authoring

import (
	"context"
	"sync"

	"stencil/store"
)

// TemplateCache keeps large templates decoded, by id and version (their
// update time): applying one then costs a look at its version instead of
// moving and decoding its whole document. Small templates are not kept:
// reading them is as cheap as the look.
type TemplateCache struct {
	mu      sync.Mutex
	entries map[int64]store.RouteTemplate
	bytes   int
}

const (
	templateCacheMin    = 64 << 10 // documents from this size on are kept
	templateCacheBudget = 4 << 20  // total stored size of the templates kept
)

// Load returns template id, from the cache when its version there is
// current.
func (tc *TemplateCache) Load(ctx context.Context, st *store.Store, id int64) (store.RouteTemplate, error) {
	tc.mu.Lock()
	cached, ok := tc.entries[id]
	tc.mu.Unlock()
	if ok {
		at, err := st.TemplateUpdatedAt(ctx, id)
		if err != nil {
			return store.RouteTemplate{}, err
		}
		if at.Equal(cached.UpdatedAt) {
			return cached, nil
		}
	}
	t, err := st.Template(ctx, id)
	if err == nil && t.DocumentSize >= templateCacheMin && t.DocumentSize <= templateCacheBudget {
		kept := t
		kept.Document = nil // the decoded template is what is reused
		tc.put(kept)
	}
	return t, err
}

// put keeps t, dropping others (any) while over the budget. Kept
// templates are shared: their users copy before they change anything
// (flow.Apply clones).
func (tc *TemplateCache) put(t store.RouteTemplate) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if tc.entries == nil {
		tc.entries = map[int64]store.RouteTemplate{}
	}
	if old, ok := tc.entries[t.ID]; ok {
		tc.bytes -= old.DocumentSize
	}
	tc.entries[t.ID] = t
	tc.bytes += t.DocumentSize
	for id, e := range tc.entries {
		if tc.bytes <= templateCacheBudget {
			break
		}
		if id != t.ID {
			delete(tc.entries, id)
			tc.bytes -= e.DocumentSize
		}
	}
}

// Kept says whether template id is kept decoded.
func (tc *TemplateCache) Kept(id int64) bool {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	_, ok := tc.entries[id]
	return ok
}
