package e2e

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"stencil/store/storetest"
)

// TestJourneyStartPageAndAPIReference: a person opens the start page, follows
// the link to the API reference and finds every operation of /openapi.json
// listed, with no request leaving the machine.
func TestJourneyStartPageAndAPIReference(t *testing.T) {
	t.Parallel()
	app := startServer(t, map[string]string{"DATABASE_URL": storetest.URL(t),
		"ROOT_USERNAME": "root", "ROOT_PASSWORD": "root-password-1", "ROOT_EMAIL": "root@example.com"})
	b := newBrowser(t)

	b.do(chromedp.Navigate(app.URL + "/"))
	b.waitText("Welcome to Stencil")
	b.screenshot("start-page")

	b.do(chromedp.Click(chromedp.CSS(`a[href="/scalar"]`), chromedp.NodeVisible))
	for _, summary := range operationSummaries(t, app.URL) {
		b.waitTextWithin(summary, 2*time.Minute)
	}
	b.waitText("Stencil API")
	b.screenshot("api-reference")
	// On a phone the reference fits the width, and the authentication
	// box shows no clipped "Required" run into its type picker.
	b.resize(390, 844)
	b.waitText("Selected Auth Type")
	if eval[bool](b, `document.documentElement.scrollWidth > innerWidth`) {
		t.Fatal("the API reference scrolls sideways at 390 px")
	}
	if eval[bool](b, `[...document.querySelectorAll('[data-testid="auth-indicator"]')].some(e => e.getClientRects().length > 0)`) {
		t.Fatal("the authentication box still shows its clipped Required badge")
	}
	b.click(`main a[href="/"]`)
	b.waitText("Welcome to Stencil")
}

// operationSummaries lists the summary of every operation of the served
// OpenAPI document.
func operationSummaries(t *testing.T, base string) []string {
	t.Helper()
	resp, err := http.Get(base + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Paths map[string]map[string]struct {
			Summary string `json:"summary"`
		} `json:"paths"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, item := range doc.Paths {
		for _, op := range item {
			out = append(out, op.Summary)
		}
	}
	if len(out) == 0 {
		t.Fatal("the document lists no operations")
	}
	return out
}
