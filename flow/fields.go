package flow

import "strings"

// kind is how a block field is encoded and checked.
type kind int

const (
	kText     kind = iota // free text: substituted
	kEnum                 // one of enum: never substituted
	kBool                 //
	kOperand              // required operand
	kOperandN             // operand or null
	kOperands             // list of operands
	kConditions
	kOperations
	kFilters
	kFilterN // filter or null
	kPairs
	kUpdateTargets
	kSimpleTargets
	kFailN    // fail or null
	kSortN    // sort or null
	kHeaders  // pairs whose ids are HTTP header names
	kStatus   // an HTTP status, 0 when absent
	kAttempts // a job's attempts, 1 to MaxJobAttempts
)

// field is one field of a block type.
type field struct {
	name     string
	kind     kind
	enum     []string
	required bool // text that must not be empty
	// optional fields are left out of a block's JSON form when empty (and
	// may be null), so documents saved before they existed read and write
	// the same bytes.
	optional bool
}

// blockFields lists each block type's fields, in the order they are encoded
// (docs/routes.md).
var blockFields = map[string][]field{
	"FETCH": {{name: "local_name", kind: kText, required: true}, {name: "ref_col", kind: kText, required: true},
		{name: "match", kind: kPairs}, {name: "sort", kind: kSortN}, {name: "limit", kind: kOperandN}},
	"ASSIGNMENT": {{name: "local_name", kind: kText, required: true}, {name: "conditions", kind: kConditions}, {name: "operations", kind: kOperations}},
	"TEMPLATE": {{name: "local_name", kind: kText, required: true}, {name: "templatestring", kind: kText, required: true},
		{name: "data", kind: kOperands}, {name: "conditions", kind: kConditions}},
	"CONDITION": {{name: "conditions", kind: kConditions}, {name: "action", kind: kEnum, enum: Actions}, {name: "fail", kind: kFailN}},
	"LOOP": {{name: "local_name", kind: kText, required: true}, {name: "min", kind: kOperand}, {name: "max", kind: kOperand},
		{name: "step", kind: kOperandN}}, // null or absent: 1 (docs/engine.md)
	"FILTER": {{name: "local_name", kind: kText, required: true}, {name: "source", kind: kText, required: true},
		{name: "ref_property", kind: kText}, {name: "filters", kind: kFilters}},
	"PROPERTY": {{name: "local_name", kind: kText, required: true}, {name: "data", kind: kOperand},
		{name: "apply", kind: kEnum, enum: Applies}, {name: "additional", kind: kText}},
	"FUNCTION": {{name: "local_name", kind: kText, required: true}, {name: "func", kind: kEnum, enum: Funcs}, {name: "params", kind: kOperands}},
	"OBJECT":   {{name: "local_name", kind: kText, required: true}, {name: "pairs", kind: kPairs}},
	"UPDATE": {{name: "ref_col", kind: kText, required: true}, {name: "ref_property", kind: kText}, {name: "save", kind: kBool},
		{name: "targets", kind: kUpdateTargets}, {name: "set", kind: kOperandN}, {name: "add", kind: kOperandN},
		{name: "filter", kind: kFilterN}, {name: "conditions", kind: kConditions}},
	"SIMPLE_UPDATE": {{name: "ref_col", kind: kText, required: true}, {name: "ref_property", kind: kText}, {name: "save", kind: kBool},
		{name: "targets", kind: kSimpleTargets}, {name: "set", kind: kOperand}},
	"CREATE": {{name: "ref_col", kind: kText, required: true}, {name: "ref_object", kind: kText, required: true},
		{name: "save", kind: kBool}, {name: "conditions", kind: kConditions}},
	"RETURN": {{name: "pairs", kind: kPairs}, {name: "conditions", kind: kConditions},
		{name: "status", kind: kStatus, optional: true}, {name: "headers", kind: kHeaders, optional: true}},
	"VAULT": {{name: "local_name", kind: kText, required: true}, {name: "key", kind: kText, required: true}},
	"EMAIL": {{name: "template", kind: kText, required: true}, {name: "recipients", kind: kOperands}, {name: "pairs", kind: kPairs},
		{name: "conditions", kind: kConditions}},
	"DELETE": {{name: "ref_col", kind: kText, required: true}, {name: "targets", kind: kSimpleTargets},
		{name: "conditions", kind: kConditions}, {name: "save", kind: kBool}, {name: "local_name", kind: kText}},
	"HTTP": {{name: "local_name", kind: kText, required: true}, {name: "method", kind: kEnum, enum: CallMethods},
		{name: "url", kind: kOperand}, {name: "query", kind: kPairs}, {name: "headers", kind: kHeaders},
		{name: "body", kind: kOperandN}, {name: "timeout_ms", kind: kOperandN}, {name: "conditions", kind: kConditions}},
	"ENQUEUE": {{name: "route_id", kind: kText, required: true}, {name: "query", kind: kPairs}, {name: "body", kind: kOperandN},
		{name: "delay_ms", kind: kOperandN}, {name: "max_attempts", kind: kAttempts}, {name: "conditions", kind: kConditions},
		{name: "local_name", kind: kText}},
}

