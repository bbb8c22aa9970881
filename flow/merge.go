package flow

import (
	"reflect"
	"strconv"
	"strings"
)

// A route made from a template is upgraded by a three-way merge (docs/routes.md):
// base is the template's version the route was made from, applied
// with the values kept; theirs is the newer version applied with the same
// values; ours is the route as it is today. What only one side changed is
// taken from that side; where both changed the same field of the same
// block differently, the field is a conflict that a side must be chosen
// for.

// Sides of a conflict.
const (
	TakeTemplate = "template"
	TakeRoute    = "route"
)

// Conflict is one field both the template and the route changed, each its
// own way, since the route was made.
type Conflict struct {
	// Block is the block's index in the route as it was made (the base);
	// -1 for a field of the request and for the order of the blocks.
	Block int    `json:"block"`
	Type  string `json:"type"` // the block's type; empty for the request
	// Field is the field's name; "depth" for its indent, "block" when one
	// side removed a block the other changed, "order" when both moved
	// blocks.
	Field string `json:"field"`
	Label string `json:"label"`
	// The template's and the route's values in compact JSON; empty for a
	// removed block.
	Template string `json:"template"`
	Route    string `json:"route"`
	// RouteBlock and TemplateBlock are the block's indexes in the route
	// today and in the template's newest version, -1 where it was removed
	// or the conflict is not of one block.
	RouteBlock    int `json:"route_block"`
	TemplateBlock int `json:"template_block"`
}

// Merge is an upgrade's outcome.
type Merge struct {
	Route     Route      // the merged route, every unresolved conflict taking the route's side
	Template  RouteDiff  // what the template changed between the two versions
	Local     RouteDiff  // what the route's own edits changed since it was made
	Conflicts []Conflict // the request's first, then the order, then by block
	// Unresolved counts the conflicts resolve gave no side for.
	Unresolved int
}

// MergeRoutes merges theirs (the template's newer version) into ours (the
// route) given base (the older version, as the route was made). resolve
// says which side a conflict takes: TakeTemplate, TakeRoute, or "" when
// none was chosen (the route's side is kept and counted unresolved). The
// merged route has ours's project and template reference.
func MergeRoutes(base, theirs, ours Route, resolve func(Conflict) string) Merge {
	m := Merge{Template: DiffRoutes(base, theirs), Local: DiffRoutes(base, ours), Conflicts: []Conflict{}}
	take := func(c Conflict) bool {
		m.Conflicts = append(m.Conflicts, c)
		switch resolve(c) {
		case TakeTemplate:
			return true
		case TakeRoute:
		default:
			m.Unresolved++
		}
		return false
	}
	out := ours
	out.Flow = Flow{}
	// The request's fields, each whole.
	for _, f := range []struct {
		name          string
		b, t, o, into any
	}{
		{"route_id", &base.RouteID, &theirs.RouteID, &ours.RouteID, &out.RouteID},
		{"method", &base.Method, &theirs.Method, &ours.Method, &out.Method},
		{"route_path", &base.RoutePath, &theirs.RoutePath, &ours.RoutePath, &out.RoutePath},
		{"auth_jwt", &base.AuthJWT, &theirs.AuthJWT, &ours.AuthJWT, &out.AuthJWT},
		{"params", &base.Params, &theirs.Params, &ours.Params, &out.Params},
		{"body", &base.Body, &theirs.Body, &ours.Body, &out.Body},
	} {
		b, t, o := compactOf(f.b), compactOf(f.t), compactOf(f.o)
		if t == b || t == o {
			continue
		}
		if o == b || take(Conflict{Block: -1, Field: f.name, Label: requestLabels[f.name], Template: t, Route: o, RouteBlock: -1, TemplateBlock: -1}) {
			reflect.ValueOf(f.into).Elem().Set(reflect.ValueOf(f.t).Elem())
		}
	}
	out.Flow.Blocks = mergeBlocks(base.Flow.Blocks, theirs.Flow.Blocks, ours.Flow.Blocks, take)
	m.Route = out
	return m
}

func compactOf(p any) string { return compact(reflect.ValueOf(p).Elem().Interface()) }

