package flow

import (
	"fmt"
	"strconv"
	"strings"
)

// Summary is one line of a block's fields for people: "Label: value"
// for text, choices and operands, lists by their items, empty fields left
// out, joined by " · ". An HTTP block's line begins with its request as
// one reads it: "POST https://api.example.com/charge → res".
func Summary(b Block) string {
	var parts []string
	if b.Type == "HTTP" && b.URL != nil {
		url := b.URL.Data
		if b.URL.RefVar {
			url = "{" + url + "}"
		}
		parts = append(parts, b.CallMethod+" "+url+" → "+b.LocalName)
	}
	for _, f := range BlockFields(b.Type) {
		if b.Type == "HTTP" && (f.Name == "method" || f.Name == "url" || f.Name == "local_name") {
			continue
		}
		if text := fieldText(b, f); text != "" {
			parts = append(parts, f.Label+": "+text)
		}
	}
	return strings.Join(parts, " · ")
}

// FieldText is field name of block b as the outline reads it ("status =
// \"open\"", "first item", "2"), "" when it is empty: what a diff of two
// versions shows of a changed field.
func FieldText(b Block, name string) string {
	for _, f := range BlockFields(b.Type) {
		if f.Name == name {
			return fieldText(b, f)
		}
	}
	return ""
}

// fieldText is one field of b for people, "" when empty.
func fieldText(b Block, f FieldInfo) string {
	var text string
	switch v := b.Field(f.Name).(type) {
	case *string:
		text = *v
		if f.Kind == "enum" {
			text = Word(text)
		}
	case *bool:
		if *v {
			text = "yes"
		}
	case *int:
		if *v != 0 {
			text = strconv.Itoa(*v)
		}
	case **Operand:
		if *v != nil {
			text = OperandText(**v)
		}
	case *[]Operand:
		names := make([]string, len(*v))
		for i, o := range *v {
			names[i] = OperandText(o)
		}
		text = strings.Join(names, ", ")
	case *[]Condition:
		var w strings.Builder
		for i, c := range *v {
			if c.Not {
				w.WriteString("not ")
			}
			w.WriteString(OperandText(c.Left) + " " + Word(c.ConditionType) + " " + OperandText(c.Right))
			if c.Next != "NONE" && i < len(*v)-1 {
				w.WriteString(" " + Word(c.Next) + " ")
			}
		}
		text = w.String()
	case *[]Pair:
		text = joinEach(*v, func(p Pair) string { return p.ID + " = " + OperandText(p.Data) })
	case **Fail:
		if *v != nil {
			text = fmt.Sprintf("%d %q", (*v).Status, (*v).Message)
		}
	case **Filter:
		if *v != nil {
			text = "set"
		}
	case *[]Operation:
		text = joinEach(*v, func(o Operation) string {
			if o.OperationType == "NONE" { // the left operand as it is
				return negated(o.Not, OperandText(o.Left))
			}
			return negated(o.Not, OperandText(o.Left)+" "+Word(o.OperationType)+" "+OperandText(o.Right))
		})
	case *[]Filter:
		text = joinEach(*v, func(f Filter) string { return negated(f.Not, "item "+Word(f.OperationType)+" "+OperandText(f.Right)) })
	case *[]UpdateTarget:
		text = count(len(*v))
	case *[]SimpleTarget:
		text = joinEach(*v, func(t SimpleTarget) string { return t.Field + " = " + OperandText(t.Value) })
	case **Sort:
		if *v != nil {
			text = (*v).Property
			if (*v).Descending {
				text += ", descending"
			}
		}
	}
	return text
}

// joinEach shows a list's items, each as show reads it, joined by ", ".
func joinEach[T any](items []T, show func(T) string) string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = show(it)
	}
	return strings.Join(out, ", ")
}

// negated is text read with "not " before it when not is set.
func negated(not bool, text string) string {
	if not {
		return "not " + text
	}
	return text
}

// count shows how many items a list holds; none shows nothing.
func count(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

// OperandText shows an operand: a variable by its name, a number or a
// boolean as written, any other literal quoted.
func OperandText(o Operand) string {
	if o.RefVar {
		return o.Data
	}
	switch o.RType {
	case "INTEGER", "FLOAT", "BOOLEAN":
		if o.Data != "" {
			return o.Data
		}
	}
	return fmt.Sprintf("%q", o.Data)
}
