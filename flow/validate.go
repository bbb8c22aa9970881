package flow

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"stencil/webhooks"
)

var (
	routeIDPattern      = regexp.MustCompile(`^[A-Za-z0-9_-]{1,100}$`)
	routePathPattern    = regexp.MustCompile(`^/[A-Za-z0-9_\-/{}:]{0,199}$`)
	templateNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$`)
)

// Normalize fills what a document may leave out: the "&" delimiter and
// empty lists.
func (r *Route) Normalize() {
	normalize(&r.Params, &r.Body, &r.Flow)
}

// Normalize fills what a document may leave out; see Route.Normalize.
func (t *Template) Normalize() {
	normalize(&t.Params, &t.Body, &t.Flow)
	if t.Variables == nil {
		t.Variables = []Variable{}
	}
}

func normalize(params *Params, body *[]Param, flow *Flow) {
	if params.Delimiter == "" {
		params.Delimiter = "&"
	}
	if params.Pairs == nil {
		params.Pairs = []Param{}
	}
	if *body == nil {
		*body = []Param{}
	}
	if flow.Blocks == nil {
		flow.Blocks = []Block{}
	}
}

// ValidateRoute checks a route: its structure and the rules of docs/routes.md
// (identifier and path patterns, body only for POST, PUT and PATCH).
func ValidateRoute(r Route, prefix string) Problems {
	p := Problems{}
	at := func(f string) string { return join(prefix, f) }
	if !routeIDPattern.MatchString(r.RouteID) {
		p.add(at("route_id"), "must be 1–100 letters, digits, _ or -")
	}
	if !routePathPattern.MatchString(r.RoutePath) {
		p.add(at("route_path"), "must start with / and be 1–200 letters, digits or _ - / { } :")
	}
	checkRequest(r.Method, r.AuthJWT, r.Params, r.Body, false, prefix, p)
	if s := r.AuthSignature; s != nil {
		checkSignature(*s, at("auth_signature"), p)
	}
	checkFlow(r.Flow, at("flow"), false, p)
	return p
}

// headerName is the rule of a header's name that auth_signature reads.
var headerName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,99}$`)

// MaxToleranceS bounds auth_signature.tolerance_s: a day.
const MaxToleranceS = 86_400

// An ENQUEUE block's job (docs/jobs.md): its attempts, 1 to
// MaxJobAttempts (DefaultJobAttempts when the block names none), and its
// delay, at most MaxJobDelay.
const (
	DefaultJobAttempts = 5
	MaxJobAttempts     = 25
	MaxJobDelay        = 30 * 24 * time.Hour
)

// checkSignature checks a route's auth_signature (docs/webhooks.md).
func checkSignature(s AuthSignature, at string, p Problems) {
	if !slices.Contains(webhooks.Schemes, s.Scheme) {
		p.add(at+".scheme", oneOf(webhooks.Schemes))
	}
	if !VaultKey(s.VaultKey) {
		p.add(at+".vault_key", VaultKeyRule)
	}
	switch {
	case s.Scheme == webhooks.HMACSHA256 && !headerName.MatchString(s.Header):
		p.add(at+".header", "must name the header that holds the signature: 1–100 letters, digits or -")
	case s.Scheme != webhooks.HMACSHA256 && s.Header != "":
		p.add(at+".header", "is only for scheme hmac-sha256: the other schemes name their own headers")
	}
	if s.ToleranceS < 0 || s.ToleranceS > MaxToleranceS {
		p.add(at+".tolerance_s", fmt.Sprintf("must be 0 (the default, 300) to %d seconds", MaxToleranceS))
	}
}