// Field returns a pointer to the Go field that holds field name of a block
// of b's type (a *string, *bool, **Operand, *[]Condition …), for readers
// that walk BlockFields.
func (b *Block) Field(name string) any { return b.slot(name) }

// slot returns a pointer to the Go field that holds field name of a block of
// b's type.
func (b *Block) slot(name string) any {
	switch name {
	case "local_name":
		return &b.LocalName
	case "ref_col":
		return &b.RefCol
	case "ref_property":
		return &b.RefProperty
	case "ref_object":
		return &b.RefObject
	case "source":
		return &b.Source
	case "templatestring":
		return &b.TemplateString
	case "additional":
		return &b.Additional
	case "key":
		return &b.Key
	case "template":
		return &b.EmailTemplate
	case "action":
		return &b.Action
	case "apply":
		return &b.Apply
	case "func":
		return &b.Func
	case "save":
		return &b.Save
	case "conditions":
		return &b.Conditions
	case "operations":
		return &b.Operations
	case "filters":
		return &b.Filters
	case "pairs":
		return &b.Pairs
	case "match":
		return &b.Match
	case "sort":
		return &b.Sort
	case "limit":
		return &b.Limit
	case "params":
		return &b.Params
	case "recipients":
		return &b.Recipients
	case "min":
		return &b.Min
	case "max":
		return &b.Max
	case "step":
		return &b.Step
	case "set":
		return &b.Set
	case "add":
		return &b.Add
	case "filter":
		return &b.Filter
	case "fail":
		return &b.Fail
	case "data":
		if b.Type == "TEMPLATE" {
			return &b.TemplateData
		}
		return &b.PropertyData
	case "status":
		return &b.Status
	case "headers":
		return &b.Headers
	case "method":
		return &b.CallMethod
	case "url":
		return &b.URL
	case "query":
		return &b.Query
	case "body":
		return &b.CallBody
	case "timeout_ms":
		return &b.Timeout
	case "route_id":
		return &b.TargetRoute
	case "delay_ms":
		return &b.Delay
	case "max_attempts":
		return &b.MaxAttempts
	case "targets":
		if b.Type == "UPDATE" {
			return &b.UpdateTargets
		}
		return &b.SimpleTargets
	}
	panic("flow: no slot for field " + name)
}

// FieldInfo describes one field of a block type, for documentation.
type FieldInfo struct {
	Name     string   `json:"name"`
	Label    string   `json:"label"`              // what people read for it
	Kind     string   `json:"kind"`               // text, enum, bool, operand, operand-or-null, operands, conditions, operations, filters, filter-or-null, pairs, update-targets, simple-targets, fail-or-null, sort-or-null, headers, status, attempts
	Enum     []string `json:"enum,omitempty"`     // for enum
	Required bool     `json:"required,omitempty"` // text that must not be empty, or an operand that must be there
	Optional bool     `json:"optional,omitempty"` // left out of the block's JSON when empty
}

var kindNames = map[kind]string{kText: "text", kEnum: "enum", kBool: "bool", kOperand: "operand", kOperandN: "operand-or-null",
	kOperands: "operands", kConditions: "conditions", kOperations: "operations", kFilters: "filters", kFilterN: "filter-or-null",
	kPairs: "pairs", kUpdateTargets: "update-targets", kSimpleTargets: "simple-targets", kFailN: "fail-or-null", kSortN: "sort-or-null",
	kHeaders: "headers", kStatus: "status", kAttempts: "attempts"}

// BlockFields describes the fields of block type t, in order.
func BlockFields(t string) []FieldInfo {
	var out []FieldInfo
	for _, f := range blockFields[t] {
		out = append(out, FieldInfo{Name: f.name, Label: FieldLabel(f.name), Kind: kindNames[f.kind], Enum: f.enum, Required: f.required || f.kind == kOperand, Optional: f.optional})
	}
	return out
}

// fieldLabels are the names people read for block fields in the editor and
// the outline; a field not listed reads as its name, capitalised, with
// spaces for underscores.
var fieldLabels = map[string]string{
	"local_name": "Result name", "ref_col": "Collection", "ref_object": "Object to create", "ref_property": "Property",
	"templatestring": "Template text", "data": "Values", "func": "Function", "params": "Arguments", "min": "From",
	"max": "To", "step": "Step", "source": "Source list", "additional": "Extra argument", "save": "Save the change",
	"set": "Set to", "filter": "Filter", "action": "When the conditions hold", "fail": "Fail with",
	"key": "Vault key", "template": "Email template", "recipients": "Recipients", "pairs": "Fields",
	"match": "Match (property = value)", "sort": "Sort by", "limit": "At most",
	"status": "Status", "headers": "Headers", "method": "Method", "url": "URL", "query": "Query",
	"body": "Body", "timeout_ms": "Timeout (ms)",
	"route_id": "Route", "delay_ms": "Delay (ms)", "max_attempts": "Attempts at most",
}

// FieldLabel is the name people read for a block field (fieldLabels).
func FieldLabel(name string) string {
	if l, ok := fieldLabels[name]; ok {
		return l
	}
	words := strings.ReplaceAll(name, "_", " ")
	return strings.ToUpper(words[:1]) + words[1:]
}
