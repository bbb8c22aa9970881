package handlers

import (
	"time"

	"github.com/gofiber/fiber/v2"

	"stencil/auth"
	"stencil/authoring"
	"stencil/store"
)

// patDTO is a personal access token as the API lists it; Token is set only
// in the answer that creates it.
type patDTO struct {
	ID         int64      `json:"id"`
	Name       string     `json:"name"`
	Token      string     `json:"token,omitempty"`
	Hint       string     `json:"hint"`
	ValidFrom  time.Time  `json:"valid_from"`
	ValidTo    *time.Time `json:"valid_to"`
	LastUsedAt *time.Time `json:"last_used_at"`
	RevokedAt  *time.Time `json:"revoked_at"`
	CreatedAt  time.Time  `json:"created_at"`
}

func newPATDTO(p store.PAT) patDTO {
	return patDTO{ID: p.ID, Name: p.Name, Hint: p.Hint, ValidFrom: p.ValidFrom, ValidTo: p.ValidTo,
		LastUsedAt: p.LastUsedAt, RevokedAt: p.RevokedAt, CreatedAt: p.CreatedAt}
}

// patInput takes times as RFC 3339 or, from the browser's date inputs,
// YYYY-MM-DD (midnight UTC).
type patInput struct {
	Name      string `json:"name" form:"name" validate:"required,max=100,plain_text"`
	ValidFrom string `json:"valid_from" form:"valid_from" validate:"omitempty,timestamp"`
	ValidTo   string `json:"valid_to" form:"valid_to" validate:"omitempty,timestamp"`
}

type patQuery struct {
	ID int64 `query:"id" json:"id" validate:"required,min=1"`
}

type patsView struct {
	Base
	Tokens   []store.PAT
	Created  *patDTO // the token just created, shown once
	Form     Form
	Now      time.Time
	ViaToken bool
}

// patList answers GET /pat/fetch and renders /web/pats: the caller's tokens.
func (h *Handlers) patList(c *fiber.Ctx) error {
	view, err := h.patsPage(c)
	if err != nil {
		return err
	}
	dtos := make([]patDTO, len(view.Tokens))
	for i, p := range view.Tokens {
		dtos[i] = newPATDTO(p)
	}
	n := len(dtos)
	return h.respond(c, Reply{Data: dtos, Amount: &n, Page: "pats/index", View: view})
}

func (h *Handlers) patsPage(c *fiber.Ctx) (patsView, error) {
	tokens, err := h.store.ListPATs(c.UserContext(), current(c).User.ID)
	return patsView{Base: h.base(c, "Access tokens"), Tokens: tokens, Now: time.Now()}, err
}

// patCreate answers POST /pat/create. The token appears in this answer only;
// the database keeps its SHA-256.
func (h *Handlers) patCreate(c *fiber.Ctx) error {
	// The form replaces the whole body, on success (the token and the list)
	// as on failure (the errors).
	page := func() (Reply, *Form, error) {
		view, err := h.patsPage(c)
		return Reply{Page: "pats/index", View: &view}, &view.Form, err
	}
	var in patInput
	if err := bind(c, &in); err != nil {
		return h.formError(c, err, page)
	}
	from, _ := authoring.ParseTime(in.ValidFrom)
	to, _ := authoring.ParseTime(in.ValidTo)
	if to != nil && !to.After(orNow(from)) {
		return h.formError(c, &ValidationError{Fields: map[string]string{"valid_to": "must be after valid_from"}}, page)
	}
	token := auth.NewPAT()
	p := store.PAT{UserID: current(c).User.ID, Name: in.Name, Hash: auth.HashPAT(token), Hint: token[:len(auth.PATPrefix)+4], ValidTo: to}
	if from != nil {
		p.ValidFrom = *from
	}
	if err := h.store.CreatePAT(c.UserContext(), &p); err != nil {
		return err
	}
	dto := newPATDTO(p)
	dto.Token = token
	view, err := h.patsPage(c) // the list holds the new token now
	if err != nil {
		return err
	}
	view.Created = &dto
	// The browser stays on the page that shows the token once; no redirect.
	return h.respond(c, Reply{Status: fiber.StatusCreated, Message: "Token created: copy it now, it is not shown again",
		Data: dto, Page: "pats/index", View: view})
}

// patDelete answers DELETE /pat/delete: revokes one of the caller's tokens.
func (h *Handlers) patDelete(c *fiber.Ctx) error {
	var q patQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if err := h.store.RevokePAT(c.UserContext(), current(c).User.ID, q.ID); err != nil {
		return err
	}
	h.flash(c, "success", "Token revoked.")
	return h.respond(c, Reply{Message: "Token revoked", Redirect: "/web/pats"})
}

func orNow(t *time.Time) time.Time {
	if t == nil {
		return time.Now()
	}
	return *t
}
