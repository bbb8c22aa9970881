package flow

import "fmt"

// The fields substitution touches (docs/routes.md) are visited here and nowhere
// else; Apply rewrites them, Lint reads them.

// visitor is called with the path and address of each substitutable string.
type visitor func(path string, s *string)

// walkRouteParts visits the substitutable strings of a route's or template's
// request definition and flow.
func walkRouteParts(routeID, routePath *string, auth *AuthJWT, params *Params, body []Param, flow *Flow, visit visitor) {
	visit("route_id", routeID)
	visit("route_path", routePath)
	visit("auth_jwt.field", &auth.Field)
	visit("auth_jwt.ref_col", &auth.RefCol)
	visit("params.delimiter", &params.Delimiter)
	for i := range params.Pairs {
		visit(fmt.Sprintf("params.pairs[%d].id", i), &params.Pairs[i].ID)
	}
	for i := range body {
		visit(fmt.Sprintf("body[%d].id", i), &body[i].ID)
	}
	for i := range flow.Blocks {
		flow.Blocks[i].walk(fmt.Sprintf("flow.blocks[%d]", i), visit)
	}
}

// walk visits every free-text field of the block and the data of every
// literal operand in it; enums, numbers, booleans and variable references
// are left alone.
func (b *Block) walk(path string, visit visitor) {
	for _, f := range blockFields[b.Type] {
		fp := path + "." + f.name
		switch f.kind {
		case kText:
			visit(fp, b.slot(f.name).(*string))
		case kOperand, kOperandN:
			walkOperand(fp, *b.slot(f.name).(**Operand), visit)
		case kOperands:
			for i := range *b.slot(f.name).(*[]Operand) {
				walkOperand(fmt.Sprintf("%s[%d]", fp, i), &(*b.slot(f.name).(*[]Operand))[i], visit)
			}
		case kConditions:
			walkConditions(fp, *b.slot(f.name).(*[]Condition), visit)
		case kOperations:
			for i := range b.Operations {
				op := &b.Operations[i]
				walkOperand(fmt.Sprintf("%s[%d].left", fp, i), &op.Left, visit)
				walkOperand(fmt.Sprintf("%s[%d].right", fp, i), &op.Right, visit)
			}
		case kFilters:
			for i := range b.Filters {
				walkOperand(fmt.Sprintf("%s[%d].right", fp, i), &b.Filters[i].Right, visit)
			}
		case kFilterN:
			if b.Filter != nil {
				walkOperand(fp+".right", &b.Filter.Right, visit)
			}
		case kPairs, kHeaders:
			pairs := *b.slot(f.name).(*[]Pair)
			for i := range pairs {
				visit(fmt.Sprintf("%s[%d].id", fp, i), &pairs[i].ID)
				walkOperand(fmt.Sprintf("%s[%d].data", fp, i), &pairs[i].Data, visit)
			}
		case kUpdateTargets:
			for i := range b.UpdateTargets {
				visit(fmt.Sprintf("%s[%d].field", fp, i), &b.UpdateTargets[i].Field)
				walkConditions(fmt.Sprintf("%s[%d].conditions", fp, i), b.UpdateTargets[i].Conditions, visit)
			}
		case kSimpleTargets:
			for i := range b.SimpleTargets {
				visit(fmt.Sprintf("%s[%d].field", fp, i), &b.SimpleTargets[i].Field)
				walkOperand(fmt.Sprintf("%s[%d].value", fp, i), &b.SimpleTargets[i].Value, visit)
			}
		case kFailN:
			if b.Fail != nil {
				visit(fp+".message", &b.Fail.Message)
			}
		case kSortN:
			if b.Sort != nil {
				visit(fp+".property", &b.Sort.Property)
			}
		}
	}
}

func walkConditions(path string, conds []Condition, visit visitor) {
	for i := range conds {
		walkOperand(fmt.Sprintf("%s[%d].left", path, i), &conds[i].Left, visit)
		walkOperand(fmt.Sprintf("%s[%d].right", path, i), &conds[i].Right, visit)
	}
}

// walkOperand visits the data of a literal operand; a variable reference
// names a runtime variable and is never touched.
func walkOperand(path string, o *Operand, visit visitor) {
	if o != nil && !o.RefVar {
		visit(path+".data", &o.Data)
	}
}
