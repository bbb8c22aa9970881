package e2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestJourneyHTTPBlock: an ADMIN adds an HTTP block from the editor's
// palette and finds its fields; the route's page reads the call as a
// request; the playground sends a route that calls an upstream on
// loopback (allowed by EGRESS_ALLOW) with a vault value in a header, and
// shows the 201, its Location and the call in the trace — never the
// value; at 1280 and 390 px, by keyboard.
func TestJourneyHTTPBlock(t *testing.T) {
	t.Parallel()
	const secret = "sk-live-9f8e7d6c5b"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = fmt.Fprintf(w, `{"id":"ch_1","echo":%q}`, r.Header.Get("Authorization"))
	}))
	defer up.Close()
	app, b := memberBrowserWith(t, "ada", "ADMIN", map[string]string{"EGRESS_ALLOW": up.Listener.Addr().String()})
	token := apiLogin(t, app.URL, "ada", "ada-password-1")
	lit := func(s string) string { return fmt.Sprintf(`{"ref_var":false,"rtype":"STRING","data":%q}`, s) }
	ref := func(s string) string { return fmt.Sprintf(`{"ref_var":true,"rtype":"OTHER","data":%q}`, s) }
	for _, call := range [][2]string{
		{"/vault/create", `{"project_id":"shop","key":"PAY_KEY","value":"` + secret + `"}`},
		{"/route/create", `{"project_id":"shop","route":{"route_id":"pay","route_path":"/pay","method":"POST","auth_jwt":{"active":false,"field":"","ref_col":""},
			"params":{"delimiter":"&","pairs":[]},"body":[{"id":"amount","bdtype":"INTEGER"}],"flow":{"blocks":[
			{"type":"VAULT","depth":0,"local_name":"k","key":"PAY_KEY"},
			{"type":"TEMPLATE","depth":0,"local_name":"auth","templatestring":"Bearer {}","data":[` + ref("k") + `],"conditions":[]},
			{"type":"HTTP","depth":0,"local_name":"res","method":"POST","url":` + lit(up.URL+"/charges") + `,"query":[],
				"headers":[{"id":"Authorization","data":` + ref("auth") + `}],"body":` + ref("amount") + `,"timeout_ms":null,"conditions":[]},
			{"type":"TEMPLATE","depth":0,"local_name":"loc","templatestring":"/charges/{}","data":[` + ref("res.body.id") + `],"conditions":[]},
			{"type":"RETURN","depth":0,"pairs":[{"id":"charge","data":` + ref("res.body") + `}],"conditions":[],"status":201,
				"headers":[{"id":"Location","data":` + ref("loc") + `}]}]}}}`},
	} {
		if status, body := api(t, "POST", app.URL+call[0], token, call[1]); status >= 300 {
			t.Fatalf("POST %s: %d %s", call[0], status, body)
		}
	}

	for _, width := range []int64{1280, 390} {
		b.resize(width, 844)
		// The route's page reads the call as a request.
		b.do(chromedp.Navigate(app.URL + "/web/routes/view?project_id=shop&route_id=pay"))
		b.waitText("POST " + up.URL + "/charges → res")
		b.waitText("Status: 201")

		// The editor: the palette offers HTTP; its fields are there, the
		// focus in the new block.
		b.do(chromedp.Navigate(app.URL + "/web/routes/edit?project_id=shop&route_id=pay"))
		b.waitText("Flow")
		// The route ends in a RETURN: the block goes before it.
		b.addBlock("HTTP")
		newCard := `[...document.querySelectorAll("[data-block]")].slice(-2)[0]`
		card := eval[string](b, newCard+`.textContent`)
		for _, label := range []string{"Result name", "Method", "URL", "Query parameters", "Headers", "Body", "Timeout (ms)", "Conditions"} {
			if !strings.Contains(card, label) {
				t.Fatalf("the new HTTP block has no field %q: %s", label, card)
			}
		}
		if !eval[bool](b, newCard+`.contains(document.activeElement)`) {
			t.Fatal("after adding the block, the focus is not in it")
		}
		if n := eval[int](b, `document.querySelectorAll('[data-block] select[data-path$=".method"]').length`); n != 2 {
			t.Fatalf("%d method choices in the editor, want the saved block's and the new one's", n)
		}
		b.audit(fmt.Sprintf("the editor with an HTTP block at %d px", width))
		b.screenshot(fmt.Sprintf("http-editor-%d", width))

		// The playground, by keyboard.
		b.do(chromedp.Navigate(app.URL + "/web/routes/try?project_id=shop&route_id=pay"))
		b.waitText("Send the request")
		b.tabTo("body-amount")
		b.do(chromedp.KeyEvent("500"))
		b.tabTo("try-send")
		b.press("\r")
		b.waitText("POST " + up.URL + "/charges → 201")
		if got := eval[string](b, `document.querySelector("[data-testid=try-headers]").textContent`); !strings.Contains(got, "Location: /charges/ch_1") {
			t.Fatalf("the answer's headers: %q", got)
		}
		if status := eval[string](b, `document.querySelector("[data-testid=try-status]").textContent`); status != "201" {
			t.Fatalf("status %s", status)
		}
		if strings.Contains(b.html(), secret) {
			t.Fatal("the page shows the vault value")
		}
		b.focused("try-send")
		b.audit(fmt.Sprintf("the playground after a call at %d px", width))
		b.screenshot(fmt.Sprintf("http-try-%d", width))
	}
	b.checkClean()
}
