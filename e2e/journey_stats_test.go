package e2e

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestJourneyRouteStats: after known runs at /x, the analytics page draws
// its charts (canvases with pixels) with a key each, switches range by
// keyboard, and its tables hold the numbers /route/stats answers (quiet
// points folded into one row); a route failing on most requests is
// marked; axe finds nothing serious; at 1280 and 390 px.
func TestJourneyRouteStats(t *testing.T) {
	t.Parallel()
	app, b := memberBrowser(t, "ada", "AUTHOR")
	token := apiLogin(t, app.URL, "ada", "ada-password-1")
	route := `{"project_id":"shop","route":{"route_id":"find","route_path":"/find","method":"GET","auth_jwt":{"active":false,"field":"","ref_col":""},
		"params":{"delimiter":"&","pairs":[{"id":"n","bdtype":"INTEGER"}]},"body":[],"flow":{"blocks":[
		{"type":"CONDITION","depth":0,"conditions":[{"left":{"ref_var":true,"rtype":"INTEGER","data":"n"},"right":{"ref_var":false,"rtype":"INTEGER","data":"0"},"condition_type":"EQUAL_TO","not":false,"next":"NONE"}],"action":"FAIL","fail":{"status":404,"message":"none"}},
		{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"{missing}"},
		{"type":"RETURN","depth":0,"pairs":[],"conditions":[]}]}}}`
	route = strings.Replace(route, `"ref_col":"{missing}"`, `"ref_col":"nowhere"`, 1)
	ok := strings.Replace(route, `"route_id":"find","route_path":"/find"`, `"route_id":"hello","route_path":"/hello"`, 1)
	ok = strings.Replace(ok, `{"type":"FETCH","depth":0,"local_name":"rows","ref_col":"nowhere"},`, "", 1)
	for _, doc := range []string{route, ok} {
		if status, body := api(t, "POST", app.URL+"/route/create", token, doc); status != 201 {
			t.Fatalf("route: %d %s", status, body)
		}
	}
	for path, n := range map[string]int{"/x/shop/hello?n=1": 9, "/x/shop/hello?n=0": 4, "/x/shop/find?n=2": 3} {
		for range n {
			api(t, "GET", app.URL+path, "", "")
		}
	}
	// The run log is written within a second, the rollups with it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := api(t, "GET", app.URL+"/route/stats?project_id=shop", token, "")
		if strings.Contains(body, `"totals":{"requests":16`) || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}

	for _, width := range []int64{1280, 390} {
		b.resize(width, 844)
		b.do(chromedp.Navigate(app.URL + "/web/routes/stats?project_id=shop&range=1h"))
		b.waitText("Requests by status")
		b.do(chromedp.WaitVisible(chromedp.CSS("#latency-chart canvas")))
		for _, id := range []string{"requests-chart", "latency-chart"} {
			inked := eval[int](b, fmt.Sprintf(`(c => { const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data; let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n; })(document.querySelector("#%s canvas"))`, id))
			if inked < 200 {
				t.Fatalf("%d px: the chart %s has %d inked pixels", width, id, inked)
			}
		}
		// The tables hold what the API answers for the page's range.
		var page struct {
			From, To, Step string
		}
		_ = json.Unmarshal([]byte(eval[string](b, `document.getElementById("stats-data").textContent`)), &page)
		_, body := api(t, "GET", app.URL+"/route/stats?project_id=shop&from="+url.QueryEscape(page.From)+"&to="+url.QueryEscape(page.To)+"&step="+page.Step, token, "")
		var got struct {
			Data struct {
				Series []struct {
					Requests  int
					Errors4xx int `json:"errors_4xx"`
					Errors5xx int `json:"errors_5xx"`
					Limited   int
				}
				Totals struct{ Requests int }
			}
		}
		_ = json.Unmarshal([]byte(body), &got)
		// Points without a request fold into one row ("no requests").
		rows := eval[[][]string](b, `[...document.querySelectorAll("[data-testid=requests-table] tbody tr")].map(r => [...r.children].map(c => c.textContent.trim()))`)
		var want [][]string
		for _, p := range got.Data.Series {
			if p.Requests == 0 {
				if len(want) == 0 || want[len(want)-1][0] != "no requests" {
					want = append(want, []string{"no requests"})
				}
				continue
			}
			want = append(want, []string{fmt.Sprint(p.Requests - p.Errors4xx - p.Errors5xx - p.Limited), fmt.Sprint(p.Errors4xx), fmt.Sprint(p.Errors5xx), fmt.Sprint(p.Limited)})
		}
		if len(rows) != len(want) || got.Data.Totals.Requests != 16 {
			t.Fatalf("%d rows for %d (points folded); totals %d: %s", len(rows), len(want), got.Data.Totals.Requests, body)
		}
		for i := range want {
			if strings.Join(rows[i][1:], " ") != strings.Join(want[i], " ") {
				t.Fatalf("row %d: %v, the API %v", i, rows[i], want[i])
			}
		}
		if len(want) > 3 {
			t.Fatalf("an hour of few busy minutes keeps %d rows", len(want))
		}
		// Each chart has its key.
		for id, n := range map[string]int{"requests-chart-key": 4, "latency-chart-key": 3} {
			if got := eval[int](b, fmt.Sprintf(`document.querySelectorAll("[data-testid=%s] li").length`, id)); got != n {
				t.Fatalf("%d px: %s has %d entries, want %d", width, id, got, n)
			}
		}
		if got := eval[string](b, `document.querySelector("[data-testid=total-requests]").textContent`); got != "16" {
			t.Fatalf("the total reads %q", got)
		}
		if got := eval[string](b, `[...document.querySelectorAll("[data-testid=stats-routes] tbody tr")].map(r => r.children[0].textContent.trim() + " " + r.children[1].textContent.trim()).join(", ")`); got != "hello 13, find failing 3" {
			t.Fatalf("the routes table: %q", got)
		}
		// The hover tooltip names the time and each class.
		b.do(chromedp.ScrollIntoView("#requests-chart"))
		box := eval[[]float64](b, `(r => [r.left + r.width - 20, r.top + r.height / 2])(document.querySelector("#requests-chart .u-over").getBoundingClientRect())`)
		b.do(chromedp.MouseEvent("mouseMoved", box[0], box[1]))
		if tip := eval[string](b, `document.querySelector("#requests-chart .chart-tip").textContent`); !strings.Contains(tip, "UTC") || !strings.Contains(tip, "5xx: ") {
			t.Fatalf("the tooltip reads %q", tip)
		}
		b.audit(fmt.Sprintf("the analytics page at %d px", width))
		b.screenshot(fmt.Sprintf("stats-%d", width))
		// The range switch, by keyboard.
		b.tabToMatch(`[data-testid=stats-ranges] a[href$="range=24h"]`)
		b.press("\r")
		b.waitText("by hour")
		if cur := eval[string](b, `document.querySelector("[data-testid=stats-ranges] [aria-current=page]").textContent`); cur != "24h" {
			t.Fatalf("the range after the switch: %q", cur)
		}
	}
	// Where people already look: the routes list and the route's page say
	// how each route did over the last 24 hours, with a small p99 line.
	b.resize(1280, 844)
	b.do(chromedp.Navigate(app.URL + "/web/routes?id=shop"))
	b.waitText("13 requests · 0.0 % 5xx")
	b.waitText("3 requests · 100.0 % 5xx")
	if n := eval[int](b, `document.querySelectorAll("[data-testid=route-health] svg path").length`); n != 4 {
		t.Fatalf("%d p99 lines in the routes list", n)
	}
	b.do(chromedp.Navigate(app.URL + "/web/routes/view?project_id=shop&route_id=find"))
	b.waitText("Last 24 hours:")
	b.waitText("3 requests · 100.0 % 5xx")
	b.screenshot("route-health-1280")
	b.checkClean()
}
