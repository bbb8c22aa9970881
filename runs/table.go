package runs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"golang.org/x/sync/singleflight"

	"stencil/engine"
	"stencil/store"
)

// table is what answers at /x: every project's routes by api_path, each
// route's method, path and version in a router. It is loaded from
// PostgreSQL on first use; a project is reloaded when its api_path or
// settings change, and a route when it changes (reloadRoutes): at once on
// the instance that made the change, and on every instance when the
// database's notice on stencil_routes arrives (listen). A route's plan is
// compiled at its first run and kept while its version stands, for the
// plansKept routes run most recently (planOf): the table's memory does not
// grow with the routes a service holds, only with those it runs
// (docs/performance.md).
type table struct {
	store *store.Store
	log   *slog.Logger
	// plans are the routes whose plans are kept, most recently run first;
	// one pushed out drops its plan.
	plans *lru.Cache[*routeRef, struct{}]
	// compiling lets the runs that find one route's plan not kept at once
	// share one read and compile of it.
	compiling singleflight.Group

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
	// flushLog is told of a backup's ask to write the run log now, with
	// its nonce (store.FlushRunLogs); nil: none.
	flushLog func(nonce string)
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
	router  *engine.Router[*routeRef]
	routes  map[string]*routeRef // by route id
	doc     *docCache            // its OpenAPI document, once asked for
}

// routeRef is a route of the table: its key, and its plan while kept.
type routeRef struct {
	store.RouteKey
	plan atomic.Pointer[engine.Plan]
}

// entries are the routes' entries in a router.
func entries(routes []*routeRef) []engine.Route[*routeRef] {
	out := make([]engine.Route[*routeRef], len(routes))
	for i, r := range routes {
		out[i] = engine.Route[*routeRef]{ID: r.ID, Method: r.Method, Path: r.Path, Value: r}
	}
	return out
}

// plansKept is how many routes' plans the table keeps compiled: beyond
// them, the route run least recently is read and compiled again at its
// next run (about a millisecond).
const plansKept = 2048

func newTable(st *store.Store, log *slog.Logger) *table { return newTableKeeping(st, log, plansKept) }

// newTableKeeping is a table keeping the plans of kept routes.
func newTableKeeping(st *store.Store, log *slog.Logger, kept int) *table {
	plans, err := lru.NewWithEvict(kept, func(r *routeRef, _ struct{}) { r.plan.Store(nil) })
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &table{store: st, log: log, plans: plans, next: map[string]*reloadRound{}}
}

