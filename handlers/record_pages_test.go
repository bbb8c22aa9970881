package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"stencil/store"
)

// listAnswer is a list's envelope: its items' ids, amount and next page.
type listAnswer struct {
	Data []struct {
		ID int64 `json:"id"`
	} `json:"data"`
	Amount int    `json:"amount"`
	Capped bool   `json:"amount_capped"`
	Next   string `json:"next"`
}

func (ta *testApp) list(t *testing.T, path string, headers map[string]string) listAnswer {
	t.Helper()
	status, body := ta.call(t, "GET", path, "", headers)
	var a listAnswer
	if err := json.Unmarshal([]byte(body), &a); status != 200 || err != nil {
		t.Fatalf("GET %s: %d %v %.300s", path, status, err, body)
	}
	return a
}

// TestRecordListNextAndCounts: a collection's records are listed by
// following next (after= the last id) to the end, with and without a
// filter; the amount without a filter comes from the counts kept with the
// records (inserts, deletes and a deleted collection all counted), and a
// filter's count stops at 1,000 with amount_capped.
func TestRecordListNextAndCounts(t *testing.T) {
	t.Parallel()
	ta, h := templateApp(t)
	ctx := context.Background()
	if err := ta.h.store.CreateCollection(ctx, &store.Collection{ProjectID: "shop", ID: "tickets", Name: "Tickets"}, ta.root.ID); err != nil {
		t.Fatal(err)
	}
	// 10,050 records, 1 in 3 open; then 30 deleted.
	if _, err := ta.pool.Exec(ctx, `INSERT INTO records (project_id, collection_id, data)
		SELECT 'shop', 'tickets', jsonb_build_object('n', i, 'status', CASE WHEN i % 3 = 0 THEN 'open' ELSE 'closed' END)
		FROM generate_series(1, 10050) i`); err != nil {
		t.Fatal(err)
	}
	if _, err := ta.pool.Exec(ctx, `DELETE FROM records WHERE collection_id = 'tickets' AND (data->>'n')::int > 10020`); err != nil {
		t.Fatal(err)
	}
	follow := func(first string) (ids []int64, pages int, last listAnswer) {
		next := first
		for next != "" {
			last = ta.list(t, next, h)
			for _, d := range last.Data {
				ids = append(ids, d.ID)
			}
			pages++
			if pages > 500 {
				t.Fatalf("no end after %d pages", pages)
			}
			if last.Next != "" && !strings.Contains(last.Next, "after=") {
				t.Fatalf("next %q does not continue after an id", last.Next)
			}
			next = last.Next
		}
		return ids, pages, last
	}

	first := ta.list(t, "/data/fetch?project_id=shop&collection_id=tickets&limit=1000", h)
	if first.Amount != 10020 || first.Capped || len(first.Data) != 1000 || !strings.HasPrefix(first.Next, "/data/fetch?") {
		t.Fatalf("first page: amount %d capped %v, %d shown, next %q", first.Amount, first.Capped, len(first.Data), first.Next)
	}
	ids, pages, last := follow("/data/fetch?project_id=shop&collection_id=tickets&limit=1000")
	if len(ids) != 10020 || pages != 11 || last.Next != "" || ids[0] >= ids[len(ids)-1] {
		t.Fatalf("followed %d pages to %d records, want 11 pages and 10,020 records in id order", pages, len(ids))
	}
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			t.Fatalf("record %d (%d) after %d: not in id order, or seen twice", i, ids[i], ids[i-1])
		}
	}

	// A filter: 3,340 open (counted up to the cap); the near walk and
	// the GIN index alike. 7 are rare: counted exactly.
	where := "&where=" + strings.ReplaceAll(`{"status":"open"}`, `"`, "%22")
	open, pages, _ := follow("/data/fetch?project_id=shop&collection_id=tickets&limit=100" + where)
	if a := ta.list(t, "/data/fetch?project_id=shop&collection_id=tickets&limit=100"+where, h); a.Amount != store.RecordCountCap || !a.Capped || len(open) != 3340 || pages != 34 {
		t.Fatalf("open: amount %d (capped %v), %d followed over %d pages, want the cap, 3,340 over 34", a.Amount, a.Capped, len(open), pages)
	}
	// Past the cap, the amount is at least the records shown up to the
	// page's end.
	if a := ta.list(t, "/data/fetch?project_id=shop&collection_id=tickets&limit=50&offset=200"+where, h); a.Amount != 250 || !a.Capped || len(a.Data) != 50 || a.Next == "" {
		t.Fatalf("open at offset 200: amount %d (capped %v), %d shown, next %q, want 250 capped", a.Amount, a.Capped, len(a.Data), a.Next)
	}
	rare := "&where=" + strings.ReplaceAll(`{"n":77}`, `"`, "%22")
	if a := ta.list(t, "/data/fetch?project_id=shop&collection_id=tickets"+rare, h); a.Amount != 1 || a.Capped || len(a.Data) != 1 || a.Next != "" {
		t.Fatalf("one record: amount %d (capped %v), %d shown, next %q", a.Amount, a.Capped, len(a.Data), a.Next)
	}
	// A filter every record matches: the count stops at the cap.
	all := "&where=" + strings.ReplaceAll(`{}`, `"`, "%22")
	if a := ta.list(t, "/data/fetch?project_id=shop&collection_id=tickets&limit=10"+all, h); a.Amount != store.RecordCountCap || !a.Capped || a.Next == "" {
		t.Fatalf("every record: amount %d capped %v next %q, want the cap with a next page", a.Amount, a.Capped, a.Next)
	}
	// A page at an offset continues after its last id.
	if a := ta.list(t, "/data/fetch?project_id=shop&collection_id=tickets&limit=10&offset=20", h); !strings.Contains(a.Next, "after=") {
		t.Fatalf("an offset page's next %q", a.Next)
	}

	// The collections' counts: kept with every insert and delete, and
	// gone with a collection deleted.
	counted := func() string {
		_, body := ta.call(t, "GET", "/collection/fetch?project_id=shop", "", h)
		var raw struct {
			Data []struct {
				ID    string `json:"id"`
				Count int    `json:"record_count"`
			} `json:"data"`
			Amount int `json:"amount"`
		}
		if err := json.Unmarshal([]byte(body), &raw); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		out := fmt.Sprint(raw.Amount)
		for _, c := range raw.Data {
			out += fmt.Sprintf(" %s:%d", c.ID, c.Count)
		}
		return out
	}
	if got := counted(); got != "1 tickets:10020" {
		t.Fatalf("collections: %s", got)
	}
	if err := ta.h.store.Sweep(ctx, store.EventsKept); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := ta.pool.QueryRow(ctx, "SELECT count(*) FROM record_counts WHERE collection_id = 'tickets'").Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("after the sweep %d rows of counts (%v), want them folded into 1", rows, err)
	}
	if got := counted(); got != "1 tickets:10020" {
		t.Fatalf("collections after the sweep: %s", got)
	}
	if err := ta.h.store.DeleteCollection(ctx, "shop", "tickets"); err != nil {
		t.Fatal(err)
	}
	if err := ta.h.store.CreateCollection(ctx, &store.Collection{ProjectID: "shop", ID: "tickets", Name: "Again"}, ta.root.ID); err != nil {
		t.Fatal(err)
	}
	if got := counted(); got != "1 tickets:0" {
		t.Fatalf("a collection deleted and made again: %s", got)
	}
}
