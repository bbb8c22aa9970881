// Package flow is the route and route-template model of docs/routes.md: the
// documents, their strict decoding (every fault named by its path), their
// structural validation, placeholder substitution and lint. Pure Go, no I/O.
package flow

// Enumerations of the model.
var (
	Methods        = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}
	BDTypes        = []string{"INTEGER", "FLOAT", "STRING", "BOOLEAN", "ARRAY", "OTHER"}
	ConditionTypes = []string{"EQUAL_TO", "NOT_EQUAL_TO", "GREATER_THAN", "LESS_THAN", "GREATER_THAN_OR_EQUAL_TO", "LESS_THAN_OR_EQUAL_TO", "INCLUDES"}
	OperationTypes = append(append([]string{}, ConditionTypes...), "ADDITION", "SUBTRACTION", "MULTIPLICATION", "DIVISION", "MODULO", "NONE")
	Nexts          = []string{"AND", "OR", "NONE"}
	Actions        = []string{"FAIL", "BREAK", "CONTINUE"}
	Applies        = []string{"GET_FIRST", "GET_LAST", "LENGTH", "GET_INDEX", "GET_PROPERTY"}
	Funcs          = []string{"V4", "GENERATE_TIMESTAMP", "PAGINATE"}
	BlockTypes     = []string{"FETCH", "ASSIGNMENT", "TEMPLATE", "CONDITION", "LOOP", "FILTER", "PROPERTY", "FUNCTION", "OBJECT", "UPDATE", "SIMPLE_UPDATE", "CREATE", "RETURN", "VAULT", "EMAIL", "DELETE", "HTTP", "ENQUEUE"}
	// CallMethods are the methods an HTTP block sends (docs/engine.md).
	CallMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"}
)

// Route is a request definition and its flow (docs/routes.md).
type Route struct {
	ProjectID string  `json:"project_id"`
	RouteID   string  `json:"route_id"`
	RoutePath string  `json:"route_path"`
	Method    string  `json:"method"`
	AuthJWT   AuthJWT `json:"auth_jwt"`
	// AuthSignature, when set, checks the signature of the webhooks the
	// route receives (docs/webhooks.md); templates carry none.
	AuthSignature *AuthSignature `json:"auth_signature,omitempty"`
	Params        Params         `json:"params"`
	Body          []Param        `json:"body"`
	Flow          Flow           `json:"flow"`
	Template      *TemplateRef   `json:"template"`
}

// RouteDocument is a route as it is saved: without its project and the
// reference to the template it came from, which are kept beside it. A
// project's file holds its routes so (docs/projects.md).
type RouteDocument struct {
	RouteID   string  `json:"route_id"`
	RoutePath string  `json:"route_path"`
	Method    string  `json:"method"`
	AuthJWT   AuthJWT `json:"auth_jwt"`
	// AuthSignature: Route's.
	AuthSignature *AuthSignature `json:"auth_signature,omitempty"`
	Params        Params         `json:"params"`
	Body          []Param        `json:"body"`
	Flow          Flow           `json:"flow"`
}

// Document is r as it is saved.
func (r Route) Document() RouteDocument {
	return RouteDocument{RouteID: r.RouteID, RoutePath: r.RoutePath, Method: r.Method, AuthJWT: r.AuthJWT, AuthSignature: r.AuthSignature,
		Params: r.Params, Body: r.Body, Flow: r.Flow}
}

// In is the route of project that d stands for, made from no template.
func (d RouteDocument) In(project string) Route {
	return Route{ProjectID: project, RouteID: d.RouteID, RoutePath: d.RoutePath, Method: d.Method, AuthJWT: d.AuthJWT,
		AuthSignature: d.AuthSignature, Params: d.Params, Body: d.Body, Flow: d.Flow}
}

// AuthSignature says whether and how a route checks the signature of the
// webhooks it receives (docs/webhooks.md): by Scheme (one of
// webhooks.Schemes), with the secret of the project's vault entry
// VaultKey, Header naming scheme hmac-sha256's header, and ToleranceS
// bounding a signed timestamp's age (0: the default, 300 s).
type AuthSignature struct {
	Active     bool   `json:"active"`
	Scheme     string `json:"scheme"`
	VaultKey   string `json:"vault_key"`
	Header     string `json:"header,omitempty"`
	ToleranceS int    `json:"tolerance_s,omitempty"`
}

// Checks says whether the route checks signatures.
func (a *AuthSignature) Checks() bool { return a != nil && a.Active }

// AuthJWT says whether and how the route authenticates its callers.
type AuthJWT struct {
	Active bool   `json:"active"`
	Field  string `json:"field"`
	RefCol string `json:"ref_col"`
}

// Params are a route's URL parameters.
type Params struct {
	Delimiter string  `json:"delimiter"`
	Pairs     []Param `json:"pairs"`
}