// ValidateTemplate checks a template: its structure, its name and its
// variables (docs/routes.md). Its route_id and route_path may hold placeholders;
// they are checked as route fields once a route is made from them.
func ValidateTemplate(t Template, prefix string) Problems {
	p := Problems{}
	at := func(f string) string { return join(prefix, f) }
	if !templateNamePattern.MatchString(t.Name) {
		p.add(at("name"), "must be 1–100 letters, digits, _ or -, starting with a letter or digit")
	}
	if strings.TrimSpace(t.Description) == "" {
		p.add(at("description"), "is required")
	} else if utf8.RuneCountInString(t.Description) > 1000 {
		p.add(at("description"), "must be at most 1000 characters")
	}
	if t.RouteID == "" {
		p.add(at("route_id"), "is required")
	}
	if !strings.HasPrefix(t.RoutePath, "/") {
		p.add(at("route_path"), "must start with /")
	}
	checkRequest(t.Method, t.AuthJWT, t.Params, t.Body, true, prefix, p)
	seen := map[string]bool{}
	for i, v := range t.Variables {
		vp := at(fmt.Sprintf("variables[%d]", i))
		switch {
		case !variableKey.MatchString(v.Key):
			p.add(vp+".key", "must be 1–64 letters, digits or _, not starting with a digit")
		case seen[v.Key]:
			p.add(vp+".key", "is declared twice")
		}
		seen[v.Key] = true
		if strings.TrimSpace(v.Description) == "" {
			p.add(vp+".description", "is required")
		}
	}
	checkFlow(t.Flow, at("flow"), true, p)
	return p
}

func checkRequest(method string, auth AuthJWT, params Params, body []Param, template bool, prefix string, p Problems) {
	at := func(f string) string { return join(prefix, f) }
	if !slices.Contains(Methods, method) {
		p.add(at("method"), oneOf(Methods))
	}
	if auth.Active && auth.Field == "" {
		p.add(at("auth_jwt.field"), "is required when auth_jwt is active")
	}
	if auth.Active && auth.RefCol == "" {
		p.add(at("auth_jwt.ref_col"), "is required when auth_jwt is active")
	}
	// In a template, a delimiter with a placeholder is checked once a route
	// is made from it (docs/routes.md rule 6).
	if n := utf8.RuneCountInString(params.Delimiter); (n < 1 || n > 5) && !(template && len(placeholders(params.Delimiter)) > 0) {
		p.add(at("params.delimiter"), "must be 1–5 characters")
	}
	checkParams(params.Pairs, at("params.pairs"), p)
	checkParams(body, at("body"), p)
	if len(body) > 0 && method != "POST" && method != "PUT" && method != "PATCH" {
		p.add(at("body"), "is only for POST, PUT and PATCH")
	}
}

func checkParams(params []Param, path string, p Problems) {
	seen := map[string]bool{}
	for i, prm := range params {
		pp := fmt.Sprintf("%s[%d]", path, i)
		switch {
		case prm.ID == "":
			p.add(pp+".id", "is required")
		case seen[prm.ID]:
			p.add(pp+".id", "is used twice")
		}
		seen[prm.ID] = true
		if !slices.Contains(BDTypes, prm.BDType) {
			p.add(pp+".bdtype", oneOf(BDTypes))
		}
	}
}

// checkFlow checks every block, and the nesting: a block may go one level
// deeper than the block before it only after a LOOP. In a template, text
// that holds a placeholder is checked once a route is made from it.
func checkFlow(f Flow, path string, template bool, p Problems) {
	prevDepth, prevLoop := -1, true
	for i := range f.Blocks {
		b := &f.Blocks[i]
		bp := fmt.Sprintf("%s.blocks[%d]", path, i)
		limit := prevDepth
		if prevLoop {
			limit++
		}
		switch {
		case b.Depth < 0:
			p.add(bp+".depth", "must not be negative")
		case b.Depth > limit:
			p.add(bp+".depth", fmt.Sprintf("must be at most %d: only a LOOP opens a deeper level", limit))
		}
		prevDepth, prevLoop = b.Depth, b.Type == "LOOP"
		b.check(bp, template, p)
	}
}

