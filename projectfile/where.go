package projectfile

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"stencil/flow"
)

// SettingLabels are a project's settings as its page names them: a plan
// and a file's problems speak of them so on the page (docs/projects.md).
var SettingLabels = map[string]string{
	"format": "Format", "id": "Project id", "name": "Name", "description": "Description", "api_path": "API path",
	"x_rate_limit": "Rate limit (requests a second)", "x_rate_burst": "Burst (requests at once)",
	"x_cors_origins": "Browser origins (CORS)", "x_egress_hosts": "Hosts routes may call",
	"collections": "Collections", "routes": "Routes", "templates": "Templates", "email_templates": "Email templates",
	"schedules": "Schedules", "tests": "Tests", "vault_keys": "Vault keys",
}

// routeLabels name a route's (or template's) own fields, as the editor does.
var routeLabels = map[string]string{
	"route_id": "Route id", "route_path": "Route path", "auth_jwt": "JWT", "params": "URL parameters",
	"body": "Body fields", "variables": "Variables", "delimiter": "Param delimiter", "auth_signature": "Signature check",
}

var pathPart = regexp.MustCompile(`([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]`)

// Places reads a project file (raw) once, for the names of its routes
// and the types of its blocks, and returns what names a place of it (a
// problem's path, such as "routes[1].flow.blocks[2].source") in the words
// of the pages: "Route list_books · Block 3 (FILTER) · Source list". A
// path it cannot follow, or a file that is no JSON, is named by what the
// path says.
func Places(raw []byte) func(path string) string {
	var doc any
	parsed := json.Unmarshal(raw, &doc) == nil
	return func(path string) string {
		switch {
		case path == "document" || path == "":
			return "The file"
		case !parsed:
			return path
		}
		return where(doc, path)
	}
}

// where is Places' name of path in doc, the file read.
func where(doc any, path string) string {
	type part struct {
		name  string
		index int // -1: a name
	}
	var parts []part
	for _, m := range pathPart.FindAllStringSubmatch(path, -1) {
		if m[1] != "" {
			parts = append(parts, part{name: m[1], index: -1})
		} else {
			n, _ := strconv.Atoi(m[2])
			parts = append(parts, part{index: n})
		}
	}
	var words []string
	at := doc
	for i := 0; i < len(parts); i++ {
		p := parts[i]
		if p.index >= 0 {
			continue // an index is read with the list it follows
		}
		next := field(at, p.name)
		listed := i+1 < len(parts) && parts[i+1].index >= 0
		n := 0
		if listed {
			n = parts[i+1].index
			next = item(next, n)
		}
		switch {
		case i == 0 && listed:
			words = append(words, topItem(p.name, n, next))
		case i == 0:
			words = append(words, label(SettingLabels, p.name))
		case p.name == "flow":
			// the flow is where the blocks are: named by the block
		case p.name == "blocks" && listed:
			words = append(words, fmt.Sprintf("Block %d (%s)", n+1, stringOr(field(next, "type"), "?")))
		case listed:
			words = append(words, fmt.Sprintf("%s %d", singular(label(routeLabels, p.name)), n+1))
		default:
			words = append(words, label(routeLabels, p.name))
		}
		at = next
	}
	return strings.Join(words, " · ")
}

// topItem names an item of one of a file's lists by what identifies it.
func topItem(list string, n int, it any) string {
	switch list {
	case "routes":
		return "Route " + stringOr(field(it, "route_id"), strconv.Itoa(n+1))
	case "templates":
		return "Template " + stringOr(field(it, "name"), strconv.Itoa(n+1))
	case "collections":
		return "Collection " + stringOr(field(it, "id"), strconv.Itoa(n+1))
	case "email_templates":
		return "Email template " + stringOr(field(it, "name"), strconv.Itoa(n+1))
	case "schedules":
		return fmt.Sprintf("Schedule %d (route %s)", n+1, stringOr(field(it, "route_id"), "?"))
	case "tests":
		return "Test " + stringOr(field(it, "route_id"), "?") + "/" + stringOr(field(it, "name"), strconv.Itoa(n+1))
	case "vault_keys":
		return "Vault key " + stringOr(it, strconv.Itoa(n+1))
	}
	return fmt.Sprintf("%s %d", singular(label(SettingLabels, list)), n+1)
}

func label(labels map[string]string, name string) string {
	if l, ok := labels[name]; ok {
		return l
	}
	return flow.FieldLabel(name)
}

func singular(s string) string { return strings.TrimSuffix(s, "s") }

func field(v any, name string) any {
	m, _ := v.(map[string]any)
	return m[name]
}

func item(v any, n int) any {
	list, _ := v.([]any)
	if n < len(list) {
		return list[n]
	}
	return nil
}

// stringOr is v when it is a string that is not empty, else or.
func stringOr(v any, or string) string {
	if s, ok := v.(string); ok && s != "" {
		return s
	}
	return or
}
