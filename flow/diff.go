package flow

import (
	"bytes"
	"encoding/json"
	"sort"
)

// FieldChange is one field whose value differs between two versions, its
// values in compact JSON.
type FieldChange struct {
	Field string `json:"field"`
	Label string `json:"label"`
	Old   string `json:"old"`
	New   string `json:"new"`
}

// BlockChange is how one block differs between two flows: added, removed,
// moved (the same block at another place) or changed (the same type at the
// same place among its neighbours, with Fields saying what changed).
type BlockChange struct {
	Kind   string        `json:"kind"`
	From   int           `json:"from"` // index in the older flow; -1 when added
	To     int           `json:"to"`   // index in the newer flow; -1 when removed
	Type   string        `json:"type"`
	Fields []FieldChange `json:"fields,omitempty"`
}

// RouteDiff is what changed from one route document to another: the fields
// of the request, then the blocks.
type RouteDiff struct {
	Request []FieldChange `json:"request"`
	Blocks  []BlockChange `json:"blocks"`
}

// Empty says whether the two documents were the same.
func (d RouteDiff) Empty() bool { return len(d.Request) == 0 && len(d.Blocks) == 0 }

// lcsCells bounds the table of the longest common subsequence: flows whose
// differing middles are larger are compared block for block by position.
const lcsCells = 4 << 20

// DiffRoutes compares route a with route b, a the older, its blocks
// paired as alignBlocks says.
func DiffRoutes(a, b Route) RouteDiff {
	d := RouteDiff{Request: []FieldChange{}, Blocks: []BlockChange{}}
	for _, f := range []struct {
		name     string
		old, new any
	}{
		{"route_id", a.RouteID, b.RouteID}, {"method", a.Method, b.Method}, {"route_path", a.RoutePath, b.RoutePath},
		{"auth_jwt", a.AuthJWT, b.AuthJWT}, {"auth_signature", a.AuthSignature, b.AuthSignature},
		{"params", a.Params, b.Params}, {"body", a.Body, b.Body},
	} {
		o, n := compact(f.old), compact(f.new)
		if o != n {
			d.Request = append(d.Request, FieldChange{Field: f.name, Label: requestLabels[f.name], Old: o, New: n})
		}
	}
	d.Blocks = diffBlocks(a.Flow.Blocks, b.Flow.Blocks)
	return d
}

var requestLabels = map[string]string{"route_id": "Route id", "method": "Method", "route_path": "Path",
	"auth_jwt": "Sign-in (auth_jwt)", "auth_signature": "Signed webhooks (auth_signature)", "params": "Query parameters", "body": "Body fields"}

func compact(v any) string {
	raw, _ := json.Marshal(v)
	return string(raw)
}

func diffBlocks(a, b []Block) []BlockChange {
	al := alignBlocks(a, b)
	changes := []BlockChange{}
	reached := make([]bool, len(b))
	for i, j := range al.to {
		switch {
		case j < 0:
			changes = append(changes, BlockChange{Kind: "removed", From: i, To: -1, Type: a[i].Type})
		case al.moved[i]:
			changes = append(changes, BlockChange{Kind: "moved", From: i, To: j, Type: b[j].Type})
		case al.keys[0][i] != al.keys[1][j]:
			changes = append(changes, BlockChange{Kind: "changed", From: i, To: j, Type: a[i].Type, Fields: blockFieldChanges(a[i], b[j])})
		}
		if j >= 0 {
			reached[j] = true
		}
	}
	for j, r := range reached {
		if !r {
			changes = append(changes, BlockChange{Kind: "added", From: -1, To: j, Type: b[j].Type})
		}
	}
	// In the order a reader walks the newer flow; a removed block where it
	// stood, before what took its place.
	at := func(c BlockChange) (int, int) {
		if c.To >= 0 {
			return c.To, 1
		}
		return c.From, 0
	}
	sort.SliceStable(changes, func(x, y int) bool {
		px, rx := at(changes[x])
		py, ry := at(changes[y])
		return px < py || px == py && rx < ry
	})
	return changes
}

// alignment says where each block of an older flow went in a newer one.
type alignment struct {
	to    []int       // per older block: its index in the newer flow, -1 when removed
	from  []int       // per newer block: its index in the older flow, -1 when added
	moved []bool      // per older block: equal, but out of the order the others keep
	keys  [2][]string // the blocks' encodings, older and newer
}

