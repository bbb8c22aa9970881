package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestJourneyVault: an ADMIN creates entries, sees them masked, reveals one
// and hides it (the value leaves the page), filters by a fragment, pages
// through 25 entries, updates a value, deletes one, and finds it all in the
// access log.
func TestJourneyVault(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "ada", "ADMIN")
	b.click(`nav a[href="/web/vaults"]`)
	b.waitText("Shop")
	b.click(`a[href="/web/vault?project_id=shop"]`)
	b.waitText("This vault is empty")

	secrets := map[string]string{"DB_PASSWORD": "pg-secret-4411", "STRIPE_KEY": "sk_live_8812", "SMTP_PASSWORD": "mail-secret-2290"}
	for _, key := range []string{"DB_PASSWORD", "STRIPE_KEY", "SMTP_PASSWORD"} {
		b.fill("#vault-create #f-key", key)
		b.fill("#vault-create #f-value", secrets[key])
		b.click("#vault-create button[type=submit]")
		b.waitText("Entry " + key + " created.")
		// The new entry is shown where it lands, highlighted.
		b.do(chromedp.WaitVisible(chromedp.CSS("#row-" + key + "[data-new]")))
	}
	b.fill("#vault-create #f-key", "lower_case")
	if v := eval[string](b, `document.querySelector("#vault-create #f-key").value`); v != "LOWER_CASE" {
		t.Fatalf("the key field shows %q as typed, want it upper-cased", v)
	}
	// A key is normalised as it is typed: a space or a - is a _.
	b.fill("#vault-create #f-key", "smtp host-name")
	if v := eval[string](b, `document.querySelector("#vault-create #f-key").value`); v != "SMTP_HOST_NAME" {
		t.Fatalf("the key field shows %q, want SMTP_HOST_NAME", v)
	}
	// A key that breaks the rule comes back with its error, and the value
	// typed beside it is still there (the browser kept it; the server
	// never echoes it). Enter in the one-line value sends the form and
	// adds no line break.
	b.fill("#vault-create #f-key", "9 lives")
	b.fill("#vault-create #f-value", "typed value")
	b.press("\r")
	b.waitText("must be 1–255 upper-case letters")
	b.waitText("1–3 of 3")
	if v := eval[string](b, `document.querySelector("#vault-create #f-value").value`); v != "typed value" {
		t.Fatalf("after a key error the value field holds %q, want the value typed", v)
	}
	// White space at either end is kept, but said.
	b.fill("#vault-create #f-value", "typed value ")
	b.do(chromedp.WaitVisible(chromedp.CSS("#vault-create [data-space-warning]")))
	b.fill("#vault-create #f-value", "")
	// The success of the entry before does not stand beside this error.
	b.waitGone("Entry SMTP_PASSWORD created.")
	html := b.html()
	for key, value := range secrets {
		if strings.Contains(html, value) {
			t.Fatalf("the page holds the value of %s while masked", key)
		}
	}
	b.screenshot("vault-01-masked")

	columns := func() string {
		return eval[string](b, `Array.from(document.querySelectorAll("#vault-table th")).map(th => Math.round(th.getBoundingClientRect().left)).join(",")`)
	}
	before := columns()
	b.click(`button[aria-label="Reveal STRIPE_KEY"]`)
	b.waitText("sk_live_8812")
	if after := columns(); after != before {
		t.Fatalf("revealing moved the columns: %s, then %s", before, after)
	}
	b.click(`button[aria-label="Copy the value of STRIPE_KEY"]`)
	b.waitText("Copied")
	b.screenshot("vault-02-revealed")
	b.click(`button[aria-label="Hide STRIPE_KEY"]`)
	b.waitGone("sk_live_8812")
	if strings.Contains(b.html(), "sk_live_8812") {
		t.Fatal("the hidden value is still in the DOM")
	}
	b.click(`button[aria-label="Reveal STRIPE_KEY"]`) // the restored button works again
	b.waitText("sk_live_8812")
	b.click(`button[aria-label="Hide STRIPE_KEY"]`)
	b.waitGone("sk_live_8812")

	// A value left revealed masks itself again after 30 s (the page's clock
	// is sped up here: its 30 s timers run in 1.5 s), and the focus, away
	// from the value, stays where it was.
	eval[bool](b, `(() => { const later = window.setTimeout; window.setTimeout = (f, ms, ...a) => later(f, ms === 30000 ? 1500 : ms, ...a); return true })()`)
	b.click(`button[aria-label="Reveal STRIPE_KEY"]`)
	b.waitText("sk_live_8812")
	b.focusOn(`#row-STRIPE_KEY [data-hide]`)
	eval[bool](b, `(document.getElementById("filter").focus(), true)`)
	b.waitGone("sk_live_8812")
	b.focusOn("#filter")
	if strings.Contains(b.html(), "sk_live_8812") {
		t.Fatal("the re-masked value is still in the DOM")
	}

	b.fill("#filter", "password")
	// Typing slower than the filter's delay (a loaded machine) sends a
	// request for a prefix first ("pas" finds the same two): the last
	// answer is the one whose URL names the whole filter.
	b.waitUntil(`location.search.includes("filter=password")`, func() string { return "the URL does not follow the filter: " + eval[string](b, "location.search") })
	b.waitText("1–2 of 2")
	if text := b.text(); strings.Contains(text, "STRIPE_KEY") || !strings.Contains(text, "SMTP_PASSWORD") {
		t.Fatalf("filter by fragment: %s", text)
	}
	b.screenshot("vault-03-filtered")

	ada := apiLogin(t, app.URL, "ada", "ada-password-1")
	for i := 1; i <= 22; i++ {
		if status, body := api(t, "POST", app.URL+"/vault/create", ada, fmt.Sprintf(`{"project_id":"shop","key":"BULK_%02d","value":"bulk-%02d"}`, i, i)); status != 201 {
			t.Fatalf("bulk create: %d %s", status, body)
		}
	}
	b.do(chromedp.Navigate(app.URL + "/web/vault?project_id=shop"))
	b.waitText("1–10 of 25")
	b.click(`#vault-table a[hx-get*="offset=10"]`)
	b.waitText("11–20 of 25")
	b.click(`#vault-table a[hx-get*="offset=20"]`)
	b.waitText("21–25 of 25")
	b.screenshot("vault-04-page-3")
	b.do(chromedp.NavigateBack())
	b.waitText("11–20 of 25")

	b.do(chromedp.Navigate(app.URL + "/web/vault?project_id=shop&filter=db_"))
	b.waitText("DB_PASSWORD")
	b.click(`#row-DB_PASSWORD button[hx-get*="edit=true"]`)
	b.waitText("cannot change: delete and create to rename")
	b.fill("#edit-DB_PASSWORD", "pg-secret-rotated")
	b.screenshot("vault-05-edit")
	b.click(`#row-DB_PASSWORD button[type=submit]`)
	b.waitText("Value of DB_PASSWORD updated.")
	// The saved row is back, masked, with the focus on its Edit.
	b.focusOn("#row-DB_PASSWORD [data-edit]")
	b.click(`button[aria-label="Reveal DB_PASSWORD"]`)
	b.waitText("pg-secret-rotated")

	b.do(chromedp.Navigate(app.URL + "/web/vault?project_id=shop&filter=smtp"))
	b.waitText("SMTP_PASSWORD")
	b.click(`#row-SMTP_PASSWORD button[hx-delete]`)
	b.confirm()
	if q := b.dialogs[len(b.dialogs)-1]; !strings.Contains(q, "SMTP_PASSWORD") || !strings.Contains(q, "cannot be undone") {
		t.Errorf("the delete's confirmation must name the key and say it cannot be undone: %q", q)
	}
	b.waitText("Entry SMTP_PASSWORD deleted with every version.")
	b.waitText("No keys match")
	// Deleting is permanent, and the key is free at once: created again
	// from the keyboard, where the focus went after the delete.
	b.focusOn("#vault-create #f-key")
	b.fill("#vault-create #f-key", "SMTP_PASSWORD")
	b.fill("#vault-create #f-value", "mail-secret-new")
	b.press("\r")
	b.waitText("Entry SMTP_PASSWORD created.")
	b.click(`button[aria-label="Reveal SMTP_PASSWORD"]`)
	b.waitText("mail-secret-new")

	// DB_PASSWORD's first value is kept: revealed and restored from its
	// versions, by keyboard.
	b.do(chromedp.Navigate(app.URL + "/web/vault?project_id=shop&filter=db"))
	b.waitText("by ada")
	b.tabToMatch(`a[aria-label="Versions of DB_PASSWORD"]`)
	b.press("\r")
	b.waitText("the last 10 it replaced")
	b.tabToMatch(`[aria-label="Reveal version 1"]`)
	b.press("\r")
	b.waitText(secrets["DB_PASSWORD"])
	b.focusOn(`[aria-label="Copy version 1"]`)
	b.tabToMatch(`[aria-label="Restore version 1"]`)
	b.press("\r")
	b.do(chromedp.WaitVisible(chromedp.CSS("#confirm-dialog[open] [data-confirm]")))
	b.press("\t")
	b.press("\r")
	b.waitText("Version 1 of DB_PASSWORD restored as version 3.")
	for _, width := range []int64{1280, 390} {
		b.resize(width, 844)
		b.audit(fmt.Sprintf("vault versions at %d", width))
		if bad := b.smallTargets(); width == 390 && len(bad) > 0 {
			t.Errorf("small targets at 390: %v", bad)
		}
		b.screenshot(fmt.Sprintf("vault-versions-%d", width))
	}
	b.resize(1280, 900)

	b.do(chromedp.Navigate(app.URL + "/web/vault/log?project_id=shop&limit=100"))
	b.waitText("Access log")
	text := b.text()
	for _, want := range []string{"delete\tSMTP_PASSWORD", "create\tSMTP_PASSWORD", "restore version 1\tDB_PASSWORD", "read version 1\tDB_PASSWORD",
		"update\tDB_PASSWORD", "read\tSTRIPE_KEY", "create\tDB_PASSWORD", "read\tDB_PASSWORD"} {
		if !strings.Contains(text, want) {
			t.Errorf("the log lacks %q:\n%s", want, text)
		}
	}
	b.choose("#log-action", "read")
	b.waitGone("create\t")
	b.screenshot("vault-06-log")
}

