package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"stencil/flow"
)

// Shorthands that write flow JSON.

func lit(rtype, data string) string {
	return fmt.Sprintf(`{"ref_var":false,"rtype":%q,"data":%q}`, rtype, data)
}

func num(n string) string { return lit("FLOAT", n) }
func str(s string) string { return lit("STRING", s) }

func ref(name string) string {
	return fmt.Sprintf(`{"ref_var":true,"rtype":"OTHER","data":%q}`, name)
}

// cond is a condition joined to the next by next ("" is NONE).
func cond(left, op, right, next string) string {
	if next == "" {
		next = "NONE"
	}
	return fmt.Sprintf(`{"left":%s,"right":%s,"condition_type":%q,"not":false,"next":%q}`, left, right, op, next)
}

func notCond(left, op, right string) string {
	return fmt.Sprintf(`{"left":%s,"right":%s,"condition_type":%q,"not":true,"next":"NONE"}`, left, right, op)
}

func op(left, typ, right string) string {
	return fmt.Sprintf(`{"left":%s,"right":%s,"operation_type":%q,"not":false,"next":"NONE"}`, left, right, typ)
}

func filt(typ, right, next string) string {
	if next == "" {
		next = "NONE"
	}
	return fmt.Sprintf(`{"right":%s,"operation_type":%q,"not":false,"next":%q}`, right, typ, next)
}

func list(items ...string) string { return "[" + strings.Join(items, ",") + "]" }

func pairs(kv ...string) string {
	var out []string
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, fmt.Sprintf(`{"id":%q,"data":%s}`, kv[i], kv[i+1]))
	}
	return list(out...)
}

func assign(name, value string) string {
	return fmt.Sprintf(`{"type":"ASSIGNMENT","depth":0,"local_name":%q,"conditions":[],"operations":[%s]}`, name, op(value, "NONE", lit("STRING", "")))
}

func returns(kv ...string) string {
	return fmt.Sprintf(`{"type":"RETURN","depth":0,"pairs":%s,"conditions":[]}`, pairs(kv...))
}

// at sets a block's depth.
func at(depth int, block string) string {
	return strings.Replace(block, `"depth":0`, fmt.Sprintf(`"depth":%d`, depth), 1)
}

// route builds a valid route from blocks; it fails the test when the
// route is not valid.
func route(t testing.TB, method string, blocks ...string) flow.Route {
	t.Helper()
	doc := fmt.Sprintf(`{"project_id":"shop","route_id":"r","route_path":"/r","method":%q,
		"auth_jwt":{"active":false,"field":"","ref_col":""},"params":{"delimiter":"&","pairs":[]},"body":[],
		"flow":{"blocks":[%s]},"template":null}`, method, strings.Join(blocks, ","))
	r, p := flow.DecodeRoute([]byte(doc), "")
	if len(p) > 0 {
		t.Fatalf("route does not decode: %v\n%s", p, doc)
	}
	r.Normalize()
	if p := flow.ValidateRoute(r, ""); len(p) > 0 {
		t.Fatalf("route is not valid: %v", p)
	}
	return r
}

func compile(t testing.TB, blocks ...string) *Plan {
	t.Helper()
	plan, p := Compile(route(t, "POST", blocks...), nil)
	if len(p) > 0 {
		t.Fatalf("Compile: %v", p)
	}
	return plan
}

// memEnv is an Env in memory: collections of records, a vault, an
// outbox, and what was read from the vault.
type memEnv struct {
	cols   map[string][]memRecord
	vault  map[string]string
	reads  []string
	queued []Email
	next   int64
	fail   error // returned by every call when set
	// upstream answers HTTP blocks (nil: echo, see echo); sent holds
	// their requests.
	upstream func(Call) (Reply, error)
	sent     []Call
	// jobs are the jobs enqueued; backlog makes Enqueue refuse them.
	jobs    []Job
	backlog bool
}

// memRecord is a record of a memEnv, its data decoded.
type memRecord struct {
	ID   int64
	Data map[string]any
}

func newMemEnv() *memEnv {
	return &memEnv{cols: map[string][]memRecord{}, vault: map[string]string{}, next: 1}
}

// add puts records, given as JSON objects, in collection col.
func (m *memEnv) add(col string, records ...string) {
	if _, ok := m.cols[col]; !ok {
		m.cols[col] = []memRecord{}
	}
	for _, raw := range records {
		var data map[string]any
		if err := json.Unmarshal([]byte(raw), &data); err != nil {
			panic(err)
		}
		m.cols[col] = append(m.cols[col], memRecord{ID: m.next, Data: data})
		m.next++
	}
}

