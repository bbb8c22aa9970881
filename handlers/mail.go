package handlers

import (
	"encoding/json"
	"errors"
	"net/url"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"stencil/authoring"
	"stencil/mail"
	"stencil/store"
)

// emailTemplateDTO is an email template as the API shows it (docs/mail.md).
type emailTemplateDTO struct {
	ProjectID string    `json:"project_id"`
	Name      string    `json:"name"`
	Subject   string    `json:"subject"`
	Text      string    `json:"text"`
	HTML      string    `json:"html"`
	CreatedBy *int64    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

func newEmailTemplateDTO(t store.EmailTemplate) emailTemplateDTO {
	return emailTemplateDTO{ProjectID: t.ProjectID, Name: t.Name, Subject: t.Subject, Text: t.Text, HTML: t.HTML,
		CreatedBy: t.CreatedBy, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

type emailTemplateInput = authoring.EmailTemplate

type emailTemplateUpdateInput struct {
	ProjectID string  `json:"project_id" form:"project_id" validate:"required,project_id"`
	Name      string  `json:"name" form:"name" validate:"required,email_template"`
	Subject   *string `json:"subject" form:"subject" validate:"omitnil,min=1,max=200,one_line"`
	Text      *string `json:"text" form:"text" validate:"omitnil,min=1,max=65536"`
	HTML      *string `json:"html" form:"html" validate:"omitnil,max=262144"`
}

type emailTemplateQuery struct {
	ProjectID string `query:"project_id" json:"project_id" validate:"required,project_id"`
	Name      string `query:"name" json:"name" validate:"required,email_template"`
}

// emailTemplatesURL and emailTemplateURL are the template pages.
func emailTemplatesURL(project string) string {
	return "/web/email?project_id=" + url.QueryEscape(project)
}

func emailTemplateURL(project, name string) string {
	return "/web/email/template?project_id=" + url.QueryEscape(project) + "&name=" + url.QueryEscape(name)
}

type emailTemplatesView struct {
	Base
	Project   store.Project
	Templates []store.EmailTemplate
	Form      Form
	CanManage bool
	Held      bool
}

type emailTemplateView struct {
	Base
	Project   store.Project
	Template  store.EmailTemplate
	Preview   mail.Message
	Samples   []string // the placeholders the preview filled
	Form      Form
	CanManage bool
}

// emailTemplateList answers GET /email/template/fetch and renders
// /web/email.
func (h *Handlers) emailTemplateList(c *fiber.Ctx) error {
	var q projectQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	view, err := h.emailTemplatesPage(c, q.ProjectID)
	if err != nil {
		return err
	}
	dtos := make([]emailTemplateDTO, len(view.Templates))
	for i, t := range view.Templates {
		dtos[i] = newEmailTemplateDTO(t)
	}
	n := len(dtos)
	return h.respond(c, Reply{Data: dtos, Amount: &n, Page: "mail/templates", View: view})
}

func (h *Handlers) emailTemplatesPage(c *fiber.Ctx, project string) (emailTemplatesView, error) {
	p, err := h.member(c, project)
	if err != nil {
		return emailTemplatesView{}, err
	}
	list, err := h.store.EmailTemplates(c.UserContext(), p.ID)
	return emailTemplatesView{Base: h.base(c, "Email · "+p.Name), Project: p, Templates: list,
		CanManage: canIn(c, p, store.RoleAdmin), Held: h.mail.Held()}, err
}

// emailTemplateShow answers GET /email/template/fetch/one and renders
// /web/email/template with a preview.
func (h *Handlers) emailTemplateShow(c *fiber.Ctx) error {
	var q emailTemplateQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	view, err := h.emailTemplatePage(c, q.ProjectID, q.Name)
	if err != nil {
		return err
	}
	return h.respond(c, Reply{Data: newEmailTemplateDTO(view.Template), Page: "mail/template", View: view})
}

func (h *Handlers) emailTemplatePage(c *fiber.Ctx, project, name string) (emailTemplateView, error) {
	p, err := h.member(c, project)
	if err != nil {
		return emailTemplateView{}, err
	}
	t, err := h.store.EmailTemplate(c.UserContext(), p.ID, name)
	if err != nil {
		return emailTemplateView{}, emailTemplateMissing(err, name)
	}
	samples := mail.Placeholders(t.Subject, t.Text, t.HTML)
	pairs := map[string]any{}
	for _, k := range samples {
		pairs[k] = "‹" + k + "›"
	}
	return emailTemplateView{Base: h.base(c, t.Name+" · Email · "+p.Name), Project: p, Template: t,
		Preview: mail.Render(t.Subject, t.Text, t.HTML, pairs), Samples: samples, CanManage: canIn(c, p, store.RoleAdmin)}, nil
}

func emailTemplateMissing(err error, name string) error {
	return notFound(err, "email template "+authoring.Quote(name)+" not found")
}

// emailTemplateCreate answers POST /email/template/create.
func (h *Handlers) emailTemplateCreate(c *fiber.Ctx) error {
	var in emailTemplateInput
	if err := bind(c, &in); err != nil {
		return h.emailTemplateFormError(c, err, in.ProjectID)
	}
	if _, err := h.member(c, in.ProjectID); err != nil {
		return err
	}
	t := store.EmailTemplate{ProjectID: in.ProjectID, Name: in.Name, Subject: in.Subject, Text: in.Text, HTML: in.HTML}
	if err := h.store.CreateEmailTemplate(c.UserContext(), &t, current(c).User.ID); err != nil {
		return h.emailTemplateFormError(c, err, in.ProjectID)
	}
	h.flash(c, "success", "Email template "+t.Name+" created.")
	return h.respond(c, Reply{Status: fiber.StatusCreated, Message: "Email template created", Data: newEmailTemplateDTO(t),
		Redirect: emailTemplateURL(t.ProjectID, t.Name)})
}

func (h *Handlers) emailTemplateFormError(c *fiber.Ctx, err error, project string) error {
	if project == "" {
		return err
	}
	return h.formError(c, err, func() (Reply, *Form, error) {
		view, err := h.emailTemplatesPage(c, project)
		return Reply{Page: "mail/templates", Fragment: "mail/template_form", View: &view}, &view.Form, err
	})
}

// emailTemplateUpdate answers PATCH /email/template/update.
func (h *Handlers) emailTemplateUpdate(c *fiber.Ctx) error {
	var in emailTemplateUpdateInput
	if err := bind(c, &in); err != nil {
		if in.ProjectID == "" || in.Name == "" {
			return err
		}
		return h.formError(c, err, func() (Reply, *Form, error) {
			view, err := h.emailTemplatePage(c, in.ProjectID, in.Name)
			return Reply{Page: "mail/template", Fragment: "mail/template_edit", View: &view}, &view.Form, err
		})
	}
	if _, err := h.member(c, in.ProjectID); err != nil {
		return err
	}
	t, err := h.store.EmailTemplate(c.UserContext(), in.ProjectID, in.Name)
	if err != nil {
		return emailTemplateMissing(err, in.Name)
	}
	t.Subject, t.Text, t.HTML = authoring.Deref(in.Subject, t.Subject), authoring.Deref(in.Text, t.Text), authoring.Deref(in.HTML, t.HTML)
	if err := h.store.UpdateEmailTemplate(c.UserContext(), &t); err != nil {
		return emailTemplateMissing(err, in.Name)
	}
	h.flash(c, "success", "Email template "+t.Name+" saved.")
	return h.respond(c, Reply{Message: "Email template updated", Data: newEmailTemplateDTO(t), Redirect: emailTemplateURL(t.ProjectID, t.Name)})
}

// emailTemplateDelete answers DELETE /email/template/delete.
func (h *Handlers) emailTemplateDelete(c *fiber.Ctx) error {
	var q emailTemplateQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if _, err := h.member(c, q.ProjectID); err != nil {
		return err
	}
	if err := h.store.DeleteEmailTemplate(c.UserContext(), q.ProjectID, q.Name); err != nil {
		return emailTemplateMissing(err, q.Name)
	}
	h.flash(c, "success", "Email template "+q.Name+" deleted.")
	return h.respond(c, Reply{Message: "Email template deleted", Redirect: emailTemplatesURL(q.ProjectID)})
}

// emailDTO is a message of the outbox as the API shows it; Subject, Text
// and HTML are the rendered message, in GET /outbox/fetch/one only.
type emailDTO struct {
	ID            int64           `json:"id"`
	ProjectID     *string         `json:"project_id"`
	RouteID       string          `json:"route_id"`
	Kind          string          `json:"kind"`
	Template      string          `json:"template"`
	Recipients    []string        `json:"recipients"`
	Pairs         json.RawMessage `json:"pairs"`
	Status        string          `json:"status"`
	Attempts      int             `json:"attempts"`
	NextAttemptAt *time.Time      `json:"next_attempt_at"`
	LastError     string          `json:"last_error"`
	Reply         string          `json:"reply"`
	QueuedAt      time.Time       `json:"queued_at"`
	SentAt        *time.Time      `json:"sent_at"`
	Subject       *string         `json:"subject,omitempty"`
	Text          *string         `json:"text,omitempty"`
	HTML          *string         `json:"html,omitempty"`
}

func newEmailDTO(m store.Email) emailDTO {
	d := emailDTO{ID: m.ID, ProjectID: m.ProjectID, RouteID: m.RouteID, Kind: m.Kind, Template: m.Template, Recipients: m.Recipients,
		Pairs: m.Pairs, Status: m.Status, Attempts: m.Attempts, LastError: m.LastError, Reply: m.Reply, QueuedAt: m.QueuedAt, SentAt: m.SentAt}
	if m.Status == store.EmailQueued {
		next := m.NextAttemptAt
		d.NextAttemptAt = &next
	}
	if m.Kind != store.EmailOfRoute {
		d.Pairs = json.RawMessage("{}")
	}
	return d
}

type outboxQuery struct {
	listQuery
	ProjectID string `query:"project_id" json:"project_id" validate:"required,project_id"`
	Status    string `query:"status" json:"status" validate:"omitempty,oneof=held queued sent failed cancelled"`
}

type outboxMessageQuery struct {
	ProjectID string `query:"project_id" json:"project_id" validate:"required,project_id"`
	ID        int64  `query:"id" json:"id" validate:"required,min=1"`
}

type outboxMessageInput struct {
	ProjectID string `json:"project_id" form:"project_id" validate:"required,project_id"`
	ID        int64  `json:"id" form:"id" validate:"required,min=1"`
}

type outboxView struct {
	Base
	Project  store.Project
	Messages []store.Email
	Status   string
	Statuses []string
	Pager    Pager
	Held     bool
}

type outboxMessageView struct {
	Base
	Project  store.Project
	Message  store.Email
	Rendered mail.Rendered
	Held     bool
}

func outboxMessageURL(project string, id int64) string {
	return "/web/outbox/message?project_id=" + url.QueryEscape(project) + "&id=" + strconv.FormatInt(id, 10)
}

// outboxList answers GET /outbox/fetch and renders /web/outbox.
func (h *Handlers) outboxList(c *fiber.Ctx) error {
	var q outboxQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	p, err := h.member(c, q.ProjectID)
	if err != nil {
		return err
	}
	page := q.page(defaultLimit(c, 25))
	list, total, err := h.store.Outbox(c.UserContext(), p.ID, q.Status, page)
	if err != nil {
		return err
	}
	dtos := make([]emailDTO, len(list))
	for i, m := range list {
		dtos[i] = newEmailDTO(m)
	}
	view := outboxView{Base: h.base(c, "Outbox · "+p.Name), Project: p, Messages: list, Status: q.Status,
		Statuses: []string{"held", "queued", "sent", "failed", "cancelled"}, Pager: newPager(c, page, len(list), total), Held: h.mail.Held()}
	return h.respond(c, Reply{Data: dtos, Amount: &total, Page: "mail/outbox", View: view})
}

// outboxShow answers GET /outbox/fetch/one, with the rendered message, and
// renders /web/outbox/message.
func (h *Handlers) outboxShow(c *fiber.Ctx) error {
	var q outboxMessageQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	p, err := h.member(c, q.ProjectID)
	if err != nil {
		return err
	}
	m, err := h.store.OutboxMessage(c.UserContext(), p.ID, q.ID)
	if err != nil {
		return messageMissing(err, q.ID)
	}
	r := mail.RenderedOf(m)
	dto := newEmailDTO(m)
	if !r.Missing {
		dto.Subject, dto.Text, dto.HTML = &r.Subject, &r.Text, &r.HTML
	}
	return h.respond(c, Reply{Data: dto, Page: "mail/message",
		View: outboxMessageView{Base: h.base(c, "Message "+strconv.FormatInt(m.ID, 10)+" · "+p.Name), Project: p, Message: m, Rendered: r, Held: h.mail.Held()}})
}

func messageMissing(err error, id int64) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fiber.NewError(fiber.StatusNotFound, "message "+strconv.FormatInt(id, 10)+" not found")
	case errors.Is(err, store.ErrEmailState):
		return fiber.NewError(fiber.StatusConflict, "message "+strconv.FormatInt(id, 10)+" is sent or cancelled: only a held, queued or failed message can be retried or cancelled")
	}
	return err
}

// outboxRetry answers POST /outbox/retry: a held, queued or failed message
// is queued to go now. Without a mail server it stays held.
func (h *Handlers) outboxRetry(c *fiber.Ctx) error {
	var in outboxMessageInput
	if err := bind(c, &in); err != nil {
		return err
	}
	if _, err := h.member(c, in.ProjectID); err != nil {
		return err
	}
	if h.mail.Held() {
		return fiber.NewError(fiber.StatusConflict, "no mail server is configured (SMTP_URL): messages stay held")
	}
	m, err := h.store.RetryEmail(c.UserContext(), in.ProjectID, in.ID)
	if err != nil {
		return messageMissing(err, in.ID)
	}
	h.mail.Wake()
	h.flash(c, "success", "Message "+strconv.FormatInt(m.ID, 10)+" queued to go now.")
	return h.respond(c, Reply{Message: "Message queued", Data: newEmailDTO(m), Redirect: outboxMessageURL(in.ProjectID, m.ID)})
}

// outboxCancel answers POST /outbox/cancel.
func (h *Handlers) outboxCancel(c *fiber.Ctx) error {
	var in outboxMessageInput
	if err := bind(c, &in); err != nil {
		return err
	}
	if _, err := h.member(c, in.ProjectID); err != nil {
		return err
	}
	m, err := h.store.CancelEmail(c.UserContext(), in.ProjectID, in.ID)
	if err != nil {
		return messageMissing(err, in.ID)
	}
	h.flash(c, "success", "Message "+strconv.FormatInt(m.ID, 10)+" cancelled.")
	return h.respond(c, Reply{Message: "Message cancelled", Data: newEmailDTO(m), Redirect: outboxMessageURL(in.ProjectID, m.ID)})
}