// TestJourneyTapsUnderMessages: on a phone, entries added one after the
// other by tapping Add entry, with the button at the foot of the screen
// where a message used to float, are all created: no message lies over the
// button, and a tap on a message's body would reach what is under it.
func TestJourneyTapsUnderMessages(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "ada", "ADMIN")
	b.resize(390, 844)
	b.do(chromedp.Navigate(app.URL + "/web/vault?project_id=shop"))
	b.waitText("This vault is empty")
	for i := 1; i <= 4; i++ {
		key := fmt.Sprintf("TAP_KEY_%d", i)
		b.fill("#vault-create #f-key", key)
		b.fill("#vault-create #f-value", "v")
		// The button at the very foot of the screen, under any message:
		// its place read and tried in one evaluation, as the form the last
		// entry swapped in may still be settling (a message stays seconds,
		// longer than the tries).
		var at struct {
			X, Y float64
			Hit  string
		}
		for try := 0; ; try++ {
			at = eval[struct {
				X, Y float64
				Hit  string
			}](b, `(() => {
				const button = () => document.querySelector("#vault-create button[type=submit]");
				scrollBy(0, button().getBoundingClientRect().bottom - innerHeight + 4);
				const r = button().getBoundingClientRect(), x = r.left + 20, y = r.bottom - 6, e = document.elementFromPoint(x, y);
				return {X: x, Y: y, Hit: e ? (e.closest("button") === button() ? "button" : e.outerHTML.slice(0, 120)) : "nothing"};
			})()`)
			if at.Hit == "button" || try == 10 {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if at.Hit != "button" {
			t.Fatalf("tap %d at the button's foot lands on %s", i, at.Hit)
		}
		b.do(chromedp.MouseClickXY(at.X, at.Y))
		b.waitText("Entry " + key + " created.")
	}
	// The table reloads itself after the message: wait for it.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		n := eval[int](b, `document.querySelectorAll("#vault-table tbody tr[id^=row-]").length`)
		if n == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 4 entries created", n)
		}
	}
	// A message's body lets taps through; its × takes them.
	if got := eval[string](b, `getComputedStyle(document.querySelector("#flash [data-flash]")).pointerEvents + " " + getComputedStyle(document.querySelector("#flash [data-dismiss-flash]")).pointerEvents`); got != "none auto" {
		t.Fatalf("a message's body and × take taps as %q", got)
	}
	b.screenshot("vault-taps-390")
}