// alignBlocks pairs the blocks of a with those of b. Blocks equal in both,
// in order, are paired first (a longest common subsequence); a block left
// over in a that is equal to one left over in b has moved; what is left
// between two paired blocks is paired by type, in order, as changed; the
// rest was removed or added.
func alignBlocks(a, b []Block) alignment {
	ka, kb := blockKeys(a), blockKeys(b)
	al := alignment{to: make([]int, len(a)), from: make([]int, len(b)), moved: make([]bool, len(a)), keys: [2][]string{ka, kb}}
	for i := range al.to {
		al.to[i] = -1
	}
	for j := range al.from {
		al.from[j] = -1
	}
	pair := func(i, j int) { al.to[i], al.from[j] = j, i }
	pairs := matchEqual(ka, kb)
	for _, p := range pairs {
		pair(p[0], p[1])
	}
	// Moved: a block left over on both sides with the same encoding.
	waiting := map[string][]int{}
	for i, j := range al.to {
		if j < 0 {
			waiting[ka[i]] = append(waiting[ka[i]], i)
		}
	}
	for j, i := range al.from {
		if q := waiting[kb[j]]; i < 0 && len(q) > 0 {
			waiting[kb[j]] = q[1:]
			pair(q[0], j)
			al.moved[q[0]] = true
		}
	}
	// Changed: between two paired blocks, what is left is paired by type,
	// in order.
	bounds := append(append([][2]int{{-1, -1}}, pairs...), [2]int{len(a), len(b)})
	for g := 1; g < len(bounds); g++ {
		lo, hi := bounds[g-1], bounds[g]
		j := lo[1] + 1
		for i := lo[0] + 1; i < hi[0]; i++ {
			if al.to[i] >= 0 {
				continue
			}
			for k := j; k < hi[1]; k++ {
				if al.from[k] < 0 && b[k].Type == a[i].Type {
					pair(i, k)
					j = k + 1
					break
				}
			}
		}
	}
	return al
}

// blockKeys encodes each block, for comparing blocks whole.
func blockKeys(blocks []Block) []string {
	out := make([]string, len(blocks))
	for i := range blocks {
		raw, _ := json.Marshal(blocks[i].wire())
		out[i] = string(raw)
	}
	return out
}

// matchEqual returns the index pairs of a longest common subsequence of a
// and b, in order. The common start and end are matched first; a middle
// too large for the table is matched by position where equal.
func matchEqual(a, b []string) [][2]int {
	var head, tail [][2]int
	s := 0
	for s < len(a) && s < len(b) && a[s] == b[s] {
		head = append(head, [2]int{s, s})
		s++
	}
	ea, eb := len(a), len(b)
	for ea > s && eb > s && a[ea-1] == b[eb-1] {
		ea, eb = ea-1, eb-1
		tail = append([][2]int{{ea, eb}}, tail...)
	}
	n, m := ea-s, eb-s
	var mid [][2]int
	switch {
	case n == 0 || m == 0:
	case n*m > lcsCells:
		for k := 0; k < min(n, m); k++ {
			if a[s+k] == b[s+k] {
				mid = append(mid, [2]int{s + k, s + k})
			}
		}
	default:
		// lengths[i][j]: the longest common subsequence of a[s+i:ea] and
		// b[s+j:eb].
		lengths := make([][]int32, n+1)
		for i := range lengths {
			lengths[i] = make([]int32, m+1)
		}
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if a[s+i] == b[s+j] {
					lengths[i][j] = lengths[i+1][j+1] + 1
				} else {
					lengths[i][j] = max(lengths[i+1][j], lengths[i][j+1])
				}
			}
		}
		for i, j := 0, 0; i < n && j < m; {
			switch {
			case a[s+i] == b[s+j]:
				mid = append(mid, [2]int{s + i, s + j})
				i, j = i+1, j+1
			case lengths[i+1][j] >= lengths[i][j+1]:
				i++
			default:
				j++
			}
		}
	}
	return append(append(head, mid...), tail...)
}

// blockFieldChanges lists the fields of two blocks of one type whose values
// differ, in the field table's order, the indent first.
func blockFieldChanges(a, b Block) []FieldChange {
	var out []FieldChange
	if a.Depth != b.Depth {
		out = append(out, FieldChange{Field: "depth", Label: "Indent", Old: compact(a.Depth), New: compact(b.Depth)})
	}
	fa, fb := wireFields(a), wireFields(b)
	for _, f := range blockFields[a.Type] {
		if o, n := fa[f.name], fb[f.name]; !bytes.Equal(o, n) {
			out = append(out, FieldChange{Field: f.name, Label: FieldLabel(f.name), Old: string(o), New: string(n)})
		}
	}
	return out
}

// wireFields returns the fields of b as its JSON form writes them (empty
// lists as [], absent objects as null), by name.
func wireFields(b Block) map[string]json.RawMessage {
	raw, _ := json.Marshal(b.wire())
	var out map[string]json.RawMessage
	_ = json.Unmarshal(raw, &out)
	return out
}
