package handlers

import (
	"net/url"
	"slices"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"stencil/store"
)

// listQuery is the paging input of every list endpoint (docs/architecture.md).
type listQuery struct {
	Offset int    `query:"offset" json:"offset" validate:"min=0,max=10000000"`
	Limit  *int   `query:"limit" json:"limit" validate:"omitempty,min=1,max=1000"`
	Filter string `query:"filter" json:"filter" validate:"max=200"`
}

// page turns the query into a store page; def is the limit when none is given.
func (q listQuery) page(def int) store.Page {
	limit := def
	if q.Limit != nil {
		limit = *q.Limit
	}
	return store.Page{Offset: q.Offset, Limit: limit, Filter: q.Filter}
}

// Pager is the view of a list's position: "From–To of Total" and the links
// to the neighbouring pages, which keep every other query parameter.
type Pager struct {
	From, To, Total int
	AtLeast         bool // Total is a lower bound: counting stopped there
	// Shown is the rows of a keyset page, whose From and To are unknown.
	Shown      int
	Prev, Next string
	Filter     string
}

func newPager(c *fiber.Ctx, p store.Page, shown, total int) Pager {
	pg := Pager{Total: total, Filter: p.Filter}
	if shown > 0 {
		pg.From, pg.To = p.Offset+1, p.Offset+shown
	}
	link := func(offset int) string { return pageURL(c, map[string]string{"offset": strconv.Itoa(offset)}) }
	if p.Offset > 0 {
		pg.Prev = link(max(0, p.Offset-p.Limit))
	}
	if p.Offset+shown < total {
		pg.Next = link(p.Offset + p.Limit)
	}
	return pg
}

// keysetQuery is the place of a page in a log listed newest first by id
// (the run log, the event log): before= takes the rows older than that
// id, after= the rows newer, both the rows between, however deep, each
// read by the log's index.
type keysetQuery struct {
	Before int64 `query:"before" json:"before" validate:"min=0"`
	After  int64 `query:"after" json:"after" validate:"min=0"`
}

func (k keysetQuery) keyset() store.Keyset { return store.Keyset{Before: k.Before, After: k.After} }

// logPage reads a page of a log (the run log, the event log): one row
// more than it shows, so that the pager (and the API's next) knows whether
// a page lies beyond it in the direction read (older, or newer with
// after=). read gets the limit.
func logPage[T any](c *fiber.Ctx, p store.Page, k store.Keyset, read func(limit int) ([]T, int, error)) (rows []T, total int, more bool, err error) {
	rows, total, err = read(p.Limit + 1)
	if err != nil || len(rows) <= p.Limit {
		return rows, total, false, err
	}
	if k.After > 0 && k.Before == 0 {
		return rows[1:], total, true, nil // read oldest first: the extra is the newest
	}
	return rows[:p.Limit], total, true, nil
}

// newLogPager is the pager of a log listed newest first by id (id gives
// the id of each row shown): Next goes to the rows older than the page's
// last (before=), Previous to those newer than its first (after=); offset
// is dropped from both. more says logPage found a row beyond the page. Past the first page the range
// reads "25 shown of N": a keyset page does not know its offset.
func newLogPager(c *fiber.Ctx, p store.Page, k store.Keyset, shown int, id func(row int) int64, more bool, total, countCap int) Pager {
	pg := Pager{Total: total, Filter: p.Filter}
	if total >= countCap {
		pg.AtLeast, pg.Total = true, max(countCap, p.Offset+shown)
	}
	if shown == 0 {
		return pg
	}
	first, last := id(0), id(shown-1)
	if k == (store.Keyset{}) {
		pg.From, pg.To = p.Offset+1, p.Offset+shown
	} else {
		pg.Shown = shown
	}
	link := func(key string, id int64) string {
		set := map[string]string{"offset": "", "before": "", "after": ""}
		set[key] = strconv.FormatInt(id, 10)
		return pageURL(c, set)
	}
	// Read newest first, more is older rows; read oldest first (after=
	// alone), it is newer ones, and the row named by after= is older.
	older, newer := more, k.Before > 0 || p.Offset > 0
	if k.After > 0 && k.Before == 0 {
		older, newer = true, more
	}
	if older {
		pg.Next = link("before", last)
	}
	if newer {
		pg.Prev = link("after", first)
	}
	return pg
}

// newCappedPager is newPager for a list whose count stops at limit: past
// it, the amount is at least the records up to the page's end, and a
// full page always has a next one.
func newCappedPager(c *fiber.Ctx, p store.Page, shown, total, limit int) Pager {
	pg := newPager(c, p, shown, max(total, p.Offset+shown))
	if total >= limit {
		pg.AtLeast, pg.Total = true, max(limit, p.Offset+shown)
		if shown == p.Limit {
			pg.Next = newPager(c, p, shown, p.Offset+shown+1).Next
		}
	}
	return pg
}

// Form is a browser form's state after a failed submission: the values to
// show again (never passwords) and an error beside each field.
type Form struct {
	Values map[string]string
	Errors map[string]string
}

// Value returns the submitted value of field.
func (f Form) Value(field string) string { return f.Values[field] }

// Has says whether field was submitted (an empty value too).
func (f Form) Has(field string) bool {
	_, ok := f.Values[field]
	return ok
}

// Error returns the error of field.
func (f Form) Error(field string) string { return f.Errors[field] }

// formPage builds the reply that shows a form again, and points at the form
// in its view.
type formPage func() (Reply, *Form, error)

// formError answers a failed form submission. A browser gets the form back
// with the errors beside the fields (422): build makes the reply, and only
// then, so that API clients and successes never pay for the page. Passwords
// and the other secret fields named are never shown again. An API client,
// or an error that is no validation failure, goes to the ErrorHandler.
func (h *Handlers) formError(c *fiber.Ctx, err error, build formPage, secret ...string) error {
	verr := asValidation(err)
	if verr == nil || representationOf(c) == asJSON {
		return err
	}
	r, form, berr := build()
	if berr != nil {
		return berr
	}
	form.Errors = verr.Fields
	form.Values = map[string]string{}
	c.Context().PostArgs().VisitAll(func(k, v []byte) {
		if key := string(k); key != "password" && key != csrfFormField && !slices.Contains(secret, key) {
			form.Values[key] = string(v)
		}
	})
	r.Status = fiber.StatusUnprocessableEntity
	return h.respond(c, r)
}

// defaultLimit is the page size when the caller names none: a screenful for
// browsers, the spec's 50 for API clients.
func defaultLimit(c *fiber.Ctx, browser int) int {
	if representationOf(c) == asJSON {
		return 50
	}
	return browser
}

// pageURL is the request's path and query with the parameters set (a
// value "" removes one).
func pageURL(c *fiber.Ctx, set map[string]string) string {
	q := url.Values{}
	c.Context().QueryArgs().VisitAll(func(k, v []byte) {
		if _, ok := set[string(k)]; !ok {
			q.Add(string(k), string(v))
		}
	})
	for k, v := range set {
		if v != "" {
			q.Set(k, v)
		}
	}
	return c.Path() + "?" + q.Encode()
}
