package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"stencil/flow"
)

// StoredTest is a route's test as the store keeps it (docs/tests.md).
type StoredTest struct {
	ProjectID string
	RouteID   string
	flow.RouteTest
	CreatedBy *int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// MaxTestsPerRoute bounds a route's tests.
const MaxTestsPerRoute = 100

// ErrTooManyTests: a route holds MaxTestsPerRoute tests already.
var ErrTooManyTests = errors.New("the route holds 100 tests, the most it may: delete one first")

const testColumns = "project_id, route_id, name, request, expect, created_by, created_at, updated_at"

func scanTest(row pgx.CollectableRow) (StoredTest, error) {
	var t StoredTest
	var request, expect []byte
	err := row.Scan(&t.ProjectID, &t.RouteID, &t.Name, &request, &expect, &t.CreatedBy, &t.CreatedAt, &t.UpdatedAt)
	if err == nil {
		err = json.Unmarshal(request, &t.Request)
	}
	if err == nil {
		err = json.Unmarshal(expect, &t.Expect)
	}
	t.Normalize()
	return t, err
}

// testEvent tells of a change of a route's test.
func testEvent(verb string, t *StoredTest, summary string) Event {
	return Event{Type: "route_test_" + verb, ProjectID: in(t.ProjectID), Object: t.RouteID + "/" + t.Name, Summary: summary}
}

// CreateTest inserts t, made by user uid: its route must exist
// (ErrNotFound), its name be new to the route (ErrConflict) and the route
// hold fewer than MaxTestsPerRoute tests (ErrTooManyTests).
func (s *Store) CreateTest(ctx context.Context, t *StoredTest, uid int64) (err error) {
	defer wrap(&err, "create test", t.ProjectID, t.RouteID)
	request, expect, err := testJSON(t.RouteTest)
	if err != nil {
		return err
	}
	return s.change(ctx, func(tx *Store) (Event, error) {
		var by *int64
		if uid > 0 {
			by = &uid
		}
		// The route's row, locked: its tests are counted one save at a
		// time, by a statement of its own, whose snapshot is taken after
		// the lock (a count in the locking statement would read the
		// snapshot from before the wait).
		var one int
		if err := tx.db.QueryRow(ctx, `SELECT 1 FROM routes WHERE project_id = $1 AND route_id = $2 FOR UPDATE`, t.ProjectID, t.RouteID).Scan(&one); err != nil {
			return Event{}, translate(err)
		}
		var n int
		if err := tx.db.QueryRow(ctx, `SELECT count(*) FROM route_tests WHERE project_id = $1 AND route_id = $2`, t.ProjectID, t.RouteID).Scan(&n); err != nil {
			return Event{}, err
		}
		if n >= MaxTestsPerRoute {
			return Event{}, ErrTooManyTests
		}
		rows, err := tx.db.Query(ctx, `INSERT INTO route_tests (project_id, route_id, name, request, expect, created_by)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+testColumns, t.ProjectID, t.RouteID, t.Name, request, expect, by)
		if err != nil {
			return Event{}, translate(err)
		}
		made, err := pgx.CollectExactlyOneRow(rows, scanTest)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" {
			return Event{}, ErrConflict
		}
		if err != nil {
			return Event{}, translate(err)
		}
		*t = made
		return testEvent("create", t, "Test "+t.Name+" of route "+t.RouteID+" created"), nil
	})
}

// testJSON is a test's request and expectation as the table keeps them.
func testJSON(t flow.RouteTest) (request, expect string, err error) {
	r, err := json.Marshal(t.Request)
	if err != nil {
		return "", "", err
	}
	e, err := json.Marshal(t.Expect)
	return string(r), string(e), err
}

// Tests returns project's tests (route "": of every route), by route and
// name.
func (s *Store) Tests(ctx context.Context, project, route string) (_ []StoredTest, err error) {
	defer wrap(&err, "tests", project, route)
	rows, err := s.db.Query(ctx, `SELECT `+testColumns+` FROM route_tests
		WHERE project_id = $1 AND ($2 = '' OR route_id = $2) ORDER BY route_id, name`, project, route)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanTest)
}

// Test returns test name of a route (ErrNotFound: none).
func (s *Store) Test(ctx context.Context, project, route, name string) (_ StoredTest, err error) {
	defer wrap(&err, "test", project, route)
	rows, err := s.db.Query(ctx, `SELECT `+testColumns+` FROM route_tests WHERE project_id = $1 AND route_id = $2 AND name = $3`, project, route, name)
	if err != nil {
		return StoredTest{}, err
	}
	t, err := pgx.CollectExactlyOneRow(rows, scanTest)
	return t, translate(err)
}

// UpdateTest replaces test name of a route with t (its name may change:
// ErrConflict when the route has a test of the new name; ErrNotFound when
// it has none of the old).
func (s *Store) UpdateTest(ctx context.Context, name string, t *StoredTest) (err error) {
	defer wrap(&err, "update test", t.ProjectID, t.RouteID)
	request, expect, err := testJSON(t.RouteTest)
	if err != nil {
		return err
	}
	return s.change(ctx, func(tx *Store) (Event, error) {
		rows, err := tx.db.Query(ctx, `UPDATE route_tests SET name = $4, request = $5, expect = $6, updated_at = now()
			WHERE project_id = $1 AND route_id = $2 AND name = $3 RETURNING `+testColumns,
			t.ProjectID, t.RouteID, name, t.Name, request, expect)
		if err != nil {
			return Event{}, translate(err)
		}
		changed, err := pgx.CollectExactlyOneRow(rows, scanTest)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" {
			return Event{}, ErrConflict
		}
		if err != nil {
			return Event{}, translate(err)
		}
		*t = changed
		summary := "Test " + t.Name + " of route " + t.RouteID + " changed"
		if name != t.Name {
			summary = "Test " + name + " of route " + t.RouteID + " changed, now " + t.Name
		}
		return testEvent("update", t, summary), nil
	})
}

// DeleteTest deletes test name of a route (ErrNotFound: none).
func (s *Store) DeleteTest(ctx context.Context, project, route, name string) (err error) {
	defer wrap(&err, "delete test", project, route)
	return s.change(ctx, func(tx *Store) (Event, error) {
		tag, err := tx.db.Exec(ctx, `DELETE FROM route_tests WHERE project_id = $1 AND route_id = $2 AND name = $3`, project, route, name)
		if err != nil {
			return Event{}, err
		}
		if tag.RowsAffected() == 0 {
			return Event{}, ErrNotFound
		}
		t := StoredTest{ProjectID: project, RouteID: route, RouteTest: flow.RouteTest{Name: name}}
		return testEvent("delete", &t, "Test "+name+" of route "+route+" deleted"), nil
	})
}
