package e2e

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"stencil/store/storetest"
)

// browser is a headless Debian Chromium driven by chromedp. It records every
// request the page makes and every console error, so a journey can assert
// that nothing left the machine and that the page ran cleanly.
type browser struct {
	ctx      context.Context
	t        *testing.T
	mu       sync.Mutex
	requests []string
	errors   []string
	dialogs  []string // messages of the confirm dialogs accepted
	unloads  int      // "leave this page?" questions answered yes
}

// chromiumPath finds Debian's Chromium. It installs nothing: `make test` does.
func chromiumPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "/usr/bin/chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("Chromium not found: install Debian's chromium package (make test does) to run the browser journeys")
	return ""
}

// chromium is the one Chromium the journeys share: each journey opens a tab
// of its own in a browser context of its own (as a private window: its own
// cookies and storage), so that journeys on 127.0.0.1's many ports never
// share a session cookie. Starting it once saves a browser start a journey.
var chromium struct {
	once   sync.Once
	ctx    context.Context // the first tab's; new tabs are made from it
	err    error
	cancel func()
}

// startChromium starts the shared browser the first time a journey asks.
func startChromium(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	chromium.once.Do(func() {
		dir, err := os.MkdirTemp("", "stencil-e2e-chromium-")
		if err != nil {
			chromium.err = err
			return
		}
		opts := []chromedp.ExecAllocatorOption{
			chromedp.ExecPath(path),
			chromedp.Headless,
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.NoFirstRun,
			chromedp.NoDefaultBrowserCheck,
			chromedp.UserDataDir(dir),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-dev-shm-usage", true),
			chromedp.WindowSize(1280, 900),
		}
		allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancelCtx := chromedp.NewContext(allocCtx)
		// Run starts the browser; it must not run under a timeout
		// context, which would end the browser with it.
		if err := chromedp.Do(ctx); err != nil {
			chromium.err = err
		}
		chromium.ctx = ctx
		chromium.cancel = func() { cancelCtx(); cancelAlloc(); os.RemoveAll(dir) }
	})
	if chromium.err != nil {
		t.Fatalf("start Chromium: %v", chromium.err)
	}
	return chromium.ctx
}

// stopChromium ends the shared browser, if a journey started it.
func stopChromium() {
	if chromium.cancel != nil {
		chromium.cancel()
	}
}

// newBrowser opens a tab of the shared Chromium in a browser context of its
// own, closed when the test ends.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	ctx, cancelCtx := chromedp.NewContext(startChromium(t), chromedp.WithNewBrowserContext())
	t.Cleanup(cancelCtx)
	b := &browser{ctx: ctx, t: t}
	// Listen opens the tab; it must not run under a timeout context, which
	// would close the tab with it.
	err := chromedp.Listen(ctx, func(ev any) {
		if ev, ok := ev.(*network.EventRequestWillBeSent); ok {
			b.mu.Lock()
			b.requests = append(b.requests, ev.Request.URL)
			b.mu.Unlock()
		}
	})
	if err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	// Accept every confirm dialog (hx-confirm), as a person clicking OK.
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			b.mu.Lock()
			if ev.Type == page.DialogTypeBeforeunload {
				b.unloads++
			} else {
				b.dialogs = append(b.dialogs, ev.Message)
			}
			b.mu.Unlock()
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	messages := chromedp.Console(ctx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			// The browser logs every 4xx answer; journeys provoke some on
			// purpose and assert what the page shows instead.
			expected4xx := m.Source == "network" && strings.Contains(m.Text, "status of 4")
			if (m.Type == chromedp.ConsoleError || m.IsException()) && !expected4xx {
				b.mu.Lock()
				b.errors = append(b.errors, m.String())
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(b.checkClean)
	return b
}

// do performs actions with a time limit, failing the test on error. An
// action that met a node of a document just replaced (chromedp resolves
// nodes from its copy of the DOM, which a navigation or swap can outdate for
// a moment) is tried again, up to three times: it acted on nothing.
func (b *browser) do(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	var err error
	for attempt := 0; attempt < 4; attempt++ {
		ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
		err = chromedp.Do(ctx, actions...)
		cancel()
		if err == nil || !staleNode(err) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// staleNode tells an error about a node id the page no longer has.
func staleNode(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "Could not find node with given id") || strings.Contains(msg, "No node with given id") ||
		strings.Contains(msg, "does not belong to the document")
}

// eval evaluates a JavaScript expression on the page.
func eval[T any](b *browser, expr string, opts ...chromedp.EvaluateOption) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, opts...))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// tabTo presses Tab from the top of the page until the element with id has
// the focus, failing when 40 presses do not reach it.
func (b *browser) tabTo(id string) {
	b.t.Helper()
	_ = eval[bool](b, `(document.activeElement && document.activeElement.blur(), true)`)
	for range 40 {
		b.do(chromedp.KeyEvent("\t"))
		if eval[string](b, `document.activeElement.id`) == id {
			return
		}
	}
	b.t.Fatalf("40 presses of Tab did not reach #%s", id)
}