func (b *Block) check(path string, template bool, p Problems) {
	if !slices.Contains(BlockTypes, b.Type) {
		p.add(path+".type", oneOf(BlockTypes))
		return
	}
	for _, f := range blockFields[b.Type] {
		fp := path + "." + f.name
		switch f.kind {
		case kText:
			if f.required && *b.slot(f.name).(*string) == "" {
				p.add(fp, "is required")
			}
		case kEnum:
			if !slices.Contains(f.enum, *b.slot(f.name).(*string)) {
				p.add(fp, oneOf(f.enum))
			}
		case kOperand:
			if o := *b.slot(f.name).(**Operand); o == nil {
				p.add(fp, "is required")
			} else {
				checkOperand(*o, fp, p)
			}
		case kOperandN:
			if o := *b.slot(f.name).(**Operand); o != nil {
				checkOperand(*o, fp, p)
			}
		case kOperands:
			for i, o := range *b.slot(f.name).(*[]Operand) {
				checkOperand(o, fmt.Sprintf("%s[%d]", fp, i), p)
			}
		case kConditions:
			checkConditions(*b.slot(f.name).(*[]Condition), fp, p)
		case kOperations:
			for i, op := range b.Operations {
				checkCombination(op.Left, op.Right, op.OperationType, OperationTypes, "operation_type", op.Next, fmt.Sprintf("%s[%d]", fp, i), p)
			}
		case kFilters:
			for i, fl := range b.Filters {
				checkFilter(fl, fmt.Sprintf("%s[%d]", fp, i), p)
			}
		case kFilterN:
			if b.Filter != nil {
				checkFilter(*b.Filter, fp, p)
			}
		case kPairs:
			for i, pr := range *b.slot(f.name).(*[]Pair) {
				pp := fmt.Sprintf("%s[%d]", fp, i)
				if pr.ID == "" {
					p.add(pp+".id", "is required")
				}
				checkOperand(pr.Data, pp+".data", p)
			}
		case kHeaders:
			b.checkHeaders(fp, template, p)
		case kStatus:
			if b.Status != 0 && !ReturnStatus(b.Status) {
				p.add(fp, "must be a success or redirect status: 200 to 299 or 300 to 308")
			}
		case kAttempts:
			if b.MaxAttempts < 1 || b.MaxAttempts > MaxJobAttempts {
				p.add(fp, fmt.Sprintf("must be from 1 to %d", MaxJobAttempts))
			}
		case kUpdateTargets:
			for i, tg := range b.UpdateTargets {
				tp := fmt.Sprintf("%s[%d]", fp, i)
				if tg.Field == "" {
					p.add(tp+".field", "is required")
				}
				checkConditions(tg.Conditions, tp+".conditions", p)
			}
		case kSimpleTargets:
			if b.Type == "DELETE" && len(b.SimpleTargets) == 0 {
				p.add(fp, "must not be empty: a DELETE deletes the records its targets select")
			}
			for i, tg := range b.SimpleTargets {
				tp := fmt.Sprintf("%s[%d]", fp, i)
				if tg.Field == "" {
					p.add(tp+".field", "is required")
				}
				checkOperand(tg.Value, tp+".value", p)
			}
		case kFailN:
			if b.Fail != nil && !FailStatus(b.Fail.Status) {
				p.add(fp+".status", "must be an error status, from 400 to 599")
			}
		case kSortN:
			if b.Sort != nil && b.Sort.Property == "" {
				p.add(fp+".property", "is required")
			}
		}
	}
}

// checkHeaders checks the header pairs of a RETURN or HTTP block: names of
// token characters, each given once, none the server or the client sets
// itself (docs/engine.md), and a Location for a RETURN's redirect.
func (b *Block) checkHeaders(path string, template bool, p Problems) {
	seen := map[string]bool{}
	location := false
	for i, h := range b.Headers {
		hp := fmt.Sprintf("%s[%d]", path, i)
		checkOperand(h.Data, hp+".data", p)
		if template && len(placeholders(h.ID)) > 0 {
			continue
		}
		name := strings.ToLower(h.ID)
		switch {
		case h.ID == "":
			p.add(hp+".id", "is required")
		case !Token(h.ID):
			p.add(hp+".id", "must be a header name: letters, digits and ! # $ % & ' * + - . ^ _ ` | ~")
		case seen[name]:
			p.add(hp+".id", "is given twice")
		case b.Type == "RETURN" && ReservedAnswerHeader(name):
			p.add(hp+".id", h.ID+" is set by the platform, not by a route")
		case b.Type == "HTTP" && reservedCallHeaders[name]:
			p.add(hp+".id", h.ID+" is set by the HTTP client, not by a route")
		}
		seen[name] = true
		location = location || name == "location"
	}
	if b.Type == "RETURN" && b.Status >= 300 && b.Status <= 308 && b.Status != 304 && !location {
		p.add(path, fmt.Sprintf("must have a Location header: status %d is a redirect", b.Status))
	}
}

// ReservedAnswerHeader says whether a route's answer may not set the
// header name (docs/security.md): the server's framing, cookies (routes
// answer API clients with bearer tokens), the CORS and security headers
// the platform owns, and every header a browser acts on beyond showing
// the answer — one that clears its storage, refreshes or preloads,
// relaxes sniffing, framing, isolation or permissions, or changes how the
// body is decoded.
func ReservedAnswerHeader(name string) bool {
	name = strings.ToLower(name)
	return reservedAnswerHeaders[name] || strings.HasPrefix(name, "access-control-") || strings.HasPrefix(name, "cross-origin-")
}