// mergeBlocks merges the flows. One side's order is the skeleton: the
// template's when only it moved blocks, the route's otherwise (a conflict
// when both did). Walking the skeleton, a block both sides kept is merged
// field by field; a block one side removed goes when the other left it
// unchanged and is a conflict when the other changed it; blocks either
// side added stand after the block they followed on their side.
func mergeBlocks(base, theirs, ours []Block, take func(Conflict) bool) []Block {
	at := alignBlocks(base, theirs)
	ao := alignBlocks(base, ours)
	skeletonTheirs := false
	if reordered(at) {
		skeletonTheirs = !reordered(ao) || take(Conflict{Block: -1, Field: "order", Label: "Order of blocks",
			Template: orderOf(at), Route: orderOf(ao), RouteBlock: -1, TemplateBlock: -1})
	}
	sides := [2][]Block{ours, theirs}
	aligns := [2]alignment{ao, at}
	sk := 0 // the skeleton's side: 0 ours, 1 theirs
	if skeletonTheirs {
		sk = 1
	}
	other := 1 - sk

	// keep decides, for each base block, whether the merged flow has it,
	// and merges it when it does.
	merged := make([]*Block, len(base))
	for i := range base {
		jo, jt := ao.to[i], at.to[i]
		changedO := jo >= 0 && ao.keys[1][jo] != ao.keys[0][i]
		changedT := jt >= 0 && at.keys[1][jt] != at.keys[0][i]
		switch {
		case jo >= 0 && jt >= 0:
			b := mergeBlock(i, jo, jt, base[i], theirs[jt], ours[jo], take)
			merged[i] = &b
		case jo < 0 && jt < 0:
		case jo < 0: // the route removed it
			if changedT && take(Conflict{Block: i, Type: base[i].Type, Field: "block", Label: "Block removed by the route, changed by the template",
				Template: compact(theirs[jt].wire()), RouteBlock: -1, TemplateBlock: jt}) {
				b := theirs[jt]
				merged[i] = &b
			}
		default: // the template removed it
			if changedO && !take(Conflict{Block: i, Type: base[i].Type, Field: "block", Label: "Block removed by the template, changed by the route",
				Route: compact(ours[jo].wire()), RouteBlock: jo, TemplateBlock: -1}) {
				b := ours[jo]
				merged[i] = &b
			}
		}
	}

	// after[k+1] holds what stands after the skeleton's block k (after[0]:
	// before its first): the other side's additions, and merged blocks the
	// skeleton side removed.
	skel := sides[sk]
	after := make([][]Block, len(skel)+1)
	anchor := func(j int) int { // the skeleton's index of what the other side's block j follows, -1 for the start
		for p := j - 1; p >= 0; p-- {
			if i := aligns[other].from[p]; i >= 0 {
				if k := aligns[sk].to[i]; k >= 0 {
					return k
				}
			}
		}
		return -1
	}
	for j, blk := range sides[other] {
		i := aligns[other].from[j]
		switch {
		case i < 0:
			after[anchor(j)+1] = append(after[anchor(j)+1], blk)
		case aligns[sk].to[i] < 0 && merged[i] != nil:
			after[anchor(j)+1] = append(after[anchor(j)+1], *merged[i])
		}
	}
	out := append([]Block{}, after[0]...)
	for k, blk := range skel {
		switch i := aligns[sk].from[k]; {
		case i < 0:
			out = append(out, blk)
		case merged[i] != nil:
			out = append(out, *merged[i])
		}
		out = append(out, after[k+1]...)
	}
	return out
}

// mergeBlock merges base block i (the route's block jo today, the
// template's jt) field by field: the side that changed a field gives it;
// both changing it differently is a conflict.
func mergeBlock(i, jo, jt int, base, theirs, ours Block, take func(Conflict) bool) Block {
	out := ours // paired blocks share their type (alignBlocks)
	if theirs.Depth != base.Depth && theirs.Depth != ours.Depth {
		if ours.Depth == base.Depth || take(Conflict{Block: i, Type: base.Type, Field: "depth", Label: "Indent",
			Template: strconv.Itoa(theirs.Depth), Route: strconv.Itoa(ours.Depth), RouteBlock: jo, TemplateBlock: jt}) {
			out.Depth = theirs.Depth
		}
	}
	fb, ft, fo := wireFields(base), wireFields(theirs), wireFields(ours)
	for _, f := range blockFields[base.Type] {
		b, t, o := string(fb[f.name]), string(ft[f.name]), string(fo[f.name])
		if t == b || t == o {
			continue
		}
		if o == b || take(Conflict{Block: i, Type: base.Type, Field: f.name, Label: FieldLabel(f.name), Template: t, Route: o, RouteBlock: jo, TemplateBlock: jt}) {
			reflect.ValueOf(out.slot(f.name)).Elem().Set(reflect.ValueOf(theirs.slot(f.name)).Elem())
		}
	}
	return out
}

// reordered says whether the blocks kept from the older flow stand in
// another order in the newer one.
func reordered(al alignment) bool {
	last := -1
	for _, i := range al.from {
		if i >= 0 {
			if i < last {
				return true
			}
			last = i
		}
	}
	return false
}

// orderOf writes the older flow's blocks, numbered from 1, in the order
// the newer one has them.
func orderOf(al alignment) string {
	var parts []string
	for _, i := range al.from {
		if i >= 0 {
			parts = append(parts, strconv.Itoa(i+1))
		}
	}
	return "[" + strings.Join(parts, ",") + "]"
}