// focused fails unless the element with id has the focus.
func (b *browser) focused(id string) {
	b.t.Helper()
	if got := eval[string](b, `document.activeElement.id`); got != id {
		b.t.Fatalf("focus is on %q, want #%s", got, id)
	}
}

// waitFocus waits, up to 5 s, until the focused element matches the CSS
// selector sel: a swap puts its text in the page before its settle
// moves the focus.
func (b *browser) waitFocus(sel string) {
	b.t.Helper()
	expr := fmt.Sprintf("!!document.activeElement && document.activeElement.matches(%q)", sel)
	for deadline := time.Now().Add(5 * time.Second); !eval[bool](b, expr); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.t.Fatalf("the focus never reached %s: it is on %s", sel, eval[string](b, "document.activeElement ? document.activeElement.outerHTML.slice(0, 200) : ''"))
		}
	}
}

// waitUntil waits, up to 10 s, until the JavaScript expression expr is
// true, and otherwise fails with what the page shows by explain.
func (b *browser) waitUntil(expr string, explain func() string) {
	b.t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !eval[bool](b, expr); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			b.t.Fatalf("the page never came to %s: %s", expr, explain())
		}
	}
}

// waitText waits, up to 30 s, until the page's visible text contains s. It
// keeps asking across navigations, which interrupt a single evaluation.
func (b *browser) waitText(s string) {
	b.t.Helper()
	b.waitTextWithin(s, 30*time.Second)
}

