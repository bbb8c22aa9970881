package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"stencil/engine"
	"stencil/flow"
	"stencil/store"
)

// bodyMaxBytes bounds the JSON body a route takes (docs/engine.md).
const bodyMaxBytes = 1 << 20

// inputs reads a request's variables (docs/engine.md): path parameters,
// the declared query parameters split on the route's delimiter and typed,
// the declared body fields typed, and — when auth_jwt is on — the caller
// and its record as auth.
func (s *Service) inputs(ctx context.Context, r flow.Route, params map[string]string, req *Request) (map[string]any, *store.Caller, error) {
	vars := make(map[string]any, len(params)+len(r.Params.Pairs)+len(r.Body)+1)
	// In the path's order, so that the first bad one is named.
	for _, name := range engine.PathParams(r.RoutePath) {
		v, ok := params[name]
		if !ok {
			continue
		}
		if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 {
			return nil, nil, &Refusal{Status: http.StatusBadRequest, Message: "Error: path parameter " + name + " contains a NUL character or invalid UTF-8"}
		}
		vars[name] = v
	}
	if err := queryInputs(vars, r.Params, req.Query); err != nil {
		return nil, nil, err
	}
	if err := bodyInputs(vars, r.Body, req.Body); err != nil {
		return nil, nil, err
	}
	if !r.AuthJWT.Active {
		return vars, nil, nil
	}
	caller := req.Caller
	if caller == nil {
		if req.Resolve == nil {
			return nil, nil, &Refusal{Status: http.StatusUnauthorized, Message: NoTokenMessage}
		}
		var err error
		if caller, err = req.Resolve(); err != nil {
			return nil, nil, err
		}
	}
	rec, err := s.routeAuth(ctx, r, caller)
	if err != nil {
		return nil, caller, err
	}
	vars["auth"] = rec
	return vars, caller, nil
}

// queryInputs puts the declared query parameters of query in vars, typed;
// one not given is null.
func queryInputs(vars map[string]any, declared flow.Params, query string) error {
	if len(declared.Pairs) == 0 {
		return nil
	}
	given := map[string]string{}
	// A custom delimiter splits the query, and so does "&", as every
	// client generated from the route's document sends it: an "&" inside
	// a value is sent as %26 by any client anyway.
	var parts []string
	for _, part := range strings.Split(query, declared.Delimiter) {
		parts = append(parts, strings.Split(part, "&")...)
	}
	for _, part := range parts {
		k, v, _ := strings.Cut(part, "=")
		key, err1 := url.QueryUnescape(k)
		value, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			return &Refusal{Status: http.StatusBadRequest, Message: "Error: the query string is not valid URL encoding"}
		}
		if _, seen := given[key]; !seen {
			given[key] = value
		}
	}
	for _, p := range declared.Pairs {
		text, ok := given[p.ID]
		if !ok {
			vars[p.ID] = nil
			continue
		}
		v, err := engine.ConvertText(text, p.BDType)
		if err != nil {
			return &Refusal{Status: http.StatusBadRequest, Message: fmt.Sprintf("Error: query parameter %s %s", p.ID, err)}
		}
		vars[p.ID] = v
	}
	return nil
}

// bodyInputs puts the declared fields of the JSON object body in vars,
// typed; each is required.
func bodyInputs(vars map[string]any, declared []flow.Param, body []byte) error {
	if len(declared) == 0 {
		return nil
	}
	if len(body) > bodyMaxBytes {
		return &Refusal{Status: http.StatusRequestEntityTooLarge, Message: "Error: the body is too large (at most 1 MiB)"}
	}
	// Each field is decoded on its own, so that a value no Go type holds
	// (a number past float64's range) is named by its field.
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		return &Refusal{Status: http.StatusBadRequest, Message: "Error: the body must be a JSON object"}
	}
	for _, p := range declared {
		raw, ok := fields[p.ID]
		if !ok {
			return &Refusal{Status: http.StatusBadRequest, Message: fmt.Sprintf("Error: body field %s is required", p.ID)}
		}
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			return &Refusal{Status: http.StatusBadRequest, Message: fmt.Sprintf("Error: body field %s holds a number past a 64-bit float's range", p.ID)}
		}
		v, err := engine.ConvertJSON(v, p.BDType)
		if err != nil {
			return &Refusal{Status: http.StatusBadRequest, Message: fmt.Sprintf("Error: body field %s %s", p.ID, err)}
		}
		vars[p.ID] = v
	}
	return nil
}

// routeAuth checks the caller p of an auth_jwt route: its attribute named
// by field must equal the property field of a record of ref_col (else
// 403). It returns that record, with its _id.
func (s *Service) routeAuth(ctx context.Context, r flow.Route, p *store.Caller) (map[string]any, error) {
	var attr any
	switch r.AuthJWT.Field {
	case "uid":
		attr = float64(p.User.ID)
	case "username":
		attr = p.User.Username
	case "email":
		attr = p.User.Email
	default:
		return nil, &Refusal{Status: http.StatusForbidden, Message: fmt.Sprintf("Error: auth_jwt.field %s is not an attribute of callers (uid, username or email)", r.AuthJWT.Field)}
	}
	where, _ := json.Marshal(map[string]any{r.AuthJWT.Field: attr})
	recs, err := s.reads.RunRecords(ctx, r.ProjectID, r.AuthJWT.RefCol, store.RecordQuery{Where: where, Limit: 1})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, &Refusal{Status: http.StatusForbidden, Message: fmt.Sprintf("Error: the collection %s that lists this route's callers does not exist", r.AuthJWT.RefCol)}
	case err != nil:
		return nil, err
	case len(recs) == 0:
		return nil, &Refusal{Status: http.StatusForbidden, Message: fmt.Sprintf("Error: %s %v is not among this route's callers", r.AuthJWT.Field, text(attr))}
	}
	rec, err := engine.NewDecoder().Object(recs[0].Data)
	if err != nil {
		return nil, err
	}
	rec["_id"] = float64(recs[0].ID)
	return rec, nil
}

func text(v any) string {
	if f, ok := v.(float64); ok {
		return fmt.Sprint(int64(f))
	}
	return fmt.Sprint(v)
}

// NoTokenMessage is the refusal of a route that checks its callers to a
// request without a bearer token.
const NoTokenMessage = "Error: this route needs a bearer token of the platform (a JWT from /user/login or a personal access token)"
