package handlers

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"unicode"

	"github.com/gofiber/fiber/v2"

	"stencil/flow"
)

// Reply is everything one response may need; respond turns it into the JSON
// envelope, an htmx fragment or a full page, whichever the caller wants.
type Reply struct {
	Status   int            // HTTP status; 0 means 200
	Message  string         // the envelope's message; empty means the status text
	Data     any            // the JSON value: an explicit data-transfer value, never View
	Amount   *int           // list responses: matching items before paging
	Capped   bool           // Amount is where counting stopped: at least that many match
	Next     string         // list responses: the next page (a keyset URL); "" lets respond make an offset one
	Last     bool           // list responses: no page follows this one
	Warnings []flow.Warning // non-nil: a top-level warnings array in the envelope, each as its line
	Page     string         // template of the page's main content
	Fragment string         // template rendered alone for htmx; empty: Page with nav and flash
	Body     any            // JSON only: a whole body in place of the envelope (login)
	View     any            // the view model of Page and Fragment
	Redirect string         // browsers go here after success (303, or HX-Location when no Fragment)
	Reload   bool           // htmx: load Redirect as a whole page (HX-Redirect): who is signed in changed
	Event    string         // htmx: an event to trigger on the page (HX-Trigger), e.g. to refresh a list
}

// envelope is the JSON shape of every response (docs/architecture.md).
type envelope struct {
	Status   int      `json:"status"`
	Message  string   `json:"message"`
	Data     any      `json:"data,omitzero"`
	Amount   *int     `json:"amount,omitempty"`
	Capped   bool     `json:"amount_capped,omitempty"`
	Next     string   `json:"next,omitempty"`
	Warnings []string `json:"warnings,omitzero"`
}

type representation int

const (
	asPage representation = iota
	asFragment
	asJSON
)

// representationOf is the one place that decides what a caller gets.
func representationOf(c *fiber.Ctx) representation {
	if c.Locals(transportErrorKey{}) != nil {
		return asJSON // the request's own headers could not be read
	}
	if p := c.Path(); p == "/x" || strings.HasPrefix(p, "/x/") {
		return asJSON // routes' answers are JSON, whatever the client accepts
	}
	if c.Path() == "/metrics" && !strings.Contains(c.Get(fiber.HeaderAccept), fiber.MIMETextHTML) {
		return asJSON // a scraper's */* is no browser: 401, not the sign-in page
	}
	if c.Accepts(fiber.MIMETextHTML, fiber.MIMEApplicationJSON) == fiber.MIMEApplicationJSON {
		return asJSON
	}
	if c.Get("HX-Request") == "true" && c.Get("HX-Boosted") != "true" && c.Get("HX-History-Restore-Request") != "true" {
		return asFragment
	}
	return asPage
}

// respond writes r in the representation the caller wants. A reply with no
// template and no redirect is JSON for every caller.
func (h *Handlers) respond(c *fiber.Ctx, r Reply) error {
	if r.Status == 0 {
		r.Status = fiber.StatusOK
	}
	if strings.ContainsFunc(r.Redirect, unicode.IsControl) {
		r.Redirect = "/" // never a control character in a header
	}
	c.Vary(fiber.HeaderAccept, "HX-Request")
	rep := representationOf(c)
	if r.Page == "" && r.Fragment == "" && r.Redirect == "" {
		rep = asJSON
	}
	if rep == asFragment && r.Event != "" {
		c.Set("HX-Trigger", r.Event)
	}
	switch {
	case rep == asJSON && r.Body != nil:
		return c.Status(r.Status).JSON(r.Body)
	case rep == asJSON:
		if r.Message == "" {
			r.Message = http.StatusText(r.Status)
		}
		if v := reflect.ValueOf(r.Data); r.Amount != nil && r.Next == "" && !r.Last && v.Kind() == reflect.Slice && v.Type() != reflect.TypeFor[rawJSON]() {
			r.Next = offsetNext(c, v.Len(), *r.Amount, r.Capped)
		}
		if raw, ok := r.Data.(rawJSON); ok {
			return writeRawEnvelope(c, r, raw)
		}
		return c.Status(r.Status).JSON(envelope{Status: r.Status, Message: r.Message, Data: r.Data, Amount: r.Amount, Capped: r.Capped, Next: r.Next,
			Warnings: flow.Lines(r.Warnings)})
	case rep == asFragment && r.Fragment != "":
		return h.renderFragment(c, r)
	case r.Redirect != "" && rep == asFragment && r.Reload:
		c.Set("HX-Redirect", r.Redirect)
		return c.SendStatus(fiber.StatusOK)
	case r.Redirect != "" && rep == asFragment:
		c.Set("HX-Location", r.Redirect)
		return c.SendStatus(fiber.StatusOK)
	case r.Redirect != "":
		return c.Redirect(r.Redirect, fiber.StatusSeeOther)
	case rep == asFragment:
		return h.render(c, r.Status, r.Page, r.View, "layouts/body")
	default:
		return h.render(c, r.Status, r.Page, r.View, "layouts/body", "layouts/base")
	}
}

// render writes page inside layouts with its CSRF token filled in.
func (h *Handlers) render(c *fiber.Ctx, status int, page string, view any, layouts ...string) error {
	if err := c.Status(status).Render(page, view, layouts...); err != nil {
		return err
	}
	h.fillCSRF(c)
	return nil
}

// rawJSON is data already encoded as JSON (documents passed through from
// the database): the envelope is written around it as it is, sparing the
// encoder's second pass over every byte of it.
type rawJSON []byte

func writeRawEnvelope(c *fiber.Ctx, r Reply, data rawJSON) error {
	head, err := json.Marshal(envelope{Status: r.Status, Message: r.Message, Amount: r.Amount, Capped: r.Capped, Next: r.Next, Warnings: flow.Lines(r.Warnings)})
	if err != nil {
		return err
	}
	// Appended to the response's pooled body buffer: no copy of its own.
	res := c.Status(r.Status).Response()
	res.ResetBody()
	res.AppendBody(head[:len(head)-1])
	res.AppendBodyString(`,"data":`)
	res.AppendBody(data)
	res.AppendBodyString("}")
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return nil
}

// renderFragment writes r's fragment and, when a flash message is waiting,
// the flash area as an out-of-band swap, so that a change made in place
// still says what it did.
func (h *Handlers) renderFragment(c *fiber.Ctx, r Reply) error {
	var buf bytes.Buffer
	views := c.App().Config().Views
	if err := views.Render(&buf, r.Fragment, r.View); err != nil {
		return err
	}
	if flash := h.popFlash(c); flash != nil {
		if err := views.Render(&buf, "partials/flash_oob", flash); err != nil {
			return err
		}
	}
	c.Set(fiber.HeaderContentType, fiber.MIMETextHTMLCharsetUTF8)
	if err := c.Status(r.Status).Send(buf.Bytes()); err != nil {
		return err
	}
	h.fillCSRF(c)
	return nil
}

// offsetNext is the next page of a list read by offset: the request's URL
// with the offset past the items shown, when more match (always, when
// the count stopped); "" when the list ends here.
func offsetNext(c *fiber.Ctx, shown, total int, capped bool) string {
	offset, _ := strconv.Atoi(c.Query("offset"))
	if shown == 0 || !capped && max(0, offset)+shown >= total {
		return ""
	}
	return pageURL(c, map[string]string{"offset": strconv.Itoa(max(0, offset) + shown)})
}
