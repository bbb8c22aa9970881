package flow

// Words are what people read for the documents' enum values, in the editor
// and in the outline alike: operators as signs, the rest in plain words. An
// enum value not listed reads as itself.
var Words = map[string]string{
	"EQUAL_TO": "=", "NOT_EQUAL_TO": "≠", "GREATER_THAN": ">", "LESS_THAN": "<",
	"GREATER_THAN_OR_EQUAL_TO": "≥", "LESS_THAN_OR_EQUAL_TO": "≤", "INCLUDES": "contains",
	"ADDITION": "+", "SUBTRACTION": "−", "MULTIPLICATION": "×", "DIVISION": "÷", "MODULO": "mod",
	"AND": "and", "OR": "or",
	"FAIL": "fail", "BREAK": "leave the loop", "CONTINUE": "next turn",
	"GET_FIRST": "first item", "GET_LAST": "last item", "LENGTH": "length", "GET_INDEX": "item at", "GET_PROPERTY": "property",
	"V4": "new UUID", "GENERATE_TIMESTAMP": "timestamp now", "PAGINATE": "paginate",
}

// Word is what people read for enum value v.
func Word(v string) string {
	if w, ok := Words[v]; ok {
		return w
	}
	return v
}

// BlockInfo is how the editor's palette offers a block type: a glyph and
// one line of what it does.
type BlockInfo struct {
	Glyph string `json:"glyph"`
	About string `json:"about"`
}

// Blocks describes each block type for the palette, in the words of the
// engine document. Each glyph is its own, and one the common sans-serif
// fonts hold (DejaVu's, which Debian's Chromium draws with), not a box.
var Blocks = map[string]BlockInfo{
	"FETCH":         {"⇩", "Read records of a collection, matched, sorted and limited"},
	"ASSIGNMENT":    {"=", "Compute a value from operands and store it in a variable"},
	"TEMPLATE":      {"✎", "Fill a text with values, like a message or an id"},
	"CONDITION":     {"?", "Check conditions: fail with a status, leave a loop or skip a turn"},
	"LOOP":          {"↻", "Repeat the blocks indented under it over a range of numbers"},
	"FILTER":        {"⊆", "Keep the items of a list that pass a test"},
	"PROPERTY":      {"•", "Take the first, last or nth item, a length or a property"},
	"FUNCTION":      {"ƒ", "Make a UUID or a timestamp, or take a page of a list"},
	"OBJECT":        {"{}", "Build an object from named values"},
	"UPDATE":        {"✱", "Change the records that pass conditions"},
	"SIMPLE_UPDATE": {"≔", "Set a property on the records whose fields equal values"},
	"CREATE":        {"+", "Store an object as a new record"},
	"RETURN":        {"↩", "Answer the request with named values, a status and headers"},
	"VAULT":         {"🔑", "Read a secret of the project's vault (ADMIN to save)"},
	"EMAIL":         {"✉", "Send an email from one of the project's templates"},
	"DELETE":        {"🗑", "Delete the records whose fields equal values"},
	"HTTP":          {"⇄", "Call another service over HTTP and keep its answer"},
	"ENQUEUE":       {"↠", "Run a route of the project later, as a job retried until it succeeds"},
}
