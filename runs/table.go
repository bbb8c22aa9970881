package runs

import (
	"context"
	"errors"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"stencil/engine"
	"stencil/store"
)

// table is what answers at /x: every project's routes, compiled,
// by api_path. It is loaded from PostgreSQL on first use; a project is
// reloaded when its api_path or settings change, and a route when it
// changes (reloadRoutes): at once on the
// instance that made the change, and on every instance when the database's
// notice on stencil_routes arrives (listen). A plan is compiled once per
// route version and kept while that version stands.
type table struct {
	store *store.Store
	log   *slog.Logger

	load sync.Mutex // one load at a time
	// next is, per project, the reload asked for that has not begun: a
	// caller whose change committed joins it rather than queueing one of
	// its own behind the load lock (reloadRound).
	nextMu   sync.Mutex
	next     map[string]*reloadRound
	mu       sync.RWMutex
	loaded   bool
	projects map[string]*routing // by id
	paths    map[string]*routing // by pathKey, one project a URL space
}

// routing is one project's routes, compiled.
type routing struct {
	id      string
	name    string
	apiPath string
	created time.Time
	rate    int // requests a second per client address; 0: no limit
	burst   int
	origins []string // CORS: the origins whose browsers may call, or "*"
	hosts   []string // the hosts its HTTP blocks may call (empty: any public host)
	router  *engine.Router
	plans   map[string]*engine.Plan // by route id, for reuse across reloads
}

func newTable(st *store.Store, log *slog.Logger) *table {
	return &table{store: st, log: log, next: map[string]*reloadRound{}}
}

// pathKey is how an api_path is compared (as the database's api_path_key
// does): its segments in lower case, joined by "/"; "/" is "".
func pathKey(apiPath string) string {
	return strings.ToLower(strings.Join(engine.Segments(apiPath), "/"))
}

