package handlers

import (
	"context"
	"fmt"
	"html"
	"regexp"
	"slices"
	"strings"
	"testing"

	"stencil/store"
)

// TestLogPagesByKeyset: the run log's and the event log's pages go to
// older rows by before= the last id shown and back by after= the first,
// never by offset, each page the rows an offset would show; the range
// reads "25 shown of N" past the first page, and the last page has no
// Next. The API takes both bounds.
func TestLogPagesByKeyset(t *testing.T) {
	t.Parallel()
	ta, keeper, h := vaultApp(t)
	ctx := context.Background()
	for _, sql := range []string{
		`INSERT INTO route_runs (at, project_id, route_id, method, path, status, ended, duration_us)
			SELECT now(), 'shop', 'r' || (i % 3), 'GET', '/x/shop/r', CASE WHEN i % 4 = 0 THEN 500 ELSE 200 END, 'RETURN', 1 FROM generate_series(1, 60) i`,
		fmt.Sprintf(`INSERT INTO events (uid, username, type, project_id, object, summary)
			SELECT %d, 'keeper', 'route_update', 'shop', 'r' || i, 'GET /r' || i || ' changed' FROM generate_series(1, 60) i`, keeper.ID),
	} {
		if _, err := ta.pool.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	browser := map[string]string{"Accept": "text/html", "Authorization": h["Authorization"]}
	for _, c := range []struct {
		what, first string
		row         *regexp.Regexp // a row's id on the page
		total       int
	}{
		{"runs", "/web/routes/runs?project_id=shop", regexp.MustCompile(`aria-label="Open run (\d+)"`), 60},
		{"events", "/web/events?project_id=shop", regexp.MustCompile(`data-event-id="(\d+)"`), 61}, // and the project's creation
	} {
		ids := func(body string) []string {
			var out []string
			for _, m := range c.row.FindAllStringSubmatch(body, -1) {
				out = append(out, m[1])
			}
			return out
		}
		link := func(body, pager string) string {
			m := regexp.MustCompile(`href="([^"]+)"[^>]*data-pager="` + pager + `"`).FindStringSubmatch(body)
			if m == nil {
				return ""
			}
			return html.UnescapeString(m[1])
		}
		var pages [][]string
		for offset := 0; offset < c.total; offset += 25 {
			_, body := ta.call(t, "GET", fmt.Sprintf("%s&offset=%d", c.first, offset), "", browser)
			pages = append(pages, ids(body))
		}
		path := c.first
		var bodies []string
		for i, want := range pages {
			status, body := ta.call(t, "GET", path, "", browser)
			if status != 200 || !slices.Equal(ids(body), want) {
				t.Fatalf("%s, page %d at %s: %d %v, by offset %v", c.what, i, path, status, ids(body), want)
			}
			bodies = append(bodies, body)
			next := link(body, "next")
			if i == len(pages)-1 {
				if next != "" {
					t.Fatalf("%s: the last page links to %s", c.what, next)
				}
				break
			}
			if !strings.Contains(next, "before="+want[len(want)-1]) || strings.Contains(next, "offset=") {
				t.Fatalf("%s, page %d: Next is %q", c.what, i, next)
			}
			path = next
		}
		if link(bodies[0], "prev") != "" || !strings.Contains(bodies[0], "1–25 of "+fmt.Sprint(c.total)) || !strings.Contains(bodies[1], "25 shown of "+fmt.Sprint(c.total)) {
			t.Fatalf("%s: the first page's Previous or the ranges are wrong", c.what)
		}
		// Back from the last page by Previous.
		for i := len(pages) - 1; i > 0; i-- {
			prev := link(bodies[i], "prev")
			if !strings.Contains(prev, "after="+pages[i][0]) {
				t.Fatalf("%s, page %d: Previous is %q", c.what, i, prev)
			}
			_, body := ta.call(t, "GET", prev, "", browser)
			if !slices.Equal(ids(body), pages[i-1]) {
				t.Fatalf("%s, back to page %d: %v, want %v", c.what, i-1, ids(body), pages[i-1])
			}
			if i-1 == 0 && link(body, "prev") != "" {
				t.Fatalf("%s: the newest page reached by after= links to a newer one", c.what)
			}
		}
	}
	var ids []int64
	if err := ta.pool.QueryRow(ctx, `SELECT array_agg(id ORDER BY id DESC) FROM route_runs`).Scan(&ids); err != nil {
		t.Fatal(err)
	}
	ta.run(t, []scenario{
		{name: "older than a run", method: "GET", path: fmt.Sprintf("/route/runs?project_id=shop&limit=2&before=%d", ids[0]), headers: h, status: 200,
			want: []string{`"amount":60`, fmt.Sprintf(`"data":[{"id":%d,`, ids[1]), fmt.Sprintf(`{"id":%d,`, ids[2])}, unwanted: []string{fmt.Sprintf(`{"id":%d,`, ids[3])}},
		{name: "newer than a run, newest first", method: "GET", path: fmt.Sprintf("/route/runs?project_id=shop&limit=2&after=%d", ids[10]), headers: h, status: 200,
			want: []string{fmt.Sprintf(`"data":[{"id":%d,`, ids[8]), fmt.Sprintf(`{"id":%d,`, ids[9])}},
		{name: "between two runs", method: "GET", path: fmt.Sprintf("/route/runs?project_id=shop&limit=10&before=%d&after=%d", ids[3], ids[6]), headers: h, status: 200,
			want: []string{fmt.Sprintf(`"data":[{"id":%d,`, ids[4]), fmt.Sprintf(`{"id":%d,`, ids[5])}, unwanted: []string{fmt.Sprintf(`{"id":%d,`, ids[6])}},
		{name: "a bound that is no id", method: "GET", path: "/route/runs?project_id=shop&before=x", headers: h, status: 400},
		{name: "a negative bound", method: "GET", path: "/event/fetch?before=-1", headers: h, status: 422},
	})
}

// TestLogCountPastItsCap: a count of the run log by trigger stops at
// store.LogCountCap; a page past it answers an amount of at least the rows
// up to its end, still capped.
func TestLogCountPastItsCap(t *testing.T) {
	t.Parallel()
	ta, _, h := vaultApp(t)
	if _, err := ta.pool.Exec(context.Background(), `INSERT INTO route_runs (at, project_id, route_id, method, path, status, ended, duration_us)
		SELECT now(), 'shop', 'r', 'GET', '/x/shop/r', 500, 'RETURN', 1 FROM generate_series(1, 10100) i`); err != nil {
		t.Fatal(err)
	}
	ta.run(t, []scenario{
		{name: "the first page", method: "GET", path: "/route/runs?project_id=shop&trigger=http&limit=50", headers: h, status: 200,
			want: []string{fmt.Sprintf(`"amount":%d,"amount_capped":true`, store.LogCountCap)}},
		{name: "a page past the cap", method: "GET", path: fmt.Sprintf("/route/runs?project_id=shop&trigger=http&limit=50&offset=%d", store.LogCountCap+20), headers: h, status: 200,
			want: []string{fmt.Sprintf(`"amount":%d,"amount_capped":true`, store.LogCountCap+70)}},
	})
}
