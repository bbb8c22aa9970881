package flow

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Warning is what a check finds doubtful in a document that saves and runs
// all the same: the place it is about, by the document's path ("" for the
// whole document), and what it says. The editor shows it beside the field
// at Path, by its words (Block); an answer's warnings list gives it as one
// line (String), as it always has.
type Warning struct {
	Path    string `json:"path"`
	Message string `json:"message"`
	// Block is the editor's name of the block Path is in ("Block 3
	// (HTTP)"), empty outside the flow; see Named.
	Block string `json:"block,omitempty"`
	// Also are more places the warning is about, after Path; More counts
	// those left unnamed.
	Also []string `json:"also,omitempty"`
	More int      `json:"more,omitempty"`
	// Href, when set, is a page where what the warning is about is
	// changed, outside the document (a project's setting).
	Href string `json:"href,omitempty"`
	// Type is set when the block is the message's subject, as in a
	// refusal: the line names the block first, "Block 3 (CONDITION) has no
	// conditions: …".
	Type string `json:"type,omitempty"`
}

// Warn is a warning about path whose line ends with its place:
// "x is used before any block sets it (flow.blocks[2].key)".
func Warn(path, message string) Warning { return Warning{Path: path, Message: message} }

// WarnBlock is a warning about the block at path (of type typ) whose line
// names the block first.
func WarnBlock(path, typ, message string) Warning {
	return Warning{Path: path, Message: message, Type: typ}
}

// String is the warning as one line.
func (w Warning) String() string {
	if w.Type != "" {
		// In the editor's words where the block is named (Named), its
		// place in the document after; else by the block's path.
		if w.Block != "" {
			return w.Block + " " + w.Message + " (" + w.Path + ")"
		}
		at := w.Path
		if m := blockPath.FindString(w.Path); m != "" {
			at = m
		}
		return fmt.Sprintf("%s (%s) %s", at, w.Type, w.Message)
	}
	places := append([]string{w.Path}, w.Also...)
	if w.Path == "" {
		return w.Message
	}
	where := strings.Join(places, ", ")
	if w.More > 0 {
		where += fmt.Sprintf(" and %d more", w.More)
	}
	return w.Message + " (" + where + ")"
}

// Under is the warning about the same place inside a document held at
// prefix ("route." for a route in a request's body).
func (w Warning) Under(prefix string) Warning {
	if w.Path != "" {
		w.Path = prefix + w.Path
	}
	also := make([]string, len(w.Also))
	for i, p := range w.Also {
		also[i] = prefix + p
	}
	if len(also) > 0 {
		w.Also = also
	}
	return w
}

var blockPath = regexp.MustCompile(`^(?:[a-z_]+\.)?flow\.blocks\[(\d+)\]`)

// Named gives each warning the editor's name of the block its path is in,
// from blocks (the document's flow).
func Named(ws []Warning, blocks []Block) []Warning {
	for i, w := range ws {
		m := blockPath.FindStringSubmatch(w.Path)
		if m == nil {
			continue
		}
		n, err := strconv.Atoi(m[1])
		if err != nil || n >= len(blocks) {
			continue
		}
		ws[i].Block = fmt.Sprintf("Block %d (%s)", n+1, blocks[n].Type)
	}
	return ws
}

// Lines are warnings as an answer's warnings list gives them.
func Lines(ws []Warning) []string {
	if ws == nil {
		return nil
	}
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.String()
	}
	return out
}
