package handlers

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"stencil/engine"
	"stencil/store"
)

// routeTable is what answers at /x: every project's routes, compiled,
// by api_path. It is loaded from PostgreSQL on first use and reloaded one
// project at a time when its routes or api_path change: at once on the
// instance that made the change, and on every instance when the database's
// notice on stencil_routes arrives (listen). A plan is compiled once per
// route version and kept while that version stands.
type routeTable struct {
	store *store.Store
	log   *slog.Logger

	load     sync.Mutex // one load at a time
	mu       sync.RWMutex
	loaded   bool
	projects map[string]*projectRoutes // by id
	paths    map[string]*projectRoutes // by api_path segments, joined by "/"
}

// projectRoutes is one project's routes.
type projectRoutes struct {
	id      string
	name    string
	apiPath string
	router  *engine.Router
	plans   map[string]*engine.Plan // by route id, for reuse across reloads
}

func newRouteTable(st *store.Store, log *slog.Logger) *routeTable {
	return &routeTable{store: st, log: log}
}

func pathKey(apiPath string) string {
	return strings.Join(engine.Segments(apiPath), "/")
}

// find returns the project whose api_path is the longest prefix of segs,
// and the segments after it.
func (t *routeTable) find(ctx context.Context, segs []string) (*projectRoutes, []string, error) {
	if err := t.ensure(ctx); err != nil {
		return nil, nil, err
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	for k := len(segs); k >= 0; k-- {
		if p, ok := t.paths[strings.Join(segs[:k], "/")]; ok {
			return p, segs[k:], nil
		}
	}
	return nil, nil, nil
}

// plan returns a project's routes and the plan of one of them: nil when
// the project has no such route (or no routes).
func (t *routeTable) plan(ctx context.Context, project, route string) (*projectRoutes, *engine.Plan, error) {
	if err := t.ensure(ctx); err != nil {
		return nil, nil, err
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	p := t.projects[project]
	if p == nil {
		return nil, nil, nil
	}
	return p, p.plans[route], nil
}

// ensure loads the whole table once.
func (t *routeTable) ensure(ctx context.Context) error {
	t.mu.RLock()
	loaded := t.loaded
	t.mu.RUnlock()
	if loaded {
		return nil
	}
	return t.loadAll(ctx, false)
}

// loadAll (re)loads every project; unless force, only when not loaded yet.
func (t *routeTable) loadAll(ctx context.Context, force bool) error {
	t.load.Lock()
	defer t.load.Unlock()
	t.mu.RLock()
	loaded := t.loaded
	t.mu.RUnlock()
	if loaded && !force {
		return nil
	}
	list, err := t.store.RoutingProjects(ctx)
	if err != nil {
		return err
	}
	projects := map[string]*projectRoutes{}
	paths := map[string]*projectRoutes{}
	for _, rp := range list {
		p, err := t.build(ctx, rp.ID)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		projects[p.id], paths[pathKey(p.apiPath)] = p, p
	}
	t.mu.Lock()
	t.projects, t.paths, t.loaded = projects, paths, true
	t.mu.Unlock()
	return nil
}

// reload reloads one project, or drops it when it is gone. Before the
// first load it does nothing: that load will read it.
func (t *routeTable) reload(ctx context.Context, id string) error {
	t.load.Lock()
	defer t.load.Unlock()
	t.mu.RLock()
	loaded := t.loaded
	t.mu.RUnlock()
	if !loaded {
		return nil
	}
	p, err := t.build(ctx, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.projects[id]; ok {
		delete(t.paths, pathKey(old.apiPath))
		delete(t.projects, id)
	}
	if p != nil {
		t.projects[id], t.paths[pathKey(p.apiPath)] = p, p
	}
	return nil
}

// build reads a project's routes and compiles those whose version changed.
func (t *routeTable) build(ctx context.Context, id string) (*projectRoutes, error) {
	rp, routes, err := t.store.ProjectRouting(ctx, id)
	if err != nil {
		return nil, err
	}
	t.mu.RLock()
	old := t.projects[id]
	t.mu.RUnlock()
	p := &projectRoutes{id: id, name: rp.Name, apiPath: rp.APIPath, router: &engine.Router{}, plans: map[string]*engine.Plan{}}
	for _, r := range routes {
		var plan *engine.Plan
		if old != nil {
			if prev, ok := old.plans[r.RouteID]; ok && prev.Version == r.Version {
				plan = prev
			}
		}
		if plan == nil {
			plan = compileStored(r)
		}
		p.plans[r.RouteID] = plan
		p.router.Add(plan)
	}
	return p, nil
}

// compileStored compiles a stored route. A route that does not compile
// (saved before a check it now fails) still answers: with a fault naming
// what is wrong.
func compileStored(r store.StoredRoute) *engine.Plan {
	plan, problems := engine.Compile(r.Route, engine.PathParams(r.RoutePath))
	if len(problems) > 0 {
		plan = engine.Broken(r.Route, problems.Error())
	}
	plan.Version = r.Version
	return plan
}

// listen follows the notices on stencil_routes on a connection of its own
// until ctx ends, reloading the project each names. Whenever it
// (re)connects it reloads everything, for the notices it may have missed.
func (t *routeTable) listen(ctx context.Context, pool *pgxpool.Pool) {
	for ctx.Err() == nil {
		err := t.listenOnce(ctx, pool)
		if ctx.Err() != nil {
			return
		}
		t.log.Warn("route notices: reconnecting", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (t *routeTable) listenOnce(ctx context.Context, pool *pgxpool.Pool) error {
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN stencil_routes"); err != nil {
		return err
	}
	t.mu.RLock()
	loaded := t.loaded
	t.mu.RUnlock()
	if loaded {
		if err := t.loadAll(ctx, true); err != nil {
			return err
		}
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if err := t.reload(ctx, n.Payload); err != nil {
			return err
		}
	}
}
