package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestJourneyJobs: an AUTHOR adds an ENQUEUE block by keyboard and saves
// the route; its run writes a job whose route answers 503, so that the
// runner discards it after its one attempt; on the jobs page, by keyboard,
// the AUTHOR shows the discarded jobs and retries one: the focus stays on
// its Retry, the job runs again. The page at 1280 and 390 px.
func TestJourneyJobs(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "ada", "AUTHOR")
	token := apiLogin(t, app.URL, "ada", "ada-password-1")
	route := func(id, blocks string) {
		t.Helper()
		if status, body := api(t, "POST", app.URL+"/route/create", token, `{"project_id":"shop","route":{"route_id":"`+id+`","route_path":"/`+id+
			`","method":"POST","auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[`+blocks+`]}}}`); status != 201 {
			t.Fatalf("route %s: %d %s", id, status, body)
		}
	}
	route("broken", `{"type":"CONDITION","depth":0,"conditions":[],"action":"FAIL","fail":{"status":503,"message":"the mail server is down"}}`)
	route("start", "")

	// The editor: ENQUEUE from the palette, its route typed, one attempt.
	b.resize(1280, 844)
	b.do(chromedp.Navigate(app.URL + "/web/routes/edit?project_id=shop&route_id=start"))
	b.waitText("Edit route start")
	b.addBlock("ENQUEUE")
	b.focusOn(`[data-path="flow.blocks[0].route_id"]`)
	b.do(chromedp.KeyEvent("broken"))
	b.fill(`[data-path="flow.blocks[0].max_attempts"]`, "1")
	b.screenshot("enqueue-editor-1280")
	b.click(`[data-action="save"]`)
	b.waitText("Not made from a template.")
	_, saved := api(t, "GET", app.URL+"/route/fetch/one?project_id=shop&route_id=start", token, "")
	if !strings.Contains(saved, `"blocks":[{"type":"ENQUEUE","depth":0,"route_id":"broken","query":[],"body":null,"delay_ms":null,"max_attempts":1`) {
		t.Fatalf("the saved route: %s", saved)
	}

	// A run writes the job; the runner tries it once and discards it.
	status, ran := api(t, "POST", app.URL+"/x/shop/start", "", "")
	if status != 200 {
		t.Fatalf("start: %d %s", status, ran)
	}
	var job struct {
		ID    int64
		State string
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		_, list := api(t, "GET", app.URL+"/route/job/fetch?project_id=shop&state=discarded", token, "")
		var env struct{ Data []struct{ ID int64 } }
		_ = json.Unmarshal([]byte(list), &env)
		if len(env.Data) == 1 {
			job.ID = env.Data[0].ID
			break
		}
		if time.Now().After(deadline) {
			_, all := api(t, "GET", app.URL+"/route/job/fetch?project_id=shop", token, "")
			t.Fatalf("no discarded job: %s\n%s\n%s", list, all, app.logs.String())
		}
	}

	for _, width := range []int64{1280, 390} {
		b.resize(width, 844)
		b.do(chromedp.Navigate(app.URL + "/web/routes/jobs?project_id=shop"))
		b.waitText("Later runs of routes")
		b.waitText("the route answered 503: the mail server is down")
		b.audit(fmt.Sprintf("jobs at %d", width))
		if bad := b.smallTargets(); width == 390 && len(bad) > 0 {
			t.Errorf("small targets at 390: %v", bad)
		}
		b.screenshot(fmt.Sprintf("jobs-%d", width))
	}

	// By keyboard: the discarded ones, then Retry.
	b.resize(1280, 844)
	b.tabToMatch("#jobs-state")
	b.do(chromedp.KeyEvent("d")) // the first state that begins with d
	// The table is answered in place, the address following it: until
	// then a press of Retry would race the list's own answer (the same
	// one job, all states, already shows "1–1 of 1").
	b.waitUntil(`location.search.includes("state=discarded")`, func() string { return eval[string](b, "location.href") })
	b.waitText("1–1 of 1")
	b.focusOn("#jobs-state")
	retry := fmt.Sprintf(`[aria-label="Retry job %d"]`, job.ID)
	b.tabToMatch(retry)
	b.press("\r")
	b.waitText(fmt.Sprintf("Job %d due now.", job.ID))
	// The table is answered in place. No longer discarded, the job leaves
	// the list shown and the focus goes back to the state's choice — unless
	// the runner has already tried it again and discarded it again before
	// the table was read: its row is then back, two attempts spent, and the
	// focus stays on its Retry.
	answered := fmt.Sprintf(`(() => {
		const row = document.getElementById("job-%d");
		const on = (sel) => !!document.activeElement && document.activeElement.matches(sel);
		return row ? row.querySelector('[data-label="Attempts"]').textContent.trim().startsWith("2 of") && on(%q) : on("#jobs-state");
	})()`, job.ID, retry)
	b.waitUntil(answered, func() string {
		return fmt.Sprintf("the focus is on %s; the table: %s", eval[string](b, `document.activeElement.outerHTML.slice(0, 160)`), eval[string](b, `document.getElementById("jobs-table").innerText`))
	})
	b.screenshot("jobs-retried-1280")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		_, list := api(t, "GET", app.URL+"/route/job/fetch?project_id=shop", token, "")
		if strings.Contains(list, `"attempts":2,"max_attempts":2`) && strings.Contains(list, `"state":"discarded"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the retried job: %s", list)
		}
	}
	// The route page lists its jobs too.
	b.do(chromedp.Navigate(app.URL + "/web/routes/view?project_id=shop&route_id=broken"))
	b.waitText("All jobs of this route")
	b.audit("a route's jobs")
}
