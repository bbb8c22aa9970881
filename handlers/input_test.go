package handlers

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestContractDefects holds one row for each hostile request that once got
// a 500, a page, a bare text line, or parser words (docs/architecture.md, §2.3).
func TestContractDefects(t *testing.T) {
	t.Parallel()
	ta, keeper, h := vaultApp(t)
	other := ta.newUser(t, "other", "VIEWER")
	mine, theirs := itoa(keeper.ID), itoa(other.ID)
	xml := merge(h, map[string]string{"Content-Type": "application/xml"})
	form := merge(h, map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	multipart := merge(h, map[string]string{"Content-Type": "multipart/form-data; boundary=zz"})
	ta.run(t, []scenario{
		{name: "NUL in login, no account needed", method: "POST", path: "/user/login", headers: asJSONHeaders,
			body: `{"auth_data":"a\u0000","password":"x"}`, status: 400, want: []string{`"message":"Error: auth_data contains a NUL character or invalid UTF-8"`}},
		{name: "invalid UTF-8 in a filter", method: "GET", path: "/user/fetch?filter=%FF", headers: as(ta.token(t, ta.root)),
			status: 400, want: []string{`Error: filter contains a NUL character or invalid UTF-8`}},
		{name: "NUL in a vault key", method: "GET", path: "/vault/fetch/one?project_id=shop&key=A%00B", headers: h,
			status: 400, want: []string{`Error: key contains a NUL`}},
		{name: "NUL in a project name", method: "POST", path: "/project/create", headers: h,
			body: `{"id":"nul_name","name":"a\u0000b","api_path":"/nul","description":""}`, status: 400, want: []string{`Error: name contains`}},
		{name: "NUL deep in a template document", method: "POST", path: "/route/template/create", headers: h,
			body:   `{"name":"t","description":"d","method":"GET","route_id":"r","route_path":"/r","flow":{"blocks":[{"type":"FETCH","depth":0,"local_name":"x\u0000","ref_col":"c"}]}}`,
			status: 400, want: []string{`Error: flow.blocks[0].local_name contains`}},
		{name: "invalid UTF-8 in a JSON string", method: "POST", path: "/project/create", headers: h,
			body: "{\"id\":\"bad_utf\",\"name\":\"\xff\",\"api_path\":\"/b\"}", status: 400, want: []string{`Error: name contains`}},
		{name: "NUL in a form field", method: "POST", path: "/vault/create", headers: form,
			body: "project_id=shop&key=K&value=a%00b", status: 400, want: []string{`Error: value contains`}},
		{name: "offset not a number", method: "GET", path: "/vault/fetch?project_id=shop&offset=abc", headers: h,
			status: 400, want: []string{`"message":"Error: offset must be an integer"`}, unwanted: []string{"schema", "decode"}},
		{name: "limit zero names limit", method: "GET", path: "/route/template/fetch?limit=0", headers: h,
			status: 422, want: []string{`"limit":"must be at least 1"`}, unwanted: []string{"listQuery"}},
		{name: "limit not a number on users", method: "GET", path: "/user/fetch?limit=abc", headers: as(ta.token(t, ta.root)),
			status: 400, want: []string{`"message":"Error: limit must be an integer"`}},
		{name: "XML body", method: "POST", path: "/vault/create", headers: xml,
			body: `<e><project_id>shop</project_id><key>X</key><value>v</value></e>`, status: 415},
		{name: "multipart body", method: "POST", path: "/vault/create", headers: multipart, body: "--zz--", status: 415},
		{name: "malformed multipart", method: "POST", path: "/vault/create", headers: multipart, body: "garbage", status: 415},
		{name: "untyped body", method: "POST", path: "/vault/create", headers: merge(h, map[string]string{"Content-Type": ""}),
			body: `{"project_id":"shop","key":"U","value":"v"}`, status: 415},
		{name: "form body where documents are taken", method: "POST", path: "/route/template/create", headers: form,
			body: "name=t", status: 415},
		{name: "uid in query and another in body", method: "POST", path: "/vault/create?uid=" + mine, headers: h,
			body: `{"project_id":"shop","key":"UIDX","value":"v","uid":` + theirs + `}`, status: 403},
		{name: "uid repeated", method: "GET", path: "/vault/fetch?project_id=shop&uid=" + mine + "&uid=" + theirs, headers: h, status: 403},
		{name: "uid empty", method: "GET", path: "/vault/fetch?project_id=shop&uid=", headers: h, status: 400},
		{name: "uid as string in body, mine", method: "POST", path: "/vault/create", headers: h,
			body: `{"project_id":"shop","key":"UIDS","value":"v","uid":"` + mine + `"}`, status: 201},
		{name: "config without value", method: "POST", path: "/config/create", headers: as(ta.token(t, ta.root)),
			body: `{"key":"K"}`, status: 400, want: []string{`Error: value is required`}},
		{name: "long project id is cut in the message", method: "GET", path: "/project/fetch/one?project_id=" + strings.Repeat("q", 5000), headers: h,
			status: 404, want: []string{strings.Repeat("q", 100) + `…`}, unwanted: []string{strings.Repeat("q", 101)}},
		{name: "unknown method on a known path", method: "FOO", path: "/vault/fetch", headers: h, status: 405,
			header: map[string]string{"Allow": "GET, HEAD"}},
		{name: "unknown method on an unknown path", method: "FOO", path: "/nope", headers: h, status: 404},
		{name: "known method not routed", method: "PUT", path: "/vault/fetch", headers: h, status: 405,
			header: map[string]string{"Allow": "GET, HEAD"}},
		{name: "deep nesting", method: "POST", path: "/vault/create", headers: h,
			body: strings.Repeat("[", 100000) + strings.Repeat("]", 100000), status: 400, want: []string{"nests deeper"}},
		{name: "huge number", method: "POST", path: "/vault/create", headers: h,
			body: `{"project_id":"shop","key":"N","value":1e400}`, status: 400, want: []string{`value must be a string`}},
		{name: "huge offset", method: "GET", path: "/vault/fetch?project_id=shop&offset=99999999999999999999999", headers: h, status: 400},
	})

	t.Run("transport errors are envelopes too", func(t *testing.T) {
		base := ta.listen(t)
		for _, tc := range []struct {
			name, method, path, header, body string
			status                           int
		}{
			{name: "8 KB URL", method: "GET", path: "/vault/fetch?project_id=" + strings.Repeat("a", 8<<10), status: 431},
			{name: "20 KB header", method: "GET", path: "/healthz", header: strings.Repeat("h", 20<<10), status: 431},
			{name: "unknown method", method: "FOO", path: "/vault/fetch", status: 405},
		} {
			t.Run(tc.name, func(t *testing.T) {
				req, _ := http.NewRequest(tc.method, base+tc.path, strings.NewReader(tc.body))
				req.Header.Set("Accept", "application/json")
				req.Header.Set("Content-Type", "application/json")
				if tc.header != "" {
					req.Header.Set("X-Big", tc.header)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
					t.Fatalf("got %d %s %.200s", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
				}
				checkEnvelope(t, resp.StatusCode, raw)
			})
		}
		// Over-limit bodies are refused before they are read: send the head
		// and part of the body, then read the answer.
		for name, head := range map[string]string{
			"5 MB declared body": "Content-Length: 5242880\r\n",
			"5 MB chunked body":  "Transfer-Encoding: chunked\r\n",
		} {
			t.Run(name, func(t *testing.T) {
				conn, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				fmt.Fprintf(conn, "POST /vault/create HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\nContent-Type: application/json\r\n%s\r\n", head)
				if strings.HasPrefix(head, "Transfer") {
					chunk := strings.Repeat("x", 1<<20)
					for range 5 {
						fmt.Fprintf(conn, "%x\r\n%s\r\n", len(chunk), chunk)
					}
				}
				resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
				if err != nil {
					t.Fatal(err)
				}
				raw, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != 413 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
					t.Fatalf("got %d %s %.200s", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
				}
				checkEnvelope(t, resp.StatusCode, raw)
			})
		}
	})

	t.Run("refused requests changed nothing", func(t *testing.T) {
		var keys []string
		rows, err := ta.pool.Query(context.Background(), "SELECT key FROM vault_entries ORDER BY key")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var k string
			_ = rows.Scan(&k)
			keys = append(keys, k)
		}
		var projects, templates int
		_ = ta.pool.QueryRow(context.Background(), "SELECT (SELECT count(*) FROM projects), (SELECT count(*) FROM route_templates)").Scan(&projects, &templates)
		if strings.Join(keys, ",") != "UIDS" || projects != 1 || templates != 0 {
			t.Fatalf("keys %v, %d projects, %d templates", keys, projects, templates)
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestEveryBodyRefusesUnknownFields: one rule for every JSON body — a
// field its operation does not know is 422 naming it, and nothing
// changes — on a sign-in, a create, an update and a form anyone may
// send; a form-encoded body's extra inputs are a page's, not refused.
func TestEveryBodyRefusesUnknownFields(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	h := as(ta.token(t, ta.root))
	ta.run(t, []scenario{
		{name: "forgot password", method: "POST", path: "/user/password/forgot", headers: asJSONHeaders,
			body: `{"email":"root@example.com","colour":"red"}`, status: 422, want: []string{`"colour":"is not a known field"`}},
		{name: "sign-in", method: "POST", path: "/user/login", headers: asJSONHeaders,
			body: `{"auth_data":"root","password":"x","remember":true}`, status: 422, want: []string{`"remember":"is not a known field"`}},
		{name: "project create", method: "POST", path: "/project/create", headers: h,
			body: `{"id":"shop","name":"Shop","api_path":"/shop","owner":"me"}`, status: 422, want: []string{`"owner":"is not a known field"`}},
		{name: "not created", method: "GET", path: "/project/fetch/one?project_id=shop", headers: h, status: 404},
		{name: "the uid every body may carry", method: "POST", path: "/project/create", headers: h,
			body: fmt.Sprintf(`{"id":"shop","name":"Shop","api_path":"/shop","uid":%d}`, ta.root.ID), status: 201},
		{name: "project update", method: "PATCH", path: "/project/update", headers: h,
			body: `{"project_id":"shop","name":"Shop 2","nmae":"typo"}`, status: 422, want: []string{`"nmae":"is not a known field"`}},
		{name: "not updated", method: "GET", path: "/project/fetch/one?project_id=shop", headers: h, status: 200, want: []string{`"name":"Shop"`}},
	})
}
