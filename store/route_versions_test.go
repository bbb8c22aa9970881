package store_test

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"stencil/flow"
	"stencil/store"
)

// TestRouteVersionsKeepEverySave: create, update, rename and restore each
// keep the whole document with who saved it and a note; concurrent saves
// of one route make one version each, numbered without gaps; deleting the
// route deletes its versions.
func TestRouteVersionsKeepEverySave(t *testing.T) {
	t.Parallel()
	st, ctx := collectionStore(t)
	uid := int64(1)
	r := store.StoredRoute{Route: flow.Route{ProjectID: "shop", RouteID: "books", RoutePath: "/books", Method: "GET"}, CreatedBy: &uid, Note: "first"}
	r.Normalize()
	if err := st.CreateRoute(ctx, &r); err != nil {
		t.Fatal(err)
	}
	r.RoutePath, r.RouteID, r.Note, r.SavedBy = "/books/:id", "book", "one book", &uid
	if err := st.UpdateRoute(ctx, "books", &r); err != nil || r.Version != 2 {
		t.Fatalf("update: version %d, %v", r.Version, err)
	}
	// The rename carried version 1 along.
	list, total, err := st.RouteVersions(ctx, "shop", "book", store.Page{Limit: 10})
	if err != nil || total != 2 || len(list) != 2 || list[0].Version != 2 || list[1].Version != 1 {
		t.Fatalf("versions: %+v %d %v", list, total, err)
	}
	first := list[1]
	if first.Note != "first" || first.Route.RoutePath != "/books" || first.Route.RouteID != "book" || first.CreatedByName == "" || *first.CreatedBy != uid {
		t.Fatalf("version 1: %+v", first)
	}
	if _, err := st.RouteVersionOf(ctx, "shop", "book", 3); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("version 3: %v", err)
	}
	if _, _, err := st.RouteVersions(ctx, "shop", "books", store.Page{Limit: 10}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("versions of the old name: %v", err)
	}

	// Sixteen saves at once: sixteen versions, 3 to 18, each document the
	// one its save wrote.
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u := store.StoredRoute{Route: r.Route, SavedBy: &uid, Note: fmt.Sprint("save ", i)}
			u.RoutePath = fmt.Sprintf("/books/:id/v%d", i)
			errs <- st.UpdateRoute(ctx, "book", &u)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	list, total, err = st.RouteVersions(ctx, "shop", "book", store.Page{Limit: 100})
	if err != nil || total != 18 {
		t.Fatalf("after 16 saves: %d versions, %v", total, err)
	}
	var paths []string
	for i, v := range list {
		if v.Version != int64(18-i) {
			t.Fatalf("version %d at %d", v.Version, i)
		}
		if i < 16 {
			if want := "save " + v.Route.RoutePath[len("/books/:id/v"):]; v.Note != want {
				t.Fatalf("version %d: note %q for path %s", v.Version, v.Note, v.Route.RoutePath)
			}
			paths = append(paths, v.Route.RoutePath)
		}
	}
	slices.Sort(paths)
	if len(slices.Compact(paths)) != 16 {
		t.Fatalf("the 16 saves kept %d distinct documents", len(paths))
	}

	if err := st.DeleteRoute(ctx, "shop", "book"); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := st.QueryIntForTest(ctx, "SELECT count(*)::int FROM route_versions WHERE project_id = 'shop'", &left); err != nil || left != 0 {
		t.Fatalf("versions left after the delete: %d %v", left, err)
	}
}

// TestRouteUpgradeAndRestore: an upgrade writes the template's version and
// values with the document, only over the version it was merged from;
// restoring a version from before it puts the template version back.
func TestRouteUpgradeAndRestore(t *testing.T) {
	t.Parallel()
	st, ctx := collectionStore(t)
	uid := int64(1)
	tpl := store.RouteTemplate{Template: flow.Template{Name: "lister", Description: "d", Method: "GET", RouteID: "list_{col}", RoutePath: "/{col}",
		Variables: []flow.Variable{{Key: "col", Description: "c"}}}, CreatedBy: &uid}
	tpl.Normalize()
	if err := st.SaveTemplate(ctx, &tpl); err != nil {
		t.Fatal(err)
	}
	r := store.StoredRoute{Route: flow.Route{ProjectID: "shop", RouteID: "books", RoutePath: "/books", Method: "GET",
		Template: &flow.TemplateRef{ID: tpl.ID, Name: "lister", Version: 1, Values: map[string]string{"col": "books"}}}, CreatedBy: &uid}
	r.Normalize()
	if err := st.CreateRoute(ctx, &r); err != nil {
		t.Fatal(err)
	}
	up := r
	up.RoutePath, up.SavedBy, up.Note = "/books/list", &uid, "upgraded"
	up.Template = &flow.TemplateRef{ID: tpl.ID, Name: "lister", Version: 2, Values: map[string]string{"col": "books", "label": "Shop"}}
	if err := st.UpgradeRoute(ctx, "books", &up, 1); err != nil || up.Version != 2 {
		t.Fatalf("upgrade: version %d, %v", up.Version, err)
	}
	got, err := st.Route(ctx, "shop", "books")
	if err != nil || got.Template == nil || got.Template.Version != 2 || got.Template.Values["label"] != "Shop" || got.RoutePath != "/books/list" {
		t.Fatalf("after the upgrade: %+v %v", got.Template, err)
	}
	// A second upgrade merged from version 1 finds the route moved on.
	again := up
	if err := st.UpgradeRoute(ctx, "books", &again, 1); !errors.Is(err, store.ErrStale) {
		t.Fatalf("stale upgrade: %v", err)
	}
	if err := st.UpgradeRoute(ctx, "nope", &again, 1); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("upgrade of no route: %v", err)
	}
	// Restoring version 1 puts the route back on template version 1.
	v1, err := st.RouteVersionOf(ctx, "shop", "books", 1)
	if err != nil || v1.TemplateVersion != 1 || v1.TemplateValues["col"] != "books" {
		t.Fatalf("version 1: %+v %v", v1, err)
	}
	back := store.StoredRoute{Route: v1.Route, SavedBy: &uid}
	if err := st.RestoreRoute(ctx, "books", &back, v1); err != nil || back.Version != 3 || back.Template.Version != 1 || back.Template.Values["label"] != "" {
		t.Fatalf("restore: %+v %v", back.Template, err)
	}
	if v2, err := st.RouteVersionOf(ctx, "shop", "books", 2); err != nil || v2.TemplateVersion != 2 {
		t.Fatalf("version 2 keeps its template version: %+v %v", v2.TemplateVersion, err)
	}
}
