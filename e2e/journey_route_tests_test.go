package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestJourneyRouteTests: an AUTHOR tries a route in the playground by
// keyboard, saves the request as a test with its answer as what the route
// must answer, then breaks the route in the editor and sees the checks
// name the test before saving; at 1280 and 390 px, every control a
// finger's size (docs/tests.md).
func TestJourneyRouteTests(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "ada", "AUTHOR")
	token := apiLogin(t, app.URL, "ada", "ada-password-1")
	count := `{"project_id":"shop","route":{"route_id":"count","route_path":"/count","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[{"type":"RETURN","depth":0,
		"pairs":[{"id":"n","data":{"ref_var":false,"rtype":"INTEGER","data":"3"}}],"conditions":[]}]}}}`
	if status, body := api(t, "POST", app.URL+"/route/create", token, count); status != 201 {
		t.Fatalf("route/create: %d %s", status, body)
	}
	for i, width := range []int64{1280, 390} {
		name := fmt.Sprintf("three at %d", width)
		b.resize(width, 844)
		b.do(chromedp.Navigate(app.URL + "/web/routes/try?project_id=shop&route_id=count"))
		b.waitText("Send the request")
		b.tabTo("try-send")
		b.press("\r")
		b.waitText("Save as test")
		b.focused("try-send")
		b.tabTo("try-test-name")
		b.do(chromedp.KeyEvent(name))
		b.tabTo("try-test-save")
		if small := b.smallTargets(); width == 390 && len(small) > 0 {
			t.Fatalf("at %d px, controls a finger would miss: %v", width, small)
		}
		b.press("\r")
		b.waitText("Saved as test “" + name + "”")
		// The work goes on from Send.
		b.focused("try-send")
		b.screenshot(fmt.Sprintf("route-tests-saved-%d", width))
		if _, body := api(t, "GET", app.URL+"/route/test/fetch?project_id=shop&route_id=count", token, ""); !strings.Contains(body, fmt.Sprintf(`"amount":%d`, i+1)) ||
			!strings.Contains(body, `"expect":{"status":200,"headers":[],"body":{"n":3}`) || !strings.Contains(body, `"caller":"self"`) {
			t.Fatalf("the tests saved: %s", body)
		}
		// A name taken is said beside the field, which keeps the focus.
		b.tabTo("try-test-name")
		b.do(chromedp.KeyEvent(name))
		b.tabTo("try-test-save")
		b.press("\r")
		b.waitText("has a test named")
		b.focused("try-test-name")

		// The editor: the route changed to answer 4; the checks name the
		// test it breaks before anything is saved.
		b.do(chromedp.Navigate(app.URL + "/web/routes/edit?project_id=shop&route_id=count"))
		b.waitText("Checks")
		b.waitUntil(`!!document.querySelector('[data-path="flow.blocks[0].pairs[0].data.data"]')`, func() string { return b.text() })
		b.tabToMatch(`[data-path="flow.blocks[0].pairs[0].data.data"]`)
		b.do(chromedp.KeyEvent("\b"))
		b.do(chromedp.KeyEvent("4"))
		b.waitText("Test “" + name + "” fails on this draft: body.n: expected 3, got 4")
		if got := eval[string](b, `document.activeElement.getAttribute("data-path")`); got != "flow.blocks[0].pairs[0].data.data" {
			t.Fatalf("the focus left the value typed in for %q", got)
		}
		b.screenshot(fmt.Sprintf("route-tests-editor-%d", width))
	}
	if _, body := api(t, "GET", app.URL+"/x/shop/count", "", ""); body != `{"n":3}` {
		t.Fatalf("the route changed without a save: %s", body)
	}
}
