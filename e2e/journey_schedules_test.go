package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// TestJourneySchedule: an AUTHOR adds a schedule to a route from its page
// by keyboard — a cron expression in Europe/Berlin — sees its next five
// runs, is told beside the field what is wrong with a bad expression, and
// pauses the schedule; the focus stays on the work after each step. At
// 1280 and 390 px, audited and shot.
func TestJourneySchedule(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "ada", "AUTHOR")
	token := apiLogin(t, app.URL, "ada", "ada-password-1")
	if status, body := api(t, "POST", app.URL+"/route/create", token, `{"project_id":"shop","route":{"route_id":"nightly","route_path":"/nightly","method":"POST","auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[`+
		`{"type":"RETURN","depth":0,"pairs":[{"id":"ok","data":{"ref_var":false,"rtype":"BOOLEAN","data":"true"}}],"conditions":[]}]}}}`); status != 201 {
		t.Fatalf("route: %d %s", status, body)
	}
	const page = "/web/routes/view?project_id=shop&route_id=nightly"
	// The viewer is in Berlin: the zone field starts there, and each next
	// run also reads in Berlin's time.
	b.do(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: "Europe/Berlin"})
		return err
	}))
	for i, width := range []int64{1280, 390} {
		b.resize(width, 844)
		b.do(chromedp.Navigate(app.URL + page))
		b.waitText("Add a schedule")
		b.tabToMatch("#s-cron")
		if i == 0 {
			b.do(chromedp.KeyEvent("0 3 * * *"))
			b.press("\t")
			b.focusOn(`#s-timezone`)
			if got := eval[string](b, `document.activeElement.value`); got != "Europe/Berlin" {
				t.Fatalf("the zone field starts as %q, not the viewer's", got)
			}
			tabOnTo(b, "#schedule-add", false)
			b.press("\r")
			b.waitText("Schedule 0 3 * * * added.")
			b.focusOn("#schedule-add")
			b.waitText("your time (Europe/Berlin)") // written once the swap has settled
			if n := eval[int](b, `document.querySelectorAll('[data-testid="next-runs"] li').length`); n != 5 {
				t.Fatalf("%d next runs shown", n)
			}
			if got := eval[string](b, `document.querySelector('[data-testid="next-runs"] li').textContent`); !strings.HasPrefix(got, "2026-") && !strings.HasPrefix(got, "2027-") || !strings.Contains(got, " 02:00 UTC") ||
				!strings.Contains(got, " 03:00 your time (Europe/Berlin)") {
				t.Fatalf("03:00 in Berlin in winter reads %q", got)
			}
			b.screenshot("schedules-next-1280")
			// Pause it: the focus stays on its button, which now resumes.
			// The section is answered in place: the focus stays on the
			// button, which now says what it does next (checked on the
			// new button before its next press).
			b.tabToMatch(`button[id$="-toggle"]`)
			b.press("\r")
			b.waitText("Paused: it runs again once resumed.")
			b.focusOn(`button[id$="-toggle"][aria-label^="Resume"]`)
			b.screenshot("schedules-paused-1280")
			// Resumed, then paused again for the rest of the journey.
			b.press("\r")
			b.waitText("Schedule 0 3 * * * resumed.")
			b.focusOn(`button[id$="-toggle"][aria-label^="Pause"]`)
			b.press("\r")
			b.waitText("Paused: it runs again once resumed.")
			b.focusOn(`button[id$="-toggle"][aria-label^="Resume"]`)
			b.tabToMatch("#s-cron")
		}
		// A bad expression: told beside the field, the focus in it.
		b.do(chromedp.KeyEvent("* * *"))
		tabOnTo(b, "#schedule-add", false)
		b.press("\r")
		b.waitText("must be five fields (minute hour")
		b.focusOn(`#s-cron[aria-invalid="true"]`)
		b.press(kb.Escape)
		b.audit(fmt.Sprintf("schedules at %d", width))
		if bad := b.smallTargets(); width == 390 && len(bad) > 0 {
			t.Errorf("small targets at 390: %v", bad)
		}
		b.screenshot(fmt.Sprintf("schedules-%d", width))
	}
	if _, body := api(t, "GET", app.URL+"/route/schedule/fetch?project_id=shop&route_id=nightly", token, ""); !strings.Contains(body, `"active":false`) || !strings.Contains(body, `"timezone":"Europe/Berlin"`) {
		t.Fatalf("the schedule: %s", body)
	}
	// Deleted by keyboard, through the confirmation: the focus goes to the
	// form, where a new one is added.
	b.resize(1280, 844)
	b.do(chromedp.Navigate(app.URL + page))
	b.waitText("Add a schedule")
	b.tabToMatch(`button[aria-label^="Delete schedule"]`)
	b.press("\r")
	b.do(chromedp.WaitVisible(chromedp.CSS("#confirm-dialog[open] [data-confirm]")))
	tabOnTo(b, "#confirm-dialog [data-confirm]", false)
	b.press("\r")
	b.waitText("No schedules yet.")
	b.focusOn("#s-cron")
	b.checkClean()
}
