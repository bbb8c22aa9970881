package handlers

import (
	"context"
	"strings"
	"testing"
)

// failBlock is a CONDITION that always fails with status.
func failBlock(status string) string {
	return `{"type":"CONDITION","depth":0,"conditions":[],"action":"FAIL","fail":{"status":` + status + `,"message":"no"}}`
}

// TestFailStatusIsAnError: a FAIL answers 400–599 only. A 1xx left clients
// waiting and, on a kept-alive connection, made the next answer read as
// this one's.
func TestFailStatusIsAnError(t *testing.T) {
	ta, h := runApp(t)
	for _, status := range []string{"100", "101", "199", "204", "302", "399", "600"} {
		r := runnable{id: "f" + status, method: "GET", path: "/f" + status, blocks: []string{failBlock(status)}}
		code, body := ta.call(t, "POST", "/route/create", `{"project_id":"shop","route":`+r.JSON()+`}`, h)
		if code != 422 || !strings.Contains(body, `"route.flow.blocks[0].fail.status"`) {
			t.Errorf("FAIL %s saved: %d %s", status, code, body)
		}
	}
	runnable{id: "f418", method: "GET", path: "/f418", blocks: []string{failBlock("418")}}.save(t, ta, h)
	if code, body := ta.call(t, "GET", "/x/shop/f418", "", nil); code != 418 || !strings.Contains(body, "Error: no") {
		t.Fatalf("FAIL 418: %d %s", code, body)
	}
	// A route saved before the rule faults when its FAIL is reached.
	if _, err := ta.pool.Exec(context.Background(), `UPDATE routes SET document = jsonb_set(document, '{flow,blocks,0,fail,status}', '100'), version = version + 1
		WHERE route_id = 'f418'`); err != nil {
		t.Fatal(err)
	}
	if err := ta.h.routes.reload(context.Background(), "shop"); err != nil {
		t.Fatal(err)
	}
	code, body := ta.call(t, "GET", "/x/shop/f418", "", nil)
	if code != 500 || !strings.Contains(body, "fail.status 100 is not an error status") {
		t.Fatalf("stored FAIL 100: %d %s", code, body)
	}
}