// waitTextWithin is waitText up to wait: for the API reference, whose
// viewer's script keeps a loaded CI's page busy far longer than a page of
// ours.
func (b *browser) waitTextWithin(s string, wait time.Duration) {
	b.t.Helper()
	expr := fmt.Sprintf("!!document.body && document.body.innerText.includes(%q)", s)
	deadline := time.Now().Add(wait)
	for {
		ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		cancel()
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			b.mu.Lock()
			asked := b.requests[max(0, len(b.requests)-5):]
			b.mu.Unlock()
			b.t.Fatalf("page never showed %q (last error: %v); its last requests: %v; the focus on %s; it shows:\n%s", s, err, asked,
				eval[string](b, `document.activeElement ? document.activeElement.outerHTML.slice(0, 200) : "nothing"`), b.text())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// typeKeys types keys into the element that selector names, as
// chromedp.SendKeys does (it focuses the element once visible, then sends a
// key event for each character), without SendKeys' read of the node's
// attributes outside the node's lock, which the race detector catches when
// the page changes an attribute of that node meanwhile.
func (b *browser) typeKeys(selector, keys string) {
	b.t.Helper()
	b.do(chromedp.Focus(chromedp.CSS(selector), chromedp.NodeVisible), chromedp.KeyEvent(keys))
}

// fill types value into the field that selector names, replacing its content.
func (b *browser) fill(selector, value string) {
	b.t.Helper()
	b.do(chromedp.WaitVisible(chromedp.CSS(selector)))
	eval[bool](b, fmt.Sprintf("(el => { el.value = ''; return true })(document.querySelector(%q))", selector))
	b.typeKeys(selector, value)
}

// choose selects value in the select element that selector names.
func (b *browser) choose(selector, value string) {
	b.t.Helper()
	b.do(chromedp.WaitVisible(chromedp.CSS(selector)))
	eval[bool](b, fmt.Sprintf("(el => { el.value = %q; el.dispatchEvent(new Event('change', {bubbles: true})); return el.value === %q })(document.querySelector(%q))", value, value, selector))
}

// click clicks the element that selector names once it is visible and
// the page has loaded: a click is dispatched at the element's place, and
// a page whose stylesheet is still loading may move it meanwhile (on a
// busy machine, the click then lands beside it).
func (b *browser) click(selector string) {
	b.t.Helper()
	b.loaded()
	b.settle()
	b.do(chromedp.Click(chromedp.CSS(selector), chromedp.NodeVisible))
}

// settle waits, up to 3 s, until htmx has no request, swap or settle under
// way: a click on content htmx has not taken in yet would do nothing.
func (b *browser) settle() {
	b.t.Helper()
	for range 30 {
		if eval[bool](b, `!document.querySelector(".htmx-request, .htmx-swapping, .htmx-settling, .htmx-added")`) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// loaded waits, up to 10 s, until the page and its stylesheets have loaded:
// text shows before the styles that size it, and a measure taken between the
// two is of an unstyled page.
func (b *browser) loaded() {
	b.t.Helper()
	for range 100 {
		if eval[bool](b, `document.readyState === "complete"`) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.t.Fatalf("the page did not finish loading in 10 s")
}

// waitGone waits until the page's visible text no longer contains s.
func (b *browser) waitGone(s string) {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for strings.Contains(b.text(), s) {
		if time.Now().After(deadline) {
			b.t.Fatalf("page still shows %q", s)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// html returns the page's current HTML.
func (b *browser) html() string {
	return eval[string](b, "document.documentElement.outerHTML")
}

// text returns the page's visible text.
func (b *browser) text() string {
	return eval[string](b, "document.body ? document.body.innerText : ''")
}

// screenshot saves the whole page under artifacts/screenshots for people to
// look at.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	if os.Getenv("STENCIL_SCREENSHOTS") == "off" {
		return // CI (.ci/run): no one reads them there
	}
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	// Chromium draws at most 16,384 px in one capture: a longer page (the
	// API reference) is shown as far as the window reaches.
	shot := chromedp.FullScreenshot(100)
	if eval[int](b, "document.documentElement.scrollHeight") > 16000 {
		shot = chromedp.CaptureScreenshot()
	}
	png, err := chromedp.Run(ctx, shot)
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	dir := filepath.Join("artifacts", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

// checkClean fails the test if the page reached beyond 127.0.0.1 or logged
// errors.
func (b *browser) checkClean() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, raw := range b.requests {
		u, err := url.Parse(raw)
		if err != nil {
			b.t.Errorf("unparseable request URL %q", raw)
			continue
		}
		switch u.Scheme {
		case "data", "blob", "about":
			continue
		}
		if u.Hostname() != "127.0.0.1" {
			b.t.Errorf("the page requested %s, off this machine", raw)
		}
	}
	for _, e := range b.errors {
		b.t.Errorf("browser console error: %s", e)
	}
}

// memberBrowser starts an instance with a ROOT account ("root"), a project
// "shop" and a member of it with role, and returns the instance and a
// browser signed in as the member.
func memberBrowser(t *testing.T, username, role string) (*instance, *browser) {
	t.Helper()
	return memberBrowserWith(t, username, role, nil)
}

// memberBrowserWith is memberBrowser on an instance with more settings.
func memberBrowserWith(t *testing.T, username, role string, vars map[string]string) (*instance, *browser) {
	t.Helper()
	env := map[string]string{"DATABASE_URL": storetest.URL(t),
		"ROOT_USERNAME": "root", "ROOT_PASSWORD": "root-password-1", "ROOT_EMAIL": "root@example.com"}
	for k, v := range vars {
		env[k] = v
	}
	app := startServer(t, env)
	root := apiLogin(t, app.URL, "root", "root-password-1")
	password := username + "-password-1"
	for _, call := range [][2]string{
		{"/user/register", fmt.Sprintf(`{"username":%q,"email":"%s@example.com","password":%q,"role":%q}`, username, username, password, role)},
		{"/project/create", `{"id":"shop","name":"Shop","api_path":"/shop"}`},
		{"/project/member/add", fmt.Sprintf(`{"project_id":"shop","username":%q}`, username)},
	} {
		if status, body := api(t, "POST", app.URL+call[0], root, call[1]); status >= 300 {
			t.Fatalf("POST %s: %d %s", call[0], status, body)
		}
	}
	b := newBrowser(t)
	b.signIn(app, username, password)
	return app, b
}

// signIn signs the browser in on the sign-in page of app.
func (b *browser) signIn(app *instance, username, password string) {
	b.t.Helper()
	b.do(chromedp.Navigate(app.URL + "/web/login"))
	b.fill("#f-auth_data", username)
	b.fill("#f-password", password)
	b.click("#login-form button[type=submit]")
	b.waitText("Welcome, " + username)
}

// resize sets the window's layout width and height; under 600 px wide the
// page is shown as on a phone (touch, mobile viewport).
func (b *browser) resize(width, height int64) {
	b.t.Helper()
	b.do(chromedp.EmulateViewport(width, height, func(p *emulation.SetDeviceMetricsOverrideParams, _ *emulation.SetTouchEmulationEnabledParams) {
		p.Mobile = width < 600
	}))
}

var (
	axeOnce   sync.Once
	axeSource string
)

// layout fails the test, naming state, when the page scrolls sideways or
// a visible control lies outside the window's width.
func (b *browser) layout(state string) {
	b.t.Helper()
	if eval[bool](b, "document.documentElement.scrollWidth > window.innerWidth") {
		w := eval[int](b, "window.innerWidth")
		b.t.Errorf("%s at %d px: the page is %d px wide", state, w, eval[int](b, "document.documentElement.scrollWidth"))
	}
	off := eval[[]string](b, `Array.from(document.querySelectorAll("a[href], button, input:not([type=hidden]), select, textarea"))
		.filter(e => e.getClientRects().length > 0 && !e.closest(".sr-only"))
		.filter(e => { const r = e.getBoundingClientRect(); return r.width > 0 && (r.left < -1 || r.right > window.innerWidth + 1); })
		.map(e => e.outerHTML.slice(0, 100))`)
	for _, e := range off {
		b.t.Errorf("%s: a control lies outside the window: %s", state, e)
	}
}

// audit checks the page as it stands and fails the test, naming state, when
// the page scrolls sideways, when a visible control lies outside the
// window's width, or when axe-core (pinned in package.json) finds a serious
// or critical violation.
func (b *browser) audit(state string) {
	b.t.Helper()
	b.layout(state)
	axeOnce.Do(func() {
		src, err := os.ReadFile(filepath.Join("node_modules", "axe-core", "axe.min.js"))
		if err != nil {
			b.t.Fatalf("axe-core is missing (make test installs it with npm ci): %v", err)
		}
		axeSource = string(src)
	})
	if !eval[bool](b, "typeof window.axe === 'object'") {
		eval[bool](b, axeSource+";true")
	}
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	found, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`axe.run(document, {resultTypes: ["violations"]}).then(r => r.violations
		.filter(v => v.impact === "serious" || v.impact === "critical")
		.map(v => v.impact + " " + v.id + ": " + v.help + " — " + v.nodes.slice(0, 3).map(n => n.target.join(" ")).join(", ")))`, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("%s: axe-core: %v", state, err)
	}
	for _, v := range found {
		b.t.Errorf("%s: %s", state, v)
	}
}

// tabToMatch presses Tab from the top of the page until the focused element
// matches selector, failing when 60 presses do not reach it.
func (b *browser) tabToMatch(selector string) {
	b.t.Helper()
	_ = eval[bool](b, `(document.activeElement && document.activeElement.blur(), true)`)
	for range 60 {
		b.do(chromedp.KeyEvent("\t"))
		if eval[bool](b, fmt.Sprintf(`!!document.activeElement && document.activeElement.matches(%q)`, selector)) {
			return
		}
	}
	b.t.Fatalf("60 presses of Tab did not reach %s", selector)
}

// addBlock adds a block of type typ from the editor's palette: Add block,
// the type typed into its search, Enter.
func (b *browser) addBlock(typ string) {
	b.t.Helper()
	b.click(`[data-action="add-block"]`)
	b.focusOn("#palette-filter")
	b.typeKeys("#palette-filter", typ)
	b.do(chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#palette-list button[data-block-type=%q]`, typ))))
	b.press("\r")
	b.focusOn("[data-block] *")
}

// confirm answers the page's confirmation dialog (hx-confirm) as a person
// would: it notes the question in dialogs, types the name it asks for, if
// any, and presses its confirming button.
func (b *browser) confirm() {
	b.t.Helper()
	b.do(chromedp.WaitVisible(chromedp.CSS("#confirm-dialog[open] [data-confirm]")))
	question := eval[string](b, `document.getElementById("confirm-question").textContent`)
	b.mu.Lock()
	b.dialogs = append(b.dialogs, question)
	b.mu.Unlock()
	if eval[bool](b, `!!document.getElementById("confirm-typed")`) {
		name := eval[string](b, `document.querySelector("#confirm-hint .font-mono").textContent`)
		b.typeKeys("#confirm-typed", name)
	}
	b.do(chromedp.Click(chromedp.CSS("#confirm-dialog [data-confirm]"), chromedp.NodeVisible))
	b.do(chromedp.WaitNotPresent(chromedp.CSS("#confirm-dialog[open]")))
}

// press sends one key ("\r" for Enter, "\t" for Tab, kb.Escape …).
func (b *browser) press(key string) {
	b.t.Helper()
	b.do(chromedp.KeyEvent(key))
}

// focusOn waits up to five seconds for the focus to be on an element
// matching selector, and fails naming where it is instead.
func (b *browser) focusOn(selector string) {
	b.t.Helper()
	check := fmt.Sprintf(`!!document.activeElement && document.activeElement.matches(%q)`, selector)
	for range 50 {
		if eval[bool](b, check) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.t.Fatalf("focus is on %s, want %s", eval[string](b, `document.activeElement ? document.activeElement.outerHTML.slice(0, 160) : "nothing"`), selector)
}

// smallTargets lists the controls in the page's main part that a finger
// would miss: smaller than 44 × 44 px (a checkbox counts with its label), or
// a field whose text is under 16 px. Links inside running text are exempt,
// as WCAG's target-size rule exempts them.
func (b *browser) smallTargets() []string {
	b.t.Helper()
	b.loaded()
	return eval[[]string](b, `(() => {
		const out = [];
		for (const e of document.querySelectorAll("main a, main button, main input, main select, main textarea, main summary")) {
			const box = e.getBoundingClientRect();
			if (!box.width || !box.height || getComputedStyle(e).visibility === "hidden" || e.type === "hidden") continue;
			if (e.tagName === "A" && getComputedStyle(e).display === "inline" && e.closest("p")) continue;
			const box2 = e.type === "checkbox" || e.type === "radio";
			const target = box2 ? (e.closest("label") || e) : e;
			const r = target.getBoundingClientRect();
			const name = (e.getAttribute("aria-label") || e.textContent || (box2 && target.textContent) || e.name || e.getAttribute("data-path") || e.tagName).trim().slice(0, 40);
			if (r.width < 44 || r.height < 44) out.push(name + " " + Math.round(r.width) + "×" + Math.round(r.height));
			// The box itself, where the eye aims, at least WCAG 2.2's 24 px.
			if (box2 && (box.width < 24 || box.height < 24)) out.push(name + " box " + Math.round(box.width) + "×" + Math.round(box.height));
			if (/^(INPUT|SELECT|TEXTAREA)$/.test(e.tagName) && e.type !== "checkbox" && e.type !== "radio" && parseFloat(getComputedStyle(e).fontSize) < 16)
				out.push(name + " text " + getComputedStyle(e).fontSize);
		}
		return out;
	})()`)
}
