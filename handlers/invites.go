package handlers

import (
	"errors"
	"net/url"
	"strconv"
	"time"

	"github.com/gofiber/fiber/v2"

	"stencil/accounts"
	"stencil/auth"
	"stencil/store"
)

// invitationDTO is an invitation as the API shows it; Link only when no
// mail server is configured (the inviter passes it on).
type invitationDTO struct {
	ID        int64     `json:"id"`
	ProjectID string    `json:"project_id"`
	Email     string    `json:"email"`
	Role      string    `json:"role"`
	InvitedBy *int64    `json:"invited_by"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
	Link      string    `json:"link,omitempty"`
}

func newInvitationDTO(v store.Invitation) invitationDTO {
	return invitationDTO{ID: v.ID, ProjectID: v.ProjectID, Email: v.Email, Role: v.Role, InvitedBy: v.InvitedBy, CreatedAt: v.CreatedAt, ExpiresAt: v.ExpiresAt}
}

type inviteInput struct {
	ProjectID string `json:"project_id" form:"project_id" validate:"required,project_id"`
	Email     string `json:"email" form:"email" validate:"required,email,max=254,one_line"`
	Role      string `json:"role" form:"role" validate:"required,oneof=ROOT ADMIN AUTHOR VIEWER"`
}

type invitationQuery struct {
	ProjectID string `query:"project_id" json:"project_id" validate:"required,project_id"`
	ID        int64  `query:"id" json:"id" validate:"required,min=1"`
}

// projectInvite answers POST /project/invite: an account with that email
// joins the project at once (200); otherwise an invitation is made (201)
// and mailed, its link in the answer while mail is held. A second
// invitation of the same address replaces the first (Resend).
func (h *Handlers) projectInvite(c *fiber.Ctx) error {
	page := func() (Reply, *Form, error) {
		view, err := h.projectPage(c, c.FormValue("project_id"))
		return Reply{Page: "projects/show", Fragment: "projects/invite", View: &view}, &view.Invite, err
	}
	var in inviteInput
	if err := bind(c, &in); err != nil {
		if in.ProjectID == "" {
			return err
		}
		return h.formError(c, err, page)
	}
	p, err := h.member(c, in.ProjectID)
	if err != nil {
		return err
	}
	me := current(c).User
	if me.Role != store.RoleRoot && store.RoleRank(in.Role) > store.RoleRank(store.RoleAuthor) {
		return forbidden("an ADMIN invites AUTHOR or VIEWER accounts; only a ROOT user invites an ADMIN or ROOT")
	}
	ctx := c.UserContext()
	if u, err := h.store.UserByEmail(ctx, in.Email); err == nil {
		role := store.MembershipRole(in.Role)
		if err := h.store.AddMember(ctx, p.ID, u.ID, role); err != nil {
			if errors.Is(err, store.ErrConflict) {
				err = &ValidationError{Fields: map[string]string{"email": "belongs to " + u.Username + ", already a member of this project"}}
			}
			return h.formError(c, err, page)
		}
		effective := store.EffectiveRole(u.Role, role)
		h.flash(c, "success", u.Username+" ("+u.Email+") had an account and is now a member as "+role+capNote(role, effective)+".")
		return h.respond(c, Reply{Message: "Member added", Data: memberRolesDTO{UID: u.ID, Username: u.Username, Role: role, EffectiveRole: effective},
			Redirect: projectURL(p.ID)})
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	v, link, err := h.accounts.Invite(ctx, p, me, in.Email, in.Role)
	if err != nil {
		return err
	}
	dto := newInvitationDTO(v)
	dto.Link = link
	if representationOf(c) == asJSON {
		return h.respond(c, Reply{Status: fiber.StatusCreated, Message: "Invitation created", Data: dto})
	}
	view, err := h.projectPage(c, p.ID)
	if err != nil {
		return err
	}
	view.Invited = v.ID
	if h.mail.Held() {
		h.flash(c, "success", "Invitation made for "+in.Email+": no mail server is configured, so copy its link and send it yourself.")
	} else {
		h.flash(c, "success", "Invitation mailed to "+in.Email+".")
	}
	return h.respond(c, Reply{Status: fiber.StatusCreated, Message: "Invitation created", Data: dto, Page: "projects/show", Fragment: "projects/invite", View: view})
}

func projectURL(id string) string { return "/web/project?id=" + url.QueryEscape(id) }

// invitationList answers GET /project/invitations: the pending ones.
func (h *Handlers) invitationList(c *fiber.Ctx) error {
	var q projectQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if _, err := h.member(c, q.ProjectID); err != nil {
		return err
	}
	list, err := h.store.Invitations(c.UserContext(), q.ProjectID)
	if err != nil {
		return err
	}
	dtos := make([]invitationDTO, len(list))
	links := h.accounts.InvitationLinks(list)
	for i, v := range list {
		dtos[i] = newInvitationDTO(v)
		dtos[i].Link = links[v.ID]
	}
	n := len(dtos)
	return h.respond(c, Reply{Data: dtos, Amount: &n})
}

// invitationDelete answers DELETE /project/invitation/delete: the link
// stops working.
func (h *Handlers) invitationDelete(c *fiber.Ctx) error {
	var q invitationQuery
	if err := bindQuery(c, &q); err != nil {
		return err
	}
	if _, err := h.member(c, q.ProjectID); err != nil {
		return err
	}
	if err := h.store.RevokeInvitation(c.UserContext(), q.ProjectID, q.ID); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fiber.NewError(fiber.StatusNotFound, "invitation "+strconv.FormatInt(q.ID, 10)+" not found or no longer pending")
		}
		return err
	}
	h.flash(c, "success", "Invitation revoked: its link no longer works.")
	return h.respond(c, Reply{Message: "Invitation revoked", Redirect: projectURL(q.ProjectID)})
}

// linkGone is the answer to a used, revoked or expired link.
func linkGone(what string) error {
	return fiber.NewError(fiber.StatusGone, "this "+what+" link was used, revoked or has expired: ask for a new one")
}

type acceptInput struct {
	Token     string `json:"token" form:"token" validate:"required,max=200"`
	Username  string `json:"username" form:"username" validate:"required,username"`
	Password  string `json:"password" form:"password" validate:"required,min=10,max=1024"`
	FirstName string `json:"first_name" form:"first_name" validate:"max=100,plain_text"`
	LastName  string `json:"last_name" form:"last_name" validate:"max=100,plain_text"`
}

type inviteView struct {
	Base
	Token      string
	Invitation store.Invitation
	Project    store.Project
	Form       Form
}

// inviteShow renders /web/invite: the form that accepts an invitation, or
// why its link no longer works (410).
func (h *Handlers) inviteShow(c *fiber.Ctx) error {
	view, err := h.invitePage(c, c.Query("token"))
	if err != nil {
		return err
	}
	return h.respond(c, Reply{Page: "session/invite", View: view})
}

func (h *Handlers) invitePage(c *fiber.Ctx, token string) (inviteView, error) {
	v, err := h.store.Invitation(c.UserContext(), token)
	if errors.Is(err, store.ErrTokenGone) {
		return inviteView{}, linkGone("invitation")
	}
	if err != nil {
		return inviteView{}, err
	}
	p, err := h.store.Project(c.UserContext(), v.ProjectID, 0)
	return inviteView{Base: h.base(c, "Join "+p.Name), Token: token, Invitation: v, Project: p}, err
}

// inviteAccept answers POST /user/invite/accept: the account is made with
// the invitation's email and role, joins the project, and is signed in
// (201 with a JWT as /user/login answers; a browser gets a session).
func (h *Handlers) inviteAccept(c *fiber.Ctx) error {
	var in acceptInput
	if err := bind(c, &in); err != nil {
		if in.Token == "" {
			return err
		}
		return h.formError(c, err, func() (Reply, *Form, error) {
			view, err := h.invitePage(c, in.Token)
			return Reply{Page: "session/invite", Fragment: "session/invite_form", View: &view}, &view.Form, err
		})
	}
	hash, err := h.hashPassword(c, in.Password)
	if err != nil {
		return err
	}
	u := store.User{Username: in.Username, FirstName: in.FirstName, LastName: in.LastName, PasswordHash: hash}
	v, err := h.store.AcceptInvitation(c.UserContext(), in.Token, &u)
	switch {
	case errors.Is(err, store.ErrTokenGone):
		return linkGone("invitation")
	case err != nil:
		return h.formError(c, err, func() (Reply, *Form, error) {
			view, err := h.invitePage(c, in.Token)
			return Reply{Page: "session/invite", Fragment: "session/invite_form", View: &view}, &view.Form, err
		})
	}
	if representationOf(c) != asJSON {
		if err := h.signIn(c, u); err != nil {
			return err
		}
		h.flash(c, "success", "Welcome, "+u.Username+": you are a member of this project.")
		return h.respond(c, Reply{Redirect: projectURL(v.ProjectID), Reload: true})
	}
	token, err := auth.IssueJWT(h.cfg.JWTSecret, u.ID, u.CredentialVersion, time.Now(), h.cfg.JWTTTL)
	if err != nil {
		return err
	}
	return h.respond(c, Reply{Body: loginResponse{Status: fiber.StatusCreated, Message: "Account created", UID: u.ID, JWT: token, User: newUserDTO(u)},
		Status: fiber.StatusCreated})
}

type forgotInput struct {
	Email string `json:"email" form:"email" validate:"required,email,max=254,one_line"`
}

type resetInput struct {
	Token       string `json:"token" form:"token" validate:"required,max=200"`
	NewPassword string `json:"new_password" form:"new_password" validate:"required,min=10,max=1024"`
}

type resetView struct {
	Base
	Token string
	Sent  string // the address a link was asked for
	Form  Form
}

// forgotAnswer is the one answer to a reset request, whether or not an
// account has the address.
const forgotAnswer = "If an account has this address, a link to choose a new password is on its way. It works once, for an hour."

// forgotShow renders /web/forgot.
func (h *Handlers) forgotShow(c *fiber.Ctx) error {
	return h.respond(c, Reply{Page: "session/forgot", View: resetView{Base: h.base(c, "Forgot your password?")}})
}

// passwordForgot answers POST /user/password/forgot: a reset link is
// mailed to the account with that email, if there is one; the answer is
// the same either way, and takes as long.
func (h *Handlers) passwordForgot(c *fiber.Ctx) error {
	var in forgotInput
	if err := bind(c, &in); err != nil {
		return h.formError(c, err, func() (Reply, *Form, error) {
			view := resetView{Base: h.base(c, "Forgot your password?")}
			return Reply{Page: "session/forgot", Fragment: "session/forgot_form", View: &view}, &view.Form, nil
		})
	}
	err := h.accounts.RequestReset(c.UserContext(), in.Email, c.IP())
	var wait *accounts.Throttled
	if errors.As(err, &wait) {
		c.Set(fiber.HeaderRetryAfter, strconv.Itoa(wait.RetryAfter))
		return fiber.NewError(fiber.StatusTooManyRequests, wait.Error())
	}
	if err != nil {
		return err
	}
	return h.respond(c, Reply{Message: forgotAnswer, Page: "session/forgot",
		View: resetView{Base: h.base(c, "Forgot your password?"), Sent: in.Email}, Fragment: "session/forgot_form"})
}

// resetShow renders /web/reset: the new-password form, or why the link no
// longer works (410).
func (h *Handlers) resetShow(c *fiber.Ctx) error {
	token := c.Query("token")
	ok, err := h.store.PasswordResetPending(c.UserContext(), token)
	if err != nil {
		return err
	}
	if !ok {
		return linkGone("password reset")
	}
	return h.respond(c, Reply{Page: "session/reset", View: resetView{Base: h.base(c, "Choose a new password"), Token: token}})
}

// passwordReset answers POST /user/password/reset: the new password is
// set and the credential version moves on, so every JWT and browser
// session of the user ends; the browser is sent to sign in.
func (h *Handlers) passwordReset(c *fiber.Ctx) error {
	var in resetInput
	if err := bind(c, &in); err != nil {
		return h.formError(c, err, func() (Reply, *Form, error) {
			view := resetView{Base: h.base(c, "Choose a new password"), Token: in.Token}
			return Reply{Page: "session/reset", Fragment: "session/reset_form", View: &view}, &view.Form, nil
		}, "new_password")
	}
	hash, err := h.hashPassword(c, in.NewPassword)
	if err != nil {
		return err
	}
	if _, err := h.store.ResetPassword(c.UserContext(), in.Token, hash); err != nil {
		if errors.Is(err, store.ErrTokenGone) {
			return linkGone("password reset")
		}
		return err
	}
	h.flash(c, "success", "Password changed, and every session of the account signed out. Sign in with the new password.")
	return h.respond(c, Reply{Message: "Password changed", Redirect: "/web/login"})
}
