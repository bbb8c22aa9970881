package handlers

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"stencil/runs"
	"stencil/store"
)

type runListQuery struct {
	listQuery
	keysetQuery
	ProjectID string `query:"project_id" json:"project_id" validate:"required"`
	RouteID   string `query:"route_id" json:"route_id" validate:"max=100"`
	Status    string `query:"status" json:"status" validate:"omitempty,run_status"`
	Trigger   string `query:"trigger" json:"trigger" validate:"omitempty,oneof=http schedule job"`
}

// runDTO is one run of a route as the API shows it.
type runDTO struct {
	ID         int64   `json:"id"`
	At         string  `json:"at"`
	RouteID    string  `json:"route_id"`
	Method     string  `json:"method"`
	Path       string  `json:"path"`
	Status     int     `json:"status"`
	Ended      string  `json:"ended"`
	DurationMS float64 `json:"duration_ms"`
	UserID     *int64  `json:"user_id"`
	Username   string  `json:"username"`
	Fault      string  `json:"fault"`
	Attempts   int     `json:"attempts"`
	Query      string  `json:"query"`
	Message    string  `json:"message"`
	DryRun     bool    `json:"dry_run"`
	// RouteVersion is the route's version that ran: null for a draft tried
	// from the editor.
	RouteVersion *int64 `json:"route_version"`
	// SampleRate is how many runs this one stands for: 1, or the rate of
	// a success kept of a sample (docs/routes.md).
	SampleRate int `json:"sample_rate"`
	// Trigger is what started the run: http, schedule or job.
	Trigger string `json:"trigger"`
	// FaultAt is how the pages name the fault's block, as the editor does
	// ("Block 1 (FETCH)"), and FaultBlock its number (0: the fault names no
	// block); FaultReason is the rest of the fault. The API's fault keeps
	// the document path (docs/engine.md), which clients parse.
	FaultAt     string `json:"-"`
	FaultBlock  int    `json:"-"`
	FaultReason string `json:"-"`
}

// faultBlock reads the block a fault names: "flow.blocks[0] (FETCH): …".
var faultBlock = regexp.MustCompile(`^flow\.blocks\[(\d+)\] \((\w+)\): (.*)$`)

func newRunDTO(r store.Run) runDTO {
	d := runDTO{ID: r.ID, At: r.At.UTC().Format("2006-01-02T15:04:05.000Z"), RouteID: r.RouteID, Method: r.Method, Path: r.Path,
		Status: r.Status, Ended: r.Ended, DurationMS: float64(r.Duration.Microseconds()) / 1000, UserID: r.UserID, Username: r.Username,
		Fault: r.Fault, Attempts: max(1, r.Attempts), Query: r.Query, Message: r.Message, DryRun: r.DryRun, FaultReason: r.Fault,
		SampleRate: max(1, r.SampleRate), Trigger: cmp.Or(r.Trigger, store.TriggerHTTP)}
	if r.Version > 0 {
		v := r.Version
		d.RouteVersion = &v
	}
	if m := faultBlock.FindStringSubmatch(r.Fault); m != nil {
		n, _ := strconv.Atoi(m[1])
		d.FaultBlock, d.FaultAt, d.FaultReason = n+1, fmt.Sprintf("Block %d (%s)", n+1, m[2]), m[3]
	}
	return d
}

type runsView struct {
	Base
	Project  store.Project
	Runs     []runDTO
	Pager    Pager
	RouteID  string
	Status   string
	Trigger  string
	RouteIDs []string
	Statuses []string
}

// runList answers GET /route/runs and renders /web/routes/runs: the runs
// of a project's routes, newest first, by route and by status (a class
// such as 4xx, or one status), for every member of the project.
func (h *Handlers) runList(c *fiber.Ctx) error {
	var q runListQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	p, err := h.member(c, q.ProjectID)
	if err != nil {
		return err
	}
	k := q.keyset()
	page := q.page(defaultLimit(c, 25))
	rq := store.RunQuery{Page: page, RouteID: q.RouteID, Status: q.Status, Trigger: q.Trigger, Keyset: k}
	read := func(limit int) ([]store.Run, int, error) {
		q := rq
		q.Limit = limit
		return h.store.ListRuns(c.UserContext(), p.ID, q)
	}
	runs, total, more, err := logPage(c, page, k, read)
	if err != nil {
		return err
	}
	dtos := make([]runDTO, len(runs))
	for i, r := range runs {
		dtos[i] = newRunDTO(r)
	}
	countCap := math.MaxInt
	if !store.RunsCounted(rq) {
		countCap = store.LogCountCap
	}
	pager := newLogPager(c, page, k, len(runs), func(i int) int64 { return runs[i].ID }, more, total, countCap)
	if representationOf(c) == asJSON {
		return h.respond(c, Reply{Data: dtos, Amount: &pager.Total, Capped: pager.AtLeast, Next: pager.Next, Last: pager.Next == ""})
	}
	ids, err := h.store.RouteIDs(c.UserContext(), p.ID)
	if err != nil {
		return err
	}
	if q.RouteID != "" && !slices.Contains(ids, q.RouteID) {
		ids = append(ids, q.RouteID) // a route deleted since: its runs stay a week
	}
	view := runsView{Base: h.base(c, "Runs · "+p.Name), Project: p, Runs: dtos, Pager: pager,
		RouteID: q.RouteID, Status: q.Status, Trigger: q.Trigger, RouteIDs: ids, Statuses: []string{"2xx", "4xx", "5xx"}}
	return h.respond(c, Reply{Data: dtos, Amount: &total, Page: "routes/runs", View: view})
}

type runQuery struct {
	ProjectID string `query:"project_id" json:"project_id" validate:"required"`
	ID        int64  `query:"id" json:"id" validate:"required,min=1"`
}

// runView is one run's page: its request, answer and, for runs made from
// the playground, the trace shown there.
type runView struct {
	Base
	Project  store.Project
	Run      runDTO
	Trace    []runs.TraceRow
	HasBody  bool
	CanRetry bool // the reader may replay it in the playground
}

// runPage renders /web/routes/run?project_id=&id=: one run of the run log,
// for every member of the project.
func (h *Handlers) runPage(c *fiber.Ctx) error {
	var q runQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	p, err := h.member(c, q.ProjectID)
	if err != nil {
		return err
	}
	r, err := h.store.Run(c.UserContext(), p.ID, q.ID)
	if err != nil {
		return err
	}
	view := runView{Base: h.base(c, fmt.Sprintf("Run %d · %s", r.ID, r.RouteID)), Project: p, Run: newRunDTO(r), HasBody: r.Body != nil,
		CanRetry: canIn(c, p, store.RoleAuthor)}
	if len(r.Trace) > 0 {
		_ = json.Unmarshal(r.Trace, &view.Trace)
	}
	return h.respond(c, Reply{Data: view.Run, Page: "routes/run", View: view})
}
