package e2e

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestJourneyRunLog: routes answer at /x, and their runs are listed for the
// project's members: from the routes list by keyboard alone, filtered by
// status with the keyboard (the URL keeps the filter), one route's runs
// from its page; audited at 1280 and 390 px.
func TestJourneyRunLog(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "ada", "ADMIN")
	token := apiLogin(t, app.URL, "ada", "ada-password-1")
	for _, call := range [][2]string{
		{"/collection/create", `{"project_id":"shop","id":"books","name":"Books"}`},
		{"/data/create", `{"project_id":"shop","collection_id":"books","data":{"title":"Dune"}}`},
		{"/route/create", `{"project_id":"shop","route":{"route_id":"books","route_path":"/books","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[` +
			`{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"books"},{"type":"RETURN","depth":0,"pairs":[{"id":"books","data":{"ref_var":true,"rtype":"OTHER","data":"rows"}}],"conditions":[]}]}}}`},
		{"/route/create", `{"project_id":"shop","route":{"route_id":"find","route_path":"/find","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[{"id":"title","bdtype":"STRING"}]},"body":[],"flow":{"blocks":[` +
			`{"type":"CONDITION","depth":0,"conditions":[{"left":{"ref_var":true,"rtype":"STRING","data":"title"},"right":{"ref_var":false,"rtype":"STRING","data":"Dune"},"condition_type":"EQUAL_TO","not":true,"next":"NONE"}],"action":"FAIL","fail":{"status":404,"message":"no book with that title"}},` +
			`{"type":"RETURN","depth":0,"pairs":[{"id":"title","data":{"ref_var":true,"rtype":"STRING","data":"title"}}],"conditions":[]}]}}}`},
		{"/route/create", `{"project_id":"shop","route":{"route_id":"broken","route_path":"/broken","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[` +
			`{"type":"FILTER","depth":0,"local_name":"f","source":"nothing","ref_property":"","filters":[]}]}}}`},
	} {
		if status, body := api(t, "POST", app.URL+call[0], token, call[1]); status >= 300 {
			t.Fatalf("POST %s: %d %s", call[0], status, body)
		}
	}
	for _, path := range []string{"/x/shop/books", "/x/shop/books", "/x/shop/broken"} {
		status, body := api(t, "GET", app.URL+path, "", "")
		if want := map[bool]int{true: 200, false: 500}[strings.HasSuffix(path, "books")]; status != want {
			t.Fatalf("GET %s: %d %s", path, status, body)
		}
	}
	if status, body := api(t, "GET", app.URL+"/x/shop/find?title=Emma", "", ""); status != 404 {
		t.Fatalf("GET /x/shop/find?title=Emma: %d %s", status, body)
	}
	// The run log is written in batches, within a second.
	for deadline := time.Now().Add(10 * time.Second); ; {
		_, body := api(t, "GET", app.URL+"/route/runs?project_id=shop", token, "")
		if strings.Contains(body, `"amount":4`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the runs are not logged: %s", body)
		}
		time.Sleep(200 * time.Millisecond)
	}

	b.resize(1280, 900)
	b.do(chromedp.Navigate(app.URL + "/web/routes?id=shop"))
	b.waitText("Routes of Shop")
	b.tabToMatch(`a[href="/web/routes/runs?project_id=shop"]`)
	b.press("\r")
	b.waitText("1–4 of 4")
	// A fault names its block as the editor does ("Block 1 (FILTER)"),
	// and the version that ran.
	b.waitText("Block 1 (FILTER): source is null, not an array (version 1)")
	// A run's line has its query string and the message its FAIL answered.
	b.waitText("/x/shop/find?title=Emma")
	b.waitText("no book with that title")
	// At 1280 px a request line is one line, not broken inside a word.
	if h := eval[float64](b, `Math.max(...Array.from(document.querySelectorAll('[data-testid="run-path"]')).map(e => e.getBoundingClientRect().height))`); h > 20 {
		t.Fatalf("a request line takes %.0f px: it wraps", h)
	}
	b.tabTo("runs-status")
	b.press(kb.ArrowDown) // 2xx
	b.waitText("1–2 of 2")
	b.waitGone("source is null")
	if search := eval[string](b, "location.search"); !strings.Contains(search, "status=2xx") {
		t.Fatalf("the URL does not keep the filter: %s", search)
	}
	for _, width := range []int64{1280, 390} {
		b.resize(width, 844)
		b.do(chromedp.Navigate(app.URL + "/web/routes/runs?project_id=shop"))
		b.waitText("1–4 of 4")
		b.audit(fmt.Sprintf("runs at %d", width))
		b.screenshot(fmt.Sprintf("runs-%d", width))

		// Older runs by the keyboard: Next pages by before= the last run
		// shown, Previous by after= the first; the focus stays on the
		// control pressed.
		b.do(chromedp.Navigate(app.URL + "/web/routes/runs?project_id=shop&limit=2"))
		b.waitText("1–2 of 4")
		b.tabToMatch(`a[data-pager="next"]`)
		b.press("\r")
		b.waitText("2 shown of 4")
		b.waitGone("/x/shop/find?title=Emma")
		if search := eval[string](b, "location.search"); !strings.Contains(search, "before=") || strings.Contains(search, "offset=") {
			t.Fatalf("at %d px, Next went to %s", width, search)
		}
		b.waitFocus(`[data-pager="next"]`) // after Next the focus stays on it
		b.screenshot(fmt.Sprintf("runs-older-%d", width))
		b.tabToMatch(`a[data-pager="prev"]`)
		b.press("\r")
		b.waitText("/x/shop/find?title=Emma")
		b.waitFocus(`[data-pager="prev"]`) // after Previous the focus stays on it
	}

	// One route's runs, from its page.
	b.do(chromedp.Navigate(app.URL + "/web/routes/view?project_id=shop&route_id=broken"))
	b.tabToMatch(`a[href="/web/routes/runs?project_id=shop&route_id=broken"]`)
	b.press("\r")
	b.waitText("1–1 of 1")
	if selected := eval[string](b, `document.getElementById("runs-route").value`); selected != "broken" {
		t.Fatalf("the route filter shows %q", selected)
	}
	// The fault's block leads to that block of the version that ran.
	b.tabToMatch(`[data-testid="fault-block"]`)
	b.press("\r")
	b.waitText("Flow (1 block)")
	if hash := eval[string](b, "location.hash + ' ' + location.search"); !strings.HasPrefix(hash, "#block-1 ") || !strings.Contains(hash, "version=1") {
		t.Fatalf("the fault's block leads to %s", hash)
	}

	// A run opens: its request with the query, its status and message; it
	// replays in the playground with its inputs, and the dry run made there
	// is logged with its trace.
	b.resize(1280, 900)
	b.do(chromedp.Navigate(app.URL + "/web/routes/runs?project_id=shop&route_id=find"))
	b.waitText("1–1 of 1")
	b.tabToMatch(`a[aria-label^="Open run"]`)
	b.press("\r")
	b.waitText("Replay in playground")
	if got := eval[string](b, `document.querySelector('[data-testid="run-request"]').textContent`); !strings.HasSuffix(got, "/x/shop/find?title=Emma") {
		t.Fatalf("the run's page gives its request as %q", got)
	}
	b.waitText("no book with that title")
	b.waitText("Runs at /x keep no trace")
	b.screenshot("run-page-1280")
	b.tabToMatch(`[data-testid="replay"]`)
	b.press("\r")
	b.waitText("The form holds the inputs of run")
	// (The page's script fills the form once it has loaded.)
	for deadline := time.Now().Add(5 * time.Second); eval[string](b, `document.getElementById("query-title").value`) != "Emma"; {
		if time.Now().After(deadline) {
			t.Fatal("the replayed form does not hold the run's title")
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.click("#try-send")
	b.waitText("no book with that title")
	for deadline := time.Now().Add(10 * time.Second); ; {
		_, body := api(t, "GET", app.URL+"/route/runs?project_id=shop&route_id=find", token, "")
		if strings.Contains(body, `"amount":2`) && strings.Contains(body, `"dry_run":true`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replay is not logged as a dry run: %s", body)
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.resize(390, 844)
	b.do(chromedp.Navigate(app.URL + "/web/routes/runs?project_id=shop&route_id=find"))
	b.waitText("dry run")
	b.click(`a[aria-label^="Open run"]`)
	b.waitText("yes: nothing was written")
	b.do(chromedp.WaitVisible(`[data-testid="run-trace"]`))
	if n := eval[int](b, `document.querySelectorAll('[data-testid="run-trace"] li').length`); n != 1 {
		t.Fatalf("the playground run's page shows %d trace rows, want the FAIL's one", n)
	}
	b.audit("run page at 390")
	b.screenshot("run-page-390")

	// A busy route: past 100 successes in a second the log keeps 1 in
	// 100, each marked; analytics count every run (docs/routes.md).
	if status, body := api(t, "PATCH", app.URL+"/project/update", token, `{"project_id":"shop","x_rate_limit":0}`); status != 200 {
		t.Fatalf("no rate limit: %d %s", status, body)
	}
	for burst := 0; ; burst++ {
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 40 {
					if status, body := api(t, "GET", app.URL+"/x/shop/books", "", ""); status != 200 {
						t.Errorf("GET /x/shop/books: %d %s", status, body)
						return
					}
				}
			}()
		}
		wg.Wait()
		time.Sleep(1500 * time.Millisecond) // the log's batch
		_, body := api(t, "GET", app.URL+"/route/runs?project_id=shop&route_id=books&limit=1000", token, "")
		if strings.Contains(body, `"sample_rate":100`) {
			break
		}
		if burst == 4 {
			t.Fatalf("640 runs in a burst, five times, and none kept of a sample: %.500s", body)
		}
	}
	b.do(chromedp.Navigate(app.URL + "/web/routes/runs?project_id=shop&route_id=books&limit=1000"))
	b.waitText("1 in 100 kept")
	b.do(chromedp.ScrollIntoView(`[data-testid="run-sampled"]`))
	b.audit("runs with a sample at 390")
	b.screenshot("runs-sampled-390")
}
