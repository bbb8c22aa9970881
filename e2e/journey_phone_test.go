package e2e

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestJourneyPhoneTargets: at 390 px, what a finger uses is at least 44 px
// and readable — the Menu button, its rows and the account link; the
// vault's Access log and Import .env; the route editor's save bar opaque
// and two rows at most; an operand's BOOLEAN type whole in its select —
// and a records cell opens for editing with a second tap, as Enter and a
// double click open it.
func TestJourneyPhoneTargets(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "ada", "ADMIN")
	ada := apiLogin(t, app.URL, "ada", "ada-password-1")
	for _, call := range [][2]string{
		{"/collection/create", `{"project_id":"shop","id":"books","name":"Books"}`},
		{"/data/create", `{"project_id":"shop","collection_id":"books","data":{"title":"Dune"}}`},
	} {
		if status, body := api(t, "POST", app.URL+call[0], ada, call[1]); status != 201 {
			t.Fatalf("POST %s: %d %s", call[0], status, body)
		}
	}
	b.resize(390, 844)
	height := func(sel string) float64 {
		return eval[float64](b, `(e => e ? e.getBoundingClientRect().height : -1)(document.querySelector(`+"`"+sel+"`"+`))`)
	}

	b.do(chromedp.Navigate(app.URL + "/web/vault?project_id=shop"))
	b.waitText("Values stay masked")
	for _, sel := range []string{`a[href^="/web/vault/log"]`, `a[href^="/web/vault/import"]`} {
		if h := height("main " + sel); h < 44 {
			t.Errorf("%s is %.0f px tall", sel, h)
		}
	}
	b.click("#nav-menu")
	for _, sel := range []string{"#nav-menu", `[data-nav-menu] a[href="/web/projects"]`, `[data-nav-menu] [data-testid="signed-in-as"] a`} {
		if h := height(sel); h < 44 {
			t.Errorf("%s is %.0f px tall", sel, h)
		}
	}
	b.click("#nav-menu")

	b.do(chromedp.Navigate(app.URL + "/web/routes/create?id=shop"))
	b.waitText("New route")
	b.addBlock("OBJECT")
	b.click(`[data-action="add:flow.blocks[0].pairs"]`)
	b.choose(`[data-path="flow.blocks[0].pairs[0].data.rtype"]`, "BOOLEAN")
	if cut := eval[bool](b, `(s => s.scrollWidth > s.clientWidth + 1 || s.getBoundingClientRect().width < 100)(document.querySelector('[data-path="flow.blocks[0].pairs[0].data.rtype"]'))`); cut {
		t.Error("the BOOLEAN type does not fit its select")
	}
	bar := `[data-testid="save-bar"]`
	if h := height(bar); h > 116 { // two rows of 44 px controls
		t.Errorf("the save bar is %.0f px tall at 390 px", h)
	}
	if bg := eval[string](b, `getComputedStyle(document.querySelector('[data-testid="save-bar"]')).backgroundColor`); bg != "rgb(255, 255, 255)" {
		t.Errorf("the save bar's background is %s: fields show through", bg)
	}

	// A second tap on a records cell opens it.
	b.do(chromedp.Navigate(app.URL + "/web/data/collection?project_id=shop&id=books"))
	b.waitText("Dune")
	cell := `table[data-grid] td[data-field="title"]`
	eval[bool](b, `(td => { td.focus(); td.dispatchEvent(new PointerEvent("pointerdown", {pointerType: "touch", bubbles: true})); td.click(); return true })(document.querySelector('`+cell+`'))`)
	b.focusOn(cell + " [data-cell-editor]")
	if got := eval[string](b, `document.activeElement.value`); !strings.Contains(got, "Dune") {
		t.Fatalf("the cell's editor holds %q", got)
	}
}

// TestJourneyMessagesCoverNothing: a message never sits on the control
// the focus went to — the invitation's link with Copy link beside it —
// at 1280 px (messages at the foot) and at 390 px (at the top).
func TestJourneyMessagesCoverNothing(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "ada", "ADMIN")
	for i, width := range []int64{1280, 390} {
		// A short window: the link lands at its foot at 1280 px (where the
		// message is), and, sent from the page's foot, at its top at 390.
		b.resize(width, 480)
		b.do(chromedp.Navigate(app.URL + "/web/project?id=shop"))
		b.waitText("Invite by email")
		b.fill("#invite-form #f-email", "kim"+string(rune('a'+i))+"@example.com")
		if width == 390 {
			eval[bool](b, `(window.scrollTo(0, document.body.scrollHeight), true)`)
		}
		eval[bool](b, `(document.querySelector("#invite-form button[type=submit]").click(), true)`)
		b.waitText("send this link yourself")
		b.focusOn(`[data-testid="invite-link"] a`)
		overlap := eval[bool](b, `(() => {
			const m = document.querySelector("#flash [data-flash]");
			if (!m) return false;
			const a = m.getBoundingClientRect();
			return [document.activeElement, document.querySelector('[data-testid="invite-link"] button')].some(e => {
				const b = e.getBoundingClientRect();
				return a.top < b.bottom && a.bottom > b.top && a.left < b.right && a.right > b.left;
			});
		})()`)
		if overlap {
			t.Errorf("at %d px the message covers the invitation's link", width)
		}
	}
}
