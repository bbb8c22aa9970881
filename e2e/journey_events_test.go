package e2e

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestJourneyImportAndEvents: an ADMIN imports a .env file from the vault
// page by keyboard alone — the Import link, the text typed, Preview, the
// focus on Apply, Enter — and finds the import in the event log, filters
// the log by its type with the keyboard (the focus stays on the filter
// while the table reloads) and follows the event to the vault; the access
// log shows the import as one row. Then a held invitation
// (invitationHeld). At 1280 and 390 px, audited, screenshots taken.
func TestJourneyImportAndEvents(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "ada", "ADMIN")
	for i, width := range []int64{1280, 390} {
		b.resize(width, 844)
		a, c := fmt.Sprintf("A_%d", i), fmt.Sprintf("C_%d", i)
		b.do(chromedp.Navigate(app.URL + "/web/vault?project_id=shop"))
		b.loaded()
		b.tabToMatch(`a[href="/web/vault/import?project_id=shop"]`)
		b.press("\r")
		b.waitText("Import a .env file")
		b.loaded()
		b.tabToMatch("#import-env")
		b.typeKeys("#import-env", "# keys of the shop\n"+a+"='one # not a comment'\nexport "+c+"=\"three\\nlines\"\n")
		b.tabToMatch("#import-form button.btn-primary")
		b.press("\r")
		b.waitText("To add (2)")
		b.focusOn(`#import-preview button[hx-post="/vault/import"]`)
		if got := eval[string](b, `document.getElementById("import-preview").textContent`); strings.Contains(got, "one # not") || strings.Contains(got, "three") {
			t.Fatalf("the preview shows a value: %q", got)
		}
		b.audit(fmt.Sprintf("import preview at %d", width))
		if bad := b.smallTargets(); width == 390 && len(bad) > 0 {
			t.Errorf("small targets at %d: %v", width, bad)
		}
		b.screenshot(fmt.Sprintf("import-%d", width))
		b.press("\r")
		b.waitText("Imported: 2 added, 0 changed, 0 unchanged, 0 deleted.")
		b.waitText(c)

		b.do(chromedp.Navigate(app.URL + "/web/events"))
		b.waitText(".env imported: 2 added — " + a + ", " + c)
		b.loaded()
		b.tabToMatch("#events-type")
		b.typeKeys("#events-type", "vault_import")
		b.waitGone("project Shop created") // the project's own events are filtered out
		b.waitText("1–" + fmt.Sprint(i+1) + " of " + fmt.Sprint(i+1))
		b.focusOn("#events-type")
		if got := eval[string](b, `location.search`); !strings.Contains(got, "type=vault_import") {
			t.Fatalf("the filter is not in the URL: %q", got)
		}
		b.audit(fmt.Sprintf("events at %d", width))
		if bad := b.smallTargets(); width == 390 && len(bad) > 0 {
			t.Errorf("small targets at %d: %v", width, bad)
		}
		b.screenshot(fmt.Sprintf("events-%d", width))
		b.tabToMatch(`#events-table a[href="/web/vault?project_id=shop"]`)
		b.press("\r")
		b.waitText("Values stay masked until you reveal one")

		// The access log shows the import as one row; its link unfolds
		// the two keys it wrote.
		b.do(chromedp.Navigate(app.URL + "/web/vault/log?project_id=shop"))
		b.waitText("import .env")
		if text := b.text(); strings.Contains(text, a) || !strings.Contains(text, "2 written") {
			t.Fatalf("the log does not fold the import:\n%s", text)
		}
		b.loaded()
		b.tabToMatch(`[data-testid="log-batch"]`)
		b.press("\r")
		b.waitText(c)
		b.waitText(a)
		b.audit(fmt.Sprintf("an import's rows at %d", width))
		if bad := b.smallTargets(); width == 390 && len(bad) > 0 {
			t.Errorf("small targets at %d: %v", width, bad)
		}
		b.screenshot(fmt.Sprintf("vault-log-batch-%d", width))
	}
	invitationHeld(t, app, b)
}