// find returns the project whose api_path is a prefix of segs (at most
// one is: see owners), and the segments after it.
func (t *table) find(ctx context.Context, segs []string) (*routing, []string, error) {
	if err := t.ensure(ctx); err != nil {
		return nil, nil, err
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	for k := len(segs); k >= 0; k-- {
		if p, ok := t.paths[strings.ToLower(strings.Join(segs[:k], "/"))]; ok {
			return p, segs[k:], nil
		}
	}
	return nil, nil, nil
}

// owners gives each URL space under /x to one project. The database
// refuses overlapping api_paths; pairs made before that rule may remain,
// and of those the older project answers (then the lesser id), so that a
// project made later can never take over another's requests, and deleting
// or moving one project never drops another's key.
func owners(projects map[string]*routing) map[string]*routing {
	list := make([]*routing, 0, len(projects))
	for _, p := range projects {
		list = append(list, p)
	}
	slices.SortFunc(list, func(a, b *routing) int {
		if c := a.created.Compare(b.created); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	paths := make(map[string]*routing, len(list))
	inner := map[string]bool{} // proper prefixes of the keys taken
	for _, p := range list {
		key := pathKey(p.apiPath)
		if inner[key] || taken(paths, key) {
			continue
		}
		paths[key] = p
		segs := strings.Split(key, "/")
		for k := 0; k < len(segs) && key != ""; k++ {
			inner[strings.Join(segs[:k], "/")] = true
		}
	}
	return paths
}

// taken says whether key or a prefix of it by whole segments is a key of
// paths.
func taken(paths map[string]*routing, key string) bool {
	if _, ok := paths[""]; ok {
		return true
	}
	for i := 0; i <= len(key); i++ {
		if i == len(key) || key[i] == '/' {
			if _, ok := paths[key[:i]]; ok {
				return true
			}
		}
	}
	return false
}

// plan returns a project's routes and the plan of one of them: nil when
// the project has no such route (or no routes).
func (t *table) plan(ctx context.Context, project, route string) (*routing, *engine.Plan, error) {
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

// hosts returns the egress list of project (nil: any public host).
func (t *table) hosts(ctx context.Context, project string) ([]string, error) {
	if err := t.ensure(ctx); err != nil {
		return nil, err
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if p := t.projects[project]; p != nil {
		return p.hosts, nil
	}
	return nil, nil
}

// ensure loads the whole table once.
func (t *table) ensure(ctx context.Context) error {
	t.mu.RLock()
	loaded := t.loaded
	t.mu.RUnlock()
	if loaded {
		return nil
	}
	return t.loadAll(ctx, false)
}

// loadAll (re)loads every project; unless force, only when not loaded yet.
func (t *table) loadAll(ctx context.Context, force bool) error {
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
	projects := map[string]*routing{}
	for _, rp := range list {
		p, err := t.build(ctx, rp.ID)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		projects[p.id] = p
	}
	paths := owners(projects)
	t.mu.Lock()
	t.projects, t.paths, t.loaded = projects, paths, true
	t.mu.Unlock()
	return nil
}

// reload reloads the named routes of a project on this instance (none
// named: the whole project, or its drop when it is gone) and waits until
// the table holds them. Before the first load it does nothing: that load
// will read them.
func (t *table) reload(ctx context.Context, id string, routes ...string) error {
	r := t.ask(id, routes)
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ask adds routes of project id (none: the whole project) to the project's
// next reload round, starting the round when none is waiting, and returns
// it without waiting. The route notices of one transaction — a project
// file's apply, a project's deletion with its routes — so gather into a
// round or two, however many they are.
func (t *table) ask(id string, routes []string) *reloadRound {
	t.nextMu.Lock()
	defer t.nextMu.Unlock()
	r, ok := t.next[id]
	if !ok {
		r = &reloadRound{done: make(chan struct{}), routes: map[string]bool{}}
		t.next[id] = r
		go t.runRound(id, r)
	}
	r.all = r.all || len(routes) == 0
	for _, route := range routes {
		r.routes[route] = true
	}
	return r
}

// reloadRound is one reload of a project that every caller asking for it
// before it begins shares: each of their changes committed before it
// reads. Saves of one project at once cost two reloads, not one each.
type reloadRound struct {
	done   chan struct{}
	err    error
	all    bool            // the whole project
	routes map[string]bool // else these routes, by id
}

// reloadTimeout bounds one reload round, which no one caller's context
// may end: others wait for it too.
const reloadTimeout = time.Minute

// runRound runs round r of project id once the load lock is free. When it
// fails, the table is read whole at its next use: it may miss a change.
func (t *table) runRound(id string, r *reloadRound) {
	defer close(r.done)
	t.load.Lock()
	defer t.load.Unlock()
	// Begun: whoever asks from now on may have changed what this read
	// misses, and waits for a round of its own.
	t.nextMu.Lock()
	delete(t.next, id)
	t.nextMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), reloadTimeout)
	defer cancel()
	if r.err = t.reloadNow(ctx, id, r); r.err != nil {
		t.log.Error("route table: reload", "project", id, "err", r.err)
		t.mu.Lock()
		t.loaded = false
		t.mu.Unlock()
	}
}

// reloadNow runs round r of project id; t.load is held.
func (t *table) reloadNow(ctx context.Context, id string, r *reloadRound) error {
	t.mu.RLock()
	loaded, old := t.loaded, t.projects[id]
	t.mu.RUnlock()
	if !loaded {
		return nil
	}
	if !r.all && old != nil {
		return t.reloadRoutes(ctx, old, slices.Sorted(maps.Keys(r.routes)))
	}
	p, err := t.build(ctx, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.projects, id)
	if p != nil {
		t.projects[id] = p
	}
	t.paths = owners(t.projects)
	return nil
}

// reloadRoutes reads routes of project old as they are now and puts them
// in a copy of old in its place: a route gone is dropped, a route whose
// version changed compiled again. Only these routes are read, and the
// router is edited, not built again (engine.Router.Edit), so a change
// costs the same in a project of 10 routes as of 10,000
// (docs/performance.md).
func (t *table) reloadRoutes(ctx context.Context, old *routing, routes []string) error {
	stored, err := t.store.RoutingRoutes(ctx, old.id, routes)
	if err != nil {
		return err
	}
	now := make(map[string]store.StoredRoute, len(stored))
	for _, r := range stored {
		now[r.RouteID] = r
	}
	var remove, add []*engine.Plan
	for _, route := range routes {
		prev, had := old.plans[route]
		r, has := now[route]
		if had && has && prev.Version == r.Version {
			continue
		}
		if had {
			remove = append(remove, prev)
		}
		if has {
			add = append(add, compileStored(r))
		}
	}
	if remove == nil && add == nil {
		return nil
	}
	p := *old
	p.plans = maps.Clone(old.plans)
	for _, plan := range remove {
		delete(p.plans, plan.Route.RouteID)
	}
	for _, plan := range add {
		p.plans[plan.Route.RouteID] = plan
	}
	p.router = old.router.Edit(remove, add)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.projects[p.id] = &p
	for key, owner := range t.paths {
		if owner == old {
			t.paths[key] = &p
		}
	}
	return nil
}

// build reads a project's routes and compiles those whose version changed;
// the others keep their plans, and their documents are not read.
func (t *table) build(ctx context.Context, id string) (*routing, error) {
	t.mu.RLock()
	old := t.projects[id]
	t.mu.RUnlock()
	// Only the routes whose version is not compiled here are read whole.
	known := func(route string, version int64) bool {
		prev, ok := old.plans[route]
		return ok && prev.Version == version
	}
	if old == nil {
		known = nil
	}
	rp, routes, err := t.store.ProjectRouting(ctx, id, known)
	if err != nil {
		return nil, err
	}
	p := &routing{id: id, name: rp.Name, apiPath: rp.APIPath, created: rp.CreatedAt, rate: rp.XRateLimit, burst: rp.XRateBurst, origins: rp.XCORSOrigins, hosts: rp.XEgressHosts, router: &engine.Router{}, plans: map[string]*engine.Plan{}}
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

// listen follows the notices on stencil_routes until ctx ends, reloading
// the project or the route each names; it does not wait for the reloads,
// so that a burst of notices gathers into few rounds (ask). Whenever it (re)connects it reloads everything,
// for the notices it may have missed.
func (t *table) listen(ctx context.Context) {
	for ctx.Err() == nil {
		err := t.store.Listen(ctx, "stencil_routes", func() error {
			t.mu.RLock()
			loaded := t.loaded
			t.mu.RUnlock()
			if loaded {
				return t.loadAll(ctx, true)
			}
			return nil
		}, func(payload string) error {
			// "<project>" or "<project> <route>" (migration 033).
			project, route, _ := strings.Cut(payload, " ")
			var routes []string
			if route != "" {
				routes = []string{route}
			}
			t.ask(project, routes)
			return nil
		})
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
