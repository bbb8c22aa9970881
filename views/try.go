package views

import "stencil/flow"

// TryField is one input of the playground's form, by its parameter's
// type (bdtype): how it is typed in.
type TryField struct {
	ID, BDType string
	Kind       string // number, decimal, switch, json, text
}

// TryFields are the playground's inputs of a route's parameters.
func TryFields(params []flow.Param) []TryField {
	out := make([]TryField, len(params))
	for i, p := range params {
		kind := "text"
		switch p.BDType {
		case "INTEGER":
			kind = "number"
		case "FLOAT":
			kind = "decimal"
		case "BOOLEAN":
			kind = "switch"
		case "ARRAY", "OTHER":
			kind = "json"
		}
		out[i] = TryField{ID: p.ID, BDType: p.BDType, Kind: kind}
	}
	return out
}
