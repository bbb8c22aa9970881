package handlers

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"

	"github.com/getkin/kin-openapi/openapi3"
)

// TestOneStatusForOneMistake: a method no handler takes is 405 before any
// handler's rule; present-but-empty is 422 and absent is 400 everywhere,
// the 400's message naming the field that is missing; messages name
// fields by their JSON names; names people read refuse control
// characters; /x answers JSON whatever the client accepts.
func TestOneStatusForOneMistake(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	h := as(ta.token(t, ta.root))
	req := httptest.NewRequest("TRACE", "/data/create?uid=0", nil)
	req.Header.Set("Authorization", h["Authorization"])
	resp, body := ta.do(t, req)
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
		t.Errorf("TRACE with a uid of another user: %d Allow=%q %s", resp.StatusCode, resp.Header.Get("Allow"), body)
	}
	ta.run(t, []scenario{
		{name: "an empty project_id breaks a rule", method: "GET", path: "/project/fetch/one?project_id=", headers: h, status: 422,
			want: []string{`"project_id":"must not be empty"`}},
		{name: "an absent project_id is missing", method: "GET", path: "/project/fetch/one", headers: h, status: 400,
			want: []string{`"message":"Error: project_id is required"`}},
		{name: "the 400 names the field that is missing", method: "POST", path: "/project/member/add", headers: h, body: `{"project_id":""}`, status: 400,
			want: []string{`"message":"Error: target_uid is required (or give username)"`}},
		{name: "an either-or names the other field by its JSON name", method: "POST", path: "/user/password", headers: h,
			body: `{"new_password":"a-new-password-1"}`, status: 400, want: []string{"current_password is required (or give target_uid)"}},
		{name: "a token name with control characters", method: "POST", path: "/pat/create", headers: h, body: `{"name":"XM\u0001E\u001b"}`, status: 422,
			want: []string{`"name":"must not contain control characters"`}},
	})
	// A field name a client sent is echoed with its control characters
	// escaped, in the message and in data.fields.
	status, out := ta.call(t, "POST", "/route/template/create", `{"name":"t","description":"d","method":"GET","route_id":"r","route_path":"/r",`+
		`"auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],"variables":[],"flow":{"blocks":[]},"a\u0001b":1}`, h)
	var env struct {
		Message string
		Data    struct{ Fields map[string]string }
	}
	_ = json.Unmarshal([]byte(out), &env)
	echoed := env.Message
	for k := range env.Data.Fields {
		echoed += k
	}
	if status != 422 || strings.ContainsFunc(echoed, unicode.IsControl) || !strings.Contains(echoed, `a\u0001b`) {
		t.Errorf("an unknown field with a control character: %d %q", status, echoed)
	}
	req = httptest.NewRequest("GET", "/x/shop/books?limit=%00", nil)
	resp, body = ta.do(t, req)
	if resp.StatusCode != 400 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") || !strings.HasPrefix(body, `{"status":400`) {
		t.Errorf("/x with a NUL and no Accept: %d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}

// TestDocumentSaysWhatIsRefused: the document says what the service
// enforces — uid is a positive 64-bit id; the parts of a route or template
// document that refuse unknown fields say so.
func TestDocumentSaysWhatIsRefused(t *testing.T) {
	t.Parallel()
	ta := newTestApp(t)
	doc := ta.h.api.Doc
	uid := doc.Components.Parameters["Uid"].Value.Schema.Value
	if uid.Format != "int64" || uid.Min == nil || *uid.Min != 1 {
		t.Errorf("uid: format %q, minimum %v", uid.Format, uid.Min)
	}
	parts := doc.Components.Schemas["RequestParts"].Value.Properties
	for name, s := range map[string]*openapi3.Schema{"auth_jwt": parts["auth_jwt"].Value, "params": parts["params"].Value, "flow": parts["flow"].Value,
		"Variable": doc.Components.Schemas["Variable"].Value, "Param": doc.Components.Schemas["Param"].Value} {
		if s.AdditionalProperties.Has == nil || *s.AdditionalProperties.Has {
			t.Errorf("%s does not say that unknown fields are refused", name)
		}
	}
	// Identifiers carry the pattern their rule has, so that a client never
	// sends one the service refuses for its shape.
	for name, want := range map[string]string{"ProjectId": "^[a-z][a-z0-9_]{2,49}$", "CollectionId": "^[a-z][a-z0-9_]{2,49}$",
		"CollectionIdAsId": "^[a-z][a-z0-9_]{2,49}$", "VaultKey": "^[A-Z][A-Z0-9_]{0,254}$"} {
		if got := doc.Components.Parameters[name].Value.Schema.Value.Pattern; got != want {
			t.Errorf("%s: pattern %q, want %q", name, got, want)
		}
	}
	// Either-or requirements are stated.
	for _, name := range []string{"MemberInput", "PasswordChange"} {
		if len(doc.Components.Schemas[name].Value.AnyOf) != 2 {
			t.Errorf("%s does not state its either-or requirement", name)
		}
	}
	pat := doc.Paths.Value("/pat/create").Post.RequestBody.Value.Content["application/json"].Schema.Value.Properties
	if vf := pat["valid_from"].Value; !vf.Type.Includes("null") || len(vf.AnyOf) != 3 {
		t.Errorf("valid_from: %v %d", vf.Type, len(vf.AnyOf))
	}
}
