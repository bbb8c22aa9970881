package handlers

import (
	"github.com/gofiber/fiber/v2"

	"stencil/auth"
	"stencil/store"
)

var errHashingBusy = fiber.NewError(fiber.StatusServiceUnavailable, auth.ErrBusy.Error())

// hashing runs fn — an argon2id hash or check — in one of the hasher's
// bounded slots (auth.Hasher): a request that finds none free in time is
// answered 503 with Retry-After.
func (h *Handlers) hashing(c *fiber.Ctx, fn func()) error {
	if err := h.hasher.Do(c.UserContext(), fn); err != nil {
		c.Set(fiber.HeaderRetryAfter, "1")
		return errHashingBusy
	}
	return nil
}

// hashPassword hashes password in a slot.
func (h *Handlers) hashPassword(c *fiber.Ctx, password string) (string, error) {
	var hash string
	err := h.hashing(c, func() { hash = auth.HashPassword(password, h.hasher.Params) })
	return hash, err
}

type passwordInput struct {
	CurrentPassword string `json:"current_password" form:"current_password" validate:"required_without=TargetUID,max=1024"`
	NewPassword     string `json:"new_password" form:"new_password" validate:"required,min=10,max=1024"`
	TargetUID       int64  `json:"target_uid" form:"target_uid" validate:"omitempty,min=1"`
}

type accountView struct {
	Base
	Form Form
}

// accountShow renders /web/account: the caller's password form.
func (h *Handlers) accountShow(c *fiber.Ctx) error {
	return h.respond(c, Reply{Page: "account/index", View: accountView{Base: h.base(c, "Your account")}})
}

// passwordUpdate answers POST /user/password: one's own password with the
// current one, or, for ROOT, another user's with target_uid. The change ends
// the user's older JWTs and browser sessions; the browser that made it stays
// signed in under a new session token.
func (h *Handlers) passwordUpdate(c *fiber.Ctx) error {
	page := func() (Reply, *Form, error) {
		view := accountView{Base: h.base(c, "Your account")}
		return Reply{Page: "account/index", Fragment: "account/form", View: &view}, &view.Form, nil
	}
	var in passwordInput
	if err := bind(c, &in); err != nil {
		return h.formError(c, err, page, "current_password", "new_password")
	}
	me := current(c).User
	target := me
	if in.TargetUID != 0 && in.TargetUID != me.ID {
		if me.Role != store.RoleRoot {
			return forbidden("only ROOT may set another user's password")
		}
		u, err := h.store.UserByID(c.UserContext(), in.TargetUID)
		if err != nil {
			return err
		}
		target = u
	} else {
		// The caller is read without its hash: only this check needs it.
		stored, err := h.store.UserByID(c.UserContext(), me.ID)
		if err != nil {
			return err
		}
		var perr error
		if err := h.hashing(c, func() { perr = auth.CheckPassword(in.CurrentPassword, stored.PasswordHash) }); err != nil {
			return err
		}
		if perr != nil {
			err := &ValidationError{Fields: map[string]string{"current_password": "is not your current password"}}
			return h.formError(c, err, page, "current_password", "new_password")
		}
	}
	hash, err := h.hashPassword(c, in.NewPassword)
	if err != nil {
		return err
	}
	version, err := h.store.SetPassword(c.UserContext(), target.ID, hash)
	if err != nil {
		return err
	}
	if target.ID == me.ID && hasSession(c.UserContext()) {
		if err := h.sessions.RenewToken(c.UserContext()); err != nil {
			return err
		}
		h.sessions.Put(c.UserContext(), sessionVersionKey, int64(version))
	}
	h.flash(c, "success", "Password changed. Other sessions of "+target.Username+" are signed out.")
	return h.respond(c, Reply{Message: "Password changed", Redirect: "/web/account"})
}