// Param is one URL parameter or body field.
type Param struct {
	ID     string `json:"id"`
	BDType string `json:"bdtype"`
}

// Flow is the ordered list of a route's blocks.
type Flow struct {
	Blocks []Block `json:"blocks"`
}

// TemplateRef records the template a route was made from: a snapshot of
// its id and name, the version applied and the values given then (docs/routes.md),
// which an upgrade to a newer version applies again.
type TemplateRef struct {
	ID      int64             `json:"id"`
	Name    string            `json:"name"`
	Version int64             `json:"version,omitempty"`
	Values  map[string]string `json:"values,omitempty"`
}

// Template is a reusable route blueprint (docs/routes.md).
type Template struct {
	ID          int64      `json:"id"`
	Name        string     `json:"name"`
	Description string     `json:"description"`
	ProjectID   *string    `json:"project_id"`
	Method      string     `json:"method"`
	RouteID     string     `json:"route_id"`
	RoutePath   string     `json:"route_path"`
	AuthJWT     AuthJWT    `json:"auth_jwt"`
	Params      Params     `json:"params"`
	Body        []Param    `json:"body"`
	Flow        Flow       `json:"flow"`
	Variables   []Variable `json:"variables"`
}

// Variable is a placeholder a template declares.
type Variable struct {
	Key          string  `json:"key"`
	Description  string  `json:"description"`
	DefaultValue *string `json:"default_value"`
}

// Operand is a literal (RefVar false: Data is the value) or the name of a
// runtime variable (RefVar true).
type Operand struct {
	RefVar bool   `json:"ref_var"`
	RType  string `json:"rtype"`
	Data   string `json:"data"`
}

// Condition compares two operands.
type Condition struct {
	Left          Operand `json:"left"`
	Right         Operand `json:"right"`
	ConditionType string  `json:"condition_type"`
	Not           bool    `json:"not"`
	Next          string  `json:"next"`
}

// Operation combines two operands.
type Operation struct {
	Left          Operand `json:"left"`
	Right         Operand `json:"right"`
	OperationType string  `json:"operation_type"`
	Not           bool    `json:"not"`
	Next          string  `json:"next"`
}

// Filter tests array items against an operand.
type Filter struct {
	Right         Operand `json:"right"`
	OperationType string  `json:"operation_type"`
	Not           bool    `json:"not"`
	Next          string  `json:"next"`
}

// Pair names an operand.
type Pair struct {
	ID   string  `json:"id"`
	Data Operand `json:"data"`
}

// UpdateTarget is a field an UPDATE block changes, where its conditions hold.
type UpdateTarget struct {
	Field      string      `json:"field"`
	Conditions []Condition `json:"conditions"`
}

// SimpleTarget selects records for a SIMPLE_UPDATE or DELETE block: those
// whose Field (a dot path) equals Value.
type SimpleTarget struct {
	Field string  `json:"field"`
	Value Operand `json:"value"`
}

// Sort orders what a FETCH reads by a property (a dot path).
type Sort struct {
	Property   string `json:"property"`
	Descending bool   `json:"descending"`
}

// Fail is the answer of a CONDITION block that fails.
type Fail struct {
	Status  int    `json:"status"`
	Message string `json:"message"`
}

// Block is one step of a flow. Which fields it has depends on Type (see
// blockFields); the others stay empty.
type Block struct {
	Type  string
	Depth int

	LocalName      string
	RefCol         string
	RefProperty    string
	RefObject      string
	Source         string
	TemplateString string
	Additional     string
	Key            string
	EmailTemplate  string
	Action         string
	Apply          string
	Func           string
	Save           bool

	Conditions    []Condition
	Operations    []Operation
	Filters       []Filter
	Pairs         []Pair
	TemplateData  []Operand // TEMPLATE "data"
	PropertyData  *Operand  // PROPERTY "data"
	Params        []Operand
	Recipients    []Operand
	Min, Max      *Operand
	Step          *Operand
	Set, Add      *Operand
	Filter        *Filter
	Fail          *Fail
	UpdateTargets []UpdateTarget // UPDATE "targets"
	SimpleTargets []SimpleTarget // SIMPLE_UPDATE and DELETE "targets"
	Match         []Pair         // FETCH "match"
	Sort          *Sort          // FETCH "sort"
	Limit         *Operand       // FETCH "limit"
	Status        int            // RETURN "status": 0 when absent (200)
	Headers       []Pair         // RETURN and HTTP "headers"
	CallMethod    string         // HTTP "method"
	URL           *Operand       // HTTP "url"
	Query         []Pair         // HTTP "query"
	CallBody      *Operand       // HTTP "body"
	Timeout       *Operand       // HTTP "timeout_ms"
	TargetRoute   string         // ENQUEUE "route_id"
	Delay         *Operand       // ENQUEUE "delay_ms"
	MaxAttempts   int            // ENQUEUE "max_attempts"
}