// dump is collection col as JSON, for comparing.
func (m *memEnv) dump(col string) string {
	var parts []string
	for _, r := range m.cols[col] {
		b, _ := appendJSON(nil, r.Data, 1<<20)
		parts = append(parts, fmt.Sprintf("%d:%s", r.ID, b))
	}
	return strings.Join(parts, " ")
}

// contains is PostgreSQL's jsonb containment (@>): an object contains
// another when it has each of its keys with a value containing that key's
// value; an array contains another when each of its items is contained in
// some item; scalars must be equal.
func contains(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			hv, present := h[k]
			if !present || !contains(hv, v) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok {
			return false
		}
		for _, v := range w {
			if !slices.ContainsFunc(h, func(item any) bool { return contains(item, v) }) {
				return false
			}
		}
		return true
	}
	return equal(have, want)
}

func (m *memEnv) Select(_ context.Context, col string, q Query) ([]Record, error) {
	if m.fail != nil {
		return nil, m.fail
	}
	recs, ok := m.cols[col]
	if !ok {
		return nil, ErrNoCollection
	}
	var found []memRecord
	for _, r := range recs {
		if (q.Match == nil || contains(map[string]any(r.Data), q.Match)) && (!q.ByID || r.ID == q.ID) {
			found = append(found, r)
		}
	}
	byID := slices.Equal(q.Sort, []string{"_id"}) // the record's id: found is in its order
	if q.Sort != nil && !byID {
		// As PostgreSQL orders jsonb: numbers, strings; records without
		// the property last; then by id.
		slices.SortStableFunc(found, func(a, b memRecord) int {
			x, y := lookup(a.Data, q.Sort), lookup(b.Data, q.Sort)
			switch {
			case x == nil && y == nil:
				return 0
			case x == nil:
				return 1
			case y == nil:
				return -1
			}
			c := 0
			switch {
			case compare(opLess, x, y, nil):
				c = -1
			case compare(opGreater, x, y, nil):
				c = 1
			}
			if q.Descending {
				c = -c
			}
			return c
		})
	}
	if q.Descending && byID {
		slices.Reverse(found)
	}
	var out []Record
	for _, r := range found {
		if len(out) == q.Limit {
			break
		}
		b, _ := json.Marshal(r.Data)
		out = append(out, Record{ID: r.ID, Data: b})
	}
	return out, nil
}

func (m *memEnv) Delete(_ context.Context, col string, ids []int64) error {
	m.cols[col] = slices.DeleteFunc(m.cols[col], func(r memRecord) bool { return slices.Contains(ids, r.ID) })
	return nil
}

func (m *memEnv) Insert(_ context.Context, col string, data []byte) (int64, error) {
	if _, ok := m.cols[col]; !ok {
		return 0, ErrNoCollection
	}
	m.add(col, string(data))
	return m.next - 1, nil
}

func (m *memEnv) Update(_ context.Context, col string, writes []Write) error {
	for _, w := range writes {
		for i := range m.cols[col] {
			if m.cols[col][i].ID == w.ID {
				var data map[string]any
				if err := json.Unmarshal(w.Data, &data); err != nil {
					return err
				}
				m.cols[col][i].Data = data
			}
		}
	}
	return nil
}

func (m *memEnv) Vault(_ context.Context, key string) (string, error) {
	v, ok := m.vault[key]
	if !ok {
		return "", ErrNoVaultKey
	}
	m.reads = append(m.reads, key)
	return v, nil
}

func (m *memEnv) Queue(_ context.Context, e Email) error {
	e.Pairs = maps.Clone(e.Pairs)
	m.queued = append(m.queued, e)
	return nil
}

func (m *memEnv) Enqueue(_ context.Context, j Job) (int64, error) {
	if m.backlog {
		return 0, ErrJobBacklog
	}
	m.jobs = append(m.jobs, j)
	return int64(len(m.jobs)), nil
}

func (m *memEnv) Call(_ context.Context, c Call) (Reply, error) {
	m.sent = append(m.sent, c)
	if m.upstream != nil {
		return m.upstream(c)
	}
	return echo(c)
}

// echo answers 200 with the request as JSON: method, url, headers, body.
func echo(c Call) (Reply, error) {
	headers := map[string]string{}
	for _, h := range c.Header {
		headers[h.Name] = h.Value
	}
	body, _ := json.Marshal(map[string]any{"method": c.Method, "url": c.URL, "headers": headers, "body": string(c.Body)})
	return Reply{Status: 200, Header: map[string]string{"content-type": "application/json"}, Body: body, JSON: true}, nil
}