// planOf returns the plan of route r of project, compiling it when it is
// not kept (once for the runs that ask at once); nil when the route is
// gone since the table learnt of it.
func (t *table) planOf(ctx context.Context, project string, r *routeRef) (*engine.Plan, error) {
	if plan := r.plan.Load(); plan != nil {
		t.plans.Get(r) // run most recently now
		return plan, nil
	}
	v, err, _ := t.compiling.Do(fmt.Sprintf("%p", r), func() (any, error) {
		// Shared: no one caller's going away ends it (the pool's
		// statement timeout bounds it).
		stored, err := t.store.RoutingRoutes(context.WithoutCancel(ctx), project, []string{r.ID})
		if err != nil || len(stored) == 0 {
			return (*engine.Plan)(nil), err
		}
		plan := compileStored(stored[0])
		// A newer version runs as read; the table learns of it by its notice.
		if r.Same(stored[0].Key()) {
			r.plan.Store(plan)
			t.plans.Add(r, struct{}{})
		}
		return plan, nil
	})
	plan, _ := v.(*engine.Plan)
	return plan, err
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

// plan returns the plan of a project's route: nil when the project has no
// such route.
func (t *table) plan(ctx context.Context, project, route string) (*engine.Plan, error) {
	if err := t.ensure(ctx); err != nil {
		return nil, err
	}
	t.mu.RLock()
	var r *routeRef
	if p := t.projects[project]; p != nil {
		r = p.routes[route]
	}
	t.mu.RUnlock()
	if r == nil {
		return nil, nil
	}
	return t.planOf(ctx, project, r)
}

// apiPath returns the api_path of project ("" when the table has none).
func (t *table) apiPath(ctx context.Context, project string) (string, error) {
	if err := t.ensure(ctx); err != nil {
		return "", err
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if p := t.projects[project]; p != nil {
		return p.apiPath, nil
	}
	return "", nil
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
	before := t.projects
	t.projects, t.paths, t.loaded = projects, paths, true
	t.mu.Unlock()
	for id, old := range before {
		t.forget(old, projects[id])
	}
	return nil
}

// forget drops the kept plans of old's routes that p (nil: none) does not
// hold.
func (t *table) forget(old, p *routing) {
	for id, r := range old.routes {
		if p == nil || p.routes[id] != r {
			t.plans.Remove(r)
		}
	}
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
	delete(t.projects, id)
	if p != nil {
		t.projects[id] = p
	}
	t.paths = owners(t.projects)
	t.mu.Unlock()
	if old != nil {
		t.forget(old, p)
	}
	return nil
}

// reloadRoutes reads the keys of routes of project old as they are now
// and puts them in a copy of old in its place: a route gone is dropped, a
// route changed loses its plan. Only these routes are read, and the router
// is edited, not built again (engine.Router.Edit), so a change costs the
// same in a project of 10 routes as of 10,000 (docs/performance.md).
func (t *table) reloadRoutes(ctx context.Context, old *routing, routes []string) error {
	keys, err := t.store.RoutingKeys(ctx, old.id, routes)
	if err != nil {
		return err
	}
	now := make(map[string]store.RouteKey, len(keys))
	for _, k := range keys {
		now[k.ID] = k
	}
	var dropped, made []*routeRef
	for _, route := range routes {
		prev, had := old.routes[route]
		k, has := now[route]
		if had && has && prev.Same(k) {
			continue
		}
		if had {
			dropped = append(dropped, prev)
		}
		if has {
			made = append(made, &routeRef{RouteKey: k})
		}
	}
	if dropped == nil && made == nil {
		return nil
	}
	p := *old
	p.routes = maps.Clone(old.routes)
	for _, r := range dropped {
		delete(p.routes, r.ID)
	}
	for _, r := range made {
		p.routes[r.ID] = r
	}
	p.router = old.router.Edit(entries(dropped), entries(made))
	p.doc = &docCache{}
	t.mu.Lock()
	t.projects[p.id] = &p
	for key, owner := range t.paths {
		if owner == old {
			t.paths[key] = &p
		}
	}
	t.mu.Unlock()
	for _, r := range dropped {
		t.plans.Remove(r)
	}
	return nil
}

// build reads a project's settings and its routes' keys; a route whose
// key is unchanged keeps its plan.
func (t *table) build(ctx context.Context, id string) (*routing, error) {
	t.mu.RLock()
	old := t.projects[id]
	t.mu.RUnlock()
	rp, keys, err := t.store.ProjectRouting(ctx, id)
	if err != nil {
		return nil, err
	}
	p := &routing{id: id, name: rp.Name, apiPath: rp.APIPath, created: rp.CreatedAt, rate: rp.XRateLimit, burst: rp.XRateBurst, origins: rp.XCORSOrigins, hosts: rp.XEgressHosts,
		router: &engine.Router[*routeRef]{}, routes: make(map[string]*routeRef, len(keys)), doc: &docCache{}}
	refs := make([]*routeRef, 0, len(keys))
	for _, k := range keys {
		r := &routeRef{RouteKey: k}
		if old != nil {
			if prev, ok := old.routes[k.ID]; ok && prev.Same(k) {
				r = prev
			}
		}
		p.routes[k.ID] = r
		refs = append(refs, r)
	}
	for _, e := range entries(refs) {
		p.router.Add(e)
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
// so that a burst of notices gathers into few rounds (ask). Whenever it
// (re)connects it reloads everything, for the notices it may have missed.
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
			if nonce, ok := strings.CutPrefix(payload, store.RunLogFlushPrefix); ok {
				if t.flushLog != nil {
					t.flushLog(nonce)
				}
				return nil
			}
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
