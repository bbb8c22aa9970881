package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"stencil/webhooks"
)

// TestJourneySignedWebhook: an ADMIN turns a route into a signed webhook's
// receiver in the editor by keyboard, at 1280 and 390 px — the check on,
// the scheme chosen, the vault key typed — and saves; a delivery signed
// with the vault's secret then runs the route, an unsigned one is 401, and
// the route's page says who may call it.
func TestJourneySignedWebhook(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "ada", "ADMIN")
	token := apiLogin(t, app.URL, "ada", "ada-password-1")
	const secret = "gh-secret-of-the-journey"
	for _, call := range [][2]string{
		{"/vault/create", `{"project_id":"shop","key":"GITHUB_SECRET","value":"` + secret + `"}`},
		{"/route/create", `{"project_id":"shop","route":{"route_id":"push","route_path":"/push","method":"POST","auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],"flow":{"blocks":[` +
			`{"type":"RETURN","depth":0,"pairs":[{"id":"ok","data":{"ref_var":false,"rtype":"BOOLEAN","data":"true"}}],"conditions":[]}]}}}`},
	} {
		if status, body := api(t, "POST", app.URL+call[0], token, call[1]); status >= 300 {
			t.Fatalf("POST %s: %d %s", call[0], status, body)
		}
	}
	deliver := func(signed bool) int {
		body := []byte(`{"ref":"main"}`)
		req, _ := http.NewRequest("POST", app.URL+"/x/shop/push", strings.NewReader(string(body)))
		req.Header.Set("Content-Type", "application/json")
		if signed {
			for k, v := range webhooks.Sign(webhooks.GitHub, secret, "", "", body, time.Now()) {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for i, width := range []int64{1280, 390} {
		b.resize(width, 844)
		b.do(chromedp.Navigate(app.URL + "/web/routes/edit?project_id=shop&route_id=push"))
		b.waitText("Save route")
		check := `input[data-path="auth_signature.active"]`
		b.tabToMatch(check)
		if i == 0 {
			b.press(" ")
			b.focusOn(check + ":checked")
			b.press("\t")
			b.focusOn(`select[data-path="auth_signature.scheme"]`)
			b.do(chromedp.KeyEvent("g")) // github
			b.press("\t")
			b.focusOn(`input[data-path="auth_signature.vault_key"]`)
			b.do(chromedp.KeyEvent("GITHUB_SECRET"))
			b.screenshot("signed-webhook-editor-1280")
			b.do(chromedp.KeyEvent("s", chromedp.KeyModifiers(chromedp.ModifierCtrl)))
			b.waitText("(version 2)")
			b.waitText("only deliveries signed with the secret in vault entry GITHUB_SECRET (github)")
			if status := deliver(true); status != 200 {
				t.Fatalf("a signed delivery: %d", status)
			}
			if status := deliver(false); status != 401 {
				t.Fatalf("an unsigned delivery: %d", status)
			}
		} else if got := eval[string](b, `document.querySelector('select[data-path="auth_signature.scheme"]').value`); got != "github" {
			t.Fatalf("the saved scheme reads %q", got)
		}
		b.audit(fmt.Sprintf("signed webhook at %d", width))
		if bad := b.smallTargets(); width == 390 && len(bad) > 0 {
			t.Errorf("small targets at 390: %v", bad)
		}
		b.screenshot(fmt.Sprintf("signed-webhook-%d", width))
	}
	b.press(kb.Escape)
	b.checkClean()
}
