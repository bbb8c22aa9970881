package runs

import (
	"encoding/json"
	"net/url"
	"strings"

	"stencil/engine"
	"stencil/flow"
	"stencil/store"
)

// ReplayValues are the playground's inputs of run r of route: its path
// parameters matched from the path, its query split on the route's
// delimiter and, when the run kept it, its body's fields, in the form the
// playground's inputs hold them (text, a switch's state, JSON text).
func ReplayValues(r store.Run, route flow.Route, apiPath string) map[string]any {
	path := map[string]string{}
	want := engine.Segments(route.RoutePath)
	got := engine.Segments(strings.TrimPrefix(r.Path, "/x"+strings.TrimSuffix(apiPath, "/")))
	for i, seg := range want {
		if name, ok := strings.CutPrefix(seg, ":"); ok && i < len(got) {
			v, err := url.PathUnescape(got[i])
			if err != nil {
				v = got[i]
			}
			path[name] = v
		}
	}
	query := map[string]string{}
	if r.Query != "" {
		for _, part := range strings.Split(strings.ReplaceAll(r.Query, route.Params.Delimiter, "&"), "&") {
			k, v, _ := strings.Cut(part, "=")
			k, _ = url.QueryUnescape(k)
			v, _ = url.QueryUnescape(v)
			query[k] = v
		}
	}
	body := map[string]any{}
	if r.Body != nil {
		var fields map[string]json.RawMessage
		if json.Unmarshal([]byte(*r.Body), &fields) == nil {
			for name, raw := range fields {
				var text string
				var flag bool
				switch {
				case json.Unmarshal(raw, &text) == nil:
					body[name] = text
				case json.Unmarshal(raw, &flag) == nil:
					body[name] = flag
				default:
					body[name] = string(raw)
				}
			}
		}
	}
	return map[string]any{"path": path, "query": query, "body": body, "dry": true}
}