var reservedAnswerHeaders = map[string]bool{
	"content-length": true, "transfer-encoding": true, "connection": true, "keep-alive": true, "upgrade": true,
	"trailer": true, "te": true, "proxy-connection": true, "host": true, "content-encoding": true,
	"set-cookie": true, "set-cookie2": true, "clear-site-data": true,
	"content-security-policy": true, "content-security-policy-report-only": true, "strict-transport-security": true,
	"x-content-type-options": true, "x-frame-options": true, "x-xss-protection": true, "referrer-policy": true,
	"permissions-policy": true, "feature-policy": true, "origin-agent-cluster": true, "service-worker-allowed": true,
	"x-permitted-cross-domain-policies": true, "x-dns-prefetch-control": true, "x-download-options": true,
	"refresh": true, "link": true, "alt-svc": true, "nel": true, "report-to": true, "reporting-endpoints": true,
	"accept-ch": true, "critical-ch": true, "timing-allow-origin": true, "sourcemap": true, "x-sourcemap": true,
	"speculation-rules": true, "supports-loading-mode": true, "expect-ct": true, "public-key-pins": true,
	"stencil-hop": true,
}

// Headers an HTTP block may not send: the client frames the request itself.
// Neither Referer nor the loop count a request carries is a route's to set.
var reservedCallHeaders = map[string]bool{
	"content-length": true, "transfer-encoding": true, "connection": true, "host": true,
	"upgrade": true, "te": true, "trailer": true, "keep-alive": true, "proxy-connection": true,
	"referer": true, "stencil-hop": true,
}

// Token says whether s is an HTTP token (RFC 9110 §5.6.2): what a header
// name and a method are made of.
func Token(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// ReturnStatus says whether status may be a RETURN's answer: a success or
// a redirect (1xx and errors are not answers a route gives by RETURN).
func ReturnStatus(status int) bool {
	return status >= 200 && status <= 299 || status >= 300 && status <= 308
}

func checkConditions(conds []Condition, path string, p Problems) {
	for i, c := range conds {
		checkCombination(c.Left, c.Right, c.ConditionType, ConditionTypes, "condition_type", c.Next, fmt.Sprintf("%s[%d]", path, i), p)
	}
}

func checkCombination(left, right Operand, typ string, types []string, typeField, next, path string, p Problems) {
	checkOperand(left, path+".left", p)
	checkOperand(right, path+".right", p)
	if !slices.Contains(types, typ) {
		p.add(path+"."+typeField, oneOf(types))
	}
	if !slices.Contains(Nexts, next) {
		p.add(path+".next", oneOf(Nexts))
	}
}

func checkFilter(f Filter, path string, p Problems) {
	checkOperand(f.Right, path+".right", p)
	if !slices.Contains(OperationTypes, f.OperationType) {
		p.add(path+".operation_type", oneOf(OperationTypes))
	}
	if !slices.Contains(Nexts, f.Next) {
		p.add(path+".next", oneOf(Nexts))
	}
}

func checkOperand(o Operand, path string, p Problems) {
	if !slices.Contains(BDTypes, o.RType) {
		p.add(path+".rtype", oneOf(BDTypes))
	}
	if o.RefVar && o.Data == "" {
		p.add(path+".data", "must name a variable when ref_var is true")
	}
}

func oneOf(values []string) string {
	return "must be one of " + strings.Join(values, ", ")
}

// FailStatus says whether status may be a FAIL's answer (docs/engine.md): an
// error status. A 1xx would leave the client waiting for the real answer,
// and a 2xx or 3xx would read as success.
func FailStatus(status int) bool { return status >= 400 && status <= 599 }

// vaultKey is the rule of a vault entry's key (docs/vaults.md).
var vaultKey = regexp.MustCompile(`^[A-Z][A-Z0-9_]{0,254}$`)

// VaultKeyRule says what a vault key looks like, for messages.
const VaultKeyRule = "must be 1–255 upper-case letters, digits or _, starting with a letter"

// VaultKey says whether s may be a vault entry's key.
func VaultKey(s string) bool { return vaultKey.MatchString(s) }
